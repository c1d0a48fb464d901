#!/usr/bin/env bash
# Build the reference manual into docs/_build/html (open docs/_build/html/index.html): Sphinx
# reads the installed package's docstrings, the docs pages, the ROS interfaces and the command
# line.  Any warning fails the build.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh docs
.venv/bin/python -m sphinx -W --keep-going -q -b html docs docs/_build/html "$@"
echo "the manual: docs/_build/html/index.html"
