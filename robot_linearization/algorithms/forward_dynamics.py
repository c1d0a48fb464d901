"""Articulated Body Algorithm: ABA and ABAmb (app. E.5, E.6)."""

from __future__ import annotations

import numpy as np

from ..model import Model, State
from ..spatial import cross_force, cross_motion
from .kinematics import base_gravity, base_twist, body_transforms


def articulated_inertias(model: Model, X_up: np.ndarray):
    """Backward inertia pass shared by the ABA, the IMMA and the model check.

    Returns (I_A (n+1, 6, 6) articulated inertias M^A_i, U (n+1, 6) = M^A_i Γ_i,
    D (n+1,) = Γ_i^T M^A_i Γ_i); row 0 of U and D is unused.  For a floating
    base, I_A[0] is the articulated inertia of the whole robot at the base.
    """
    S = model.motion_subspaces
    I_A = model.inertias.copy()
    U = np.zeros((model.n_bodies, 6))
    D = np.zeros(model.n_bodies)
    for i in range(model.n_bodies - 1, 0, -1):
        U[i] = I_A[i] @ S[i]
        D[i] = S[i] @ U[i]
        I_a = I_A[i] - np.outer(U[i], U[i]) / D[i]
        I_A[model.parent[i]] += X_up[i].T @ I_a @ X_up[i]
    return I_A, U, D


def forward_dynamics(model: Model, state: State, joint_torques: np.ndarray):
    """FD (3.17) by the ABAmb (floating base) or ABA (fixed base).

    Returns (base_acceleration v̇ (6,) or None, joint_accelerations ṙ (n,)); v̇ is
    the time derivative of the base body twist, in the base frame.
    """
    state.check(model)
    X_up = body_transforms(model, state.joint_positions)
    return forward_dynamics_at(model, X_up, state, np.asarray(joint_torques, dtype=float))


def forward_dynamics_at(model: Model, X_up: np.ndarray, state: State, joint_torques: np.ndarray):
    """:func:`forward_dynamics` with the body transforms already computed."""
    S, I = model.motion_subspaces, model.inertias
    n_bodies = model.n_bodies
    r = state.joint_velocities
    v = np.zeros((n_bodies, 6))
    c = np.zeros((n_bodies, 6))  # velocity-product accelerations v_i × v_Ji
    p = np.zeros((n_bodies, 6))  # bias wrenches, becoming articulated bias wrenches
    v[0] = base_twist(model, state)
    p[0] = cross_force(v[0]) @ (I[0] @ v[0])
    for i in range(1, n_bodies):
        v_joint = S[i] * r[i - 1]
        v[i] = X_up[i] @ v[model.parent[i]] + v_joint
        c[i] = cross_motion(v[i]) @ v_joint
        p[i] = cross_force(v[i]) @ (I[i] @ v[i])
    I_A, U, D = articulated_inertias(model, X_up)
    u = np.zeros(n_bodies)
    for i in range(n_bodies - 1, 0, -1):
        u[i] = joint_torques[i - 1] - S[i] @ p[i]
        I_a = I_A[i] - np.outer(U[i], U[i]) / D[i]
        p_a = p[i] + I_a @ c[i] + U[i] * (u[i] / D[i])
        p[model.parent[i]] += X_up[i].T @ p_a
    g0 = base_gravity(model, state)
    a = np.zeros((n_bodies, 6))
    a[0] = -np.linalg.solve(I_A[0], p[0]) if model.floating_base else -g0
    joint_accelerations = np.zeros(model.n_joints)
    for i in range(1, n_bodies):
        a[i] = X_up[i] @ a[model.parent[i]] + c[i]
        joint_accelerations[i - 1] = (u[i] - U[i] @ a[i]) / D[i]
        a[i] += S[i] * joint_accelerations[i - 1]
    base_acceleration = a[0] + g0 if model.floating_base else None
    return base_acceleration, joint_accelerations
