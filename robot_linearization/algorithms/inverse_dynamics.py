"""Recursive Newton-Euler: RNEA, RNEAmb (app. E.1, E.2) and EIDAmb (Table 4.1).

All three share one forward pass (body twists, accelerations and wrenches) and
one backward pass (wrench accumulation towards the base).
"""

from __future__ import annotations

import numpy as np

from ..model import Model, State
from ..spatial import cross_force, cross_motion
from .kinematics import base_gravity, base_twist, body_transforms
from .mass_matrix import composite_inertias


def newton_euler_forward(model: Model, X_up: np.ndarray, state: State, base_acceleration: np.ndarray,
                         joint_accelerations: np.ndarray):
    """Forward pass of Table 4.1 (lines 6–23): per-body twists v_i, accelerations
    a_i and wrenches f_i = M_i a_i + v_i ×̄* M_i v_i, each (n+1, 6), in body frames.

    ``base_acceleration`` is the base's 6D acceleration *including* the fictitious
    −gravity (a_0 in the passes below); the joint velocities come from ``state``.
    """
    n_bodies = model.n_bodies
    S, I = model.motion_subspaces, model.inertias
    v = np.zeros((n_bodies, 6))
    a = np.zeros((n_bodies, 6))
    v[0] = base_twist(model, state)
    a[0] = base_acceleration
    r = state.joint_velocities
    for i in range(1, n_bodies):
        p = model.parent[i]
        v_joint = S[i] * r[i - 1]
        v[i] = X_up[i] @ v[p] + v_joint
        a[i] = X_up[i] @ a[p] + S[i] * joint_accelerations[i - 1] + cross_motion(v[i]) @ v_joint
    f = np.einsum("bij,bj->bi", I, a)
    for i in range(n_bodies):
        f[i] += cross_force(v[i]) @ (I[i] @ v[i])
    return v, a, f


def accumulate_wrenches(model: Model, X_up: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Backward pass (Table 4.1 lines 25–28): f_λ(i) += λ(i)_X^i f_i, in place.

    Afterwards f[i] is the wrench transmitted by joint i to the subtree of body i
    (for the base: the total wrench the extended input must supply).
    """
    for i in range(model.n_bodies - 1, 0, -1):
        f[model.parent[i]] += X_up[i].T @ f[i]
    return f


def extended_inverse_dynamics(model: Model, state: State, base_acceleration: np.ndarray,
                              joint_accelerations: np.ndarray):
    """EIDAmb (Table 4.1): the extended inverse dynamics ID̄ (3.39).

    Inputs: state (H, s, v, r); base_acceleration v̇ (6,) = d/dt of the body twist;
    joint_accelerations ṙ (n,).  Returns (base_wrench τ̄_b (6,), joint_torques τ (n,))
    with M ν̇ + h = [τ̄_b; τ].  τ̄_b is the virtual wrench on the base, in the base
    frame, that the given accelerations need (zero when they are consistent).

    Table 4.1 assembles τ̄_b = M^c_0 a_0 + ₀F ṙ + b^vp_0 from CRBAmb and GBWAmb
    parts; all three terms are linear in the accelerations, so carrying v̇ in the
    forward pass (a_0 = v̇ − g_0) gives the same τ̄_b from the single backward pass.
    """
    state.check(model)
    if not model.floating_base:
        raise ValueError("extended_inverse_dynamics needs a floating-base model; use inverse_dynamics")
    X_up = body_transforms(model, state.joint_positions)
    a0 = np.asarray(base_acceleration, dtype=float) - base_gravity(model, state)
    _, _, f = newton_euler_forward(model, X_up, state, a0, np.asarray(joint_accelerations, dtype=float))
    accumulate_wrenches(model, X_up, f)
    return f[0].copy(), np.einsum("bi,bi->b", model.motion_subspaces[1:], f[1:])


def inverse_dynamics(model: Model, state: State, joint_accelerations: np.ndarray):
    """RNEA (fixed base, Table E.1) or RNEAmb (floating base, Table E.2).

    Returns (joint_torques τ (n,), base_acceleration v̇ (6,) or None).  For a
    floating base, v̇ is the base acceleration consistent with zero external
    wrench (Definition 3.1), computed as a_0 = −(M^c_0)⁻¹ b^c_0.
    """
    state.check(model)
    rdot = np.asarray(joint_accelerations, dtype=float)
    X_up = body_transforms(model, state.joint_positions)
    g0 = base_gravity(model, state)
    _, _, f = newton_euler_forward(model, X_up, state, -g0, rdot)
    accumulate_wrenches(model, X_up, f)
    S = model.motion_subspaces
    if not model.floating_base:
        return np.einsum("bi,bi->b", S[1:], f[1:]), None
    I_c = composite_inertias(model, X_up)
    a = np.zeros((model.n_bodies, 6))
    a[0] = -np.linalg.solve(I_c[0], f[0])
    for i in range(1, model.n_bodies):
        a[i] = X_up[i] @ a[model.parent[i]]
    torques = np.einsum("bi,bi->b", S[1:], f[1:] + np.einsum("bij,bj->bi", I_c[1:], a[1:]))
    return torques, a[0]
