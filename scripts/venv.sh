# Sourced by demo.sh and test.sh: make .venv hold this package (with the extras in $1),
# reinstalling only when the package's sources or setup files changed, or extras are missing.
set -euo pipefail
extras=${1:-}
stamp=$( (cat setup.py setup.cfg pyproject.toml package.xml;
          find robot_linearization \( -name '*.py' -o -name '*.urdf' \) | LC_ALL=C sort | xargs cat) \
        | sha256sum | cut -d' ' -f1)
installed=$(cat .venv/.robot_linearization-installed 2>/dev/null || true)   # "<stamp> <extras>"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  installed=""
fi
if [ "${installed%% *}" != "$stamp" ] || { [ -n "$extras" ] && [ "${installed#* }" != "$extras" ]; }; then
  echo "installing robot_linearization${extras:+[$extras]} into .venv (again only when its sources change) ..." >&2
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet ".${extras:+[$extras]}"
  echo "$stamp $extras" > .venv/.robot_linearization-installed
fi
