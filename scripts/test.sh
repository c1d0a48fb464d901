#!/usr/bin/env bash
# Run the test suite in a local virtualenv (.venv), installing what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet ".[test]"
# The pytest executable (unlike `python -m pytest`) does not put the source tree on
# sys.path, so the tests exercise the installed package and packaging mistakes show.
.venv/bin/pytest -q -p no:cacheprovider test "$@"
