#!/usr/bin/env bash
# Linearize the bundled quadruped, time it and validate it, in a local virtualenv (.venv).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet .
.venv/bin/python -m robot_linearization demo "$@"
