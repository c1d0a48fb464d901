"""The package's public API is typed (py.typed): mypy, with the configuration in pyproject.toml,
finds no error in it."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_finds_no_error(monkeypatch, tmp_path):
    api = pytest.importorskip("mypy.api", reason="mypy is not installed (pip install .[test])")
    monkeypatch.chdir(ROOT)  # (the configuration's files are relative to the checkout)
    report, errors, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path)])
    assert status == 0, f"mypy found errors:\n{report}{errors}"
