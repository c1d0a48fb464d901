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

The same passes with any inputs instead of the unit vectors give M⁻¹·rhs without M⁻¹, O(n) per
column (:func:`inverse_mass_matrix_product_into`: −M⁻¹D on long chains).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..compiled import kernel
from ..arguments import check_tree, joint_vector
from ..model import Model
from ..spatial import lu_factor6, lu_solve6
from ..workspace import workspace
from .forward_dynamics import articulated_inertias_into
from .kinematics import base_frame_poses_into, body_transforms_into


@kernel
def inverse_mass_matrix_into(model: Any, data: Any, M_inv: NDArray[np.float64]) -> None:
    """IMMA(mb) into M_inv (N, N), given the articulated inertias of the same configuration
    (data.I_A, U, D, in body frames) and the body poses data.R, t and column axes (N, 6) in
    the base frame (kinematics.base_frame_poses_into).  data.U_base (n+1, 6), F, P (n+1, 6, N):
    scratch, columns innermost, so that each pass runs along a row of M⁻¹ and of F_i or P_i."""
    parent, subtree_end, floating_base = model.parent, model.subtree_end, model.floating_base
    R, t, axes, I_A, U, D = data.R, data.t, data.axes, data.I_A, data.U, data.D
    U_base, F, P = data.U_base, data.F, data.P
    n_bodies = U.shape[0]
    N = M_inv.shape[0]
    off = 6 if floating_base else 0
    tmp, x = np.empty(6), np.empty(6)
    M_inv[:] = 0.0
    for i in range(n_bodies):  # F_i only ever holds the columns of its subtree
        F[i, :, off + i - 1 if i > 0 else 0:off + subtree_end[i]] = 0.0
    for i in range(n_bodies - 1, 0, -1):
        p, row, end = parent[i], off + i - 1, off + subtree_end[i]
        Rot, u, W = R[i], U[i], U_base[i]  # U_i in the base frame: [R U_l; t × R U_l + R U_a]
        for q in range(3):
            W[q] = Rot[q, 0] * u[0] + Rot[q, 1] * u[1] + Rot[q, 2] * u[2]
            W[3 + q] = Rot[q, 0] * u[3] + Rot[q, 1] * u[4] + Rot[q, 2] * u[5]
        W[3] += t[i, 1] * W[2] - t[i, 2] * W[1]
        W[4] += t[i, 2] * W[0] - t[i, 0] * W[2]
        W[5] += t[i, 0] * W[1] - t[i, 1] * W[0]
        J0, J1, J2, J3, J4, J5 = axes[row, 0], axes[row, 1], axes[row, 2], axes[row, 3], axes[row, 4], axes[row, 5]
        F_i, F_p, M_row = F[i], F[p], M_inv[row]
        inverse_pivot = 1.0 / D[i]  # (one division per body: a product per column)
        M_row[row] = inverse_pivot
        for c in range(row, end):
            M_row[c] -= (J0 * F_i[0, c] + J1 * F_i[1, c] + J2 * F_i[2, c] + J3 * F_i[3, c] + J4 * F_i[4, c]
                         + J5 * F_i[5, c]) * inverse_pivot
        for q in range(6):
            factor, F_iq, F_pq = W[q], F_i[q], F_p[q]
            for c in range(row, end):
                F_pq[c] += F_iq[c] + M_row[c] * factor
    if floating_base:
        LU, pivots = np.empty((6, 6)), np.empty(6, dtype=np.int64)
        lu_factor6(I_A[0], LU, pivots)
        for c in range(N):
            for q in range(6):
                tmp[q] = (1.0 if q == c else 0.0) if c < 6 else -F[0, q, c]
            lu_solve6(LU, pivots, tmp, x)
            for q in range(6):
                P[0, q, c] = x[q]
                M_inv[q, c] = x[q]
    else:
        P[0] = 0.0
    for i in range(1, n_bodies):  # P_i is read by descendants for columns ≥ their row only
        p, row = parent[i], off + i - 1
        W0, W1, W2, W3, W4, W5 = U_base[i, 0], U_base[i, 1], U_base[i, 2], U_base[i, 3], U_base[i, 4], U_base[i, 5]
        P_i, P_p, M_row = P[i], P[p], M_inv[row]
        inverse_pivot = 1.0 / D[i]
        for c in range(row, N):
            M_row[c] -= (W0 * P_p[0, c] + W1 * P_p[1, c] + W2 * P_p[2, c] + W3 * P_p[3, c] + W4 * P_p[4, c]
                         + W5 * P_p[5, c]) * inverse_pivot
        for q in range(6):
            factor, P_iq, P_pq = axes[row, q], P_i[q], P_p[q]
            for c in range(row, N):
                P_iq[c] = P_pq[c] + M_row[c] * factor
    for r in range(N):
        for c in range(r + 1, N):
            M_inv[c, r] = M_inv[r, c]


def inverse_mass_matrix(model: Model, joint_positions: ArrayLike) -> NDArray[np.float64]:
    """M(s)⁻¹, (N, N), without forming M (IMMAmb for a floating base, IMMA fixed).

    ``model``: a Model; ``joint_positions`` s (n,)."""
    positions = joint_vector(check_tree(model, "inverse_mass_matrix"), joint_positions, "joint_positions",
                             default_zero=False)
    ws = workspace(model)
    body_transforms_into(model.motion_subspaces, model.tree_transforms, positions, ws.X_up)
    articulated_inertias_into(model.parent, model.motion_subspaces, model.inertias, ws.X_up, ws.I_A, ws.U, ws.D)
    base_frame_poses_into(model.parent, model.motion_subspaces, ws.X_up, model.floating_base, ws.R, ws.t, ws.axes)
    M_inv = np.empty((model.n_velocities, model.n_velocities))
    inverse_mass_matrix_into(ws.model, ws.data, M_inv)
    return M_inv


@kernel
def inverse_mass_matrix_product_into(model: Any, data: Any, rhs: NDArray[np.float64], sign: float,
                                     out: NDArray[np.float64]) -> None:
    """out += sign · M⁻¹ rhs[:, :w] for rhs (N, ≥ w), out (N, w), w = out.shape[1], without M⁻¹: the
    IMMAmb's passes above run with the columns of rhs as the extended inputs τ̄ (the unit vectors
    there), O(n) per column instead of a product's O(N²).  Needs the pivots data.D, the base's
    data.I_A[0], data.U_base and axes that :func:`inverse_mass_matrix_into` left at this
    configuration; data.F and P (n+1, 6, N) (scratch) hold N columns at a time, so the columns go
    in blocks of N.  Backward, F_i is passed on to the parent and its row 0 then keeps
    D_i⁻¹(τ̄_i − J_iᵀF_i) for the forward pass; a body none of whose children has passed it
    anything (a leaf) has F_i = 0, so nothing is zeroed."""
    parent, floating_base = model.parent, model.floating_base
    axes, I_A, D, U_base = data.axes, data.I_A, data.D, data.U_base
    n_bodies, N = U_base.shape[0], rhs.shape[0]
    off = 6 if floating_base else 0
    F, P = data.F, data.P
    LU, pivots, b, x = np.empty((6, 6)), np.empty(6, dtype=np.int64), np.empty(6), np.empty(6)
    values, passed = np.empty(N), np.empty(n_bodies, dtype=np.bool_)
    if floating_base:
        lu_factor6(I_A[0], LU, pivots)
    for start in range(0, out.shape[1], N):
        w = min(N, out.shape[1] - start)
        passed[:] = False
        for i in range(n_bodies - 1, 0, -1):
            p, row = parent[i], off + i - 1
            inverse_pivot = 1.0 / D[i]
            if passed[i]:
                J0, J1, J2 = axes[row, 0], axes[row, 1], axes[row, 2]
                J3, J4, J5 = axes[row, 3], axes[row, 4], axes[row, 5]
                for c in range(w):
                    values[c] = (rhs[row, start + c] - (J0 * F[i, 0, c] + J1 * F[i, 1, c] + J2 * F[i, 2, c]
                                                        + J3 * F[i, 3, c] + J4 * F[i, 4, c] + J5 * F[i, 5, c])
                                 ) * inverse_pivot
            else:
                for c in range(w):
                    values[c] = rhs[row, start + c] * inverse_pivot
            for q in range(6):
                factor = U_base[i, q]
                if passed[i] and passed[p]:
                    for c in range(w):
                        F[p, q, c] += F[i, q, c] + factor * values[c]
                elif passed[i]:
                    for c in range(w):
                        F[p, q, c] = F[i, q, c] + factor * values[c]
                elif passed[p]:
                    for c in range(w):
                        F[p, q, c] += factor * values[c]
                else:
                    for c in range(w):
                        F[p, q, c] = factor * values[c]
            passed[p] = True
            for c in range(w):
                F[i, 0, c] = values[c]
        if floating_base:
            for c in range(w):
                for q in range(6):
                    b[q] = rhs[q, start + c] - (F[0, q, c] if passed[0] else 0.0)
                lu_solve6(LU, pivots, b, x)
                for q in range(6):
                    P[0, q, c] = x[q]
                    out[q, start + c] += sign * x[q]
        else:
            P[0, :, :w] = 0.0
        for i in range(1, n_bodies):
            p, row = parent[i], off + i - 1
            inverse_pivot = 1.0 / D[i]
            W0, W1, W2, W3, W4, W5 = (U_base[i, 0] * inverse_pivot, U_base[i, 1] * inverse_pivot,
                                      U_base[i, 2] * inverse_pivot, U_base[i, 3] * inverse_pivot,
                                      U_base[i, 4] * inverse_pivot, U_base[i, 5] * inverse_pivot)
            for c in range(w):
                value = F[i, 0, c] - (W0 * P[p, 0, c] + W1 * P[p, 1, c] + W2 * P[p, 2, c] + W3 * P[p, 3, c]
                                      + W4 * P[p, 4, c] + W5 * P[p, 5, c])
                values[c] = value
                out[row, start + c] += sign * value
            for q in range(6):
                factor = axes[row, q]
                for c in range(w):
                    P[i, q, c] = P[p, q, c] + factor * values[c]
