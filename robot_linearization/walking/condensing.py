"""The MPC's horizon condensed (walking/mpc.py, docs/mpc.md): the knots' linearized steps rolled forward
into the states' dependence on the held torques, in one compiled call."""

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
