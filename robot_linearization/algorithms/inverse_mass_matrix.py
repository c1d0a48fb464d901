"""Inverse Mass Matrix Algorithm: IMMA (Table 4.6) and IMMAmb (Table 4.7).

M⁻¹ = ∂ν̇/∂τ̄ of the ABA run with zero velocity and gravity: every quantity of
the ABA becomes linear in the extended input τ̄ = [τ̄_b; τ], and each pass
carries the matrix of that linear map (column c as a 6-vector) instead of a vector.

* Backward pass: F_i maps τ̄ to the articulated bias wrench of body i; row i of
  M⁻¹ holds D_i⁻¹(e_i − Γ_i^T F_i) (Table 4.6 line 10).  Columns outside the
  subtree of i are zero, so only the subtree's contiguous range is touched.
* Base (IMMAmb only): M^A_0 a_0 = τ̄_b − F_0 τ̄, so the base rows of M⁻¹ are
  P_0 = (M^A_0)⁻¹[I, −F_0] — the garbled lines 15/18/25 of Table 4.7 derived.
* Forward pass: row i −= D_i⁻¹ U_i^T i_X_λ(i) P_λ(i), then P_i = Γ_i row_i + i_X_λ P_λ,
  for the columns c ≥ i only (descendants need no others), and M⁻¹ is filled by
  symmetry (Tables C.3–C.4 correct the original IMMA's version of this pass).
"""

from __future__ import annotations

import numpy as np

from ..compiled import kernel
from ..model import Model
from ..spatial import axpy, dot6, lu_factor6, lu_solve6, transform_force_add, transform_motion_into
from .forward_dynamics import articulated_inertias
from .kinematics import body_transforms


@kernel
def inverse_mass_matrix_into(parent, S, X_up, subtree_end, floating_base, I_A, U, D, F, P, M_inv):
    """IMMA(mb) into M_inv (N, N), given the articulated inertias (I_A, U, D)
    of the same configuration.  F, P (n+1, N, 6): scratch."""
    n_bodies = X_up.shape[0]
    N = M_inv.shape[0]
    off = 6 if floating_base else 0
    tmp = np.empty(6)
    M_inv[:] = 0.0
    for i in range(n_bodies):  # F_i only ever holds the columns of its subtree
        F[i, off + i - 1 if i > 0 else 0:off + subtree_end[i]] = 0.0
    for i in range(n_bodies - 1, 0, -1):
        row, end = off + i - 1, off + subtree_end[i]
        M_inv[row, row] = 1.0 / D[i]
        for c in range(row, end):
            M_inv[row, c] -= (dot6(S[i], F[i, c])) / D[i]
            tmp[:] = F[i, c]
            axpy(M_inv[row, c], U[i], tmp)
            transform_force_add(X_up[i], tmp, F[parent[i], c])
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
        row = off + i - 1
        for c in range(row, N):
            transform_motion_into(X_up[i], P[parent[i], c], tmp)
            M_inv[row, c] -= (dot6(U[i], tmp)) / D[i]
            P[i, c] = tmp
            axpy(M_inv[row, c], S[i], P[i, c])
    for r in range(N):
        for c in range(r + 1, N):
            M_inv[c, r] = M_inv[r, c]


def inverse_mass_matrix(model: Model, joint_positions: np.ndarray) -> np.ndarray:
    """M(s)⁻¹, (N, N), without forming M (IMMAmb for a floating base, IMMA fixed)."""
    X_up = body_transforms(model, np.asarray(joint_positions, dtype=float))
    I_A, U, D = articulated_inertias(model, X_up)
    N = model.n_velocities
    M_inv = np.empty((N, N))
    scratch = np.empty((2, model.n_bodies, N, 6))
    inverse_mass_matrix_into(model.parent, model.motion_subspaces, X_up, model.subtree_end, model.floating_base,
                             I_A, U, D, scratch[0], scratch[1], M_inv)
    return M_inv
