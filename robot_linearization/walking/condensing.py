"""The MPC's horizon condensed (walking/mpc.py, docs/mpc.md): the knots' linearized steps rolled forward
into the states' dependence on the held torques, and the cost's and the constraints' rows on the knots'
states mapped through it onto the held torques: compiled loops, and BLAS products over the columns each knot
reaches."""

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
def perturbations_into(Gamma_T, d, reach, y, dz):
    """δz_k = Γ_k y + d_k of knots 0 … K from the held torques y (M·n,), Γ_kᵀ in Gamma_T (K+1, M·n, 2N) and
    d (K+1, 2N) as :func:`condense_into` gives them, into dz (K+1, 2N): over the columns Γ_k reaches only
    (reach (K+1,); the rest are zero)."""
    for k in range(Gamma_T.shape[0]):
        dz[k] = d[k]
        for i in range(reach[k]):
            y_i = y[i]
            for j in range(dz.shape[1]):
                dz[k, j] += y_i * Gamma_T[k, i, j]


@kernel(inline=True)
def same_knot_end(knots, first):
    """The end of the run of rows at knot knots[first] (rows first … end−1: the rows of a knot lie together)."""
    last = first + 1
    while last < knots.shape[0] and knots[last] == knots[first]:
        last += 1
    return last


@kernel(inline=True)
def run_block(weighted, runs, run, two_N, capacity):
    """Run ``run``'s block (end, (last − first)·2N + capacity) of :class:`CondensedCost`'s buffer ``weighted``
    (:func:`same_reach_runs`' layout)."""
    first, last, end, offset = runs[run]
    width = (last - first) * two_N + capacity
    return weighted[offset:offset + end * width].reshape((end, width))


@kernel
def rows_through_horizon_into(Gamma_T, d, reach, knots, rows, out, offsets):
    """Rows on the knots' perturbations, f + F δz_k, as rows on the held torques y (δz_k = Γ_k y + d_k):
    row i, at knot knots[i], (F Γ_k into out[i, :reach[k]] (the columns past it are left as they are) and
    F d_k into offsets[i]); rows (R, 2N), Γ_kᵀ in Gamma_T (K+1, M·n, 2N) and d (K+1, 2N) as
    :func:`condense_into` gives them.  Each run of rows at the same knot is one product."""
    first = 0
    while first < rows.shape[0]:
        k, last = knots[first], same_knot_end(knots, first)
        end = reach[k]
        if end > 0:
            out[first:last, :end] = np.dot(rows[first:last], Gamma_T[k, :end].T)
        offsets[first:last] = np.dot(rows[first:last], d[k])
        first = last


def same_reach_runs(reach, two_N: int, capacity: int) -> tuple[np.ndarray, int]:
    """The knots 1 … K in runs of the same reach (a torque group's knots): (first, last, end, offset) per run,
    knots first … last−1 reaching columns :end, their weighted Γ_kᵀ side by side ((last − first)·2N columns) and
    room for ``capacity`` rows' columns after them, (end, (last − first)·2N + capacity), at ``offset`` of
    :class:`CondensedCost`'s buffer, as (runs, 4) int64; and that buffer's size."""
    runs, first, offset = [], 1, 0
    while first < len(reach):
        last = first + 1
        while last < len(reach) and reach[last] == reach[first]:
            last += 1
        runs.append((first, last, reach[first], offset))
        offset += reach[first] * ((last - first) * two_N + capacity)
        first = last
    return np.array(runs, dtype=np.int64).reshape(-1, 4), offset


@kernel
def weighted_horizon_into(Gamma_T, d, weights, residuals, runs, capacity, weighted, g):
    """The state residuals' part of :class:`CondensedCost`: per run (first, last, end, offset) of ``runs``
    (:func:`same_reach_runs`), S = [√w_k ∘ Γ_k]ᵀ of its knots side by side into the first (last − first)·2N
    columns of its block (end, (last − first)·2N + capacity) of ``weighted`` (so that Σ_k Γ_kᵀ diag(w_k) Γ_k =
    Σ_runs S Sᵀ), and g (M·n,) = Σ_k Γ_kᵀ (w_k ∘ (r_k + d_k)), from Gamma_T and d as :func:`condense_into` gives
    them, and the weights w and residuals r (K, 2N) (row k − 1 of knot k)."""
    two_N = Gamma_T.shape[2]
    g[:] = 0.0
    for run in range(runs.shape[0]):
        first, last, end, _ = runs[run]
        S = run_block(weighted, runs, run, two_N, capacity)
        for k in range(first, last):
            column = (k - first) * two_N
            root = np.sqrt(weights[k - 1])
            for i in range(end):
                for c in range(two_N):
                    S[i, column + c] = Gamma_T[k, i, c] * root[c]
            g[:end] += np.dot(Gamma_T[k, :end], weights[k - 1] * (residuals[k - 1] + d[k]))


@kernel
def rows_into_runs(Gamma_T, d, runs, run_of_knot, knots, rows, values, capacity, weighted, counts, g):
    """The rows' part of :class:`CondensedCost`: rows f_i + F_i δz_{k_i} (F ``rows`` (R, 2N), f ``values`` (R,),
    grouped by knot, ``knots`` (R,) 1 … K) as columns (F_i Γ_k)ᵀ after the weighted Γ_k of their knot's run in
    ``weighted`` (the blocks of :func:`weighted_horizon_into`), their number per run added to counts (runs,), and
    g[:end] += (F_i Γ_k)ᵀ (f_i + F_i d_k).  Each run of rows at one knot is one product."""
    two_N = Gamma_T.shape[2]
    first = 0
    while first < rows.shape[0]:
        k, last = knots[first], same_knot_end(knots, first)
        run = run_of_knot[k]
        end, width = runs[run, 2], (runs[run, 1] - runs[run, 0]) * two_N
        S = run_block(weighted, runs, run, two_N, capacity)
        block = np.dot(Gamma_T[k, :end], rows[first:last].T)  # (end, rows)
        column = width + counts[run]
        S[:, column:column + last - first] = block
        g[:end] += np.dot(block, values[first:last] + np.dot(rows[first:last], d[k]))
        counts[run] += last - first
        first = last


class CondensedCost:
    """The cost Σ_k ½‖√w_k ∘ (r_k + δz_k)‖² + Σ_i ½ (f_i + F_i δz_{k_i})² of knots 1 … K, with δz_k = Γ_k y + d_k,
    as ½ yᵀHy + gᵀy + const in the held torques y: H = Σ_k Γ_kᵀ diag(w_k) Γ_k + Σ_i (F_i Γ_{k_i})ᵀ F_i Γ_{k_i} and
    g = Σ_k Γ_kᵀ (w_k ∘ (r_k + d_k)) + Σ_i (F_i Γ_{k_i})ᵀ (f_i + F_i d_{k_i}).  The knots of a torque group reach the
    same columns of y: their weighted Γ_k side by side (:func:`weighted_horizon_into`), and the rows at them as
    further columns (:func:`rows_into_runs`), give one product S Sᵀ per group over the columns it reaches, which
    numpy takes as a symmetric rank-k update (half a general product's work: Talos's 40 knots 1.2 ms where the
    general products took 1.7; with its up to 240 rows of swinging feet and soles 1.56 ms where a product RᵀR of
    the rows over every column made it 1.66).  Made once per horizon (``reach``, 2N: its buffers, which grow
    with the rows a group is given)."""

    def __init__(self, reach: np.ndarray, two_N: int) -> None:
        self.reach, self.two_N = reach, two_N
        self._run_of_knot = np.zeros(len(reach), dtype=np.int64)  # (knot 0 has no run: it is never given)
        self._room(0)
        for run, (first, last, _, _) in enumerate(self.runs):
            self._run_of_knot[first:last] = run

    def _room(self, capacity: int) -> None:
        """Buffers with room for ``capacity`` rows' columns per group."""
        self.capacity = capacity
        self.runs, size = same_reach_runs(self.reach, self.two_N, capacity)
        self._weighted = np.empty(size)
        self._counts = np.zeros(len(self.runs), dtype=np.int64)
        self._blocks = [(self._weighted[offset:offset + end * ((last - first) * self.two_N + capacity)].reshape(
            end, -1), (last - first) * self.two_N, np.empty((end, end))) for first, last, end, offset in self.runs]

    def __call__(self, Gamma_T, d, weights, residuals, knots, rows, values) -> tuple:
        """(H (M·n, M·n), exactly symmetric (ProxSuite reads the whole H), g (M·n,)) from Gamma_T (K+1, M·n,
        2N), d (K+1, 2N) as :func:`condense_into` gives them, the weights w ≥ 0 and residuals r (K, 2N) (row k − 1
        of knot k), and the rows F_i of ``rows`` (R, 2N) at knot knots[i] (1 … K), with values f (R,).  The arrays
        are taken as they are (float64, C-ordered, these shapes): the MPC's own, made in its cycle."""
        size = Gamma_T.shape[1]
        H, g = np.zeros((size, size)), np.empty(size)
        if len(rows):
            most = int(np.bincount(self._run_of_knot[knots], minlength=len(self.runs)).max())
            if most > self.capacity:
                self._room(max(most, 2 * self.capacity))
        weighted_horizon_into(Gamma_T, d, weights, residuals, self.runs, self.capacity, self._weighted, g)
        counts = self._counts
        counts[:] = 0
        if len(rows):
            order = np.argsort(knots, kind="stable")  # (the rows of a knot together)
            rows_into_runs(Gamma_T, d, self.runs, self._run_of_knot, knots[order], rows[order], values[order],
                           self.capacity, self._weighted, counts, g)
        for (S, width, product), count in zip(self._blocks, counts.tolist()):
            used = S[:, :width + count]
            end = len(S)
            np.matmul(used, used.T, out=product)  # (S Sᵀ of one array: numpy's symmetric rank-k update)
            H[:end, :end] += product
        return H, g


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
