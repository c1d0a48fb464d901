"""Does walk.launch.py keep real time?  For each robot: the launch (real time, not lockstep) is started, a
teleop's /cmd_vel drives it forward for ``--seconds`` of wall time after the controller's first command, and
this prints what an observer of the graph sees: simulated seconds per wall second, the share of joint states
the controller answered and the linearization node linearized, the controller's plans per simulated second
(its period asks for 100), its cycle time (/diagnostics), the distance walked and the lowest base height.
Needs ROS 2 with the package built (an overlay sourced), mujoco, and example-robot-data for solo12, anymal and
talos.  Not a test: run it on a quiet machine.

  python bench/walk_graph.py --robots bundled solo12 anymal talos --seconds 20
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from robot_linearization.msg import Linearization

SPEED = {"talos": 0.1}  # [m/s] forward; the quadrupeds 0.3


def measure(robot: str, seconds: float, start_timeout: float) -> dict:
    launch = subprocess.Popen(["ros2", "launch", "robot_linearization", "walk.launch.py", f"robot:={robot}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    node = rclpy.create_node(f"walk_graph_{robot}")
    seen: dict = {"joint_states": [], "efforts": 0, "outputs": 0, "odom": [], "diagnostics": {}}
    node.create_subscription(JointState, "/joint_states", lambda m: seen["joint_states"].append(
        m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec), 1000)
    node.create_subscription(Float64MultiArray, "/effort_controller/commands",
                             lambda m: seen.__setitem__("efforts", seen["efforts"] + 1), 1000)
    node.create_subscription(Linearization, "/robot_linearization/linearization",
                             lambda m: seen.__setitem__("outputs", seen["outputs"] + 1), 1000)
    node.create_subscription(Odometry, "/odom", lambda m: seen["odom"].append(
        (m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, m.pose.pose.position.x, m.pose.pose.position.z)), 1000)

    def diagnostics(message) -> None:
        for status in message.status:
            seen["diagnostics"][status.name] = (status.message, {v.key: v.value for v in status.values})

    node.create_subscription(DiagnosticArray, "/diagnostics", diagnostics, 100)
    command = node.create_publisher(Twist, "/cmd_vel", 10)
    try:
        deadline = time.monotonic() + start_timeout
        while not seen["efforts"] and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
        if not seen["efforts"]:
            return {"robot": robot, "error": f"no efforts within {start_timeout} s"}
        counts = {key: len(seen[key]) if isinstance(seen[key], list) else seen[key]
                  for key in ("joint_states", "efforts", "outputs", "odom")}
        begin, sent = time.monotonic(), 0.0
        while time.monotonic() - begin < seconds:
            if time.monotonic() - sent > 0.05:
                twist = Twist()
                twist.linear.x = SPEED.get(robot, 0.3)
                command.publish(twist)
                sent = time.monotonic()
            rclpy.spin_once(node, timeout_sec=0.01)
        wall = time.monotonic() - begin
        joint_states = len(seen["joint_states"]) - counts["joint_states"]
        odometry = seen["odom"][counts["odom"]:]
        simulated = odometry[-1][0] - odometry[0][0]
        controller = seen["diagnostics"].get("walking_controller", ("", {}))
        return {"robot": robot, "real_time_factor": simulated / wall,
                "answered": (seen["efforts"] - counts["efforts"]) / joint_states,
                "linearized": (seen["outputs"] - counts["outputs"]) / joint_states,
                "forward_m": odometry[-1][1] - odometry[0][1], "lowest_z_m": min(z for _, _, z in odometry),
                "start_z_m": odometry[0][2], "controller": controller[0],
                "cycle_ms": controller[1].get("cycle_time_ms"), "longest_ms": controller[1].get("longest_cycle_ms"),
                "fallbacks": controller[1].get("fallbacks"), "simulated_s": simulated}
    finally:
        node.destroy_node()
        os.killpg(launch.pid, signal.SIGINT)
        try:
            launch.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(launch.pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="+", default=["bundled", "solo12", "anymal", "talos"])
    parser.add_argument("--seconds", type=float, default=20.0, help="wall seconds of walking per robot")
    parser.add_argument("--start-timeout", type=float, default=300.0)
    args = parser.parse_args()
    rclpy.init()
    try:
        for robot in args.robots:
            result = measure(robot, args.seconds, args.start_timeout)
            print("  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()),
                  flush=True)
    finally:
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
