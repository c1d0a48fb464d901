"""The MPC's knots linearized in one compiled call (walking/mpc.py, docs/mpc.md): per knot, its contact set's
generated constrained linearization with the Euler step's Jacobians (a touchdown's after its generated impact
map, A_d = A_d(x⁺)·A_impact; a knot in flight: the generated free linearization), and the margins of its
planned forces (contact_margins.margins_into) stacked row after row, with no Python between the knots.  It
runs where every knot's kernels are generated; the MPC linearizes knot by knot otherwise (a kernel still
building)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..codegen.kernels import (generated, generated_constrained_linearize_into, generated_impact_into,
                               generated_linearize_into)
from ..compiled import kernel
from ..contact_margins import margins_into

NOT_GENERATED = 0
"""The address of a kernel that is not generated (yet)."""


class KnotKernels:
    """The contact sets of one MPC's knots, each added once: their margins' layouts padded to the largest set,
    the addresses of their generated kernels once these run, and the buffers, as :func:`knot_steps_into` takes
    them, for one model (a floating base) and one step dt [s]."""

    def __init__(self, model, dt: float) -> None:
        self.model, self.dt = model, dt
        self._sets: list = []  # per set: (rows of λ, the margins' layout, their lower bounds, the feet's indices)
        self._addresses: list = []  # per set: [constrained, impact] (NOT_GENERATED until they are)
        self.rows: NDArray[np.int64] = np.zeros(0, dtype=np.int64)  # per set: its margins' rows
        self.turning: NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)  # per set: whether its margins read the frames
        self._layouts: tuple = ()
        self._buffers: tuple = (np.empty(1),)

    def add(self, linearizer, margins=None, floor=None, indices=()) -> int:
        """The index of a new contact set: its Linearizer, and with contacts its MarginEvaluator, the lower
        bounds of its margins (p,) and its feet's indices among the MPC's (none: in flight)."""
        layout = None if margins is None else margins.layout
        self._sets.append((len(linearizer.contact_labels), layout, floor, indices))
        self._addresses.append([NOT_GENERATED, NOT_GENERATED])
        self._stack()
        return len(self._sets) - 1

    def addresses(self, index: int, linearizer, impacts=None):
        """[constrained, impact] addresses of set ``index``, whose Linearizer is ``linearizer`` and, at a
        touchdown, ImpactMap ``impacts`` (None: not read); None where one of them does not run generated yet."""
        found = self._addresses[index]
        if not found[0]:
            if linearizer.kernel != "generated":
                return None
            found[0] = self._take(generated(self.model, linearizer.contacts,
                                            "constrained" if linearizer.contacts else "linearize"))
        if impacts is not None and not found[1]:
            if impacts.kernel != "generated":
                return None
            found[1] = self._take(generated(self.model, impacts.contacts, "impact"))
        return found

    def _take(self, loaded) -> int:
        """A loaded kernel's address, the shared scratch grown to its size."""
        if loaded.scratch_size > len(self._buffers[0]):
            self._buffers = (np.empty(loaded.scratch_size),) + self._buffers[1:]
        return loaded.address

    def _stack(self) -> None:
        """The sets' layouts (contact_margins._Layout) padded to the largest and stacked, and the buffers of
        the largest set's kernels."""
        N, n, S = self.model.n_velocities, self.model.n_joints, len(self._sets)
        layouts = [layout for _, layout, _, _ in self._sets if layout is not None]
        c = max((len(layout.starts) for layout in layouts), default=0)
        m = max(rows for rows, _, _, _ in self._sets)
        p = max((len(layout.labels) for layout in layouts), default=0)
        counts = np.zeros((S, 4), dtype=np.int64)  # contacts, rows of λ, margins, contacts whose frames are read
        feet, starts, dims, row_starts, row_counts = (np.zeros((S, c), dtype=np.int64) for _ in range(5))
        turning, exact = np.zeros((S, c), dtype=np.bool_), np.zeros(S, dtype=np.bool_)
        gradient, cone_axes, floors = np.zeros((S, p, m)), np.zeros((S, 3, 3)), np.zeros((S, p))
        for j, (rows, layout, floor, indices) in enumerate(self._sets):
            if layout is None:  # (in flight: no contact, no margin)
                continue
            k, q = len(layout.starts), len(layout.labels)
            counts[j] = k, rows, q, k if layout.turning.any() else 0  # (a turning cone reads every contact's frame)
            feet[j, :k], starts[j, :k], dims[j, :k] = indices, layout.starts, layout.dims
            turning[j, :k], row_starts[j, :k], row_counts[j, :k] = layout.turning, layout.row_starts, layout.row_counts
            gradient[j, :q, :rows], cone_axes[j], exact[j], floors[j, :q] = (layout.gradient, layout.cone_axes,
                                                                             layout.exact, floor)
        self.rows, self.turning = counts[:, 2].copy(), counts[:, 3] > 0
        self._layouts = (counts, feet, starts, dims, turning, row_starts, row_counts, gradient, cone_axes, exact,
                         floors)
        self._buffers = (self._buffers[0], np.empty((2 * N, 2 * N)), np.empty((2 * N, n)), np.empty((N, N)),
                         np.empty(m), np.empty((m, 2 * N)), np.empty((m, n)), np.empty((N, N)),
                         np.empty((2 * N, 2 * N)), np.empty(m), np.empty((m, 2 * N)), np.empty(N),
                         np.empty((2 * N, 2 * N)), np.empty((c, 3, 3)), np.empty((c, 3, N)))

    def steps_into(self, addresses, sets, touchdowns, restitution: float, states: tuple, torques, frames: tuple,
                   steps: tuple) -> tuple | None:
        """:func:`knot_steps_into` on the K knots of sets[k] (K,) with addresses (K, 2), touchdowns (K,) bool, at
        the states (H (K, 4, 4), s (K, n), v (K, 6), r (K, n)) with torques (K, n) and frames (the MPC's feet's,
        or empty where no cone turns) into steps = (A_d (K, 2N, 2N), B_d (K, 2N, n), ν̇ (K, N)): the margin rows
        (each row's knot (R,), ∂/∂z (R, 2N), ∂/∂τ (R, n), lower bound less the margin (R,), margin (R,)), or
        None where a generated kernel had no result (the generic one says why)."""
        count, N, n = int(self.rows[sets].sum()), self.model.n_velocities, self.model.n_joints
        knots, F, T, lower, margins = (np.empty(count, dtype=np.int64), np.empty((count, 2 * N)),
                                       np.empty((count, n)), np.empty(count), np.empty(count))
        failed = knot_steps_into(addresses, sets, touchdowns, self.model.floating_base, self.dt, restitution, states,
                                 torques, frames, self._layouts, self._buffers, steps + (margins, F, T, lower, knots))
        return None if failed >= 0 else (knots, F, T, lower, margins)

    def load(self) -> None:
        """:func:`knot_steps_into` loaded (or compiled) now, on no knot: tens of milliseconds in a new process,
        which a first cycle would pay."""
        N, n = self.model.n_velocities, self.model.n_joints
        self.steps_into(np.empty((0, 2), dtype=np.int64), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.bool_),
                        0.0, (np.empty((0, 4, 4)), np.empty((0, n)), np.empty((0, 6)), np.empty((0, n))),
                        np.empty((0, n)), NO_FRAMES, (np.empty((0, 2 * N, 2 * N)), np.empty((0, 2 * N, n)),
                                                      np.empty((0, N))))


NO_FRAMES = (np.empty((0, 0, 3, 3)), np.empty((0, 0, 3, 0)))
"""The frames where no contact's cone turns (point feet)."""


@kernel
def knot_steps_into(addresses, sets, touchdowns, floating_base, dt, restitution, states, torques, frames, layouts,
                    buffers, out):
    """Knot k (K knots) of contact set sets[k], its kernels at addresses[k] = (constrained linearization, impact
    map) (generated, codegen.kernels), at the state k of ``states`` = (H (K, 4, 4), s (K, n), v (K, 6), r (K, n))
    with torques[k]: where touchdowns[k], the impact map (of ``restitution``) first and the post-impact base
    twist and joint velocities written into v[k], r[k]; then A_d (2N, 2N), B_d (2N, n) of the Euler step of
    ``dt`` (times the impact's A at a touchdown) and ν̇ (N,) into out[0][k], out[1][k], out[2][k], and the
    margins of its planned forces (contact_margins.margins_into; frames = (A_R_c (K, f, 3, 3), J_ω in the
    contacts' axes (K, f, 3, N)) of the MPC's f feet, read for the sets whose cones turn) into the next rows
    of out = (A_d, B_d, ν̇, margins (R,), ∂/∂z (R, 2N), ∂/∂τ (R, n), lower bounds less the margins (R,), each
    row's knot (R,)), the knots' rows one after the other.  ``layouts``, ``buffers``: KnotKernels'.
    Returns −1, or the first knot whose kernel has no result (the generic kernel says why)."""
    H, s, v, r = states
    rotations, local_jacobians = frames
    counts, feet, starts, dims, turning, row_starts, row_counts, gradient, cone_axes, exact, floors = layouts
    (scratch, A, B, M_inv, forces, d_forces, d_forces_dtau, impact_M_inv, impact_A, impulses, d_impulses, nu_plus,
     before_impact, R, J) = buffers
    A_d, B_d, nu_dot, margins, margins_z, margins_tau, lower, row_knots = out
    row = 0
    for k in range(sets.shape[0]):
        j = sets[k]
        c, m, p, turns = counts[j, 0], counts[j, 1], counts[j, 2], counts[j, 3]
        if c == 0:  # in flight: the free linearization (its status −1 where it has a result)
            if generated_linearize_into(addresses[k, 0], floating_base, scratch, (H[k], s[k], v[k], r[k], torques[k]),
                                        (A, B, M_inv, nu_dot[k], A_d[k], B_d[k]), dt) != -1:
                return k
            continue
        if touchdowns[k]:
            # (the impact map reads no torque: its state's τ is only checked, as finite)
            status = generated_impact_into(addresses[k, 1], scratch, (H[k], s[k], v[k], r[k], torques[k]),
                                           restitution, (impact_M_inv, impact_A, impulses[:m], d_impulses[:m], nu_plus))
            if status != 0:
                return k
            v[k] = nu_plus[:6]
            r[k] = nu_plus[6:]
            status = generated_constrained_linearize_into(
                addresses[k, 0], floating_base, scratch, (H[k], s[k], v[k], r[k], torques[k]),
                (A, B, M_inv, nu_dot[k], forces[:m], d_forces[:m], d_forces_dtau[:m], before_impact, B_d[k]), dt)
            np.dot(before_impact, impact_A, A_d[k])
        else:
            status = generated_constrained_linearize_into(
                addresses[k, 0], floating_base, scratch, (H[k], s[k], v[k], r[k], torques[k]),
                (A, B, M_inv, nu_dot[k], forces[:m], d_forces[:m], d_forces_dtau[:m], A_d[k], B_d[k]), dt)
        if status != 0:
            return k
        for i in range(turns):
            R[i] = rotations[k, feet[j, i]]
            J[i] = local_jacobians[k, feet[j, i]]
        margins_into((forces[:m], d_forces[:m], d_forces_dtau[:m]),
                     (starts[j, :c], dims[j, :c], turning[j, :c], row_starts[j, :c], row_counts[j, :c],
                      gradient[j, :p, :m], cone_axes[j], exact[j]),
                     (R[:turns], J[:turns]), (margins[row:row + p], margins_z[row:row + p], margins_tau[row:row + p]))
        for q in range(p):
            lower[row + q] = floors[j, q] - margins[row + q]
            row_knots[row + q] = k
        row += p
    return -1
