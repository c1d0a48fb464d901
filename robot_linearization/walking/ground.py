"""A flat ground under a legged robot's simulation: contacts close where the feet reach it.

The gait (gait.py) says which feet may stand at each instant; the ground decides when they do.
A foot the schedule puts in stance closes its contact once it is on the ground (its height above
it at most ``tolerance``), at the start of a step, with the rigid impact of the new set
(rl.impact, docs/impacts.md); a late foot stays free until it arrives.  A foot the schedule lifts
opens its contact.  Each step is rl.step's semi-implicit Euler on the group with the constrained
dynamics of the held set, followed by the projection of ν onto zero contact velocity
(integrator.contact_velocities_zeroed).

Rigid contacts hold whatever force it takes, pulling or sliding where a real ground would not:
every step the forces the robot actually receives are checked against the friction cone
μ f_n ≥ ‖f_t‖ and f_n ≥ 0, and every violation is kept in ``violations`` (time, foot, what).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..algorithms.constrained_dynamics import constrained_forward_dynamics
from ..algorithms.forward_dynamics import forward_dynamics
from ..algorithms.kinematics import frame_poses
from ..contacts import Contact
from ..gait import Gait
from ..impacts import impact
from ..integrator import contact_velocities_zeroed
from ..model import Model, State
from ..spatial import se3_exp


def standing_state(model: Model, gait: Gait, feet, height: float = 0.0) -> tuple[State, float]:
    """The robot at rest in the gait's posture, level, with its ``feet`` on the ground z = height
    (their mean height), and the base's height above the ground [m]."""
    posture = gait.joint_posture(model.joint_names)
    at_origin = State(base_pose=np.eye(4), joint_positions=posture, base_twist=np.zeros(6),
                      joint_velocities=np.zeros(model.n_joints))
    above = -float(frame_poses(model, at_origin, list(feet))[:, 2, 3].mean())
    pose = np.eye(4)
    pose[2, 3] = height + above
    return State(base_pose=pose, joint_positions=posture, base_twist=np.zeros(6),
                 joint_velocities=np.zeros(model.n_joints)), above


def foot_heights(model: Model, state: State, feet, height: float = 0.0) -> dict:
    """{foot: its height [m] above the ground z = height} at ``state``."""
    poses = frame_poses(model, state, list(feet))
    return {foot: poses[i, 2, 3] - height for i, foot in enumerate(feet)}


def standing_feet(feet, scheduled, held, heights: dict, tolerance: float) -> tuple:
    """The ``feet`` that stand over the next step: those the gait schedules (``scheduled``) that
    are held already (``held``) or on the ground, ``heights`` [foot] ≤ tolerance [m] above it."""
    return tuple(f for f in feet if f in scheduled and (f in held or heights[f] <= tolerance))


@dataclass(frozen=True)
class Violation:
    """time [s]; foot; what: "pulls" (f_n < 0), "slips" (‖f_t‖ > μ f_n), "below the ground" (a
    free foot under it by more than the tolerance) or "off the ground" (a held foot off it by more
    than the tolerance); amount [N or m]."""

    time: float
    foot: str
    what: str
    amount: float


class GroundSimulation:
    """``model`` walking ``gait`` on the plane z = ``height`` of the world (normal +z).

    feet: the frames that touch the ground (point contacts, world-aligned axes).  dt [s]: the
    step.  friction μ: of the cone the received forces are checked against.  restitution e of
    the touchdowns.  tolerance [m]: how close to the ground a foot closes its contact.
    ``state`` (rl.State), ``time`` [s] and ``held`` (the feet in contact over the last step)
    describe where it is; ``touchdowns`` lists (time, feet) of every impact.
    """

    def __init__(self, model: Model, gait: Gait, state: State, *, feet, height: float = 0.0, dt: float = 0.002,
                 friction: float = 0.7, restitution: float = 0.0, tolerance: float = 1e-3):
        self.model, self.gait, self.state = model, gait, state
        self.feet = tuple(feet)
        self.height, self.dt, self.friction = height, dt, friction
        self.restitution, self.tolerance = restitution, tolerance
        self.time, self.steps = 0.0, 0
        self.held = tuple(f for f in self.feet if f in self._scheduled() and self.foot_heights()[f] <= tolerance)
        self.touchdowns: list[tuple[float, tuple]] = []
        self.violations: list[Violation] = []
        self.forces: dict = {}  # foot -> the force (3,) it received over the last step [N]

    def _scheduled(self, time: float | None = None) -> set:
        return {c.frame for c in self.gait.contacts_at(self.time if time is None else time)}

    def foot_heights(self, state: State | None = None) -> dict:
        """{foot: its height above the ground [m]}."""
        return foot_heights(self.model, self.state if state is None else state, self.feet, self.height)

    def contacts_now(self) -> tuple:
        """The feet that hold over the next step: scheduled, and held already or on the ground."""
        return standing_feet(self.feet, self._scheduled(), self.held, self.foot_heights(), self.tolerance)

    def step(self, torques: np.ndarray) -> None:
        """One step of dt with joint torques τ (n,) held over it."""
        model, state = self.model, self.state
        held = self.contacts_now()
        contacts = [Contact(f) for f in held]
        closing = tuple(f for f in held if f not in self.held)
        if closing:
            state = impact(model, state, contacts, self.restitution).state
            self.touchdowns.append((self.time, closing))
        if contacts:
            nu_dot, forces = constrained_forward_dynamics(model, state, torques, contacts)
        else:
            base, joints = forward_dynamics(model, state, torques)
            nu_dot, forces = np.concatenate([base, joints]), np.zeros(0)
        dt = self.dt
        r = state.joint_velocities + dt * nu_dot[6:]
        v = state.base_twist + dt * nu_dot[:6]
        state = State._given(state.base_pose @ se3_exp(dt * v), state.joint_positions + dt * r, v, r)
        if contacts:
            state = contact_velocities_zeroed(model, state, contacts)
        self.state, self.held = state, held
        self.forces = {foot: forces[3 * i:3 * i + 3] for i, foot in enumerate(held)}
        self._check(held)
        self.steps += 1
        self.time = self.steps * dt

    def _check(self, held) -> None:
        for foot, force in self.forces.items():
            normal, tangential = force[2], float(np.hypot(force[0], force[1]))
            if normal < 0.0:
                self.violations.append(Violation(self.time, foot, "pulls", -normal))
            elif tangential > self.friction * normal:
                self.violations.append(Violation(self.time, foot, "slips", tangential - self.friction * normal))
        for foot, h in self.foot_heights().items():
            if foot in held and abs(h) > self.tolerance:
                self.violations.append(Violation(self.time, foot, "off the ground", h))
            elif foot not in held and h < -self.tolerance:
                self.violations.append(Violation(self.time, foot, "below the ground", -h))
