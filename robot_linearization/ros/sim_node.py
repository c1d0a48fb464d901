"""Simulated robot for the demo launch: publishes /robot_description (latched),
/joint_states and /odom from :class:`~robot_linearization.ros.simulation.Simulation`,
in real time, and with a gait (parameter ``gait``) its schedule on /contacts (the
node's contacts topic: the set it starts with, then each new one before the first
joint state simulated with it).  Run: ``ros2 run robot_linearization simulated_robot``."""

from __future__ import annotations

from rclpy.node import Node

from ..robots import bundled_urdf_path
from ..urdf import load_urdf
from .messages import joint_state_message, odometry_message, string_message
from .node import LATCHED, RclpyFactory, declare_parameters, run
from ..gait import gait_for
from .parameters import SIMULATION_PARAMETERS, simulation_settings
from .simulation import Simulation


class SimulatedRobot(Node):
    def __init__(self, **node_options):
        """node_options: rclpy.node.Node keywords (parameter_overrides, namespace …)."""
        super().__init__("simulated_robot", **node_options)
        settings = simulation_settings(declare_parameters(self, SIMULATION_PARAMETERS))
        self.description = open(settings.urdf_path or bundled_urdf_path()).read()
        self.model = load_urdf(self.description, floating_base=settings.floating_base)
        self.dt = settings.dt
        self.world = settings.world_frame
        self.reset_after = settings.reset_after
        self.factory = RclpyFactory()
        from nav_msgs.msg import Odometry
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        self.create_publisher(String, "robot_description", LATCHED).publish(
            string_message(self.factory, self.description))
        self.joint_states = self.create_publisher(JointState, "joint_states", 10)
        self.odom = self.create_publisher(Odometry, "odom", 10) if self.model.floating_base else None
        self.contacts = settings.contacts
        self.gait = gait_for(settings.gait, self.model)  # ValueError (a robot that cannot trot): no start
        self.schedule = self.create_publisher(String, "contacts", LATCHED) if self.gait is not None else None
        self.held = None  # the contact set last published on the schedule
        self.simulation = self._new_simulation()
        period = 1.0 / settings.publish_rate
        self.steps_per_publish = max(1, round(period / self.dt))
        self.create_timer(period, self._tick)

    def _new_simulation(self) -> Simulation:
        return Simulation(self.model, dt=self.dt, contacts=self.contacts, gait=self.gait)

    def _tick(self) -> None:
        if self.simulation.time > self.reset_after:
            self.simulation = self._new_simulation()
        for _ in range(self.steps_per_publish):
            state, torques = self.simulation.step()
            if self.schedule is not None and self.simulation.contacts != self.held:
                break  # a new set: the state its first step started from is sent (at a touchdown, x⁻)
        if self.schedule is not None and self.simulation.contacts != self.held:
            # before the joint state: the node linearizes that state with this set
            self.held = self.simulation.contacts
            self.schedule.publish(string_message(self.factory, self.simulation.contacts_text()))
        now = self.get_clock().now().nanoseconds
        self.joint_states.publish(joint_state_message(self.factory, now, self.model.joint_names,
                                                      state.joint_positions, state.joint_velocities, torques))
        if self.odom is not None:
            self.odom.publish(odometry_message(self.factory, now, self.world, self.model.body_names[0],
                                               state.base_pose, state.base_twist))


def main(args=None) -> None:
    raise SystemExit(run(SimulatedRobot, args))
