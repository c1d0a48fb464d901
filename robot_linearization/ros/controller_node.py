"""The walking controller as a ROS 2 node (rclpy glue of ros/walking_control.py): /joint_states, /odom and
/cmd_vel in; the efforts on /effort_controller/commands, the contact set on /contacts (latched, as the
linearization node reads it), the planned base path on ~/planned_path and /diagnostics out.  Parameters:
parameters.CONTROLLER_PARAMETERS, and ``mpc.<setting>`` for the MPC's (from a parameters YAML file).
Run: ``ros2 run robot_linearization walking_controller --ros-args -p robot:=solo12``."""

from __future__ import annotations

import dataclasses

from rclpy.node import Node
from rclpy.qos import QoSProfile

from ..walking.robots import walker_gait
from .messages import diagnostic_array_message
from .node import INPUT_QOS, LATCHED, RclpyFactory, declare_parameters, run
from .parameters import CONTROLLER_PARAMETERS, controller_settings, mpc_settings
from .walking_control import WalkingControl

NEWEST = QoSProfile(depth=1, reliability=INPUT_QOS.reliability, durability=INPUT_QOS.durability)

IGNORED = ("use_sim_time", "start_type_description_service")  # rclpy's own parameters


class WalkingControllerNode(Node):
    def __init__(self, **node_options):
        """node_options: rclpy.node.Node keywords (parameter_overrides, namespace …)."""
        super().__init__("walking_controller", automatically_declare_parameters_from_overrides=True,
                         **node_options)
        values = declare_parameters(self, CONTROLLER_PARAMETERS)
        overrides = {name: parameter.value for name, parameter in self.get_parameters_by_prefix("mpc").items()}
        others = sorted(name for name in self.get_parameters_by_prefix("") if name not in CONTROLLER_PARAMETERS
                        and not name.startswith("mpc.") and name not in IGNORED and not name.startswith("qos_"))
        values.update({name: self.get_parameter(name).value for name in others})  # (named as unknown below)
        settings = controller_settings(values)
        robot = settings.robot.walker()
        robot = dataclasses.replace(robot, gait=walker_gait(robot, settings.gait),
                                    settings=mpc_settings(robot.settings, overrides))
        self.control = WalkingControl(robot, settings.controller, settings.inputs)
        warming = self.control.controller.warm_up()  # (before the first state: no cycle is cold)
        self.factory = RclpyFactory()
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import Twist
        from nav_msgs.msg import Odometry, Path
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray, String

        self.publishers_by_output = {
            "efforts": self.create_publisher(Float64MultiArray, "effort_controller/commands", 10),
            "contacts": self.create_publisher(String, "contacts", LATCHED),
            "path": self.create_publisher(Path, "~/planned_path", 1)}
        self.diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_subscription(Odometry, "odom", self.control.on_odometry, INPUT_QOS)
        # (the newest joint state only: a controller that fell behind answers the state the robot is in now)
        self.create_subscription(JointState, "joint_states", self._on_joint_state, NEWEST)
        self.create_subscription(Twist, "cmd_vel", self._on_velocity_command, 10)
        self.create_timer(settings.diagnostics_period, self._publish_diagnostics)
        self.get_logger().info(f"walking {robot.name} ({robot.gait.name}; warmed up in {warming:.1f} s); follows "
                               "cmd_vel, commands "
                               f"{self.resolve_topic_name('effort_controller/commands')}")

    def now_ns(self) -> int:
        return self.get_clock().now().nanoseconds

    def _on_velocity_command(self, msg) -> None:
        self.control.on_velocity_command(msg, self.now_ns())

    def _on_joint_state(self, msg) -> None:
        for output, message in self.control.on_joint_state(msg, self.now_ns(), self.factory).items():
            self.publishers_by_output[output].publish(message)

    def _publish_diagnostics(self) -> None:
        now = self.now_ns()
        self.diagnostics.publish(diagnostic_array_message(self.factory, self.control.diagnostics(now), now))


def main(args=None) -> None:
    raise SystemExit(run(WalkingControllerNode, args))
