"""Simulated robot for the demo launch: publishes /robot_description (latched),
/joint_states and /odom from :class:`~robot_linearization.ros.simulation.Simulation`,
in real time.  Run: ``ros2 run robot_linearization simulated_robot``."""

from __future__ import annotations

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node

from ..robots import bundled_urdf_path
from ..urdf import load_urdf
from .messages import joint_state_message, odometry_message, string_message
from .node import LATCHED, RclpyFactory, run
from .simulation import Simulation


class SimulatedRobot(Node):
    def __init__(self):
        super().__init__("simulated_robot")
        descriptor = ParameterDescriptor
        self.declare_parameter("urdf_path", "", descriptor(description="URDF; empty: the bundled quadruped"))
        self.declare_parameter("floating_base", True, descriptor(description="simulate a free-floating base"))
        self.declare_parameter("dt", 0.002, descriptor(description="simulation step [s]"))
        self.declare_parameter("publish_rate", 100.0, descriptor(description="joint_states/odom rate [Hz]"))
        self.declare_parameter("world_frame", "odom", descriptor(description="odometry header.frame_id"))
        self.declare_parameter("reset_after", 10.0, descriptor(description="restart the simulation after [s]"))
        path = self.get_parameter("urdf_path").value or bundled_urdf_path()
        self.description = open(path).read()
        self.model = load_urdf(self.description, floating_base=self.get_parameter("floating_base").value)
        self.dt = self.get_parameter("dt").value
        self.world = self.get_parameter("world_frame").value
        self.reset_after = self.get_parameter("reset_after").value
        self.factory = RclpyFactory()
        from nav_msgs.msg import Odometry
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        self.create_publisher(String, "robot_description", LATCHED).publish(
            string_message(self.factory, self.description))
        self.joint_states = self.create_publisher(JointState, "joint_states", 10)
        self.odom = self.create_publisher(Odometry, "odom", 10) if self.model.floating_base else None
        self.simulation = Simulation(self.model, dt=self.dt)
        period = 1.0 / self.get_parameter("publish_rate").value
        self.steps_per_publish = max(1, round(period / self.dt))
        self.create_timer(period, self._tick)

    def _tick(self) -> None:
        if self.simulation.time > self.reset_after:
            self.simulation = Simulation(self.model, dt=self.dt)
        for _ in range(self.steps_per_publish):
            state, torques = self.simulation.step()
        now = self.get_clock().now().nanoseconds
        self.joint_states.publish(joint_state_message(self.factory, now, self.model.joint_names,
                                                      state.joint_positions, state.joint_velocities, torques))
        if self.odom is not None:
            self.odom.publish(odometry_message(self.factory, now, self.world, self.model.body_names[0],
                                               state.base_pose, state.base_twist))


def main(args=None) -> None:
    run(SimulatedRobot, args)
