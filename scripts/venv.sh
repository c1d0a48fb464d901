# Sourced by demo.sh and test.sh: make a venv ($VENV, default .venv, made with $VENV_PYTHON,
# default python3) hold this package (with the extras in $1, a comma list), reinstalling it only when its
# sources or setup files changed: a reinstall invalidates the compiled kernels' cache, so the
# demo and the tests share one compile.
set -euo pipefail
extras=${1:-}
venv=${VENV:-.venv}
stamp=$( (cat setup.py setup.cfg pyproject.toml package.xml;
          find robot_linearization robot_linearization_rqt.py \( -name '*.py' -o -name '*.urdf' \) | LC_ALL=C sort | xargs cat) \
        | sha256sum | cut -d' ' -f1)
installed=$(cat "$venv/.robot_linearization-installed" 2>/dev/null || true)   # "<stamp> <extras>"
if [ ! -x "$venv/bin/python" ]; then
  "${VENV_PYTHON:-python3}" -m venv "$venv"
  installed=""
fi
if [ "${installed%% *}" != "$stamp" ]; then
  echo "installing robot_linearization${extras:+[$extras]} into $venv (again only when its sources change) ..." >&2
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet ".${extras:+[$extras]}"
  # the kernels compiled now, not at first use; from / so that the installed package is the one imported
  (venv_python=$PWD/$venv/bin/python; cd / && "$venv_python" -m robot_linearization.precompile)
  echo "$stamp $extras" > "$venv/.robot_linearization-installed"
else
  # same sources: install only the requirements of extras not installed yet (a comma list), not the package
  had=",${installed#* },"
  missing=""
  for extra in ${extras//,/ }; do
    case "$had" in *",$extra,"*) ;; *) missing="$missing,$extra" ;; esac
  done
  if [ -n "$missing" ]; then
    echo "installing the [${missing#,}] extras into $venv ..." >&2
    "$venv/bin/python" - "${missing#,}" > "$venv/extras.txt" <<'PY'
import importlib.metadata, re, sys
wanted = sys.argv[1].split(",")
for requirement in importlib.metadata.requires("robot_linearization") or []:
    extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", requirement)
    if extra and extra.group(1) in wanted:
        print(requirement.split(";")[0].strip())
PY
    "$venv/bin/python" -m pip install --quiet -r "$venv/extras.txt"
    all=${installed#* }${missing}
    echo "$stamp ${all#,}" > "$venv/.robot_linearization-installed"
  fi
fi
