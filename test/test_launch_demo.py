"""launch_testing: demo.launch.py brings up the simulated robot and the node, the node
publishes A, the robot's trot reaches the node (its schedule on /contacts, the node's
~/contact_labels following it), and both end cleanly when the launch shuts them down
(SIGINT, as Ctrl-C).
Runs on a ROS 2 machine (``launch_test`` or pytest with launch_pytest); skipped elsewhere."""

import time
import unittest

import pytest

pytest.importorskip("launch_testing", reason="launch_testing is not installed: needs ROS 2")
rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed: needs ROS 2")

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402


@pytest.mark.launch_test
def generate_test_description():
    demo = launch.actions.IncludeLaunchDescription(PythonLaunchDescriptionSource(
        get_package_share_directory("robot_linearization") + "/launch/demo.launch.py"))
    return launch.LaunchDescription([demo, launch_testing.actions.ReadyToTest()])


class TestDemoPublishesA(unittest.TestCase):
    def test_a_arrives(self):
        rclpy.init()
        try:
            node = rclpy.create_node("demo_probe")
            received = []
            node.create_subscription(Float64MultiArray, "/robot_linearization/A", received.append, 10)
            # the first start after an install compiles the kernels (≈ 30 s on 2 cores)
            deadline = time.monotonic() + 120.0
            while not received and time.monotonic() < deadline:
                rclpy.spin_once(node, timeout_sec=0.1)
            self.assertTrue(received, "no A within 120 s")
            dims = received[0].layout.dim
            self.assertEqual((dims[0].label, dims[1].label), ("rows", "cols"))
            # the trot: two feet, four, the other two … on /contacts, and the node's contact labels follow
            schedule, labels = [], []
            latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            node.create_subscription(String, "/contacts", lambda m: schedule.append(m.data), 10)
            node.create_subscription(String, "/robot_linearization/contact_labels", lambda m: labels.append(m.data),
                                     latched)
            pairs = {"front_left_foot, hind_right_foot", "front_right_foot, hind_left_foot"}
            deadline = time.monotonic() + 10.0
            while (not pairs & set(schedule) or len({label.count(":fz") for label in labels}) < 2) \
                    and time.monotonic() < deadline:
                rclpy.spin_once(node, timeout_sec=0.1)
            self.assertTrue(pairs & set(schedule), f"/contacts: {schedule}")
            self.assertEqual({label.count(":fz") for label in labels}, {2, 4}, f"contact_labels: {labels}")
            node.destroy_node()
        finally:
            rclpy.try_shutdown()


@launch_testing.post_shutdown_test()
class TestDemoEndsCleanly(unittest.TestCase):
    def test_both_programs_exit_0_when_the_launch_ends(self, proc_info):
        for program in ("simulated_robot", "linearization_node"):
            launch_testing.asserts.assertExitCodes(proc_info, process=program)
