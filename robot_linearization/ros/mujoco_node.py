"""A legged robot on MuJoCo as a ROS 2 node (rclpy glue of ros/mujoco_robot.py): /robot_description
(latched), /joint_states, /odom and /clock out at ``publish_rate`` per simulated second, efforts in on
/effort_controller/commands, /diagnostics.  Real time by default (its timer on the wall clock; the other
nodes run on /clock, use_sim_time); with ``lockstep`` it simulates each period once the command answering
the last published state has come.  Run: ``ros2 run robot_linearization mujoco_robot --ros-args -p
robot:=solo12``."""

from __future__ import annotations

import time

from rclpy.node import Node

from .messages import diagnostic_array_message, string_message
from .mujoco_robot import MuJoCoRobot
from .node import LATCHED, RclpyFactory, declare_parameters, run
from .parameters import MUJOCO_ROBOT_PARAMETERS, mujoco_robot_settings

LOCKSTEP_POLL = 0.0005
"""[s] how often a lockstep robot looks for its answer."""
LOCKSTEP_PATIENCE = 0.5
"""[s, wall] how long a lockstep robot waits for the answer to one state: without it (a message lost, an input
the controller refused) it simulates one period on the last command and waits for the next answer."""


class MuJoCoRobotNode(Node):
    def __init__(self, **node_options):
        """node_options: rclpy.node.Node keywords (parameter_overrides, namespace …)."""
        super().__init__("mujoco_robot", **node_options)
        settings = mujoco_robot_settings(declare_parameters(self, MUJOCO_ROBOT_PARAMETERS))
        robot = settings.robot.walker()
        self.robot = MuJoCoRobot(robot, settings.simulation)
        self.settings = settings
        self.factory = RclpyFactory()
        from diagnostic_msgs.msg import DiagnosticArray
        from nav_msgs.msg import Odometry
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray, String

        with open(robot.urdf) as f:
            self.create_publisher(String, "robot_description", LATCHED).publish(string_message(self.factory, f.read()))
        self.outputs = {"clock": self.create_publisher(Clock, "/clock", 10),
                        "joint_states": self.create_publisher(JointState, "joint_states", 10),
                        "odom": self.create_publisher(Odometry, "odom", 10)}
        self.diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(Float64MultiArray, "effort_controller/commands", self._on_command, 10)
        self.refused: str | None = None
        self.answered = False  # (lockstep) a command came since the last publication
        self.free_running = False  # (lockstep) no answer came within lockstep_timeout: real time until one does
        self.published_at = self.due = self.last_answer = time.monotonic()
        self._publish()
        self.create_timer(LOCKSTEP_POLL if settings.lockstep else self.robot.period, self._tick)
        self.create_timer(settings.diagnostics_period, self._publish_diagnostics)
        self.get_logger().info(f"{robot.name} on MuJoCo, {1 / self.robot.period:g} states per simulated second, "
                               + ("lockstep" if settings.lockstep else "real time")
                               + f"; efforts on {self.resolve_topic_name('effort_controller/commands')} in the order "
                               + ", ".join(self.robot.joints))

    def _on_command(self, msg) -> None:
        problem = self.robot.command(msg.data)
        if problem and problem != self.refused:
            self.get_logger().warning(problem)  # (once per reason; /diagnostics counts on)
        self.refused = problem
        self.answered = self.answered or problem is None

    def _tick(self) -> None:
        now = time.monotonic()
        if self.settings.lockstep:
            if self.answered:
                self.free_running, self.last_answer = False, now
            elif not self.free_running:
                if now - self.published_at < LOCKSTEP_PATIENCE:
                    return
                if now - self.last_answer < self.settings.lockstep_timeout:
                    pass  # (an answer lost or refused: one period on the last command, still in lockstep)
                else:
                    self.free_running = True
                    self.due = now
                    self.get_logger().warning(f"lockstep: no effort command within {self.settings.lockstep_timeout} "
                                              "s; real time until commands come")
            if self.free_running and now < self.due:
                return
        self.due = max(self.due + self.robot.period, now - self.robot.period)
        self.robot.advance()
        self._publish()

    def _publish(self) -> None:
        self.answered = False
        self.published_at = time.monotonic()
        for topic, message in self.robot.messages(self.factory).items():
            self.outputs[topic].publish(message)

    def _publish_diagnostics(self) -> None:
        ns = round(self.robot.time * 1e9)
        self.diagnostics.publish(diagnostic_array_message(self.factory, self.robot.diagnostics(), ns))


def main(args=None) -> None:
    raise SystemExit(run(MuJoCoRobotNode, args))
