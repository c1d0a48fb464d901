#!/usr/bin/env bash
# Run the test suite in a local virtualenv (.venv), installing what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet ".[test]"
# Test the installed package, not the source tree, so packaging mistakes show.
cd test && ../.venv/bin/python -m pytest -q -p no:cacheprovider --rootdir=. "$@"
