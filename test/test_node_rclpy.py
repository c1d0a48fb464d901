"""The rclpy node end to end.  Needs a ROS 2 installation (source its setup.bash);
skipped elsewhere — the behaviour itself is tested without ROS in test_ros_*.py."""

import json
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed: ROS 2 node tests run on a ROS 2 machine")

from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

import robot_linearization as rl  # noqa: E402
from robot_linearization.robots import bundled_urdf_path  # noqa: E402
from robot_linearization.ros.messages import joint_state_message, matrix_from_message, odometry_message  # noqa: E402
from robot_linearization.ros.node import LinearizationNode, RclpyFactory  # noqa: E402


@pytest.fixture
def ros():
    rclpy.init()
    yield
    rclpy.try_shutdown()


def _spin_until(executor, condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    return condition()


def test_node_round_trip_on_ros(ros):
    from rclpy.executors import SingleThreadedExecutor
    urdf = open(bundled_urdf_path()).read()
    context_args = ["--ros-args", "-p", f"urdf_path:={bundled_urdf_path()}"]
    rclpy.try_shutdown()
    rclpy.init(args=context_args)
    node = LinearizationNode()
    client = rclpy.create_node("test_client")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    executor.add_node(client)
    received = {}
    client.create_subscription(Float64MultiArray, "/robot_linearization/A", lambda m: received.setdefault("A", m), 10)
    js_pub = client.create_publisher(JointState, "/joint_states", 10)
    odom_pub = client.create_publisher(Odometry, "/odom", 10)
    factory = RclpyFactory()
    model = rl.load_urdf(urdf)
    rng = np.random.default_rng(0)
    s, r = rng.normal(size=12), rng.normal(size=12)
    now = node.get_clock().now().nanoseconds
    odom_pub.publish(odometry_message(factory, now, "odom", "base_link", np.eye(4), np.zeros(6)))
    js_pub.publish(joint_state_message(factory, now, model.joint_names, s, r))
    assert _spin_until(executor, lambda: "A" in received)
    A = matrix_from_message(received["A"])
    expected = rl.linearize(model, rl.State(base_pose=np.eye(4), joint_positions=s, base_twist=np.zeros(6),
                                            joint_velocities=r))
    np.testing.assert_allclose(A, expected.A, rtol=1e-12, atol=1e-12)
    cli = client.create_client(Trigger, "/robot_linearization/validate")
    assert cli.wait_for_service(timeout_sec=5.0)
    future = cli.call_async(Trigger.Request())
    assert _spin_until(executor, future.done)
    assert future.result().success and json.loads(future.result().message)["passed"]
    node.destroy_node()
    client.destroy_node()
