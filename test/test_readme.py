"""The README's Python examples run as written (a new user's first hour starts there)."""

from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _python_blocks():
    if not README.exists():
        pytest.fail(f"run the tests from a checkout: no {README}")
    text = README.read_text()
    blocks = [part.split("```", 1)[0] for part in text.split("```python\n")[1:]]
    assert blocks, "README has no python examples"
    return blocks


@pytest.mark.parametrize("index", range(len(_python_blocks())))
def test_readme_python_example_runs_as_written(index, capsys):
    namespace = {}
    exec(compile(_python_blocks()[index], f"README.md python block {index + 1}", "exec"), namespace)
    if "report" in namespace:
        assert namespace["report"].passed(1e-6)
        assert capsys.readouterr().out.count("PASS") == 1
