"""Every Python example of the README and the docs pages runs as written (a new user's first
hour starts there): each ```python block of README.md and docs/*.md, and each
``.. code-block:: python`` of the manual's docs/*.rst pages.  A block that cannot run here says
so on the line before it, with its reason: ``<!-- not run: <reason> -->``."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*$")


def _markdown_blocks(path: Path) -> list:
    """(name, code or None, reason) of each ```python block of a Markdown page."""
    blocks, lines = [], path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "```python":
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            skipped = NOT_RUN.search(lines[i - 1]) if i else None
            name = f"{path.relative_to(ROOT)}:{i + 1}"
            blocks.append((name, None if skipped else "\n".join(lines[i + 1:end]) + "\n",
                           skipped.group(1) if skipped else ""))
    return blocks


def _rst_blocks(path: Path) -> list:
    """(name, code, "") of each ``.. code-block:: python`` of a reStructuredText page."""
    blocks, lines = [], path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.strip() == ".. code-block:: python":
            body = []
            for following in lines[i + 1:]:
                if following.strip() and not following.startswith("   "):
                    break
                body.append(following[3:])
            blocks.append((f"{path.relative_to(ROOT)}:{i + 1}", "\n".join(body).strip("\n") + "\n", ""))
    return blocks


def _examples() -> list:
    if not (ROOT / "README.md").exists():
        pytest.fail(f"run the tests from a checkout: no {ROOT / 'README.md'}")
    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    found = [b for page in pages for b in _markdown_blocks(page)]
    found += [b for page in sorted((ROOT / "docs").glob("*.rst")) for b in _rst_blocks(page)]
    return found


EXAMPLES = _examples()


def test_the_examples_are_found():
    names = [name for name, _, _ in EXAMPLES]
    assert any(n.startswith("README.md") for n in names) and any(n.startswith("docs/") for n in names), names
    assert all(code is not None or reason.strip() for _, code, reason in EXAMPLES)


@pytest.mark.parametrize("name, code, reason", EXAMPLES, ids=[name for name, _, _ in EXAMPLES])
def test_the_example_runs_as_written(name, code, reason, capsys, tmp_path, monkeypatch):
    if code is None:
        pytest.skip(f"{name} is marked not runnable: {reason}")
    monkeypatch.chdir(tmp_path)  # (what an example writes lands here)
    namespace = {"__name__": "__example__"}
    exec(compile(code, name, "exec"), namespace)
    if "report" in namespace:  # (the README's validation prints its verdict)
        assert namespace["report"].passed(1e-6)
        assert capsys.readouterr().out.count("PASS") == 1


SERVICE_CALL = re.compile(r"ros2 service call (\S*/robot_linearization/(\w+)) (\S+)")


def test_every_service_call_written_names_the_services_own_type():
    """`ros2 service call /…/robot_linearization/NAME TYPE` in the README, the docs and the launch files'
    docstrings: TYPE is robot_linearization/srv/<the srv file of NAME> (a service of another type
    answers nothing)."""
    services = {path.stem.lower(): f"robot_linearization/srv/{path.stem}" for path in (ROOT / "srv").glob("*.srv")}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs").glob("*.rst")),
             *sorted((ROOT / "launch").glob("*.py"))]
    calls = [(path.name, m.group(2), m.group(3)) for path in pages for m in SERVICE_CALL.finditer(path.read_text())]
    assert len(calls) >= 2
    for page, name, kind in calls:
        assert kind == services.get(name), f"{page}: {name} called as {kind}"
