"""One of this package's modules run in a fresh interpreter of its own (the background kernel build,
the node's validation): the command, its environment and its working directory, such that the
child imports this very package, whatever the caller's working directory or ``__main__`` holds."""

from __future__ import annotations

import os
import sys

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def module_command(module: str) -> tuple[list[str], dict[str, str], str]:
    """(argv, environment, cwd) that run ``python -m module`` (e.g. "robot_linearization.codegen.background")
    with this package first on its path (-m puts the working directory first: it is this package's parent)."""
    path = [PACKAGE_PARENT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return [sys.executable, "-m", module], dict(os.environ, PYTHONPATH=os.pathsep.join(path)), PACKAGE_PARENT
