"""Inverse Mass Matrix Algorithm: IMMA (Table 4.6) and IMMAmb (Table 4.7).

M⁻¹ = ∂ν̇/∂τ̄ of the ABA run with zero velocity and gravity: every quantity of
the ABA becomes linear in the extended input τ̄ = [τ̄_b; τ], and each pass
carries the matrix of that linear map (column c as a 6-vector) instead of a vector.

Every 6-vector here is expressed in the base frame (body 0), where the base's
articulated inertia already is: the tables' transforms λ(i)_X^i between
neighbouring bodies then vanish from the per-column loops (as in Carpentier's
world-frame M⁻¹ in Pinocchio), leaving one transform of U_i per body.

* Backward pass: F_i maps τ̄ to the articulated bias wrench of body i; row i of
  M⁻¹ holds D_i⁻¹(e_i − J_iᵀ F_i) (Table 4.6 line 10), J_i = ⁰X_i Γ_i.  Columns
  outside the subtree of i are zero, so only the subtree's contiguous range is touched.
* Base (IMMAmb only): M^A_0 a_0 = τ̄_b − F_0 τ̄, so the base rows of M⁻¹ are
  P_0 = (M^A_0)⁻¹[I, −F_0] — the garbled lines 15/18/25 of Table 4.7 derived.
* Forward pass: row i −= D_i⁻¹ U_iᵀ P_λ(i), then P_i = P_λ(i) + J_i row_i, for the
  columns c ≥ i only (descendants need no others), and M⁻¹ is filled by symmetry
  (Tables C.3–C.4 correct the original IMMA's version of this pass).
"""

from __future__ import annotations

import numpy as np

from ..compiled import kernel
from ..arguments import check_tree, joint_vector
from ..model import Model
from ..spatial import dot6, lu_factor6, lu_solve6
from ..workspace import workspace
from .forward_dynamics import articulated_inertias_into
from .kinematics import base_frame_poses_into, body_transforms_into


@kernel
def inverse_mass_matrix_into(model, data, M_inv):
    """IMMA(mb) into M_inv (N, N), given the articulated inertias of the same configuration
    (data.I_A, U, D, in body frames) and the body poses data.R, t and column axes (N, 6) in
    the base frame (kinematics.base_frame_poses_into).  data.U_base, F, P: scratch."""
    parent, subtree_end, floating_base = model.parent, model.subtree_end, model.floating_base
    R, t, axes, I_A, U, D = data.R, data.t, data.axes, data.I_A, data.U, data.D
    U_base, F, P = data.U_base, data.F, data.P
    n_bodies = U.shape[0]
    N = M_inv.shape[0]
    off = 6 if floating_base else 0
    tmp = np.empty(6)
    M_inv[:] = 0.0
    for i in range(n_bodies):  # F_i only ever holds the columns of its subtree
        F[i, off + i - 1 if i > 0 else 0:off + subtree_end[i]] = 0.0
    for i in range(n_bodies - 1, 0, -1):
        p, row, end = parent[i], off + i - 1, off + subtree_end[i]
        Rot, u, W = R[i], U[i], U_base[i]  # U_i in the base frame: [R U_l; t × R U_l + R U_a]
        for q in range(3):
            W[q] = Rot[q, 0] * u[0] + Rot[q, 1] * u[1] + Rot[q, 2] * u[2]
            W[3 + q] = Rot[q, 0] * u[3] + Rot[q, 1] * u[4] + Rot[q, 2] * u[5]
        W[3] += t[i, 1] * W[2] - t[i, 2] * W[1]
        W[4] += t[i, 2] * W[0] - t[i, 0] * W[2]
        W[5] += t[i, 0] * W[1] - t[i, 1] * W[0]
        J = axes[row]
        inverse_pivot = 1.0 / D[i]  # (one division per body: a product per column)
        M_inv[row, row] = inverse_pivot
        for c in range(row, end):
            M_inv[row, c] -= dot6(J, F[i, c]) * inverse_pivot
            value = M_inv[row, c]
            for q in range(6):
                F[p, c, q] += F[i, c, q] + value * W[q]
    if floating_base:
        LU, pivots = np.empty((6, 6)), np.empty(6, dtype=np.int64)
        lu_factor6(I_A[0], LU, pivots)
        for c in range(N):
            if c < 6:
                tmp[:] = 0.0
                tmp[c] = 1.0
            else:
                tmp[:] = F[0, c]
                tmp *= -1.0
            lu_solve6(LU, pivots, tmp, P[0, c])
            M_inv[:6, c] = P[0, c]
    else:
        P[0] = 0.0
    for i in range(1, n_bodies):  # P_i is read by descendants for columns ≥ their row only
        p, row = parent[i], off + i - 1
        J, W = axes[row], U_base[i]
        inverse_pivot = 1.0 / D[i]
        for c in range(row, N):
            M_inv[row, c] -= dot6(W, P[p, c]) * inverse_pivot
            value = M_inv[row, c]
            for q in range(6):
                P[i, c, q] = P[p, c, q] + value * J[q]
    for r in range(N):
        for c in range(r + 1, N):
            M_inv[c, r] = M_inv[r, c]


def inverse_mass_matrix(model: Model, joint_positions: np.ndarray) -> np.ndarray:
    """M(s)⁻¹, (N, N), without forming M (IMMAmb for a floating base, IMMA fixed)."""
    positions = joint_vector(check_tree(model, "inverse_mass_matrix"), joint_positions, "joint_positions",
                             default_zero=False)
    ws = workspace(model)
    body_transforms_into(model.motion_subspaces, model.tree_transforms, positions, ws.X_up)
    articulated_inertias_into(model.parent, model.motion_subspaces, model.inertias, ws.X_up, ws.I_A, ws.U, ws.D)
    base_frame_poses_into(model.parent, model.motion_subspaces, ws.X_up, model.floating_base, ws.R, ws.t, ws.axes)
    M_inv = np.empty((model.n_velocities, model.n_velocities))
    inverse_mass_matrix_into(ws.model, ws.data, M_inv)
    return M_inv
