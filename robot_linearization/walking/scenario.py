"""A legged robot walking under the MPC (mpc.py) on the ground (ground.py): a command schedule,
pushes, and a log of what happened, for examples/mpc_trot.py, bench/mpc.py and the tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arguments import choice, positive_number
from ..gait import TROT, Gait
from ..model import Model, State, floating_base_of
from ..robots import BUNDLED_FEET, bundled_urdf_path
from ..urdf import effort_limits, load_urdf
from .ground import GroundSimulation, standing_state
from .mpc import MPCError, MPCSettings, WholeBodyMPC, yaw_of


@dataclass(frozen=True)
class Segment:
    """From ``start`` [s] on, the command (forward, lateral [m/s], yaw rate [rad/s]), reached by a
    linear ramp over ``ramp`` [s] from the previous one."""

    start: float
    command: tuple
    ramp: float = 1.0


@dataclass(frozen=True)
class Push:
    """At ``time`` [s], the base's velocity in the world changes by ``velocity`` (3,) [m/s]."""

    time: float
    velocity: tuple


TROT_TURN_PUSH = (Segment(0.0, (0.3, 0.0, 0.0)), Segment(4.0, (0.0, 0.0, 0.5)), Segment(7.0, (0.0, 0.0, 0.0)))
"""The 10 s scenario: trot forward at 0.3 m/s, turn in place at 0.5 rad/s, trot in place."""
LATERAL_PUSH = (Push(2.5, (0.0, 0.5, 0.0)),)
"""A lateral push of 0.5 m/s during the forward trot."""
WALK_TURN = (Segment(0.0, (0.0, 0.0, 0.0)), Segment(2.0, (0.1, 0.0, 0.0)), Segment(6.0, (0.1, 0.0, 0.25)))
"""A humanoid's 10 s: stepping in place, walking forward at 0.1 m/s from 2 s, turning at 0.25 rad/s as
it walks from 6 s (each ramped over 1 s)."""


@dataclass
class Log:
    """Per control cycle: time [s], command (3,), base position (3,) and yaw, base velocity in the
    world (3,) and yaw rate, foot heights (f,) of ``feet``, the feet held, the torques, the MPC's
    timings and iterations; per simulation step: the forces (a sole's wrench) each held foot
    received, and ``drift``: the largest distance [m] (or tilt [rad], a sole) of a held foot from
    where it is held after the step (ground.GroundSimulation.drift), ``corrections`` the largest
    the step's projection removed, ``turns`` [rad] the largest angle it turned a held sole by, and
    ``pressure_margins``: (time, sole, the margin [m] of its centre of pressure inside its rectangle)
    of each held sole (ground.sole_dynamics).
    violations: the ground's (ground.Violation); touchdowns: (time, feet) of each contact the
    ground closed (ground.GroundSimulation.touchdowns); error: why the MPC stopped, if it did;
    first_plan: the timings of the plan made at rest before the start; on MuJoCo (mujoco_plant.py)
    ``slips``, ``penetration`` and ``landing_tilts``, and the soles' pressure margins from its contact forces;
    ``frames``: images of the scene (walk's ``frame_period``; MuJoCoPlant.render).

    Fields: time, command, position, yaw, velocity, ``yaw_rate`` [rad/s], ``foot_heights`` [m],
    held, torques, timings, iterations, ``dynamics_residual`` (MPCResult.dynamics_residual),
    ``min_margin`` (MPCResult.min_margin) and ``slack`` (MPCResult.slack) per cycle; ``fallbacks``:
    (time, why) of each cycle whose torques came from the previous plan (MPCResult.fallback)."""

    feet: tuple = ()

    time: list = field(default_factory=list)
    command: list = field(default_factory=list)
    position: list = field(default_factory=list)
    yaw: list = field(default_factory=list)
    velocity: list = field(default_factory=list)
    yaw_rate: list = field(default_factory=list)
    foot_heights: list = field(default_factory=list)
    held: list = field(default_factory=list)
    torques: list = field(default_factory=list)
    timings: list = field(default_factory=list)
    iterations: list = field(default_factory=list)
    dynamics_residual: list = field(default_factory=list)
    min_margin: list = field(default_factory=list)
    slack: list = field(default_factory=list)  # the largest slack the soft QP used (MPCResult.slack; 0: none)
    fallbacks: list = field(default_factory=list)  # (time, why) of each cycle run on the previous plan
    forces: list = field(default_factory=list)  # (time, foot, force (3,))
    drift: list = field(default_factory=list)
    corrections: list = field(default_factory=list)
    turns: list = field(default_factory=list)
    pressure_margins: list = field(default_factory=list)  # (time, sole, margin)
    violations: list = field(default_factory=list)
    touchdowns: list = field(default_factory=list)
    error: str | None = None
    first_plan: dict | None = None  # the timings of the plan made before the start
    # what only MuJoCo's compliant contacts show (the own ground holds a standing foot where it landed)
    slips: list = field(default_factory=list)  # (time, foot, how far it moved on the floor over a stance [m])
    penetration: float = 0.0  # the deepest a foot went into the floor [m]
    landing_tilts: list = field(default_factory=list)  # (time, sole, its tilt from flat as it touched down [rad])
    frames: list = field(default_factory=list)  # images of the scene (walk's frame_period), (H, W, 3) uint8


def command_at(segments, time: float) -> np.ndarray:
    """The ramped command of ``segments`` at ``time``."""
    command = np.zeros(3)
    for segment in segments:
        if time < segment.start:
            break
        previous = command
        fraction = min((time - segment.start) / segment.ramp, 1.0) if segment.ramp > 0 else 1.0
        command = previous + fraction * (np.array(segment.command, dtype=float) - previous)
    return command


def trot(seconds: float = 10.0, segments=TROT_TURN_PUSH, pushes=LATERAL_PUSH, *, gait: Gait = TROT,
         settings: MPCSettings | None = None, control_period: float = 0.01, dt: float = 0.002,
         model=None, mpc_class=WholeBodyMPC) -> Log:
    """:func:`walk` with the bundled quadruped (or ``model``, with its joints and the bundled feet), its
    URDF's effort limits and ``gait`` (the bundled trot); the other parameters as :func:`walk`'s.

    ``seconds`` [s], ``segments`` (the command schedule), ``pushes``, ``settings``,
    ``control_period`` [s], ``dt`` [s] and ``mpc_class``: as :func:`walk` takes them."""
    model = model if model is not None else load_urdf(bundled_urdf_path())
    return walk(model, BUNDLED_FEET, gait, effort_limits(bundled_urdf_path(), model.joint_names), seconds,
                segments, pushes, settings=settings, control_period=control_period, dt=dt, mpc_class=mpc_class)


PLANTS = ("ground", "mujoco")
"""What :func:`walk` runs the robot on: the project's own ground (ground.py) or MuJoCo (mujoco_plant.py)."""


def walk(model: Model, feet, gait: Gait, effort_limits, seconds: float = 10.0, segments=TROT_TURN_PUSH,
         pushes=LATERAL_PUSH, *, settings: MPCSettings | None = None, control_period: float = 0.01,
         dt: float = 0.002, friction: float = 0.7, mpc_class=WholeBodyMPC, plant: str = "ground",
         contact_options=None, frame_period: float | None = None) -> Log:
    """Run ``model`` (a floating base) walking ``gait`` (gait.Gait) on ``feet`` (frame names: point
    contacts) for ``seconds`` [s] on the ground z = 0 with Coulomb friction ``friction``, starting
    at rest in the gait's posture: the MPC (``mpc_class``, WholeBodyMPC or a subclass, with
    ``effort_limits`` (n,) [N m] and ``settings``) every ``control_period`` [s] from the measured
    state, following the command schedule ``segments`` (Segment), its torque held over the
    simulation's steps of ``dt`` [s], its first plan made at rest before the start; ``pushes``
    (Push) change the base's velocity.  Stops early, with ``error`` set, when the MPC has no
    solution or the base falls below half its height.  ValueError in one line, from the MPC, for
    a gait, feet, limits or settings that do not fit the model.

    ``plant``: "ground" (the own ground, ground.GroundSimulation) or "mujoco" (mujoco_plant.MuJoCoPlant,
    its step ``dt`` and friction ``friction`` unless ``contact_options``, a mujoco_plant.ContactOptions,
    gives MuJoCo's options); with ``frame_period`` [s] (MuJoCo only), an image of the scene every that many
    seconds into ``Log.frames`` (MuJoCoPlant.render: RuntimeError where MuJoCo cannot render)."""
    mpc = mpc_class(model, gait, feet, effort_limits, settings)
    state, height = standing_state(model, gait, feet)
    choice(plant, "plant", PLANTS)
    if frame_period is not None:
        positive_number(frame_period, "frame_period", "s")
        if plant != "mujoco":
            raise ValueError("frame_period: the images are MuJoCo's: give plant='mujoco'")
    simulation: Any
    if plant == "mujoco":
        from .mujoco_plant import ContactOptions, MuJoCoPlant

        options = contact_options if contact_options is not None else ContactOptions(timestep=dt, friction=friction)
        simulation = MuJoCoPlant(model, gait, state, feet=feet, effort_limits=effort_limits,
                                 sole_size=mpc.settings.sole_size, options=options)
    else:
        simulation = GroundSimulation(model, gait, state, feet=feet, dt=dt, friction=friction,
                                      sole_size=mpc.settings.sole_size)
    log = Log(feet=tuple(feet))
    # the first plan, made before the robot is let go, as a controller is started before its robot: from
    # rest the QP's solver needs many iterations; every cycle after it starts from the previous plan
    mpc.command(*command_at(segments, 0.0))
    try:
        log.first_plan = mpc.solve(0.0, simulation.state, simulation.contacts_now(), simulation.held).timings
    except MPCError as error:
        log.error = f"the first plan, at rest: {error}"
        return log
    substeps = max(int(round(control_period / simulation.dt)), 1)
    pending = sorted(pushes, key=lambda push: push.time)
    while simulation.time < seconds - 1e-9:
        now = simulation.time
        while pending and pending[0].time <= now + 1e-9:
            push = pending.pop(0)
            s = simulation.state
            H, v = floating_base_of(s)
            extra = H[:3, :3].T @ np.array(push.velocity, dtype=float)
            simulation.state = State(base_pose=H, joint_positions=s.joint_positions,
                                     base_twist=v + np.r_[extra, 0.0, 0.0, 0.0], joint_velocities=s.joint_velocities)
        command = command_at(segments, now)
        mpc.command(*command)
        try:
            result = mpc.solve(now, simulation.state, simulation.contacts_now(), simulation.held)
        except MPCError as error:
            log.error = f"t = {now:.3f} s: {error}"
            break
        pose, twist = floating_base_of(simulation.state)
        log.time.append(now)
        log.command.append(command)
        log.position.append(pose[:3, 3].copy())
        log.yaw.append(yaw_of(pose))
        log.velocity.append(pose[:3, :3] @ twist[:3])
        log.yaw_rate.append((pose[:3, :3] @ twist[3:])[2])
        heights = simulation.foot_heights()
        log.foot_heights.append([heights[f] for f in feet])
        log.torques.append(result.torques)
        log.timings.append(result.timings)
        log.iterations.append(result.iterations)
        log.dynamics_residual.append(result.dynamics_residual)
        log.min_margin.append(result.min_margin)
        log.slack.append(result.slack)
        if result.fallback is not None:
            log.fallbacks.append((now, result.fallback))
        for _ in range(substeps):
            simulation.step(result.torques)
            log.forces.extend((simulation.time, foot, force.copy()) for foot, force in simulation.forces.items())
            log.drift.append(simulation.drift)
            log.corrections.append(simulation.correction)
            log.turns.append(simulation.turned)
            log.pressure_margins.extend((simulation.time, sole, margin)
                                        for sole, margin in simulation.pressure_margins.items())
        log.held.append(simulation.held)
        if frame_period is not None and simulation.time >= len(log.frames) * frame_period - 1e-9:
            log.frames.append(simulation.render())
        base_height = floating_base_of(simulation.state)[0][2, 3]
        if base_height < 0.5 * height:
            log.error = f"t = {simulation.time:.3f} s: the base fell to {base_height:.3f} m"
            break
    log.violations, log.touchdowns = simulation.violations, simulation.touchdowns
    if plant == "mujoco":
        log.slips = simulation.slips + simulation.stance_slips()
        log.penetration = simulation.penetration
        log.landing_tilts = simulation.landing_tilts
    return log
