"""launch_testing: walk.launch.py with the bundled robot in lockstep brings up the robot on MuJoCo, the walking
controller and the linearization node.  A teleop's /cmd_vel of 0.3 m/s forward for 4 s of simulated time
moves the base forward ≥ 0.9 m, never below half its height; the linearization node's output at a state
the robot published equals rl.linearize at that state with the contact set the controller published on
/contacts; killing the controller (SIGKILL) puts the robot's efforts on the damping hold within the
simulator's command timeout.  Needs ROS 2 and mujoco; skipped elsewhere."""

import subprocess
import time
import unittest

import numpy as np
import pytest

pytest.importorskip("launch_testing", reason="launch_testing is not installed: needs ROS 2")
rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed: needs ROS 2")
pytest.importorskip("mujoco", reason="the MuJoCo robot needs mujoco (pip install 'robot_linearization[mujoco]')")

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from geometry_msgs.msg import Twist  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.qos import QoSProfile, DurabilityPolicy  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402

import robot_linearization as rl  # noqa: E402
from robot_linearization.contacts import format_contacts  # noqa: E402
from robot_linearization.msg import Linearization  # noqa: E402
from robot_linearization.ros.messages import stamp_to_ns  # noqa: E402
from robot_linearization.spatial import quaternion_pose  # noqa: E402

HOLD_DAMPING, COMMAND_TIMEOUT, PERIOD_NS = 2.0, 0.2, 2_000_000  # the simulator's defaults (MUJOCO_ROBOT_PARAMETERS)


@pytest.mark.launch_test
def generate_test_description():
    walk = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(get_package_share_directory("robot_linearization") + "/launch/walk.launch.py"),
        launch_arguments={"robot": "bundled", "lockstep": "true"}.items())
    return launch.LaunchDescription([walk, launch_testing.actions.ReadyToTest()])


def pose_of(pose) -> np.ndarray:
    q, p = pose.orientation, pose.position
    return quaternion_pose(q.w, q.x, q.y, q.z, (p.x, p.y, p.z))


class Probe:
    """What a teleop and an observer see of the graph."""

    def __init__(self):
        self.node = node = rclpy.create_node("walk_probe")
        self.odometry, self.joint_states, self.outputs, self.contacts, self.efforts = {}, {}, [], [], []
        self.description = None
        self.newest_odometry = self.newest_joint_state = -1  # [ns] the stamps of the newest received
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        # (queues deep enough that a probe behind a free-running simulator, on a busy machine, loses no state:
        # the hold's check needs every joint state around the kill)
        node.create_subscription(Odometry, "/odom", self._on_odometry, 10_000)
        node.create_subscription(JointState, "/joint_states", self._on_joint_state, 10_000)
        node.create_subscription(Linearization, "/robot_linearization/linearization", self.outputs.append, 100)
        node.create_subscription(String, "/contacts", lambda m: self.contacts.append(m.data), latched)
        node.create_subscription(String, "/robot_description", lambda m: setattr(self, "description", m.data), latched)
        node.create_subscription(Float64MultiArray, "/effort_controller/commands", self.efforts.append, 100)
        self.cmd_vel = node.create_publisher(Twist, "/cmd_vel", 10)

    def _on_odometry(self, message) -> None:
        stamp = stamp_to_ns(message.header.stamp)
        self.odometry[stamp], self.newest_odometry = message, max(self.newest_odometry, stamp)

    def _on_joint_state(self, message) -> None:
        stamp = stamp_to_ns(message.header.stamp)
        self.joint_states[stamp], self.newest_joint_state = message, max(self.newest_joint_state, stamp)

    def spin_until(self, done, seconds: float, forward: float | None = None) -> bool:
        deadline, sent = time.monotonic() + seconds, 0.0
        while not done() and time.monotonic() < deadline:
            if forward is not None and time.monotonic() - sent > 0.05:
                command = Twist()
                command.linear.x = forward
                self.cmd_vel.publish(command)
                sent = time.monotonic()
            rclpy.spin_once(self.node, timeout_sec=0.01)
        return done()

    def newest(self, by_stamp: dict):
        return by_stamp[max(by_stamp)] if by_stamp else None


class TestWalk(unittest.TestCase):
    def test_walks_on_cmd_vel_linearizes_what_it_walks_and_holds_when_the_controller_dies(self):
        rclpy.init()
        try:
            probe = Probe()
            # the first start after an install compiles the kernels and the MPC's (≈ 1–2 min on 2 cores)
            self.assertTrue(probe.spin_until(lambda: probe.efforts and probe.outputs, 300.0),
                            "no efforts from the controller and no ~/linearization within 300 s")
            start = probe.newest(probe.odometry)
            t0, x0, z0 = stamp_to_ns(start.header.stamp), start.pose.pose.position.x, start.pose.pose.position.z
            walked = lambda: probe.newest_odometry - t0 >= 4e9  # noqa: E731
            self.assertTrue(probe.spin_until(walked, 240.0, forward=0.3), "4 s of simulated time took > 240 s")
            after = [m for stamp, m in probe.odometry.items() if stamp >= t0]
            forward = probe.newest(probe.odometry).pose.pose.position.x - x0
            lowest = min(m.pose.pose.position.z for m in after)
            self.assertGreaterEqual(forward, 0.9, f"forward {forward:.3f} m in 4 s at 0.3 m/s")
            self.assertGreater(lowest, 0.5 * z0, f"the base fell to {lowest:.3f} m (stood at {z0:.3f} m)")
            self._check_linearizations(probe)
            self._check_hold_after_the_controller_dies(probe)
            probe.node.destroy_node()
        finally:
            rclpy.try_shutdown()

    def _check_linearizations(self, probe):
        """Outputs away from touchdowns: the state is one the robot published (bit for bit), the contacts one
        the controller published, and A, B, M⁻¹ are rl.linearize's there."""
        self.assertIsNotNone(probe.description)
        model = rl.load_urdf(probe.description)
        checked = set()
        for out in probe.outputs[-200:]:
            stamp = stamp_to_ns(out.header.stamp)
            joint_state, odometry = probe.joint_states.get(stamp), probe.odometry.get(stamp)
            if out.touchdown or joint_state is None or odometry is None:
                continue
            self.assertIn(out.contacts, [format_contacts(text) for text in probe.contacts])
            self.assertEqual(list(out.joint_positions), list(joint_state.position))
            self.assertEqual(list(out.joint_efforts), list(joint_state.effort))
            H = pose_of(odometry.pose.pose)
            self.assertTrue(np.allclose(pose_of(out.base_pose), H, rtol=0, atol=1e-14))  # (its quaternion again)
            twist = odometry.twist.twist
            v = np.array([twist.linear.x, twist.linear.y, twist.linear.z, twist.angular.x, twist.angular.y,
                          twist.angular.z])
            state = rl.State(base_pose=H, joint_positions=np.array(joint_state.position), base_twist=v,
                             joint_velocities=np.array(joint_state.velocity))
            lin = rl.linearize(model, state, np.array(joint_state.effort), contacts=out.contacts, kernel="generic")
            size = len(out.state_labels)
            for name, ours, theirs in (("A", lin.A, out.state_matrix), ("B", lin.B, out.input_matrix),
                                       ("M_inv", lin.M_inv, out.inverse_mass_matrix)):
                theirs = np.reshape(theirs, ours.shape)
                error = np.abs(ours - theirs).max() / max(np.abs(ours).max(), 1.0)
                self.assertLess(error, 1e-9, f"{name} at {stamp} ns with [{out.contacts}]: {error:.1e}")
            self.assertEqual(lin.A.shape, (size, size))
            checked.add(out.contacts)
            if len(checked) >= 2:
                break
        self.assertGreaterEqual(len(checked), 2, f"compared outputs with {len(checked)} contact sets only")

    def _check_hold_after_the_controller_dies(self, probe):
        """SIGKILL the controller: its last command stays applied for command_timeout of simulated time (+ the
        period it is shown after), then each joint state's effort is −d q̇ of the state before it, within the
        effort limits, from then on."""
        subprocess.run(["pkill", "-KILL", "-f", "robot_linearization/walking_controller"], check=True)
        killed = probe.newest_joint_state
        self.assertTrue(probe.spin_until(lambda: probe.newest_joint_state - killed > 1.0e9, 60.0),
                        "the simulation did not run on without its controller")
        names = list(probe.joint_states[killed].name)
        limits = rl.urdf.effort_limits(probe.description, names)
        effort = lambda stamp: np.asarray(probe.joint_states[stamp].effort)  # noqa: E731

        def holding(stamp: int) -> bool:
            before = probe.joint_states.get(stamp - PERIOD_NS)
            return before is not None and np.allclose(
                effort(stamp), np.clip(-HOLD_DAMPING * np.asarray(before.velocity), -limits, limits),
                rtol=1e-12, atol=1e-12)

        stamps = sorted(s for s in probe.joint_states if s > killed - 500_000_000)
        held = [s for s in stamps if holding(s)]
        self.assertTrue(held, "no joint state with the damping hold's efforts")
        self.assertEqual(held, [s for s in stamps if s >= held[0] and s - PERIOD_NS in probe.joint_states],
                         "the hold did not last")
        # the last command: the efforts just before the hold, unchanged back to the state it was first applied
        first = max(s for s in stamps if s < held[0])
        while first - PERIOD_NS in probe.joint_states and np.array_equal(effort(first - PERIOD_NS), effort(first)):
            first -= PERIOD_NS
        self.assertIn(first - PERIOD_NS, probe.joint_states, "a joint state before the last command was missed")
        applied = (held[0] - first) * 1e-9
        self.assertGreaterEqual(applied, COMMAND_TIMEOUT - 1e-9, "the hold came before the command was stale")
        self.assertLessEqual(applied, COMMAND_TIMEOUT + 0.02 + 1e-9, "the hold came late")
        self.assertTrue(np.isfinite(probe.joint_states[stamps[-1]].position).all())


@launch_testing.post_shutdown_test()
class TestWalkEndsCleanly(unittest.TestCase):
    def test_the_simulator_and_the_linearization_node_exit_0(self, proc_info):
        for program in ("mujoco_robot", "linearization_node"):
            launch_testing.asserts.assertExitCodes(proc_info, process=program)  # (the controller's: -9)
