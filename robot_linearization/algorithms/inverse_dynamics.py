"""Recursive Newton-Euler: RNEA, RNEAmb (app. E.1, E.2) and EIDAmb (Table 4.1).

All three share one forward pass (body twists, accelerations and wrenches) and
one backward pass (wrench accumulation towards the base).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..compiled import kernel
from ..arguments import check_tree, joint_vector, six_vector
from ..model import Model, State, check_state
from ..spatial import (axpy, cross_force_into, cross_motion_into, mat_vec_into, transform_force_add,
                       transform_motion_into)
from ..workspace import workspace
from .kinematics import base_gravity, base_twist, body_transforms_into
from .mass_matrix import composite_inertias


@kernel
def newton_euler_forward_into(model: Any, data: Any, base_twist: NDArray[np.float64],
                              base_acceleration: NDArray[np.float64], r: NDArray[np.float64], rdot: NDArray[np.float64]
                             ) -> None:
    """Forward pass of Table 4.1 (lines 6–23) into data.v, a, f (n+1, 6): body twists,
    accelerations and wrenches f_i = M_i a_i + v_i ×̄* M_i v_i, in body frames, at the
    body transforms data.X_up.

    ``base_acceleration`` is a_0, the base's 6D acceleration *including* the
    fictitious −gravity; r, rdot (n,) are the joint velocities and accelerations.
    """
    parent, S, I, X_up, v, a, f = model.parent, model.S, model.I, data.X_up, data.v, data.a, data.f
    tmp = np.empty(6)
    momentum = np.empty(6)
    v[0] = base_twist
    a[0] = base_acceleration
    for i in range(1, v.shape[0]):
        p, k = parent[i], i - 1
        transform_motion_into(X_up[i], v[p], v[i])  # line 17
        axpy(r[k], S[i], v[i])
        transform_motion_into(X_up[i], a[p], a[i])  # line 18
        axpy(rdot[k], S[i], a[i])
        cross_motion_into(v[i], S[i], tmp)
        axpy(r[k], tmp, a[i])
    for i in range(v.shape[0]):  # line 22
        mat_vec_into(I[i], v[i], momentum)
        mat_vec_into(I[i], a[i], f[i])
        cross_force_into(v[i], momentum, tmp)
        axpy(1.0, tmp, f[i])


@kernel
def accumulate_wrenches(parent: NDArray[np.int64], X_up: NDArray[np.float64], f: NDArray[np.float64]) -> None:
    """Backward pass (Table 4.1 lines 25–28): f_λ(i) += λ(i)_X^i f_i, in place.

    Afterwards f[i] is the wrench transmitted by joint i to the subtree of body i
    (for the base: the total wrench the extended input must supply).
    """
    for i in range(f.shape[0] - 1, 0, -1):
        transform_force_add(X_up[i], f[i], f[parent[i]])


def _newton_euler(model: Model, state: State, base_acceleration, joint_accelerations):
    """(X_up, f): the body transforms and the accumulated wrenches (Table 4.1), new arrays."""
    ws = workspace(model)
    body_transforms_into(model.motion_subspaces, model.tree_transforms, state.joint_positions, ws.X_up)
    newton_euler_forward_into(ws.model, ws.data, base_twist(model, state), base_acceleration, state.joint_velocities,
                              joint_accelerations)
    accumulate_wrenches(model.parent, ws.X_up, ws.f)
    return ws.X_up.copy(), ws.f.copy()


def extended_inverse_dynamics(model: Model, state: State, base_acceleration: ArrayLike,
                              joint_accelerations: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """EIDAmb (Table 4.1): the extended inverse dynamics ID̄ (3.39).

    Inputs: state (H, s, v, r); base_acceleration v̇ (6,) = d/dt of the body twist;
    joint_accelerations ṙ (n,).  Returns (base_wrench τ̄_b (6,), joint_torques τ (n,))
    with M ν̇ + h = [τ̄_b; τ].  τ̄_b is the virtual wrench on the base, in the base
    frame, that the given accelerations need (zero when they are consistent).

    Table 4.1 assembles τ̄_b = M^c_0 a_0 + ₀F ṙ + b^vp_0 from CRBAmb and GBWAmb
    parts; all three terms are linear in the accelerations, so carrying v̇ in the
    forward pass (a_0 = v̇ − g_0) gives the same τ̄_b from the single backward pass.

    ``model``: a floating-base Model.
    """
    check_state(check_tree(model, "extended_inverse_dynamics"), state)
    if not model.floating_base:
        raise ValueError("extended_inverse_dynamics needs a floating-base model; use inverse_dynamics")
    a0 = six_vector(base_acceleration, "base_acceleration", "v̇ [linear; angular] in the base frame") \
        - base_gravity(model, state)
    joint_accelerations = joint_vector(model, joint_accelerations, "joint_accelerations", default_zero=False)
    _, f = _newton_euler(model, state, a0, joint_accelerations)
    return f[0].copy(), np.einsum("bi,bi->b", model.motion_subspaces[1:], f[1:])


def inverse_dynamics(model: Model, state: State, joint_accelerations: ArrayLike
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64] | None]:
    """RNEA (fixed base, Table E.1) or RNEAmb (floating base, Table E.2).

    Returns (joint_torques τ (n,), base_acceleration v̇ (6,) or None).  For a
    floating base, v̇ is the base acceleration consistent with zero external
    wrench (Definition 3.1), computed as a_0 = −(M^c_0)⁻¹ b^c_0.

    ``model``: a Model; ``state``: its State (H, s, v, r); ``joint_accelerations`` ṙ (n,).
    """
    check_state(check_tree(model, "inverse_dynamics"), state)
    joint_accelerations = joint_vector(model, joint_accelerations, "joint_accelerations", default_zero=False)
    X_up, f = _newton_euler(model, state, -base_gravity(model, state), joint_accelerations)
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
