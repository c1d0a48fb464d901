"""The MPC's horizon condensed (walking/mpc.py, docs/mpc.md): the knots' linearized steps rolled forward
into the states' dependence on the held torques, and the cost's and the constraints' rows on the knots'
states mapped through it onto the held torques, each in one compiled call."""

from __future__ import annotations

import numpy as np

from ..compiled import kernel


@kernel
def condense_into(A_d, B_d, defects, reached, Gamma_T, d):
    """The knots' steps δz_{k+1} = A_k δz_k + B_k y_m(k) + c_k rolled forward from δz_0 = 0 into
    δz_k = Γ_k y + d_k (walking/mpc.py's docstring): A_d (K, 2N, 2N), B_d (K, 2N, n), the defects c (K, 2N) and
    reached (K+1,) the columns of y that δz_k depends on (knot k's group the last n of reached[k+1]);
    into Γ_kᵀ (K+1, M·n, 2N), Γ transposed so that each step is one product of contiguous rows, and
    d (K+1, 2N).  (Columns past reached[k] are zero and never multiplied.)"""
    n = B_d.shape[2]
    Gamma_T[0] = 0.0
    d[0] = 0.0
    for k in range(A_d.shape[0]):
        before, end = reached[k], reached[k + 1]
        if before > 0:
            np.dot(Gamma_T[k, :before], A_d[k].T, Gamma_T[k + 1, :before])
        Gamma_T[k + 1, before:] = 0.0
        Gamma_T[k + 1, end - n:end] += B_d[k].T
        np.dot(A_d[k], d[k], d[k + 1])
        d[k + 1] += defects[k]


@kernel
def rows_through_horizon_into(Gamma_T, d, reach, knots, rows, out, offsets):
    """Rows on the knots' perturbations, f + F δz_k, as rows on the held torques y (δz_k = Γ_k y + d_k):
    row i, at knot knots[i], (F Γ_k into out[i, :reach[k]] (the columns past it are left as they are) and
    F d_k into offsets[i]); rows (R, 2N), Γ_kᵀ in Gamma_T (K+1, M·n, 2N) and d (K+1, 2N) as
    :func:`condense_into` gives them.  Each run of rows at the same knot is one product."""
    first = 0
    while first < rows.shape[0]:
        k = knots[first]
        last = first + 1
        while last < rows.shape[0] and knots[last] == k:
            last += 1
        end = reach[k]
        if end > 0:
            out[first:last, :end] = np.dot(rows[first:last], Gamma_T[k, :end].T)
        offsets[first:last] = np.dot(rows[first:last], d[k])
        first = last


@kernel(inline=True)
def _add_upper_triangle(H, product):
    """H[:m, :m] += the upper triangle (diagonal included) of ``product`` (m, m)."""
    for i in range(product.shape[0]):
        for j in range(i, product.shape[0]):
            H[i, j] += product[i, j]


@kernel
def condensed_cost_into(Gamma_T, d, reach, weights, residuals, knots, rows, values, H, g):
    """The cost Σ_k ½‖√w_k ∘ (r_k + δz_k)‖² + Σ_i ½ (f_i + F_i δz_{k_i})² of knots 1 … K, with δz_k = Γ_k y + d_k
    (Gamma_T, d, reach as :func:`condense_into`'s), as ½ yᵀHy + gᵀy + const into H (M·n, M·n), exactly
    symmetric, and g (M·n,): weights w and residuals r (K, 2N) (row k − 1 of knot k), and the rows F_i of
    ``rows`` (R, 2N), at knot knots[i] (1 … K), with values f (R,).  H = Σ_k Γ_kᵀ diag(w_k) Γ_k + RᵀR and
    g = Σ_k Γ_kᵀ (w_k ∘ (r_k + d_k)) + Rᵀ(f + F d) with R = [F_i Γ_{k_i}] (:func:`rows_through_horizon_into`);
    each product over the columns Γ_k reaches."""
    H[:] = 0.0
    g[:] = 0.0
    two_N = Gamma_T.shape[2]
    scratch = np.empty(H.shape[0] * 2 * two_N)  # (two knots' weighted Γ_kᵀ side by side)
    first = 1
    while first < Gamma_T.shape[0]:  # (knots of the same reach two at a time: one product for both)
        end = reach[first]
        last = min(first + 2, Gamma_T.shape[0])
        if reach[last - 1] != end:
            last = first + 1
        if end > 0:
            width = (last - first) * two_N
            S = scratch[:end * width].reshape((end, width))
            for k in range(first, last):
                column = (k - first) * two_N
                root = np.sqrt(weights[k - 1])
                for i in range(end):
                    for c in range(two_N):
                        S[i, column + c] = Gamma_T[k, i, c] * root[c]
                g[:end] += np.dot(Gamma_T[k, :end], weights[k - 1] * (residuals[k - 1] + d[k]))
            _add_upper_triangle(H, np.dot(S, S.T))
        first = last
    if rows.shape[0] > 0:
        R = np.zeros((rows.shape[0], H.shape[0]))
        offsets = np.empty(rows.shape[0])
        rows_through_horizon_into(Gamma_T, d, reach, knots, rows, R, offsets)
        _add_upper_triangle(H, np.dot(R.T, R))
        g += np.dot(R.T, values + offsets)
    for i in range(H.shape[0]):  # (the upper triangle mirrored: ProxSuite reads a symmetric H)
        for j in range(i + 1, H.shape[0]):
            H[j, i] = H[i, j]


@kernel
def constraint_rows_into(Gamma_T, d, reach, groups, knots, rows, torque_rows, bounds, C, lower):
    """Rows m + F δz_k + T δτ_k ≥ b as C y ≥ lower on the held torques y (δz_k = Γ_k y + d_k, δτ_k = y_m, m =
    groups[k]): row i, at knot knots[i], F_i of ``rows`` (R, 2N), T_i of ``torque_rows`` (R, n) and b_i − m_i
    in ``bounds`` (R,), into C (R, M·n) and lower (R,) (Gamma_T, d, reach as :func:`condense_into`'s)."""
    n = torque_rows.shape[1]
    C[:] = 0.0
    rows_through_horizon_into(Gamma_T, d, reach, knots, rows, C, lower)
    for i in range(rows.shape[0]):
        m = groups[knots[i]]
        C[i, m * n:(m + 1) * n] += torque_rows[i]
        lower[i] = bounds[i] - lower[i]
