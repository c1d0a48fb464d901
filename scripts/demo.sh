#!/usr/bin/env bash
# Linearize the bundled quadruped standing on its feet, time it and validate it, in a
# local virtualenv (.venv).  Runs the installed package (its console script), so the
# compiled kernels are cached once, in the installation.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh ""
.venv/bin/robot-linearization demo "$@"
