"""One integrator step on SE(3)×ℝⁿ×ℝ⁶×ℝⁿ and its exact Jacobians (what an MPC consumes).

Semi-implicit (symplectic) Euler, with ν̇ from the forward dynamics (with contacts:
the constrained ones):

    ν⁺ = ν + dt·ν̇(x, τ),   H⁺ = H·exp(dt·v⁺^),   s⁺ = s + dt·r⁺

With the left-trivialised perturbation z of :mod:`robot_linearization.linearization`
on both sides, x⁺ + z⁺ = step(x + z, τ + w) gives z⁺ = A_d z + B_d w with

    δν⁺  = z_ν + dt (A[ν̇ rows] z + B[ν̇ rows] w)
    z_s⁺ = z_s + dt δr⁺
    z_H⁺ = Ad(exp(−dt v⁺)) z_H + dt J_r(dt v⁺) δv⁺

where J_r is the right Jacobian of the SE(3) exponential, exp(ξ + δ) = exp(ξ)·exp(J_r(ξ) δ),
J_r(ξ) = ∫₀¹ exp(−s ad_ξ) ds — exact, not I + A·dt (which is only its first order).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import expm

from .algorithms.constrained_dynamics import constrained_forward_dynamics
from .algorithms.forward_dynamics import forward_dynamics
from .coupling import CoupledModel
from .model import Model, State
from .spatial import cross_motion, se3_exp, velocity_transform


def step(model: Model, state: State, joint_torques, dt: float, contacts=()) -> State:
    """The state after one semi-implicit Euler step of ``dt`` [s] (module docstring)."""
    if not (dt > 0 and np.isfinite(dt)):
        raise ValueError(f"dt must be a positive number of seconds, got {dt!r}")
    torques = np.zeros(model.n_joints) if joint_torques is None else np.asarray(joint_torques, dtype=float)
    if contacts or isinstance(model, CoupledModel):
        nu_dot = constrained_forward_dynamics(model, state, torques, contacts)[0]
    else:
        base, joints = forward_dynamics(model, state, torques)
        nu_dot = joints if base is None else np.concatenate([base, joints])
    off = 6 if model.floating_base else 0
    r = state.joint_velocities + dt * nu_dot[off:]
    s = state.joint_positions + dt * r
    if not model.floating_base:
        return State(joint_positions=s, joint_velocities=r)
    v = state.base_twist + dt * nu_dot[:6]
    return State(base_pose=state.base_pose @ se3_exp(dt * v), joint_positions=s, base_twist=v, joint_velocities=r)


def se3_right_jacobian(xi: np.ndarray) -> np.ndarray:
    """J_r(ξ) (6, 6) for a twist ξ = [v; ω]: exp(ξ + δ) = exp(ξ)·exp(J_r(ξ) δ) to first
    order in δ; J_r = ∫₀¹ exp(−s ad_ξ) ds, the top-right block of exp([[−ad_ξ, I], [0, 0]])."""
    block = np.zeros((12, 12))
    block[:6, :6] = -cross_motion(np.asarray(xi, dtype=float))
    block[:6, 6:] = np.eye(6)
    return expm(block)[:6, 6:]


def discretize(model: Model, linearization, dt: float):
    """(A_d (2N, 2N), B_d (2N, n)): the exact Jacobians of :func:`step` at the state,
    torques (and contacts) of ``linearization`` (a single-state Linearization)."""
    if not (dt > 0 and np.isfinite(dt)):
        raise ValueError(f"dt must be a positive number of seconds, got {dt!r}")
    A, B = linearization.A, linearization.B
    if A.ndim != 2 or linearization.state is None:
        raise ValueError("discretize takes the Linearization of one state (it must remember its state)")
    N = model.n_velocities
    off = 6 if model.floating_base else 0
    F_nu = dt * A[N:]
    F_nu[:, N:] += np.eye(N)  # δν⁺ = z_ν + dt (A z + B w)
    G_nu = dt * B[N:]
    A_d, B_d = np.zeros_like(A), np.zeros_like(B)
    A_d[N:], B_d[N:] = F_nu, G_nu
    A_d[off:N] = dt * F_nu[off:]  # z_s⁺ = z_s + dt δr⁺
    A_d[off:N, off:N] += np.eye(N - off)
    B_d[off:N] = dt * G_nu[off:]
    if model.floating_base:
        v_next = linearization.state.base_twist + dt * linearization.base_acceleration
        J_r = se3_right_jacobian(dt * v_next)
        A_d[:6] = dt * J_r @ F_nu[:6]
        A_d[:6, :6] += velocity_transform(se3_exp(-dt * v_next))  # Ad(exp(−dt v⁺)) z_H
        B_d[:6] = dt * J_r @ G_nu[:6]
    return A_d, B_d
