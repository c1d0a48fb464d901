"""A simulated robot driven by our own forward dynamics (ABAmb), for the demo
and the ROS demo launch: it produces exactly what a robot driver and a state
estimator would publish, the joint state and the base odometry (and, when it
walks a scheduled gait, the contact set it holds)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..algorithms.constrained_dynamics import bias_motion, constrained_forward_dynamics, contact_kinematics
from ..algorithms.inverse_mass_matrix import inverse_mass_matrix
from ..algorithms.kinematics import body_transforms, frame_poses
from ..algorithms.forward_dynamics import forward_dynamics
from ..contacts import as_contacts
from ..impacts import Impact, impact, touchdown
from ..integrator import contact_velocities_zeroed
from ..model import Model, State, floating_base_of
from ..spatial import inverse_transform, se3_exp, se3_log
from ..gait import Gait
from ..walking.ground import foot_heights, standing_feet, standing_state


DIVERGED = 1e4
"""rad, rad/s, m/s: a simulated state beyond this has diverged and is restarted."""
GROUND_HEIGHT = 0.0
"""[m] z of the flat ground a gait's robot walks on, in the world."""
GROUND_TOLERANCE = 1e-3
"""[m] how close to the ground a scheduled foot closes its contact."""
SWING_LAG = 0.15
"""[steps] how much earlier than the step's start a swinging foot's path is read.  The torques are
held over the step, and the semi-implicit Euler step moves the foot with its velocity at the
step's end, so a foot that tracks its path runs ahead of it: at 0.75 m/s it met the ground
0.3 mm (2 ms step) to 1.2 mm (10 ms) before its path did, below the ground at the scheduled
instant.  Read 0.15 of a step earlier, every foot closes within 0.15 mm of the ground at the
steps that divide the gait's phases, from 1 to 10 ms (test_gait); with a step that does not, a
foot reaches the ground between two steps and closes at the next, below it by what it covers
in between."""


@dataclass(frozen=True)
class Touchdown:
    """A contact set closing during the simulation: at ``time`` [s] the step from
    impact.pre_impact_state (the state the simulation reported) started from
    impact.state, with ``impact.contacts`` held and ``joint_torques`` applied;
    ``previous_contacts`` were held before.  That step is rl.step(model,
    impact.pre_impact_state, joint_torques, dt, impact.contacts, previous_contacts=…),
    followed by the simulation's projection onto J ν = 0 (integrator.contact_velocities_zeroed)."""

    time: float
    impact: Impact
    previous_contacts: tuple
    joint_torques: np.ndarray


class Simulation:
    """Semi-implicit Euler on the state's Lie group: v += dt·v̇, r += dt·ṙ,
    H ← H·exp(dt·v^), s += dt·r.  Joint torques: a soft PD hold of a posture plus
    a slow sinusoid, so the robot keeps moving.  Without contacts it floats (there
    is no ground); with contacts (e.g. its four feet) those frames are held where
    they start, by the constrained dynamics (docs/contacts.md).
    The gains suit the bundled quadruped up to dt ≈ 10 ms.

    With a ``gait`` (gait.py) the robot trots on a flat ground, z = 0 of the world: it starts at
    rest on its feet (walking/ground.standing_state), and a foot the schedule puts in stance
    closes its contact once it is on the ground (within GROUND_TOLERANCE; a late one stays free
    until it is), at the start of a step that then begins with the rigid impact of the whole new
    set (rl.impact, the map rl.step applies with previous_contacts; restitution e), as an MPC's
    model of the gait does (docs/impacts.md); a foot the schedule lifts opens it.  The torques
    hold the base at its starting pose and move each swinging foot up from where it lifted off
    and back down onto the ground at the end of its swing (:meth:`swing_target`).
    ``contacts`` is the set held over the last step taken (before any: the first),
    ``touchdowns`` every impact so far."""

    def __init__(self, model: Model, dt: float = 0.002, seed: int = 0, gains=(2.0, 0.05), amplitude: float = 0.5,
                 contacts=(), gait: Gait | None = None, restitution: float = 0.0):
        self.model, self.dt, self.gait, self.restitution = model, dt, gait, restitution
        rng = np.random.default_rng(seed)
        n = model.n_joints
        self.posture = rng.uniform(-0.5, 0.5, n)
        self.phase = rng.uniform(0, 2 * np.pi, n)
        self.gains, self.amplitude = gains, amplitude
        self.touchdowns: list[Touchdown] = []
        self.steps = 0  # the gait's clock counts steps, so its phases do not drift with rounding
        self.time = 0.0
        floating = model.floating_base
        self.state = self.initial_state = State(
            base_pose=np.eye(4) if floating else None, joint_positions=self.posture.copy(),
            base_twist=np.zeros(6) if floating else None, joint_velocities=np.zeros(n))
        self.contacts = as_contacts(contacts)
        if gait is not None:  # standing on the ground, on the feet the schedule names
            self.feet = tuple(dict.fromkeys(foot for phase in gait.phases for foot in phase.stance))
            self.state = self.initial_state = standing_state(model, gait, self.feet)[0]
            self.posture, self.amplitude = self.state.joint_positions, 0.0
            self._swings: dict = {}  # foot -> (lift-off point (3,), lift-off time, swing duration)
            self.contacts = as_contacts(list(self._standing(self.state)))

    def torques(self, state: State | None = None) -> np.ndarray:
        """The joint torques applied at ``state`` (default: the current one)."""
        state = self.state if state is None else state
        if self.gait is not None:
            return self._whole_body_torques(state)
        kp, kd = self.gains
        s, r = state.joint_positions, state.joint_velocities
        return kp * (self.posture - s) - kd * r + self.amplitude * np.sin(2.0 * self.time + self.phase)

    def _whole_body_torques(self, state: State) -> np.ndarray:
        """The torques whose constrained accelerations ν̇(τ) = ν̇(0) + G τ come closest (least
        squares, smallest τ) to PD tracking of the base's starting pose and of the swinging feet's
        paths (:meth:`swing_target`, feedforward included), with the contacts held now:
        G = (M⁻¹ − M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹JM⁻¹) S, a foot's acceleration J_f ν̇ + γ_f.  A PD on the joints
        alone lets two feet sag under the robot's weight and tip it over their diagonal."""
        model = self.model
        gait = self._gait()
        (kp, kd), (kp_base, kd_base) = gait.gains, gait.base_gains
        X_up = body_transforms(model, state.joint_positions)
        motion = bias_motion(model, state, X_up)
        M_inv = inverse_mass_matrix(model, state.joint_positions)
        G = M_inv[:, 6:]
        if self.contacts:
            J, _ = contact_kinematics(model, state, self.contacts, X_up, *motion)
            JM_inv = J @ M_inv
            G = G - (JM_inv.T @ np.linalg.solve(JM_inv @ J.T, JM_inv))[:, 6:]
        free = constrained_forward_dynamics(model, state, np.zeros(model.n_joints), self.contacts)[0]
        pose, twist = floating_base_of(state)
        base_error = se3_log(inverse_transform(pose) @ floating_base_of(self.initial_state)[0])
        rows, wanted = [G[:6]], [kp_base * base_error - kd_base * twist - free[:6]]
        held = {c.frame for c in self.contacts}
        swinging = [foot for foot in self.feet if foot not in held]
        if swinging:  # (a stance leg's joints serve the base: its foot is held)
            J, drift = contact_kinematics(model, state, as_contacts(swinging), X_up, *motion)
            positions = frame_poses(model, state, swinging, X_up)[:, :3, 3]
            velocities = (J @ np.concatenate([state.base_twist, state.joint_velocities])).reshape(-1, 3)
            for i, foot in enumerate(swinging):
                target, speed, acceleration = self.swing_target(foot)
                J_foot = J[3 * i:3 * i + 3]
                rows.append(J_foot @ G)
                wanted.append(acceleration + kp * (target - positions[i]) + kd * (speed - velocities[i])
                              - drift[3 * i:3 * i + 3] - J_foot @ free)
        return np.linalg.lstsq(np.vstack(rows), np.concatenate(wanted), rcond=1e-6)[0]

    def swing_target(self, foot: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(position, velocity, acceleration) (3,) each, in the world, that a swinging ``foot`` is
        asked to follow now: above where it lifted off, at swing_height·sin(π φ) over the ground
        (φ from 0 at lift-off to 1 when the schedule puts it back in stance, read SWING_LAG of a
        step early); a foot later than that goes on down at the speed it had."""
        point, lifted, duration = self._swings[foot]
        height, rate = self._gait().swing_height, math.pi / duration
        phase = max(self.time - SWING_LAG * self.dt - lifted, 0.0) / duration
        if phase <= 1.0:
            z, speed, acceleration = (height * math.sin(math.pi * phase), height * rate * math.cos(math.pi * phase),
                                      -height * rate * rate * math.sin(math.pi * phase))
        else:
            speed, acceleration = -height * rate, 0.0
            z = speed * (phase - 1.0) * duration
        return (np.array([point[0], point[1], GROUND_HEIGHT + z]), np.array([0.0, 0.0, speed]),
                np.array([0.0, 0.0, acceleration]))

    def foot_heights(self, state: State | None = None) -> dict:
        """{foot: its height above the ground [m]} at ``state`` (default: the current one); a gait's."""
        return foot_heights(self.model, self.state if state is None else state, self.feet, GROUND_HEIGHT)

    def _gait(self) -> Gait:
        if self.gait is None:
            raise ValueError("the simulation has no gait: only a gait's feet lift off and swing")
        return self.gait

    def _standing(self, state: State) -> tuple:
        """The feet that stand over the step from ``state`` (walking/ground.standing_feet), noting
        the lift-off of those that leave the ground now."""
        held = {c.frame for c in self.contacts}
        phase, fraction = self._gait().phase_at(self.time)
        standing = standing_feet(self.feet, set(phase.stance), held, self.foot_heights(state), GROUND_TOLERANCE)
        positions = None
        for i, foot in enumerate(self.feet):
            if foot in held and foot not in standing:  # it swings until the schedule puts it back in stance
                if positions is None:
                    positions = frame_poses(self.model, state, list(self.feet))[:, :3, 3]
                self._swings[foot] = (positions[i].copy(), self.time, (1.0 - fraction) * phase.duration)
        return standing

    def step(self) -> tuple[State, np.ndarray]:
        """Advance one step; returns (the state before the step, the torques applied).
        The set held over it is then ``contacts``; at a touchdown the returned state is
        the pre-impact one and the step integrates from the post-impact one."""
        state = start = self.state
        jump = None
        if self.gait is not None:
            contacts, previous = as_contacts(list(self._standing(state))), self.contacts
            if touchdown(previous, contacts):
                jump = impact(self.model, state, contacts, self.restitution)
                start = jump.state
            self.contacts = contacts
        torques = self.torques(start)
        if jump is not None:
            self.touchdowns.append(Touchdown(self.time, jump, previous, torques))
        with np.errstate(all="ignore"):  # a diverging step is detected below, not warned about
            self._advance(start, torques)
        self.steps += 1
        self.time = self.steps * self.dt
        return state, torques

    def contacts_text(self) -> str:
        """``contacts`` as the node's ``contacts`` topic and parameter read it."""
        return ", ".join(c.frame if (c.kind, c.reference) == ("point", "world_aligned") else
                         f"{c.frame}:{c.kind}:{c.reference}" for c in self.contacts)

    def _advance(self, state: State, torques: np.ndarray) -> None:
        if self.contacts or hasattr(self.model, "tree"):  # contacts, or a CoupledModel's mimic joints
            nu_dot = constrained_forward_dynamics(self.model, state, torques, self.contacts)[0]
            base_acc, joint_acc = (nu_dot[:6], nu_dot[6:]) if self.model.floating_base else (None, nu_dot)
        else:
            base_acc, joint_acc = forward_dynamics(self.model, state, torques)
        dt = self.dt
        r = state.joint_velocities + dt * joint_acc
        s = state.joint_positions + dt * r
        if base_acc is not None:  # (a floating base)
            pose, twist = floating_base_of(state)
            v = twist + dt * base_acc
            self.state = State(base_pose=pose @ se3_exp(dt * v), joint_positions=s, base_twist=v,
                               joint_velocities=r)
        else:
            self.state = State(joint_positions=s, joint_velocities=r)
        if self.contacts and np.isfinite(s).all() and np.isfinite(r).all():
            self.state = contact_velocities_zeroed(self.model, self.state, self.contacts)
        if not (np.abs(s).max(initial=0.0) < DIVERGED and np.abs(r).max(initial=0.0) < DIVERGED
                and (not self.model.floating_base or np.abs(floating_base_of(self.state)[1]).max() < DIVERGED)):
            self.state = self.initial_state  # an unstable step size: start over


def frame_motion(model: Model, state: State, frames) -> tuple[np.ndarray, np.ndarray]:
    """(positions (k, 3), velocities (k, 3)) of the origins of ``frames`` (link names) in
    the world, for pictures of the simulation (a foot's height and speed)."""
    contacts = as_contacts(list(frames))
    X_up = body_transforms(model, state.joint_positions)
    positions = frame_poses(model, state, [c.frame for c in contacts], X_up)[:, :3, 3]
    J, _ = contact_kinematics(model, state, contacts, X_up, *bias_motion(model, state, X_up))
    nu = state.joint_velocities if not model.floating_base else np.concatenate(
        [state.base_twist, state.joint_velocities])
    return positions, (J @ nu).reshape(-1, 3)
