"""Derivatives of the extended inverse dynamics (thesis §4.2, Tables 4.2–4.5), body frames.

One forward-mode sweep differentiates the EIDAmb (Table 4.1) line by line with
respect to all four state variables at once: every per-body quantity x_i
carries its derivative ∂x_i as columns ∂x_i[c] (6,), with the columns c ordered
as the state perturbation [z_H (6) | z_s (n) | z_v (6) | z_r (n)] (fixed base:
[z_s | z_r], where the sweep is the fixed-base RNEA derivative of Tables E.8–E.9).

Sparsity along the tree: before accumulation, body i depends only on z_H, z_v
and the joints on its path from the base (Table 4.3's "for k" loops run over
those); after accumulation also on its subtree's joints, a contiguous range.
Only those columns are touched.

Deviation from Table 4.2 (consistency fix): Table 4.2 holds the inertial-frame
twist ᴬv_A,0 fixed when perturbing H, but the state of Proposition 3.1 carries
the body twist v = ⁰v_A,0.  Holding v fixed, H enters the EIDAmb only through
gravity, a_0 = v̇ − [R^T g; 0]; with R → R exp(ω^), ∂(R^T g)/∂ω = (R^T g)^, so
the H-derivative is the propagation of ∂a_0/∂z_H = [[0, −(R^T g)^], [0, 0]]
(only the three rotation columns are non-zero).

This is the tables' literal form, kept as a reference (frame="body"): the engine,
contacts and impacts included, runs base_frame_derivatives.py, which gives the same D
with one column per joint instead of one per body and joint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..compiled import kernel
from ..arguments import check_tree, choice, joint_vector, six_vector
from ..model import Model, State, check_state
from ..spatial import (axpy, cross_force_into, cross_motion_into, dot6, mat_vec_into, transform_force_add,
                       transform_motion_into)
from .base_frame_derivatives import base_frame_derivatives_into
from .inverse_dynamics import newton_euler_forward_into
from ..workspace import workspace
from .kinematics import base_frame_poses_into, base_gravity, base_twist, body_transforms_into


@dataclass(frozen=True)
class ExtendedInverseDynamicsDerivatives:
    """Left-trivialised derivatives of ID̄ = [τ̄_b; τ] (N rows), one block per
    state variable (absent blocks are None for a fixed base):

    base_pose (N, 6): D₁ID̄ ∘ DL_H(I), columns [translation; rotation] of z_H (Table 4.2)
    joint_positions (N, n): D₂ID̄ (Table 4.3)
    base_twist (N, 6): D₃ID̄ (Table 4.4)
    joint_velocities (N, n): D₄ID̄ (Table 4.5)
    """

    base_pose: np.ndarray | None
    joint_positions: np.ndarray
    base_twist: np.ndarray | None
    joint_velocities: np.ndarray

    def stacked(self) -> np.ndarray:
        """[D₁ | D₂ | D₃ | D₄] (N, 2N), columns in the state order of A."""
        blocks = [self.base_pose, self.joint_positions, self.base_twist, self.joint_velocities]
        return np.hstack([b for b in blocks if b is not None])


@kernel(inline=True)
def _wrench_derivative(I_i, v_i, momentum_i, dv, da, out, tmp, tmp2):
    """∂f_i = M_i ∂a_i + v_i ×̄* M_i ∂v_i + ∂v_i ×̄* M_i v_i (line 22), one column."""
    mat_vec_into(I_i, da, out)
    mat_vec_into(I_i, dv, tmp)
    cross_force_into(v_i, tmp, tmp2)
    axpy(1.0, tmp2, out)
    cross_force_into(dv, momentum_i, tmp2)
    axpy(1.0, tmp2, out)


@kernel(inline=True)
def _path_columns(path, depth, col_s, col_r, columns, count):
    """Append the z_s and z_r columns of the joints path[:depth] to columns[count:];
    returns the new count."""
    for d in range(depth):
        columns[count] = col_s + path[d]
        columns[count + 1] = col_r + path[d]
        count += 2
    return count


@kernel
def derivatives_into(model: Any, data: Any, r: NDArray[np.float64], columns: NDArray[np.float64], with_base_pose: bool
                    ) -> None:
    """Tables 4.2–4.5 in one sweep, into data.derivatives (N, 2N) = [D₁|D₂|D₃|D₄]ID̄.

    data.v, a, f (n+1, 6): the EIDAmb forward pass at the body transforms data.X_up and
    g_0 = data.g0 (f not yet accumulated; this accumulates it); r (n,) the joint velocities.
    columns (3, n+1, 2N, 6): scratch for the body-frame columns ∂v, ∂a, ∂f.
    with_base_pose=False skips D₁ID̄ (left zero), which the linearization
    does not need: see linearize_into.
    """
    parent, S, I, ancestors, depth = model.parent, model.S, model.I, model.ancestors, model.depth
    subtree_end, floating_base = model.subtree_end, model.floating_base
    X_up, gravity_acceleration, v, a, f, derivatives = data.X_up, data.g0, data.v, data.a, data.f, data.derivatives
    dv, da, df = columns[0], columns[1], columns[2]
    n_bodies = v.shape[0]
    n = n_bodies - 1
    m = derivatives.shape[1]
    off = 6 if floating_base else 0
    col_s = off
    col_v = 6 + n
    col_r = off + n + (6 if floating_base else 0)
    # columns every body depends on: z_v (6) and, if wanted, z_H's rotation (3)
    n_fixed = (9 if with_base_pose else 6) if floating_base else 0
    columns = np.empty(m, dtype=np.int64)
    for k in range(6):
        columns[k] = col_v + k
    for k in range(3):
        columns[6 + k] = 3 + k
    tmp = np.empty(6)
    tmp2 = np.empty(6)
    momentum = np.empty((n_bodies, 6))
    for i in range(n_bodies):
        mat_vec_into(I[i], v[i], momentum[i])
    derivatives[:] = 0.0
    df[0] = 0.0
    if floating_base:
        for ci in range(n_fixed):
            dv[0, columns[ci]] = 0.0
            da[0, columns[ci]] = 0.0
        for k in range(6):
            dv[0, col_v + k, k] = 1.0  # Table 4.4 line 1
        if with_base_pose:
            g = gravity_acceleration
            da[0, 3, 1], da[0, 3, 2] = -g[2], g[1]  # e_j × g: column j of −(R^T g)^
            da[0, 4, 0], da[0, 4, 2] = g[2], -g[0]
            da[0, 5, 0], da[0, 5, 1] = -g[1], g[0]
        for ci in range(n_fixed):
            c = columns[ci]
            _wrench_derivative(I[0], v[0], momentum[0], dv[0, c], da[0, c], df[0, c], tmp, tmp2)

    for i in range(1, n_bodies):
        p, k = parent[i], i - 1
        X = X_up[i]
        # inherited columns: z_v, z_H and the joints on the parent's path
        count = _path_columns(ancestors[p], depth[p], col_s, col_r, columns, n_fixed)
        for ci in range(count):
            c = columns[ci]
            transform_motion_into(X, dv[p, c], dv[i, c])  # line 17
            transform_motion_into(X, da[p, c], da[i, c])  # line 18, with −v_J × ∂v_i
            cross_motion_into(dv[i, c], S[i], tmp)
            axpy(r[k], tmp, da[i, c])
        # own columns: ∂(X v_λ)/∂s_i = v_i × Γ,  ∂(X a_λ)/∂s_i = (X a_λ) × Γ
        cs, cr = col_s + k, col_r + k
        cross_motion_into(v[i], S[i], dv[i, cs])
        transform_motion_into(X, a[p], tmp2)
        cross_motion_into(tmp2, S[i], da[i, cs])
        cross_motion_into(dv[i, cs], S[i], tmp)
        axpy(r[k], tmp, da[i, cs])
        dv[i, cr] = S[i]
        cross_motion_into(v[i], S[i], da[i, cr])  # ∂(v_i × Γ r_i)/∂r_i; v_J × Γ = 0
        columns[count], columns[count + 1] = cs, cr
        count += 2
        for ci in range(count):
            c = columns[ci]
            _wrench_derivative(I[i], v[i], momentum[i], dv[i, c], da[i, c], df[i, c], tmp, tmp2)
        for j in range(i, subtree_end[i]):  # the subtree's columns fill up in the backward pass
            df[i, col_s + j] = 0.0
            df[i, col_r + j] = 0.0

    for i in range(n_bodies - 1, 0, -1):
        p, k = parent[i], i - 1
        X = X_up[i]
        count = _path_columns(ancestors[i], depth[i], col_s, col_r, columns, n_fixed)
        for j in range(i, subtree_end[i]):
            columns[count] = col_s + j
            columns[count + 1] = col_r + j
            count += 2
        for ci in range(count):
            c = columns[ci]
            derivatives[off + k, c] = dot6(S[i], df[i, c])  # line 32: τ_i = Γ^T f_i
            transform_force_add(X, df[i, c], df[p, c])  # line 27
        cross_force_into(S[i], f[i], tmp)  # ∂(λ_X^i)/∂s_i f_i = λ_X^i (Γ ×̄* f_i)
        transform_force_add(X, tmp, df[p, col_s + k])
        transform_force_add(X, f[i], f[p])
    if floating_base:
        for c in range(m):  # line 41: τ̄_b = f_0
            for row in range(6):
                derivatives[row, c] = df[0, c, row]


def extended_inverse_dynamics_derivatives(model: Model, state: State, base_acceleration: ArrayLike | None,
                                          joint_accelerations: ArrayLike, *,
                                          frame: str = "base") -> ExtendedInverseDynamicsDerivatives:
    """Derivatives of the EIDAmb (floating base) or RNEA (fixed base) at
    (state, v̇, ṙ); ``base_acceleration`` is ignored (pass None) for a fixed base.

    frame="base": the sweep of base_frame_derivatives.py, every column one 6-vector in
    the base frame (the fast one, used by :func:`~robot_linearization.linearize`);
    frame="body": this module's sweep of Tables 4.2–4.5, per-body columns in body
    frames (the tables' literal form, a reference).  Equal to rounding.

    ``model``: a Model; ``joint_accelerations`` ṙ (n,).
    """
    choice(frame, "frame", ("base", "body"))
    check_state(check_tree(model, "extended_inverse_dynamics_derivatives"), state)
    rdot = joint_vector(model, joint_accelerations, "joint_accelerations", default_zero=False)
    n, N, n_bodies = model.n_joints, model.n_velocities, model.n_bodies
    ws = workspace(model)
    body_transforms_into(model.motion_subspaces, model.tree_transforms, state.joint_positions, ws.X_up)
    ws.g0[:] = base_gravity(model, state)
    a0 = (six_vector(base_acceleration, "base_acceleration", "v̇ [linear; angular] in the base frame")
          if model.floating_base else 0.0) - ws.g0
    if frame == "base":
        base_frame_poses_into(model.parent, model.motion_subspaces, ws.X_up, model.floating_base, ws.R, ws.t, ws.axes)
        base_frame_derivatives_into(ws.model, ws.data, base_twist(model, state), a0, ws.g0, state.joint_velocities,
                                    rdot, True)
    else:
        newton_euler_forward_into(ws.model, ws.data, base_twist(model, state), a0, state.joint_velocities, rdot)
        derivatives_into(ws.model, ws.data, state.joint_velocities, np.empty((3, n_bodies, 2 * N, 6)), True)
    D = ws.derivatives.copy()
    if not model.floating_base:
        return ExtendedInverseDynamicsDerivatives(None, D[:, :n], None, D[:, n:])
    return ExtendedInverseDynamicsDerivatives(D[:, :6], D[:, 6:6 + n], D[:, 6 + n:12 + n], D[:, 12 + n:])
