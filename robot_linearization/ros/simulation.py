"""A simulated robot driven by our own forward dynamics (ABAmb), for the demo
and the ROS demo launch: it produces exactly what a robot driver and a state
estimator would publish, the joint state and the base odometry (and, when it
walks a scheduled gait, the contact set it holds)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..algorithms.constrained_dynamics import bias_motion, constrained_forward_dynamics, contact_kinematics
from ..algorithms.inverse_mass_matrix import inverse_mass_matrix
from ..algorithms.kinematics import body_transforms, frame_poses
from ..algorithms.forward_dynamics import forward_dynamics
from ..contacts import as_contacts
from ..impacts import Impact, impact, touchdown
from ..integrator import contact_velocities_zeroed
from ..model import Model, State
from ..spatial import inverse_transform, se3_exp, se3_log
from ..gait import Gait


DIVERGED = 1e4
"""rad, rad/s, m/s: a simulated state beyond this has diverged and is restarted."""


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

    With a ``gait`` (gait.py) the contact set follows its schedule instead, and the
    joints track its posture and swing (its gains, no sinusoid).  A foot whose contact
    closes is held where it is at that instant: the step that starts there begins with
    the rigid impact of the whole new set (rl.impact, the map rl.step applies with
    previous_contacts; restitution e), as an MPC's model of the gait does (docs/impacts.md).
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
        if gait is not None:  # the gait's posture, a little different for each seed (±0.05 rad)
            self.offset = 0.1 * self.posture
            self.posture = gait.joint_targets(model.joint_names, 0.0)[0] + self.offset
            self.gains, self.amplitude = gait.gains, 0.0
        self.contacts = gait.contacts_at(0.0) if gait is not None else as_contacts(contacts)
        self.touchdowns: list[Touchdown] = []
        self.steps = 0  # the gait's clock counts steps, so its phases do not drift with rounding
        self.time = 0.0
        floating = model.floating_base
        self.state = self.initial_state = State(
            base_pose=np.eye(4) if floating else None, joint_positions=self.posture.copy(),
            base_twist=np.zeros(6) if floating else None, joint_velocities=np.zeros(n))

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
        squares, smallest τ) to PD tracking of the base's starting pose and of the swinging
        legs' joint targets, with the contacts held now: G = (M⁻¹ − M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹JM⁻¹) S.
        A PD on the joints alone lets two feet sag under the robot's weight and tip it over
        their diagonal, each swing foot touching down lower: the robot falls down a staircase."""
        model = self.model
        (kp, kd), (kp_base, kd_base) = self.gait.gains, self.gait.base_gains
        X_up = body_transforms(model, state.joint_positions)
        J, _ = contact_kinematics(model, state, self.contacts, X_up, *bias_motion(model, state, X_up))
        M_inv = inverse_mass_matrix(model, state.joint_positions)
        JM_inv = J @ M_inv
        G = (M_inv - JM_inv.T @ np.linalg.solve(JM_inv @ J.T, JM_inv))[:, 6:]
        free = constrained_forward_dynamics(model, state, np.zeros(model.n_joints), self.contacts)[0]
        angles, rates = self.gait.joint_targets(model.joint_names, self.time)
        base_error = se3_log(inverse_transform(state.base_pose) @ self.initial_state.base_pose)
        wanted = np.concatenate([kp_base * base_error - kd_base * state.base_twist,
                                 kp * (angles + self.offset - state.joint_positions)
                                 + kd * (rates - state.joint_velocities)])
        # rows: the base and the swinging legs' joints; a stance leg's joints serve the base (its foot is held)
        rows = np.concatenate([np.ones(6, dtype=bool), self.gait.swinging(model.joint_names, self.time)])
        return np.linalg.lstsq(G[rows], (wanted - free)[rows], rcond=1e-6)[0]

    def step(self) -> tuple[State, np.ndarray]:
        """Advance one step; returns (the state before the step, the torques applied).
        The set held over it is then ``contacts``; at a touchdown the returned state is
        the pre-impact one and the step integrates from the post-impact one."""
        state = start = self.state
        jump = None
        if self.gait is not None:
            contacts, previous = self.gait.contacts_at(self.time), self.contacts
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
        if self.model.floating_base:
            v = state.base_twist + dt * base_acc
            self.state = State(base_pose=state.base_pose @ se3_exp(dt * v), joint_positions=s, base_twist=v,
                               joint_velocities=r)
        else:
            self.state = State(joint_positions=s, joint_velocities=r)
        if self.contacts and np.isfinite(s).all() and np.isfinite(r).all():
            self.state = contact_velocities_zeroed(self.model, self.state, self.contacts)
        if not (np.abs(s).max(initial=0.0) < DIVERGED and np.abs(r).max(initial=0.0) < DIVERGED
                and (not self.model.floating_base or np.abs(self.state.base_twist).max() < DIVERGED)):
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
