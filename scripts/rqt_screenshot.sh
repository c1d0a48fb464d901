#!/usr/bin/env bash
# A screenshot of rqt's linearization view on a real run (the pictures in docs/ were taken so):
#   bash scripts/rqt_screenshot.sh OUT.png quadruped     # the demo: bundled quadruped on its four feet
#   bash scripts/rqt_screenshot.sh OUT.png talos         # talos (example-robot-data) on two 6d soles, A_d on
# in an environment where ROS 2 (with rqt) and this package's overlay are sourced, and `python3`
# has the package's dependencies (scripts/test.sh's .venv-ros-<distro>: put its bin/ first on PATH).
# It starts Xvfb, the robot and the node, and rqt with the view (standalone), waits until the view
# has drawn A, sizes the window to the screen, and writes the screen to OUT.png (refusing to
# overwrite a file); everything it started is stopped at the end, whatever happens.
set -euo pipefail
out=${1:?usage: rqt_screenshot.sh OUT.png quadruped|talos [matrix]}
robot=${2:?usage: rqt_screenshot.sh OUT.png quadruped|talos [matrix]}
matrix=${3:-A}
[ ! -e "$out" ] || { echo "rqt_screenshot.sh: $out exists; not overwritten" >&2; exit 2; }
for program in Xvfb xdotool import rqt ros2 python3; do
  command -v $program > /dev/null || { echo "rqt_screenshot.sh: needs $program" >&2; exit 2; }
done
display=":$((30 + RANDOM % 40))"
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-$((RANDOM % 80 + 20))}
log=$(mktemp -d)
pids=()
start() {  # start "$log/<name>.log" command...: in a process group of its own (ros2 run/launch have children)
  local output=$1; shift
  setsid "$@" > "$output" 2>&1 &
  pids+=($!)
}
cleanup() {  # Ctrl-C to each group, as a terminal would; what is still there after 10 s is killed
  for pid in "${pids[@]}"; do kill -INT -- "-$pid" 2> /dev/null || true; done
  for _ in $(seq 20); do
    alive=0; for pid in "${pids[@]}"; do kill -0 -- "-$pid" 2> /dev/null && alive=1; done
    [ $alive = 1 ] || break; sleep 0.5
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true; done
  rm -rf "$log"
}
trap cleanup EXIT
start /dev/null Xvfb "$display" -screen 0 1600x1000x24 -nolisten tcp
case $robot in
  quadruped)
    start "$log/robot.log" ros2 launch robot_linearization demo.launch.py ;;
  talos)
    urdf=$(python3 -c "import sysconfig, os; print(os.path.join(sysconfig.get_paths()['purelib'], 'cmeel.prefix',
      'share', 'example-robot-data', 'robots', 'talos_data', 'robots', 'talos_reduced.urdf'))")
    soles="left_sole_link:6d, right_sole_link:6d"
    start "$log/robot.log" ros2 run robot_linearization simulated_robot --ros-args -p urdf_path:="$urdf" \
      -p contacts:="$soles"
    start "$log/node.log" ros2 run robot_linearization linearization_node --ros-args -p urdf_path:="$urdf" \
      -p contacts:="$soles" -p use_effort:=true -p discretization_dt:=0.002 -p sole_size:="[0.2, 0.1]" ;;
  *) echo "rqt_screenshot.sh: robot must be quadruped or talos, got '$robot'" >&2; exit 2 ;;
esac
start "$log/rqt.log" env DISPLAY="$display" python3 "$(command -v rqt)" --clear-config --standalone \
  robot_linearization/Linearization --args --node /robot_linearization --matrix "$matrix"
for _ in $(seq 240); do grep -q "drawing /robot_linearization/$matrix:" "$log/rqt.log" && break; sleep 0.5; done
grep "drawing /robot_linearization/$matrix:" "$log/rqt.log" \
  || { echo "rqt_screenshot.sh: the view drew nothing in 120 s:" >&2; tail -20 "$log/rqt.log" >&2; exit 1; }
window=$(DISPLAY=$display xdotool search --name "Linearization" | head -1)
DISPLAY=$display xdotool windowmove "$window" 0 0 windowsize "$window" 1600 1000
DISPLAY=$display xdotool mousemove 430 790  # a cell of the dynamics rows: its name and value below
sleep 2  # a few more frames at the new size, and the tooltip
DISPLAY=$display import -window root "$out.part.png" && mv "$out.part.png" "$out"
echo "wrote $out"
