"""Articulated Body Algorithm: ABA and ABAmb (app. E.5, E.6)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..compiled import kernel
from ..arguments import check_tree, joint_vector
from ..model import PIVOT_TOLERANCE, Model, State, check_state
from ..spatial import (axpy, cross_force_into, cross_motion_into, dot6, inertia_transform_add, lu_factor6, lu_solve6,
                       mat_vec_into, transform_force_add, transform_motion_into)
from ..workspace import workspace
from .kinematics import base_gravity, base_twist, body_transforms_into


@kernel
def articulated_inertias_into(parent: NDArray[np.int64], S: NDArray[np.float64], I: NDArray[np.float64],
                              X_up: NDArray[np.float64], I_A: NDArray[np.float64], U: NDArray[np.float64],
                              D: NDArray[np.float64]) -> None:
    """Backward inertia pass shared by the ABA, the IMMA and the model check.

    Writes I_A (n+1, 6, 6) articulated inertias M^A_i, U (n+1, 6) = M^A_i Γ_i and
    D (n+1,) = Γ_i^T M^A_i Γ_i (row 0 of U, D unused).  For a floating base,
    I_A[0] is the articulated inertia of the whole robot at the base.
    """
    tmp = np.empty((6, 6))
    I_a = np.empty((6, 6))
    I_A[:] = I
    for i in range(I.shape[0] - 1, 0, -1):
        mat_vec_into(I_A[i], S[i], U[i])
        D[i] = dot6(U[i], S[i])
        for r in range(6):
            scaled = U[i, r] / D[i]
            for c in range(6):
                I_a[r, c] = I_A[i, r, c] - scaled * U[i, c]
        inertia_transform_add(X_up[i], I_a, I_A[parent[i]], tmp)


@kernel
def forward_dynamics_into(model: Any, data: Any, base_twist: NDArray[np.float64], r: NDArray[np.float64],
                          torques: NDArray[np.float64], accelerations: NDArray[np.float64]) -> None:
    """ABA(mb) into ``accelerations`` = ν̇ = [v̇ (6, floating only); ṙ (n)], at the body
    transforms data.X_up and the gravity g_0 data.g0 (6,) (kinematics.base_gravity), base
    twist (6,), joint velocities r and torques (n,).  Leaves the articulated quantities
    (data.I_A, U, D) for reuse; data.v, c, p, a scratch."""
    parent, S, I, floating_base = model.parent, model.S, model.I, model.floating_base
    X_up, I_A, U, D = data.X_up, data.I_A, data.U, data.D
    v, c, p, a, gravity_acceleration = data.v, data.c, data.p, data.a, data.g0
    n_bodies = v.shape[0]
    off = 6 if floating_base else 0
    tmp = np.empty(6)
    momentum = np.empty(6)
    # forward: velocities, velocity-product accelerations c_i, bias wrenches p_i
    v[0] = base_twist
    c[0] = 0.0
    for i in range(n_bodies):
        if i > 0:
            transform_motion_into(X_up[i], v[parent[i]], v[i])
            axpy(r[i - 1], S[i], v[i])
            cross_motion_into(v[i], S[i], c[i])
            for k in range(6):
                c[i, k] *= r[i - 1]
        mat_vec_into(I[i], v[i], momentum)
        cross_force_into(v[i], momentum, p[i])
    articulated_inertias_into(parent, S, I, X_up, I_A, U, D)
    # backward: articulated bias wrenches
    for i in range(n_bodies - 1, 0, -1):
        u = torques[i - 1] - dot6(S[i], p[i])
        # p_a = p + I_a c + U u / D, with I_a c = I_A c − U (U·c) / D
        mat_vec_into(I_A[i], c[i], tmp)
        axpy(1.0, p[i], tmp)
        axpy((u - dot6(U[i], c[i])) / D[i], U[i], tmp)
        transform_force_add(X_up[i], tmp, p[parent[i]])
        accelerations[off + i - 1] = u  # kept until the forward pass
    # base: M^A_0 a_0 + p^A_0 = 0, with a_0 including the fictitious −g
    if floating_base:
        LU, pivots = np.empty((6, 6)), np.empty(6, dtype=np.int64)
        lu_factor6(I_A[0], LU, pivots)
        lu_solve6(LU, pivots, p[0], a[0])
        a[0] *= -1.0
    else:
        a[0] = -gravity_acceleration
    for i in range(1, n_bodies):
        transform_motion_into(X_up[i], a[parent[i]], a[i])
        axpy(1.0, c[i], a[i])
        row = off + i - 1
        accelerations[row] = (accelerations[row] - dot6(U[i], a[i])) / D[i]
        axpy(accelerations[row], S[i], a[i])
    if floating_base:
        for k in range(6):
            accelerations[k] = a[0, k] + gravity_acceleration[k]


@kernel
def bias_accelerations_into(model: Any, data: Any) -> None:
    """The body accelerations at ν̇ = 0 without gravity into data.a (n+1, 6): a_0 = 0,
    a_i = i_X_λ(i) a_λ(i) + c_i, from the velocity-product accelerations data.c that
    :func:`forward_dynamics_into` left (the Newton-Euler forward pass's a at ν̇ = 0, without
    its twists and wrenches)."""
    parent, X_up, c, a = model.parent, data.X_up, data.c, data.a
    a[0] = 0.0
    for i in range(1, a.shape[0]):
        transform_motion_into(X_up[i], a[parent[i]], a[i])
        axpy(1.0, c[i], a[i])


@kernel
def singular_pivot(I_A: NDArray[np.float64], D: NDArray[np.float64]) -> int:
    """The deepest joint whose pivot D_i = Γᵀ I^A_i Γ vanishes (below PIVOT_TOLERANCE of
    its body's articulated inertia: M is singular), or −1.  Leaves first: a zero
    pivot poisons its ancestors' with NaN."""
    for i in range(D.shape[0] - 1, 0, -1):
        scale = 0.0
        for r in range(6):
            for c in range(6):
                scale = max(scale, abs(I_A[i, r, c]))
        if not abs(D[i]) > PIVOT_TOLERANCE * scale:
            return i - 1
    return -1


def articulated_inertias(model: Model, X_up: NDArray[np.float64]
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(I_A, U, D) of :func:`articulated_inertias_into` as new arrays."""
    I_A = np.empty_like(model.inertias)
    U = np.zeros((model.n_bodies, 6))
    D = np.zeros(model.n_bodies)
    articulated_inertias_into(model.parent, model.motion_subspaces, model.inertias, X_up, I_A, U, D)
    return I_A, U, D


def forward_dynamics(model: Model, state: State, joint_torques: ArrayLike | None = None
                     ) -> tuple[NDArray[np.float64] | None, NDArray[np.float64]]:
    """FD (3.17) by the ABAmb (floating base) or ABA (fixed base); joint_torques τ (n,),
    default zeros.

    Returns (base_acceleration v̇ (6,) or None, joint_accelerations ṙ (n,)); v̇ is
    the time derivative of the base body twist, in the base frame.

    ``model``: a Model; ``state``: its State.
    """
    check_state(check_tree(model, "forward_dynamics"), state)
    torques = joint_vector(model, joint_torques, "joint_torques")
    ws = workspace(model)
    body_transforms_into(model.motion_subspaces, model.tree_transforms, state.joint_positions, ws.X_up)
    ws.g0[:] = base_gravity(model, state)
    accelerations = np.empty(model.n_velocities)
    forward_dynamics_into(ws.model, ws.data, base_twist(model, state), state.joint_velocities, torques, accelerations)
    if model.floating_base:
        return accelerations[:6], accelerations[6:]
    return None, accelerations
