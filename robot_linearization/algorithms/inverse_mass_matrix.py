"""Inverse Mass Matrix Algorithm: IMMA (Table 4.6) and IMMAmb (Table 4.7).

M⁻¹ = ∂ν̇/∂τ̄ of the ABA run with zero velocity and gravity: every quantity of
the ABA becomes linear in the extended input τ̄ = [τ̄_b; τ], and each pass
carries the matrix of that linear map instead of a vector.

* Backward pass: F_i (6, N) maps τ̄ to the articulated bias wrench of body i;
  row i of M⁻¹ holds D_i⁻¹(e_i − Γ_i^T F_i) (Table 4.6 line 10).  Columns outside
  the subtree of i are zero, so only the subtree's contiguous range is touched.
* Base (IMMAmb only): M^A_0 a_0 = τ̄_b − F_0 τ̄, so the base rows of M⁻¹ are
  P_0 = (M^A_0)⁻¹[I, −F_0] — the garbled lines 15/18/25 of Table 4.7 derived.
* Forward pass: row i −= D_i⁻¹ U_i^T i_X_λ(i) P_λ(i), then P_i = Γ_i row_i + i_X_λ P_λ,
  over all columns, which yields the full matrix (no symmetrisation, Table C.4).
"""

from __future__ import annotations

import numpy as np

from ..model import Model
from .forward_dynamics import articulated_inertias
from .kinematics import body_transforms


def inverse_mass_matrix(model: Model, joint_positions: np.ndarray) -> np.ndarray:
    """M(s)⁻¹, (N, N), without forming M (IMMAmb for a floating base, IMMA fixed)."""
    X_up = body_transforms(model, np.asarray(joint_positions, dtype=float))
    return inverse_mass_matrix_at(model, X_up)


def inverse_mass_matrix_at(model: Model, X_up: np.ndarray) -> np.ndarray:
    """:func:`inverse_mass_matrix` with the body transforms already computed."""
    S = model.motion_subspaces
    n_bodies, N = model.n_bodies, model.n_velocities
    off = 6 if model.floating_base else 0
    I_A, U, D = articulated_inertias(model, X_up)
    M_inv = np.zeros((N, N))
    F = np.zeros((n_bodies, 6, N))
    for i in range(n_bodies - 1, 0, -1):
        row = off + i - 1
        cols = slice(row, off + model.subtree_end[i])
        M_inv[row, row] = 1.0 / D[i]
        M_inv[row, cols] -= (S[i] @ F[i][:, cols]) / D[i]
        F[model.parent[i]][:, cols] += X_up[i].T @ (F[i][:, cols] + np.outer(U[i], M_inv[row, cols]))
    P = np.zeros((n_bodies, 6, N))
    if model.floating_base:
        I_A0_inv = np.linalg.inv(I_A[0])
        P[0][:, :6] = I_A0_inv
        P[0][:, 6:] = -I_A0_inv @ F[0][:, 6:]
        M_inv[:6] = P[0]
    for i in range(1, n_bodies):
        row = off + i - 1
        XP = X_up[i] @ P[model.parent[i]]
        M_inv[row] -= (U[i] @ XP) / D[i]
        P[i] = np.outer(S[i], M_inv[row]) + XP
    return M_inv
