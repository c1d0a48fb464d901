#!/usr/bin/env bash
# Build the sdist and the wheel (python -m build: the wheel is built from the sdist, so both are
# checked), install the wheel alone into a clean virtualenv in a temporary directory, and run the
# demo there, away from the source tree: its linearization, its replay through the node's pipeline
# and its validation against finite differences must pass on what a user downloads.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh ""
work=$(mktemp -d "${TMPDIR:-/tmp}/robot_linearization-wheel.XXXXXX")
# On exit, whatever the status: the demo's kernel is built by a background process that may outlive
# it (or may have ended already), so it is stopped and waited for before the removal; the script's
# own exit status is kept.
cleanup() {
  local status=$? tries=0
  pkill -f "$work/venv/bin/" 2>/dev/null || true
  while pgrep -f "$work/venv/bin/" > /dev/null && [ $tries -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done
  rm -rf "$work" || echo "could not remove $work" >&2
  exit $status
}
trap cleanup EXIT
export ROBOT_LINEARIZATION_CACHE_DIR=$work/cache  # (the user's cache of generated kernels is left alone)
.venv/bin/python -m pip install --quiet build
.venv/bin/python -m build --outdir "$work/dist" . > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
wheel=$(ls "$work"/dist/*.whl)
ls "$work"/dist/*.tar.gz > /dev/null
echo "built $(basename "$(ls "$work"/dist/*.tar.gz)") and $(basename "$wheel")"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
"$work/venv/bin/python" -m pip install --quiet "$wheel"
cd "$work"  # (nothing of the checkout on sys.path)
"$work/venv/bin/python" - <<'PY'
import os, robot_linearization as rl
assert not os.path.exists(os.path.join(os.getcwd(), "robot_linearization"))
assert "site-packages" in rl.__file__, rl.__file__
print(f"robot_linearization {rl.__version__} from {os.path.dirname(rl.__file__)}")
PY
"$work/venv/bin/robot-linearization" demo --duration 0.5 --samples 2 --repeat 20 --output-dir "$work/demo" \
  | tee "$work/demo.log"
grep -q "^PASS" "$work/demo.log" || { echo "the wheel's demo did not validate"; exit 1; }
echo "the wheel works alone: installed in a clean venv, its demo linearized, replayed and validated"
