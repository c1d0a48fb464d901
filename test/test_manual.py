"""The reference manual: every public name documents itself (a docstring that names each of its
parameters), and the manual builds from the code without a warning."""

import enum
import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import robot_linearization as rl

ROOT = Path(__file__).resolve().parent.parent
PUBLIC_MODULES = ["robot_linearization.gait", "robot_linearization.walking.ground", "robot_linearization.walking.mpc",
                  "robot_linearization.walking.scenario", "robot_linearization.walking.scale",
                  "robot_linearization.walking.robots", "robot_linearization.ros.interfaces",
                  "robot_linearization.ros.fleet"]
"""Modules whose public names (defined there, not starting with _) the manual renders, beside
robot_linearization.__all__ and the command line's entry points."""


def _own_public_names(module):
    return [name for name, obj in vars(module).items()
            if not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
            and getattr(obj, "__module__", None) == module.__name__]


def public_objects() -> dict:
    """Qualified name -> object: every name the manual documents, classes with their public methods."""
    found = {}
    for name in rl.__all__:
        obj = getattr(rl, name)
        if inspect.ismodule(obj):
            found.update({f"{obj.__name__}.{n}": getattr(obj, n) for n in _own_public_names(obj)})
        else:
            found[f"robot_linearization.{name}"] = obj
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        found.update({f"{module_name}.{n}": getattr(module, n) for n in _own_public_names(module)})
    cli = importlib.import_module("robot_linearization.cli")
    found.update({f"robot_linearization.cli.{n}": getattr(cli, n) for n in ("main", "command_line_parser")})
    for qualified, obj in list(found.items()):
        if inspect.isclass(obj):
            for name, member in vars(obj).items():
                if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, (staticmethod,
                                                                                                   classmethod))):
                    found[f"{qualified}.{name}"] = getattr(obj, name)
    return found


def _undocumented(qualified: str, obj) -> str | None:
    """Why ``obj``'s documentation falls short, or None."""
    text = inspect.getdoc(obj) or ""
    if inspect.isclass(obj):
        init = vars(obj).get("__init__")
        text += "\n" + ((inspect.getdoc(init) or "") if init is not None else "")
    if not text.strip():
        return f"{qualified}: no docstring"
    if inspect.isclass(obj) and issubclass(obj, (BaseException, enum.Enum)):  # (their constructors are Python's)
        return None
    try:
        parameters = inspect.signature(obj).parameters
    except (TypeError, ValueError):  # (a builtin or numba dispatcher without a signature)
        return None
    missing = [p for p in parameters if p not in ("self", "cls") and not re.search(rf"(?<![\w.]){re.escape(p)}\b",
                                                                                      text)]
    return f"{qualified}: parameters not described: {', '.join(missing)}" if missing else None


def test_every_public_name_has_a_docstring_that_names_each_of_its_parameters():
    objects = public_objects()
    assert len(objects) > 80, sorted(objects)  # (the collection itself works)
    problems = [p for p in (_undocumented(q, o) for q, o in sorted(objects.items())) if p]
    assert not problems, f"{len(problems)} public names fall short:\n" + "\n".join(problems)


def test_the_check_finds_a_parameter_the_docstring_leaves_out():
    def documented(model, joint_torques):
        """Linearize ``model`` at joint_torques (n,)."""

    def undocumented(model, joint_torques, dt):
        """Linearize ``model`` at joint_torques (n,); ``dt_max`` is not dt's word."""

    def silent(model):
        pass

    assert _undocumented("documented", documented) is None
    assert _undocumented("undocumented", undocumented) is None  # ("dt" appears on its own: described)
    assert _undocumented("silent", silent) == "silent: no docstring"

    def partly(model, joint_torques, restitution):
        """Linearize ``model`` at ``joint_torques`` (n,); ``restitution_map`` is another name."""
    assert _undocumented("partly", partly) == "partly: parameters not described: restitution"


def test_the_manual_builds_without_a_warning(tmp_path):
    """scripts/docs.sh's Sphinx build (warnings are errors), of the package these tests import."""
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html",
                           str(ROOT / "docs"), str(tmp_path / "html")], capture_output=True, text=True, cwd=tmp_path,
                          timeout=600, env=dict(os.environ, PYTHONPATH=str(Path(rl.__file__).parent.parent)))
    assert done.returncode == 0, done.stderr[-4000:]
    api = (tmp_path / "html" / "reference" / "api.html").read_text()
    for name in rl.__all__:  # every public name has its entry (a module: its members)
        assert f'id="robot_linearization.{name}"' in api or f'id="module-robot_linearization.{name}"' in api, name
    interfaces = (tmp_path / "html" / "reference" / "ros.html").read_text()
    for definition in sorted((ROOT / "msg").glob("*.msg")) + sorted((ROOT / "srv").glob("*.srv")):
        assert f"robot_linearization/{definition.parent.name}/{definition.stem}" in interfaces
    assert "robot-linearization replay" in (tmp_path / "html" / "reference" / "cli.html").read_text()
