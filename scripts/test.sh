#!/usr/bin/env bash
# Run the test suite in a local virtualenv (.venv), installing what it needs; then,
# where a ROS 2 installation is, the rclpy/launch/rosbag2 tests against it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh test  # (re)installs only when the sources changed
# The pytest executable (unlike `python -m pytest`) does not put the source tree on
# sys.path, so the tests exercise the installed package and packaging mistakes show.
# The files are shared among up to 4 workers (pytest-xdist; one per core), each file on one worker
# so that a module's fixture (a walk) is made once; -n 0 (or any -n given here) overrides.
cores=$(nproc 2>/dev/null || echo 1)
workers=(-n $((cores < 4 ? cores : 4)) --dist loadfile)
.venv/bin/pytest -q -p no:cacheprovider "${workers[@]}" test "$@"
# The public-API tests, and the node's compiled cycle on corrupted messages, once more with
# numba's bounds checking on, compiled into a cache of their own (the fast kernels' cache is
# untouched): a kernel that indexes outside its arrays raises IndexError there instead of
# returning garbage.  In one process: both files need the same kernels, which two workers would each
# compile (4.9 min on two workers, 3.8 in one, in two runs of this script on two cores).
echo "public-API and compiled-cycle tests with numba's bounds checking (NUMBA_BOUNDSCHECK=1):"
NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR=$PWD/.venv/numba-boundscheck-cache \
  .venv/bin/pytest -q -p no:cacheprovider test/test_public_arguments.py test/test_compiled_cycle.py

# ---- the wheel, alone ---------------------------------------------------------------
# python -m build's sdist and wheel; the wheel installed in a clean venv without the source
# tree runs the demo (linearization, replay, validation).
bash scripts/wheel_check.sh

# ---- the newest example-robot-data, alone ---------------------------------------------
# walker() and the walking example where the newest example-robot-data is installed without what
# brings its loaders module along (crocoddyl, example-robot-data-loaders): 6.0 ships the robots
# without the module, and the walkers must be found all the same.
echo "the walkers with the newest example-robot-data alone (.venv-data):"
(VENV=.venv-data; source scripts/venv.sh mpc
 .venv-data/bin/python -m pip install --quiet --upgrade "pytest>=7" example-robot-data
 ROBOT_LINEARIZATION_TEST_DATA_ALONE=1 .venv-data/bin/pytest -q -p no:cacheprovider test/test_example_robot_data.py)

# ---- Python 3.10 (Ubuntu 22.04's, under ROS 2 Humble) ------------------------------
# The same suite in a venv of its own, wherever a python3.10 is found: on PATH, as
# $PYTHON310, or in pyenv's versions.  Without one this says so.
python310=""
for candidate in ${PYTHON310:-} python3.10 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10*/bin/python3.10; do
  # (a pyenv shim on PATH answers to the name without being that Python: ask it)
  if "$candidate" -c "import sys; sys.exit(sys.version_info[:2] != (3, 10))" 2>/dev/null; then
    python310=$(command -v "$candidate"); break
  fi
done
if [ -n "$python310" ]; then
  echo "the suite on $("$python310" --version) ($python310):"
  (VENV=.venv-py310 VENV_PYTHON=$python310; source scripts/venv.sh test
   .venv-py310/bin/pytest -q -p no:cacheprovider "${workers[@]}" test "$@")
else
  echo "the suite on Python 3.10: NOT RUN - no python3.10 found (on PATH, \$PYTHON310 or pyenv)"
fi

# ---- the ROS 2 tests -------------------------------------------------------------
# Found in this order: an environment already sourced (rclpy importable), $ROS_SETUP (to
# choose one of several: ROS_SETUP=/opt/ros/humble/setup.bash bash scripts/test.sh),
# /opt/ros/<distro>/setup.bash (a binary install), /opt/ros2/setup_env.sh and
# /opt/ros2-humble/setup_env.sh (from-source builds, see README).  Without one they are
# skipped, and this says so.  Each distribution gets its own venv and overlay
# (.venv-ros-<distro>, .ros_ws-<distro>).
ROS_TESTS=(test/test_node_rclpy.py test/test_launch_demo.py test/test_launch_robot_stack.py test/test_launch_rqt.py test/test_launch_walk.py
           test/test_bag_rosbag2.py test/test_cpp_client.py)
ros_setup=""
if [ -n "${ROS_DISTRO:-}" ] && python3 -c "import rclpy" 2>/dev/null; then
  ros_setup="(already sourced)"
elif [ -n "${ROS_SETUP:-}" ]; then
  ros_setup=$ROS_SETUP
else
  for candidate in /opt/ros/*/setup.bash /opt/ros2/setup_env.sh /opt/ros2-humble/setup_env.sh; do
    if [ -f "$candidate" ]; then ros_setup=$candidate; break; fi
  done
fi
if [ -z "$ros_setup" ]; then
  echo "ROS 2 tests (${ROS_TESTS[*]}): NOT RUN - no ROS 2 installation found (sourced, \$ROS_SETUP," \
       "/opt/ros/<distro>/setup.bash, /opt/ros2/setup_env.sh or /opt/ros2-humble/setup_env.sh);" \
       "they were skipped above"
  exit 0
fi
(
  set +u
  # shellcheck disable=SC1090
  [ "$ros_setup" = "(already sourced)" ] || source "$ros_setup"
  set -u
  distro=${ROS_DISTRO:?the ROS 2 setup script set no ROS_DISTRO}
  venv=.venv-ros-$distro workspace=.ros_ws-$distro
  echo "ROS 2 tests: running against $ros_setup (ROS $distro, $(python3 --version))"
  # A venv over ROS's own Python (and, if that is itself a venv, over its packages)
  # holding this package's dependencies: ROS's installation is never modified.
  ros_python=$(command -v python3)
  if [ ! -x $venv/bin/python ]; then
    "$ros_python" -m venv --system-site-packages "$venv"
    "$ros_python" - "$venv" <<'EOF'
import pathlib, sys, sysconfig
if sys.prefix != sys.base_prefix:  # ROS's Python is a venv: make its packages visible too
    target = pathlib.Path(sys.argv[1], "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                          "site-packages", "ros_python_venv.pth")
    target.write_text(sysconfig.get_paths()["purelib"] + "\n")
EOF
  fi
  # The package, pytest (launch_testing's plugin needs pytest < 8) and the example robots' URDFs
  # (example-robot-data: data only): the ROS tests use no oracle, and the oracles' wheels
  # (Pinocchio 4) would pull numpy 2 onto a distribution built on numpy 1 (Humble).  numpy stays the one ROS's own Python has: its rosidl modules were compiled
  # against it and its users run it.  pip's output only when it fails.
  ros_numpy=$("$ros_python" -c "import numpy; print(numpy.__version__)" 2>/dev/null || true)
  $venv/bin/python -m pip install --quiet ".[mpc,mujoco]" "pytest<8" "example-robot-data>=4.1" ${ros_numpy:+"numpy==$ros_numpy"} > $venv/pip.log 2>&1 \
    || { cat $venv/pip.log; exit 1; }
  (venv_python=$PWD/$venv/bin/python; cd / && "$venv_python" -m robot_linearization.precompile)
  # Build and install this package and the tests' C++ client into an overlay, from a copy
  # (scripts/overlay_sources.py), so that `ros2 run/launch` find the nodes and the interfaces
  # (rosidl); colcon and CMake run under that venv so the nodes' scripts use the Python that has numba.
  $venv/bin/python scripts/overlay_sources.py "$workspace/src" "$workspace/build"
  # (a ROS 2 without rclcpp, such as the first phase of the from-source build, cannot build the C++
  # client: only this package is built then, and the client's test is not run, as said at the end)
  skip=()
  ros2 pkg prefix rclcpp > /dev/null 2>&1 || skip=(--packages-skip robot_linearization_test_client)
  $venv/bin/python -c "import sys; from colcon_core.command import main; sys.argv[0] = 'colcon'; sys.exit(main())" \
    --log-base "$workspace/log" build --base-paths "$workspace/src" --build-base "$workspace/build" \
    --install-base "$workspace/install" --event-handlers console_direct- "${skip[@]}" \
    --cmake-args -DPython3_EXECUTABLE="$PWD/$venv/bin/python" -DPYTHON_EXECUTABLE="$PWD/$venv/bin/python" \
    -DBUILD_TESTING=ON > "$workspace.log" 2>&1 || { cat "$workspace.log"; exit 1; }
  set +u
  # shellcheck disable=SC1091
  source "$workspace/install/local_setup.bash"
  set -u
  export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-$((RANDOM % 80 + 20))}  # keep off other graphs on this machine
  missing=()
  for package in robot_state_publisher joint_state_publisher rosbag2_py; do
    ros2 pkg prefix "$package" > /dev/null 2>&1 || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] || echo "ROS 2 packages not installed: ${missing[*]}: the tests that need them skip"
  # launch_testing counts a launch test whose cases all skipped themselves as one passed item (its
  # LaunchTestItem fails on failures only): a launch test whose packages are missing is not run,
  # and the last lines say it was skipped; the other tests skip through pytest itself (-rs).
  tests=("${ROS_TESTS[@]}")
  not_run=()
  if ! { ros2 pkg prefix robot_state_publisher && ros2 pkg prefix joint_state_publisher; } > /dev/null 2>&1; then
    not_run+=("test/test_launch_robot_stack.py|robot_state_publisher and joint_state_publisher")
  fi
  if [ ${#skip[@]} -gt 0 ]; then
    not_run+=("test/test_cpp_client.py|rclcpp, which the C++ client is built on")
  fi
  if ! { ros2 pkg prefix rqt_gui_py && command -v Xvfb && command -v import; } > /dev/null 2>&1; then
    not_run+=("test/test_launch_rqt.py|rqt (rqt_gui_py), Xvfb and ImageMagick's import")
  fi
  for entry in "${not_run[@]}"; do
    kept=()
    for test in "${tests[@]}"; do [ "$test" = "${entry%%|*}" ] || kept+=("$test"); done
    tests=("${kept[@]}")
  done
  # -P: the source tree is not put on sys.path, so the installed package is what runs
  status=0
  $venv/bin/python -P -m pytest -q -p no:cacheprovider -rs "${tests[@]}" || status=$?
  for entry in "${not_run[@]}"; do
    echo "SKIPPED ${entry%%|*} (not run, not counted above): it needs ${entry#*|}"
  done
  exit $status
)
