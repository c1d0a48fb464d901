"""A legged robot on MuJoCo (walking/mujoco_plant.py) as a robot driver presents it to a ROS 2 graph, without
rclpy (ros/mujoco_node.py is the node): it publishes /joint_states, /odom (the twist in the child frame) and
/clock (its simulated time), and takes joint efforts as std_msgs/Float64MultiArray in the order of its
``joints`` (as ros2_control's forward_command_controller takes them on ``/effort_controller/commands``).

Until the first command it holds the robot still where it stands (a controller starting), its clock
running.  A command older than ``command_timeout`` (simulated time) is replaced by a damping hold,
τ = −d q̇ within the effort limits, and a diagnostic says so."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..model import Model, floating_base_of
from ..walking.ground import standing_state
from ..walking.mujoco_plant import ContactOptions, MuJoCoPlant
from ..walking.robots import Walker
from .messages import MessageFactory, effort_order, joint_state_message, odometry_message, time_message
from .pipeline import ERROR, OK, WARN


@dataclass(frozen=True)
class MuJoCoRobotSettings:
    """``period`` [s] between published states (the plant steps ``options.timestep`` within it; in real
    time a command answering a state is applied from the next period on: 10 ms of that and the bundled
    trot falls, 2 ms and it walks);
    ``command_timeout`` [s] of simulated time after which the hold replaces a command; ``hold_damping`` d
    [N m s/rad] of the hold; ``joints``: the commands' joint order (() : the URDF's); ``world_frame``: the
    odometry's frame; ``options``: MuJoCo's (mujoco_plant.ContactOptions)."""

    period: float = 0.002
    command_timeout: float = 0.2
    hold_damping: float = 2.0
    joints: tuple = ()
    world_frame: str = "odom"
    options: ContactOptions = ContactOptions(friction=0.7)


class MuJoCoRobot:
    """``walker`` (walking/robots.Walker) standing on MuJoCo's floor in its gait's posture, driven by effort
    commands.  :meth:`command` takes one as it arrives, :meth:`advance` runs one period, :meth:`messages`
    gives what to publish of the state reached, :meth:`diagnostics` how it goes."""

    def __init__(self, walker: Walker, settings: MuJoCoRobotSettings = MuJoCoRobotSettings()):
        if walker.gait is None:
            raise ValueError(f"robot {walker.name!r} has no gait: its feet are not known")
        if not isinstance(walker.model, Model):
            raise ValueError(f"robot {walker.name!r}: MuJoCo's model is made of a plain tree (no mimic joints)")
        self.walker, self.settings = walker, settings
        self.model = model = walker.model
        self.joints, self.order = effort_order(settings.joints, model.joint_names)  # command i: joint order[i]
        self.standing, _ = standing_state(model, walker.gait, walker.feet)
        self.plant = MuJoCoPlant(model, walker.gait, self.standing, feet=walker.feet,
                                 effort_limits=walker.effort_limits, sole_size=walker.sole_size,
                                 options=settings.options)
        self.substeps = max(int(round(settings.period / self.plant.dt)), 1)
        self.period = self.substeps * self.plant.dt
        self.limits = np.asarray(walker.effort_limits, dtype=float)
        self.ticks = 0  # periods run
        self.commanded: np.ndarray | None = None  # the latest command, in the model's joint order
        self.commanded_at: float | None = None  # its arrival [s, simulated]
        self.commands = 0  # commands taken
        self.refused: str | None = None  # why the latest refused command was refused
        self.applied = np.zeros(model.n_joints)  # the efforts over the last period
        self.mode = "waiting"  # "waiting" (still), "commanded" or "holding"
        self.restarts: list = []  # the times [s] the simulation diverged and the robot was stood up again

    @property
    def time(self) -> float:
        """[s] simulated."""
        return self.ticks * self.period

    @property
    def command_age(self) -> float:
        """[s] of simulated time since the latest command arrived (inf: none yet)."""
        return math.inf if self.commanded_at is None else self.time - self.commanded_at

    def command(self, values) -> str | None:
        """Efforts (k,) [N m] in the order of ``joints``, arriving now; None, or why they were refused
        (which leaves the previous command in force)."""
        values = np.asarray(values, dtype=float).ravel()
        if values.shape != (len(self.joints),):
            self.refused = f"effort command of {values.size} values, expected {len(self.joints)} (one per joint " \
                           "of parameter 'joints'): ignored"
        elif not np.isfinite(values).all():
            self.refused = f"effort command with a value that is not finite (joint " \
                           f"{self.joints[int(np.argmin(np.isfinite(values)))]}): ignored"
        else:
            self.commanded = np.empty_like(values)
            self.commanded[self.order] = values
            self.commanded_at, self.refused = self.time, None
            self.commands += 1
            return None
        return self.refused

    def efforts(self) -> np.ndarray:
        """The efforts (n,) [N m] the next period gets (the model's joint order), and sets ``mode``."""
        if self.commanded is None:
            self.mode = "waiting"
            return np.zeros(self.model.n_joints)
        if self.command_age > self.settings.command_timeout + 1e-9:
            self.mode = "holding"
            velocities = self.plant.state.joint_velocities
            return np.clip(-self.settings.hold_damping * velocities, -self.limits, self.limits)
        self.mode = "commanded"
        return self.commanded

    def advance(self) -> None:
        """One period: the plant stepped with :meth:`efforts` (held still while ``waiting``); where MuJoCo
        found the simulation unstable (a robot fallen under torques it cannot take), the robot stands again
        where it started, and ``restarts`` and the diagnostics say when."""
        efforts = self.efforts()
        if self.mode != "waiting":
            for _ in range(self.substeps):
                self.plant.step(efforts)
            if self.plant.divergences > len(self.restarts):  # (MuJoCo reset its state to the model's default)
                self.restarts.append(self.time)
                self.plant.state = self.standing
        self.applied = np.clip(efforts, -self.limits, self.limits)
        self.ticks += 1

    def messages(self, factory: MessageFactory) -> dict:
        """{"clock", "odom", "joint_states"}: the state now, stamped with the simulated time."""
        ns = round(self.time * 1e9)
        state, model = self.plant.state, self.model
        pose, twist = floating_base_of(state)
        # (in the order they are published: the odometry before the joint state it pairs with, so that a
        # controller answering each joint state at once finds the base's state of the same stamp)
        return {"clock": factory.make("rosgraph_msgs/msg/Clock", clock=time_message(factory, ns)),
                "odom": odometry_message(factory, ns, self.settings.world_frame, model.body_names[0],
                                         pose, twist),
                "joint_states": joint_state_message(factory, ns, model.joint_names, state.joint_positions,
                                                    state.joint_velocities, self.applied)}

    def diagnostics(self, name: str = "mujoco_robot") -> list:
        """[(level, name, message, values)] for diagnostic_msgs/DiagnosticArray."""
        plant = self.plant
        values = {"robot": self.walker.name, "time_s": f"{self.time:.3f}", "commands": self.commands,
                  "feet_on_floor": ", ".join(plant.held) or "none",
                  "deepest_penetration_mm": f"{plant.penetration * 1e3:.2f}"}
        if self.commanded_at is not None:
            values["command_age_s"] = f"{self.command_age:.3f}"
        if self.mode == "waiting":
            level, message = WARN, "waiting for the first effort command: the robot is held still"
        elif self.mode == "holding":
            level, message = WARN, (f"no effort command for {self.command_age:.3f} s (command_timeout "
                                    f"{self.settings.command_timeout} s): damping hold")
        else:
            level, message = OK, "commanded"
        if self.refused:
            level, message = max(level, WARN), f"{message}; {self.refused}"
        if self.restarts:
            values["restarts"] = len(self.restarts)
            if self.time - self.restarts[-1] < 1.0:
                level, message = ERROR, (f"the simulation diverged at {self.restarts[-1]:.3f} s: the robot stands "
                                         f"again where it started; {message}")
        return [(level, name, message, values)]
