"""A simulated robot driven by our own forward dynamics (ABAmb), for the demo
and the ROS demo launch: it produces exactly what a robot driver and a state
estimator would publish, the joint state and the base odometry."""

from __future__ import annotations

import numpy as np

from ..algorithms.constrained_dynamics import bias_motion, constrained_forward_dynamics, contact_kinematics
from ..algorithms.inverse_mass_matrix import inverse_mass_matrix
from ..algorithms.kinematics import body_transforms
from ..algorithms.forward_dynamics import forward_dynamics
from ..contacts import as_contacts
from ..model import Model, State
from ..spatial import se3_exp


DIVERGED = 1e4
"""rad, rad/s, m/s: a simulated state beyond this has diverged and is restarted."""


class Simulation:
    """Semi-implicit Euler on the state's Lie group: v += dt·v̇, r += dt·ṙ,
    H ← H·exp(dt·v^), s += dt·r.  Joint torques: a soft PD hold of a posture plus
    a slow sinusoid, so the robot keeps moving.  Without contacts it floats (there
    is no ground); with contacts (e.g. its four feet) those frames are held where
    they start, by the constrained dynamics (docs/contacts.md).
    The gains suit the bundled quadruped up to dt ≈ 10 ms."""

    def __init__(self, model: Model, dt: float = 0.002, seed: int = 0, gains=(2.0, 0.05), amplitude: float = 0.5,
                 contacts=()):
        self.model, self.dt, self.contacts = model, dt, as_contacts(contacts)
        rng = np.random.default_rng(seed)
        n = model.n_joints
        self.posture = rng.uniform(-0.5, 0.5, n)
        self.phase = rng.uniform(0, 2 * np.pi, n)
        self.gains, self.amplitude = gains, amplitude
        self.time = 0.0
        floating = model.floating_base
        self.state = self.initial_state = State(
            base_pose=np.eye(4) if floating else None, joint_positions=self.posture.copy(),
            base_twist=np.zeros(6) if floating else None, joint_velocities=np.zeros(n))

    def torques(self) -> np.ndarray:
        kp, kd = self.gains
        s, r = self.state.joint_positions, self.state.joint_velocities
        return kp * (self.posture - s) - kd * r + self.amplitude * np.sin(2.0 * self.time + self.phase)

    def step(self) -> tuple[State, np.ndarray]:
        """Advance one step; returns (the state before the step, the torques applied)."""
        state, torques = self.state, self.torques()
        with np.errstate(all="ignore"):  # a diverging step is detected below, not warned about
            self._advance(state, torques)
        self.time += self.dt
        return state, torques

    def _held(self, state: State) -> State:
        """The state with its velocity projected (in the metric of M) onto zero contact
        velocity, J ν = 0: the explicit step's drift off the constraint does not build up.
        Only the simulation does this; the linearized model has no such correction."""
        model = self.model
        tree = getattr(model, "tree", model)
        full = model.tree_state(state) if tree is not model else state
        X_up = body_transforms(tree, full.joint_positions)
        v, _ = bias_motion(tree, full, X_up)
        J, _ = contact_kinematics(model, full, self.contacts, X_up, v, v)
        M_inv = inverse_mass_matrix(tree, full.joint_positions)
        nu = full.joint_velocities if not tree.floating_base else np.concatenate(
            [full.base_twist, full.joint_velocities])
        nu = nu - M_inv @ J.T @ np.linalg.lstsq(J @ M_inv @ J.T, J @ nu, rcond=None)[0]
        if tree is not model:  # back to the independent joints
            nu = nu[model.velocity_rows]
        if not model.floating_base:
            return State(joint_positions=state.joint_positions, joint_velocities=nu)
        return State(base_pose=state.base_pose, joint_positions=state.joint_positions, base_twist=nu[:6],
                     joint_velocities=nu[6:])

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
            self.state = self._held(self.state)
        if not (np.abs(s).max(initial=0.0) < DIVERGED and np.abs(r).max(initial=0.0) < DIVERGED
                and (not self.model.floating_base or np.abs(self.state.base_twist).max() < DIVERGED)):
            self.state = self.initial_state  # an unstable step size: start over
