"""A walking controller as a robot stack runs it: the MPC (mpc.py) from each measured state, following a
velocity command (a teleop's /cmd_vel) that ramps to zero once it is stale, with the feet it stands on
estimated from the gait's schedule and the measured feet's heights (nothing measures a contact).
rclpy-free: ros/walking_control.py reads and writes its messages, ros/controller_node.py is the node."""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass

import numpy as np

from ..arguments import Settings, positive_number, real_array
from ..contacts import Contact
from ..model import Model, State, floating_base_of
from .ground import foot_heights, standing_feet, standing_state
from .mpc import MPCError, MPCResult, MPCSettings, WholeBodyMPC
from .robots import Walker


@dataclass
class ControllerSettings(Settings):
    """``period`` [s]: how often the MPC plans (between its plans the robot gets the current plan's
    torque); ``command_timeout`` [s]: a velocity command older than this is replaced by zero;
    ``acceleration`` (3,) [m/s², m/s², rad/s²]: how fast the followed command ramps to a new one (and to
    zero); ``max_command`` (3,) [m/s, m/s, rad/s]: the largest command followed, each axis clipped to it;
    ``contact_tolerance`` [m]: how close to the ground a scheduled foot's frame counts as standing (a point
    foot's frame on a sphere that rolls rises off the floor while the sphere touches it: a few mm; with 1 mm
    the bundled robot on MuJoCo missed a standing foot and fell when it stopped)."""

    period: float = 0.01
    command_timeout: float = 0.5
    acceleration: tuple = (0.5, 0.5, 1.0)
    max_command: tuple = (0.5, 0.3, 1.0)
    contact_tolerance: float = 0.005


@dataclass
class Control:
    """What the controller decided at ``time`` [s] (the state's): ``torques`` (n,) [N m] for the robot
    (None: none yet, ``error`` says why); ``contacts`` the feet it stands on over the next step, as
    Contact (the gait's kind); ``command`` (3,) the velocity followed; ``result`` the MPC's cycle
    (MPCResult) when it planned now, else None; ``fallen``: the base is below half its standing height."""

    time: float
    torques: np.ndarray | None
    contacts: tuple
    command: np.ndarray
    result: MPCResult | None = None
    error: str | None = None
    fallen: bool = False


@dataclass
class ControllerStatus:
    """Counters for diagnostics: ``plans`` made, ``fallbacks`` (cycles on the previous plan), the last
    plan's wall ``cycle_time`` [s], ``iterations``, ``slack`` and ``min_margin`` (MPCResult's), the
    largest so far (``longest_cycle`` [s]), and ``last_error``."""

    plans: int = 0
    fallbacks: int = 0
    cycle_time: float = 0.0
    longest_cycle: float = 0.0
    iterations: int = 0
    slack: float = 0.0
    min_margin: float = math.inf
    last_error: str | None = None


class WalkingController:
    """``walker`` (walking/robots.Walker: its model, feet, gait, effort limits and MPC settings, or
    ``mpc_settings`` instead) walking under WholeBodyMPC with ``settings`` (ControllerSettings).

    :meth:`velocity_command` takes a command as it arrives; :meth:`control` gives the torques at each
    measured state (times [s] on one clock, the states' stamps)."""

    def __init__(self, walker: Walker, settings: ControllerSettings | None = None,
                 mpc_settings: MPCSettings | None = None):
        if walker.gait is None:
            raise ValueError(f"robot {walker.name!r} has no gait to walk")
        self.settings = settings = settings or ControllerSettings()
        positive_number(settings.period, "period", "s")
        positive_number(settings.command_timeout, "command_timeout", "s")
        positive_number(settings.contact_tolerance, "contact_tolerance", "m")
        self.acceleration = real_array(settings.acceleration, "acceleration", (3,))
        self.max_command = real_array(settings.max_command, "max_command", (3,))
        if not (self.acceleration > 0).all() or (self.max_command < 0).any():
            raise ValueError("acceleration: expected 3 positive rates, max_command 3 non-negative speeds")
        if not isinstance(walker.model, Model):
            raise ValueError(f"robot {walker.name!r}: the MPC walks a plain kinematic tree (no mimic joints)")
        self.walker, self.model = walker, walker.model
        self.mpc = WholeBodyMPC(self.model, walker.gait, walker.feet, walker.effort_limits,
                                mpc_settings or walker.settings)
        self.feet, self.gait = tuple(walker.feet), walker.gait
        self.standing_height = standing_state(self.model, walker.gait, self.feet)[1]
        self.status = ControllerStatus()
        self.wanted = np.zeros(3)  # the latest command, clipped
        self.wanted_at: float | None = None  # its arrival [s]
        self.followed: np.ndarray = np.zeros(3)  # the command the MPC follows, ramped
        self.start: float | None = None  # the first state's time: the gait's clock starts there
        self.last: float | None = None  # the time of the last control
        self.planned_at: float | None = None  # the time of the last plan
        self.held: tuple | None = None  # the feet stood on over the last step
        self.torques: np.ndarray | None = None  # the current plan's torque

    def warm_up(self, seconds: float | None = None) -> float:
        """Walk in place for ``seconds`` (None: one gait period) on the project's own ground (ground.py),
        then forget that plan: every kernel, impact map and solver the cycles meet is made and loaded now,
        before a robot depends on the cycle's time (cold, the first cycles of a contact set or touchdown
        took up to a second, and a trot does not survive efforts 50 ms late).  Returns the seconds taken."""
        from .ground import GroundSimulation

        started = _time.perf_counter()
        state, _ = standing_state(self.model, self.gait, self.feet, self.mpc.settings.ground)
        ground = GroundSimulation(self.model, self.gait, state, feet=self.feet, height=self.mpc.settings.ground,
                                  sole_size=self.mpc.settings.sole_size)
        self.mpc.command(0.0, 0.0, 0.0)
        substeps = max(int(round(self.settings.period / ground.dt)), 1)
        try:
            while ground.time < (self.gait.period if seconds is None else seconds) - 1e-9:
                result = self.mpc.solve(ground.time, ground.state, ground.contacts_now(), ground.held)
                for _ in range(substeps):
                    ground.step(result.torques)
        except MPCError as error:
            self.status.last_error = f"warming up: {error}"
        self.mpc.reset()
        return _time.perf_counter() - started

    def velocity_command(self, forward: float, lateral: float, yaw_rate: float, time: float) -> str | None:
        """A velocity command (base frame: [m/s] forward, to the left, [rad/s] about z) arriving at ``time``
        [s]; each axis clipped to max_command.  Returns why it was refused (a value not finite), else None."""
        values = np.array([forward, lateral, yaw_rate], dtype=float)
        if not np.isfinite(values).all():
            return f"velocity command {values.tolist()} is not finite: ignored"
        self.wanted, self.wanted_at = np.clip(values, -self.max_command, self.max_command), time
        return None

    def command_age(self, time: float) -> float:
        """[s] since the latest velocity command arrived (inf: none yet)."""
        return math.inf if self.wanted_at is None else time - self.wanted_at

    def _ramp(self, time: float) -> np.ndarray:
        target = self.wanted if self.command_age(time) <= self.settings.command_timeout else np.zeros(3)
        elapsed = 0.0 if self.last is None else max(time - self.last, 0.0)
        step = self.acceleration * elapsed
        self.followed = self.followed + np.clip(target - self.followed, -step, step)
        return self.followed

    def control(self, time: float, state: State) -> Control:
        """The torques at the measured ``state`` (a floating-base State) of ``time`` [s]: a new plan when
        ``period`` has passed since the last (the first at the first state), else the current plan's
        torque."""
        if self.start is None:
            self.start = time
        command = self._ramp(time)
        self.last = time
        gait_time = time - self.start
        scheduled = {c.frame for c in self.gait.contacts_at(gait_time)}
        heights = foot_heights(self.model, state, self.feet, self.mpc.settings.ground)
        held = self.held if self.held is not None else tuple(f for f in self.feet if f in scheduled)
        standing = standing_feet(self.feet, scheduled, held, heights, self.settings.contact_tolerance)
        self.held = standing
        fallen = floating_base_of(state)[0][2, 3] - self.mpc.settings.ground < 0.5 * self.standing_height
        contacts = tuple(Contact(foot, self.gait.contact) for foot in standing)
        result = None
        if self.planned_at is None or time - self.planned_at >= self.settings.period - 1e-9:
            self.mpc.command(*command)
            clock = _time.perf_counter()
            try:
                result = self.mpc.solve(gait_time, state, standing, held)
            except MPCError as error:  # (only the first plan can fail so)
                self.status.last_error = str(error)
                return Control(time, None, contacts, command.copy(), error=str(error), fallen=fallen)
            self._note(result, _time.perf_counter() - clock)
            self.planned_at, self.torques = time, result.torques
        return Control(time, self.torques, contacts, command.copy(), result, fallen=fallen)

    def _note(self, result: MPCResult, seconds: float) -> None:
        status = self.status
        status.plans += 1
        status.fallbacks += result.fallback is not None
        status.cycle_time, status.longest_cycle = seconds, max(status.longest_cycle, seconds)
        status.iterations, status.slack, status.min_margin = result.iterations, result.slack, result.min_margin
        status.last_error = result.fallback
