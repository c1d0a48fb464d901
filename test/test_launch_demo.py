"""launch_testing: demo.launch.py brings up the simulated robot and the node, the node
publishes ~/linearization, the robot's trot reaches the node (its schedule on /contacts,
the typed message's contact labels following it), and both end cleanly when the launch
shuts them down (SIGINT, as Ctrl-C).
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
from std_msgs.msg import String  # noqa: E402

from robot_linearization.msg import Linearization  # noqa: E402


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
            node.create_subscription(Linearization, "/robot_linearization/linearization", received.append, 10)
            # the first start after an install compiles the kernels (≈ 30 s on 2 cores)
            deadline = time.monotonic() + 120.0
            while not received and time.monotonic() < deadline:
                rclpy.spin_once(node, timeout_sec=0.1)
            self.assertTrue(received, "no ~/linearization within 120 s")
            self.assertEqual(len(received[0].state_matrix), len(received[0].state_labels) ** 2)
            # the trot: two feet, four, the other two … on /contacts, and the node's contact labels follow
            schedule = []
            node.create_subscription(String, "/contacts", lambda m: schedule.append(m.data), 10)
            pairs = {"front_left_foot, hind_right_foot", "front_right_foot, hind_left_foot"}
            feet = lambda: {sum(label.endswith(":fz") for label in m.contact_labels) for m in received}  # noqa: E731
            deadline = time.monotonic() + 10.0
            while (not pairs & set(schedule) or not {2, 4} <= feet()) and time.monotonic() < deadline:
                rclpy.spin_once(node, timeout_sec=0.1)
            self.assertTrue(pairs & set(schedule), f"/contacts: {schedule}")
            self.assertTrue({2, 4} <= feet(), f"feet in contact per message: {feet()}")
            node.destroy_node()
        finally:
            rclpy.try_shutdown()


@launch_testing.post_shutdown_test()
class TestDemoEndsCleanly(unittest.TestCase):
    def test_both_programs_exit_0_when_the_launch_ends(self, proc_info):
        for program in ("simulated_robot", "linearization_node"):
            launch_testing.asserts.assertExitCodes(proc_info, process=program)
