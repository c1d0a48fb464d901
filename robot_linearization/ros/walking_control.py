"""The walking controller's side of a ROS 2 graph, without rclpy (ros/controller_node.py is the node): it
reads /joint_states and /odom (paired as the linearization node pairs them: pipeline.nearest_odometry)
and /cmd_vel (geometry_msgs/Twist: linear.x, linear.y, angular.z in the base frame), runs the
walking/controller.WalkingController at each paired state, and makes its messages: the efforts
(std_msgs/Float64MultiArray in the order of ``joints``, as ros2_control's forward_command_controller
takes them), the contact set it stands on (std_msgs/String, as the linearization node's ``contacts``
topic reads it, when it changes), the planned base path (nav_msgs/Path) and /diagnostics."""

from __future__ import annotations

import collections
from dataclasses import dataclass

from ..contacts import format_contacts
from ..model import State
from ..walking.controller import Control, ControllerSettings, WalkingController
from ..walking.robots import Walker
from .messages import (InputError, MessageFactory, effort_order, header_message, joint_state_arrays,
                       odometry_base_state, pose_message, stamp_to_ns, string_message)
from .pipeline import ERROR, OK, WARN, nearest_odometry

ODOMETRY_BUFFER = 50
"""Odometries kept for pairing."""


@dataclass(frozen=True)
class InputSettings:
    """``pairing_tolerance`` [s] and ``max_input_age`` [s] as the linearization node's parameters;
    ``joints``: the efforts' joint order (() : the URDF's); ``world_frame``: the path's frame."""

    pairing_tolerance: float = 0.02
    max_input_age: float = 0.5
    joints: tuple = ()
    world_frame: str = "odom"


class WalkingControl:
    """``walker`` under WalkingController(``settings``), its inputs checked by ``inputs`` (InputSettings).
    Each ``on_*`` takes a message (rclpy's or rosbags'), ``now_ns`` the node's clock; :meth:`on_joint_state`
    returns the messages to publish {"efforts", "contacts" (when it changed), "path" (when it planned)}."""

    def __init__(self, walker: Walker, settings: ControllerSettings | None = None,
                 inputs: InputSettings = InputSettings()):
        self.controller = WalkingController(walker, settings)
        self.walker, self.inputs = walker, inputs
        model = walker.model
        self.joints, self.order = effort_order(inputs.joints, model.joint_names)  # effort i: joint order[i]
        self.base_frame = model.body_names[0]
        self._odometry: collections.deque = collections.deque(maxlen=ODOMETRY_BUFFER)
        self._last_joint_stamp: int | None = None
        self.published_contacts: str | None = None
        self.last: Control | None = None
        self.rejected: collections.Counter = collections.Counter()
        self.last_problem: str | None = None

    def _reject(self, reason: str, kind: str) -> dict:
        self.rejected[kind] += 1
        self.last_problem = reason
        return {}

    def on_velocity_command(self, msg, now_ns: int) -> None:
        """A geometry_msgs/Twist on /cmd_vel."""
        problem = self.controller.velocity_command(msg.linear.x, msg.linear.y, msg.angular.z, now_ns * 1e-9)
        if problem:
            self._reject(problem, "cmd_vel")

    def on_odometry(self, msg) -> None:
        """A nav_msgs/Odometry of the base (its child frame the URDF's root link)."""
        stamp = stamp_to_ns(msg.header.stamp)
        if self._odometry and stamp <= self._odometry[-1][0]:
            self._reject(f"odometry stamp {stamp * 1e-9:.9f} s is not newer than the previous one: dropped",
                         "out_of_order")
            return
        try:
            H, twist = odometry_base_state(msg, self.base_frame)
        except InputError as e:
            self._reject(str(e), "odometry")
            return
        self._odometry.append((stamp, H, twist))

    def on_joint_state(self, msg, now_ns: int, factory: MessageFactory) -> dict:
        """A sensor_msgs/JointState: paired with its odometry, the controller's control at that state, and
        its messages; {} (and a diagnostic) when it cannot be used."""
        stamp = stamp_to_ns(msg.header.stamp)
        if self._last_joint_stamp is not None and stamp <= self._last_joint_stamp:
            return self._reject(f"joint_states stamp {stamp * 1e-9:.9f} s is not newer than the previous one: "
                                "dropped", "out_of_order")
        if now_ns - stamp > self.inputs.max_input_age * 1e9:
            return self._reject(f"joint_states is stale: {(now_ns - stamp) * 1e-9:.3f} s old (max_input_age "
                                f"{self.inputs.max_input_age} s)", "stale")
        try:
            reading = joint_state_arrays(msg, self.walker.model.joint_names, need_effort=False)
        except InputError as e:
            return self._reject(str(e), "joint_states")
        paired = nearest_odometry(self._odometry, stamp, self.inputs.pairing_tolerance)
        if isinstance(paired, str):
            return self._reject(paired, "unpaired")
        self._last_joint_stamp = stamp
        H, twist = paired
        state = State(base_pose=H, joint_positions=reading.positions, base_twist=twist,
                      joint_velocities=reading.velocities)
        control = self.last = self.controller.control(stamp * 1e-9, state)
        if control.torques is None:
            return self._reject(f"no plan: {control.error}", "no_plan")
        self.last_problem = None
        out = {"efforts": factory.make("std_msgs/msg/Float64MultiArray", layout=factory.vector_layout(len(self.joints)),
                                       data=factory.float64_array(control.torques[self.order]))}
        text = format_contacts(control.contacts)
        if text != self.published_contacts:
            self.published_contacts = text
            out["contacts"] = string_message(factory, text)
        if control.result is not None:
            out["path"] = self.path_message(factory, stamp, control.result.stacked_states[0])
        return out

    def path_message(self, factory: MessageFactory, stamp: int, base_poses):
        """nav_msgs/Path of the plan's ``base_poses`` (K+1, 4, 4) in the world (MPCResult.stacked_states[0]), the
        k-th stamped ``stamp`` + k·knot_dt [ns]."""
        knot = round(self.controller.mpc.settings.knot_dt * 1e9)
        frame = self.inputs.world_frame
        poses = [factory.make("geometry_msgs/msg/PoseStamped", header=header_message(factory, stamp + k * knot, frame),
                              pose=pose_message(factory, H))
                 for k, H in enumerate(base_poses)]
        return factory.make("nav_msgs/msg/Path", header=header_message(factory, stamp, frame), poses=poses)

    def diagnostics(self, now_ns: int, name: str = "walking_controller") -> list:
        """[(level, name, message, values)] for diagnostic_msgs/DiagnosticArray: the plans, the last cycle's
        time, iterations, slack and smallest margin, the command followed, the inputs rejected."""
        controller, status = self.controller, self.controller.status
        values: dict = {"robot": self.walker.name, "plans": status.plans, "fallbacks": status.fallbacks,
                        "cycle_time_ms": f"{status.cycle_time * 1e3:.2f}",
                        "longest_cycle_ms": f"{status.longest_cycle * 1e3:.2f}",
                        "qp_iterations": status.iterations, "slack": f"{status.slack:.3g}",
                        "min_margin": f"{status.min_margin:.3g}",
                        "command": " ".join(f"{v:.3f}" for v in controller.followed)}
        values.update({f"rejected_{k}": v for k, v in sorted(self.rejected.items())})
        age = controller.command_age(now_ns * 1e-9)
        if self.last is None:
            level, message = WARN, "waiting for joint_states and odometry"
        elif self.last.torques is None:
            level, message = ERROR, f"no plan: {self.last.error}"
        elif self.last.fallen:
            level, message = ERROR, "the base fell below half its standing height"
        elif self.last_problem:
            level, message = WARN, self.last_problem
        elif status.last_error:
            level, message = WARN, f"the previous plan commands: {status.last_error}"
        elif age > controller.settings.command_timeout:
            level, message = OK, "walking in place: " + ("no velocity command yet" if age == float("inf") else
                                                         f"the velocity command is {age:.1f} s old")
        else:
            level, message = OK, "walking"
        return [(level, name, message, values)]
