"""Contact-constrained forward dynamics (thesis §6.2, eq. (2.62)); docs/contacts.md.

    M ν̇ + h = S τ + Jᵀ λ,     J ν̇ + γ = 0

with J (m, N) the contact Jacobian and γ the contact acceleration at ν̇ = 0 (the
drift J̇ν, plus ω × v for point contacts, whose constraint is the classical
acceleration of the point).  Eliminating ν̇ = ν̇_free + M⁻¹Jᵀλ gives

    λ = −Λ (J ν̇_free + γ),   Λ⁻¹ = J M⁻¹ Jᵀ (the operational-space inverse inertia),

with M⁻¹ from the IMMA(mb) and ν̇_free from the ABA(mb): no factorisation of M.
"""

from __future__ import annotations

import functools
import threading
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from numba import types
from numba.experimental import structref

from ..compiled import FLAGS, INDEX_TABLE, INDICES, MATRICES, MATRIX, VECTOR, Structure, kernel, structure
from ..contacts import Contact, ContactError, Contacts, as_contacts, contact_labels, resolve
from ..coupling import AnyModel, CoupledModel, tree_of
from ..arguments import joint_vector
from ..model import Model, State, check_state, floating_base_of
from ..spatial import mat_mat_into, skew_entry
from ..workspace import ARTICULATED_PRODUCTS, DATA, DENSE_PRODUCTS, Workspace, workspace
from .forward_dynamics import forward_dynamics, forward_dynamics_into, singular_pivot
from .inverse_dynamics import newton_euler_forward_into
from .inverse_mass_matrix import inverse_mass_matrix, inverse_mass_matrix_into, inverse_mass_matrix_product_into
from .kinematics import base_frame_poses_into, base_gravity_into, base_twist, body_transforms, body_transforms_into

DEGENERACY_TOLERANCE = 1e-10
"""Λ⁻¹ = J M⁻¹ Jᵀ is refused as singular when a Cholesky pivot² falls below this
fraction of its largest diagonal entry (redundant or unreachable constraints)."""


@structref.register
class ContactDataType(types.StructRef):
    """The numba type of a contact set's arrays and scratch (:data:`CONTACT_DATA`)."""


CONTACT_DATA = ContactDataType([
    ("bodies", INDICES), ("X_cb", MATRICES), ("dims", INDICES), ("world_aligned", FLAGS), ("starts", INDICES),
    ("coupling_rows", INDEX_TABLE), ("coupling_multipliers", VECTOR), ("J", MATRIX), ("drift", VECTOR),
    ("J_local", MATRICES), ("rotation", MATRICES), ("body_X_base", MATRICES), ("T", MATRICES), ("JM_inv", MATRIX),
    ("L", MATRIX), ("wrenches", MATRIX), ("d_accel", MATRIX), ("workspace", DATA)])
"""A contact set bound to a model (k contacts, m rows, N velocities), as the kernels take it:
the set, :class:`ContactArrays`'s bodies … coupling_multipliers; then the scratch of one
thread: J (m, N), γ = drift (m,), J_local (k, 6, N) each frame's body Jacobian in its own
axes, rotation (k, 3, 3) = A_R_c, body_X_base (k, 6, 6) = b_X_0, T (k, 6, 6) = c_X_0,
JM_inv (m, N) = J M⁻¹, L (m, m) the Cholesky factor of J M⁻¹ Jᵀ, wrenches (k, 6) each λ_c
in its frame's axes, d_accel (m, 2N) ∂a of the contact accelerations; and that thread's
workspace of the model's tree (workspace.DATA, with its model), which the entry kernels
(contact_linearization.constrained_linearize_into, impact_map.impact_into) run on."""
structref.define_boxing(ContactDataType, Structure)


@kernel
def _new_contact_data(bodies, X_cb, dims, world_aligned, starts, coupling_rows, coupling_multipliers, J, drift,
                      J_local, rotation, body_X_base, T, JM_inv, L, wrenches, d_accel, workspace):
    contacts = structref.new(CONTACT_DATA)
    contacts.bodies, contacts.X_cb, contacts.dims, contacts.world_aligned = bodies, X_cb, dims, world_aligned
    contacts.starts, contacts.coupling_rows, contacts.coupling_multipliers = starts, coupling_rows, coupling_multipliers
    contacts.J, contacts.drift, contacts.J_local, contacts.rotation = J, drift, J_local, rotation
    contacts.body_X_base, contacts.T, contacts.JM_inv, contacts.L = body_X_base, T, JM_inv, L
    contacts.wrenches, contacts.d_accel, contacts.workspace = wrenches, d_accel, workspace
    return contacts


class ContactArrays:
    """A contact set bound to a model, as the compiled passes take it (k contacts):
    contacts, the tuple of Contact (as :func:`~robot_linearization.contacts.as_contacts`
    returns it) and model, the Model or CoupledModel it is bound to; bodies (k,),
    X_contact_body (k, 6, 6) = c_X_b, dims (k,) 3 or 6, world_aligned (k,) bool, starts (k,)
    first row of each contact in J and λ; m_contacts rows.  After them, the joint-space rows
    of a CoupledModel's mimic joints (coupling.py): coupling_rows (c, 2) tree indices (mimic,
    source) and coupling_multipliers (c,); m rows in all.  labels (m_contacts,) names λ's
    entries.  Resolved once per (model, contacts) (:func:`contact_arrays`; from what the API
    takes, :func:`contact_set`); :meth:`data` is each thread's own."""

    def __init__(self, model: AnyModel, contacts: tuple[Contact, ...]) -> None:
        self.model, self.contacts = model, contacts
        self.labels = contact_labels(contacts)
        self._local = threading.local()
        resolved = resolve(model, self.contacts)
        self.bodies = np.array([rc.body for rc in resolved], dtype=np.int64)
        self.X_contact_body = np.array([rc.X_contact_body for rc in resolved], dtype=float).reshape(-1, 6, 6)
        self.dims = np.array([c.dimension for c in self.contacts], dtype=np.int64)
        self.world_aligned = np.array([c.reference == "world_aligned" for c in self.contacts], dtype=np.bool_)
        self.starts = np.concatenate([[0], np.cumsum(self.dims)[:-1]]).astype(np.int64)
        self.m_contacts = int(self.dims.sum())
        self.coupling_rows = np.ascontiguousarray(getattr(model, "coupling_rows", np.zeros((0, 2))), dtype=np.int64)
        self.coupling_multipliers = np.ascontiguousarray(getattr(model, "coupling_multipliers", np.zeros(0)),
                                                         dtype=float)
        self.m = self.m_contacts + len(self.coupling_multipliers)

    def data(self, tree_workspace: Workspace) -> tuple[Any, SimpleNamespace]:
        """(compiled, scratch): this thread's :meth:`new_data` on ``tree_workspace`` (the
        thread's :func:`~robot_linearization.workspace.workspace` of the model's tree), kept for
        the thread's next call."""
        local = self._local
        if getattr(local, "workspace", None) is not tree_workspace:
            local.data = self.new_data(tree_workspace)
            local.workspace = tree_workspace
        return local.data

    def new_data(self, tree_workspace: Workspace) -> tuple[Any, SimpleNamespace]:
        """(compiled, scratch): a new :data:`CONTACT_DATA` on ``tree_workspace`` (a
        :class:`~robot_linearization.workspace.Workspace` of the model's tree), and its scratch
        arrays by name (J, drift, …) for Python to read."""
        k, m, N = len(self.contacts), self.m, tree_workspace.free.shape[0]
        scratch = SimpleNamespace(
            J=np.empty((m, N)), drift=np.empty(m), J_local=np.empty((k, 6, N)), rotation=np.empty((k, 3, 3)),
            body_X_base=np.empty((k, 6, 6)), T=np.empty((k, 6, 6)), JM_inv=np.empty((m, N)), L=np.empty((m, m)),
            wrenches=np.empty((k, 6)), d_accel=np.empty((m, 2 * N)))
        return structure(CONTACT_DATA, _new_contact_data, self.bodies, self.X_contact_body, self.dims,
                         self.world_aligned, self.starts, self.coupling_rows, self.coupling_multipliers,
                         *vars(scratch).values(), tree_workspace.data), scratch


@functools.lru_cache(maxsize=256)
def contact_arrays(model: AnyModel, contacts: tuple[Contact, ...]) -> ContactArrays:
    """The ContactArrays of ``contacts`` (a tuple of Contact) on ``model`` (a Model or
    CoupledModel), built once."""
    return ContactArrays(model, contacts)


def contact_set(model: AnyModel, contacts: Contacts | ContactArrays) -> ContactArrays:
    """The contact set ``contacts`` bound to ``model`` (a Model or CoupledModel), parsed once where
    it enters the API: Contacts (Contact objects, frame names, the node's text) are read by
    as_contacts; a ContactArrays of ``model`` is taken as is, so that what an entry point calls
    takes its result without reading the set again."""
    if isinstance(contacts, ContactArrays):
        return contacts if contacts.model is model else contact_arrays(model, contacts.contacts)
    try:  # (a list as its tuple: one lookup of what the API was given, every cycle)
        return _contact_set_seen(model, tuple(contacts) if isinstance(contacts, list) else contacts)
    except TypeError:  # unhashable (an entry that is a list, an array): read it, to name what is wrong
        return contact_arrays(model, as_contacts(contacts))


@functools.lru_cache(maxsize=256)
def _contact_set_seen(model: AnyModel, contacts) -> ContactArrays:
    """contact_set of a hashable ``contacts`` (not a ContactArrays), read once."""
    return contact_arrays(model, as_contacts(contacts))


def contact_tuple(contacts: Contacts | ContactArrays) -> tuple[Contact, ...]:
    """The tuple of Contact of ``contacts``: a ContactArrays' own, else as_contacts' reading."""
    return contacts.contacts if isinstance(contacts, ContactArrays) else as_contacts(contacts)


@kernel
def matmul_into(A: NDArray[np.float64], B: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    """out = A B in plain loops (no BLAS: the threads of a horizon stay parallel)."""
    out[:] = 0.0
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            factor = A[i, k]
            if factor != 0.0:
                for j in range(B.shape[1]):
                    out[i, j] += factor * B[k, j]


@kernel
def multiply_add_into(A: NDArray[np.float64], B: NDArray[np.float64], sign: float, out: NDArray[np.float64]) -> None:
    """out += sign · A B[:, :w], for A (p, q), B (q, ≥ w), out (p, w) (views of any strides; B
    and out C-contiguous is fastest: their rows are then known to be contiguous).  Each sweep
    over four rows of out takes four rows of B: a row of out is loaded and stored once per four
    multiply-adds instead of once per one, and a row of B loaded once per four rows of out.  A
    38 × 38 by 38 × 76 product: 20 µs column by column, 7 µs with four rows of B, a 50 × 50 by
    50 × 100 one 19 µs with one row of out, 14 µs with two (BLAS: 5 and 10 µs, but its thread pool
    would then spin beside the caller's threads); four rows of out rather than two: 5–10 % less
    again (2026-11-25, 18 to 206 rows).  Each entry sums in the same order either way."""
    p, q, w = A.shape[0], B.shape[0], out.shape[1]
    end, top = q - q % 4, p - p % 4
    for i in range(0, top, 4):
        r0, r1, r2, r3, A0, A1, A2, A3 = out[i], out[i + 1], out[i + 2], out[i + 3], A[i], A[i + 1], A[i + 2], A[i + 3]
        for k in range(0, end, 4):
            a00, a01, a02, a03 = sign * A0[k], sign * A0[k + 1], sign * A0[k + 2], sign * A0[k + 3]
            a10, a11, a12, a13 = sign * A1[k], sign * A1[k + 1], sign * A1[k + 2], sign * A1[k + 3]
            a20, a21, a22, a23 = sign * A2[k], sign * A2[k + 1], sign * A2[k + 2], sign * A2[k + 3]
            a30, a31, a32, a33 = sign * A3[k], sign * A3[k + 1], sign * A3[k + 2], sign * A3[k + 3]
            B0, B1, B2, B3 = B[k], B[k + 1], B[k + 2], B[k + 3]
            for j in range(w):
                x0, x1, x2, x3 = B0[j], B1[j], B2[j], B3[j]
                r0[j] += a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3
                r1[j] += a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3
                r2[j] += a20 * x0 + a21 * x1 + a22 * x2 + a23 * x3
                r3[j] += a30 * x0 + a31 * x1 + a32 * x2 + a33 * x3
        for k in range(end, q):
            f0, f1, f2, f3, B_k = sign * A0[k], sign * A1[k], sign * A2[k], sign * A3[k], B[k]
            for j in range(w):
                x = B_k[j]
                r0[j] += f0 * x
                r1[j] += f1 * x
                r2[j] += f2 * x
                r3[j] += f3 * x
    for i in range(top, p):
        row, A_i = out[i], A[i]
        for k in range(0, end, 4):
            f0, f1, f2, f3 = sign * A_i[k], sign * A_i[k + 1], sign * A_i[k + 2], sign * A_i[k + 3]
            B0, B1, B2, B3 = B[k], B[k + 1], B[k + 2], B[k + 3]
            for j in range(w):
                row[j] += f0 * B0[j] + f1 * B1[j] + f2 * B2[j] + f3 * B3[j]
        for k in range(end, q):
            f, B_k = sign * A_i[k], B[k]
            for j in range(w):
                row[j] += f * B_k[j]


@kernel
def tree_multiply_add_into(model: Any, data: Any, M_inv: NDArray[np.float64], D: NDArray[np.float64], sign: float,
                           out: NDArray[np.float64]) -> None:
    """out += sign · M⁻¹ D[:, :w] (w = out.shape[1] ≤ 2N) for M⁻¹ (N, N) at data's configuration (the
    IMMAmb's, which leaves data ready for the third way) and D (N, ≥ w) with the sparsity of the
    EIDAmb's derivatives on the tree: row c of D (a joint's) is zero but in the columns of the
    joints above it (the base's too) and of its subtree, in both halves (z_q, z_v); a base row is
    full.  The way is the model's (model.derivative_products, workspace.derivative_products): the
    dense product (:func:`multiply_add_into`); column by column over D's non-zero entries, each
    adding a row of M⁻¹ (= its column); or without M⁻¹, by the IMMAmb's passes
    (inverse_mass_matrix.inverse_mass_matrix_product_into)."""
    N, w = D.shape[0], out.shape[1]
    if model.derivative_products == DENSE_PRODUCTS:
        multiply_add_into(M_inv, D, sign, out)
        return
    if model.derivative_products == ARTICULATED_PRODUCTS:
        inverse_mass_matrix_product_into(model, data, D, sign, out)
        return
    column = np.empty(N)
    for c in range(w):
        column[:] = 0.0
        for r in range(N):
            factor = D[r, c]
            if factor != 0.0:
                A_r = M_inv[r]
                for i in range(N):
                    column[i] += factor * A_r[i]
        for i in range(N):
            out[i, c] += sign * column[i]


@kernel
def contact_kinematics_into(model: Any, data: Any, contacts: Any, base_rotation: NDArray[np.float64]) -> None:
    """contacts.J (m, N) in each contact's reference axes and γ = contacts.drift (m) from the
    body poses and column axes in the base frame data.R, t, axes (kinematics.base_frame_poses_into),
    body twists data.v and body accelerations data.a (n+1, 6) at ν̇ = 0 without gravity, and the
    base's rotation A_R_0 (3, 3).  Also per contact k: body_X_base[k] = b_X_0 (base, or world
    for a fixed base, to its body), T[k] = c_X_0 = c_X_b b_X_0, J_local[k] (6, N) the frame's
    body Jacobian in its own axes (T[k] times the base's I₆ and the axes of the joints above
    it), rotation[k] = A_R_c.  The last rows are the mimic couplings e_m − a e_j (no drift)."""
    ancestors, depth, floating_base = model.ancestors, model.depth, model.floating_base
    R, t, axes, v, a = data.R, data.t, data.axes, data.v, data.a
    bodies, X_cb, dims, world_aligned, starts = (contacts.bodies, contacts.X_cb, contacts.dims, contacts.world_aligned,
                                                 contacts.starts)
    coupling_rows, coupling_multipliers, J, drift = (contacts.coupling_rows, contacts.coupling_multipliers, contacts.J,
                                                     contacts.drift)
    J_local, rotation, body_X_base, T = contacts.J_local, contacts.rotation, contacts.body_X_base, contacts.T
    N = J.shape[1]
    off = 6 if floating_base else 0
    first = J.shape[0] - coupling_multipliers.shape[0]  # (the contact rows come first)
    for i in range(coupling_multipliers.shape[0]):
        J[first + i] = 0.0
        J[first + i, off + coupling_rows[i, 0]] = 1.0
        J[first + i, off + coupling_rows[i, 1]] -= coupling_multipliers[i]
        drift[first + i] = 0.0
    v_c = np.empty(6)
    a_c = np.empty(6)
    local = np.empty(6)
    for k in range(bodies.shape[0]):
        b = bodies[k]
        X, T_k, J_k = body_X_base[k], T[k], J_local[k]
        X[3:, :3] = 0.0
        for r in range(3):  # b_X_0 = [[Rᵀ, −Rᵀ t^], [0, Rᵀ]], (R, t) body b's pose in the base frame
            for c in range(3):
                X[r, c] = X[3 + r, 3 + c] = R[b, c, r]
                X[r, 3 + c] = -(R[b, 0, r] * skew_entry(t[b], 0, c) + R[b, 1, r] * skew_entry(t[b], 1, c)
                                + R[b, 2, r] * skew_entry(t[b], 2, c))
        mat_mat_into(X_cb[k], X, T_k)
        J_k[:] = 0.0
        if floating_base:
            J_k[:, :6] = T_k
        for d in range(depth[b]):  # the column of joint j above b: c_X_0 ⁰X_j Γ_j
            col = off + ancestors[b, d]
            for r in range(6):
                acc = 0.0
                for q in range(6):
                    acc += T_k[r, q] * axes[col, q]
                J_k[r, col] = acc
        for r in range(3):  # A_R_c = A_R_0 · ⁰R_b · (c_R_b)ᵀ
            for c in range(3):
                acc = 0.0
                for p in range(3):
                    for q in range(3):
                        acc += base_rotation[r, p] * R[b, p, q] * X_cb[k, 3 + c, 3 + q]
                rotation[k, r, c] = acc
        for r in range(6):
            acc_v = 0.0
            acc_a = 0.0
            for c in range(6):
                acc_v += X_cb[k, r, c] * v[b, c]
                acc_a += X_cb[k, r, c] * a[b, c]
            v_c[r], a_c[r] = acc_v, acc_a
        if dims[k] == 3:  # the classical acceleration of the point: a + ω × v
            a_c[0] += v_c[4] * v_c[2] - v_c[5] * v_c[1]
            a_c[1] += v_c[5] * v_c[0] - v_c[3] * v_c[2]
            a_c[2] += v_c[3] * v_c[1] - v_c[4] * v_c[0]
        row0 = starts[k]
        for block in range(dims[k] // 3):  # each 3-block rotated to world axes if world-aligned
            for r in range(3):
                rr = row0 + 3 * block + r
                if world_aligned[k]:
                    for col in range(N):
                        acc = 0.0
                        for p in range(3):
                            acc += rotation[k, r, p] * J_local[k, 3 * block + p, col]
                        J[rr, col] = acc
                    acc = 0.0
                    for p in range(3):
                        acc += rotation[k, r, p] * a_c[3 * block + p]
                    local[r] = acc
                else:
                    J[rr] = J_local[k, 3 * block + r]
                    local[r] = a_c[3 * block + r]
            for r in range(3):
                drift[row0 + 3 * block + r] = local[r]


@kernel
def unconstrained_dynamics_into(model: Any, data: Any, pose: NDArray[np.float64], s: NDArray[np.float64],
                                twist: NDArray[np.float64], r: NDArray[np.float64], tau: NDArray[np.float64],
                                M_inv: NDArray[np.float64]) -> int:
    """The unconstrained pieces of the constrained dynamics at (pose (4, 4), s, twist, r, τ):
    the body transforms, g_0 (6) into data.g0, ν̇_free (N) by the ABAmb into data.free, the
    body poses and axes in the base frame, and M⁻¹ (N, N) by the IMMAmb from the same
    articulated inertias.  Returns a joint whose pivot vanishes (M singular; nothing after
    the ABAmb computed), else −1."""
    body_transforms_into(model.S, model.tree_X, s, data.X_up)
    base_gravity_into(pose, model.gravity, data.g0)
    forward_dynamics_into(model, data, twist, r, tau, data.free)
    joint = singular_pivot(data.I_A, data.D)
    if joint >= 0:
        return joint
    base_frame_poses_into(model.parent, model.S, data.X_up, model.floating_base, data.R, data.t, data.axes)
    inverse_mass_matrix_into(model, data, M_inv)
    return -1


@kernel
def cholesky_solve_into(L: NDArray[np.float64], B: NDArray[np.float64]) -> None:
    """B ← (L Lᵀ)⁻¹ B in place, for L lower triangular (m, m) and B (m, c): the forward and
    back substitutions row by row, each row of B updated whole (contiguous, all c columns at
    once), in the order of a column-by-column substitution (the same numbers)."""
    m, c = L.shape[0], B.shape[1]
    for i in range(m):
        row = B[i]
        for k in range(i):
            factor, B_k = L[i, k], B[k]
            for j in range(c):
                row[j] -= factor * B_k[j]
        for j in range(c):
            row[j] /= L[i, i]
    for i in range(m - 1, -1, -1):
        row = B[i]
        for k in range(i + 1, m):
            factor, B_k = L[k, i], B[k]
            for j in range(c):
                row[j] -= factor * B_k[j]
        for j in range(c):
            row[j] /= L[i, i]


@kernel
def contact_forces_into(J: NDArray[np.float64], M_inv: NDArray[np.float64], free_accelerations: NDArray[np.float64],
                        drift: NDArray[np.float64], JM_inv: NDArray[np.float64], L: NDArray[np.float64],
                        forces: NDArray[np.float64], accelerations: NDArray[np.float64]) -> bool:
    """λ and ν̇ of the constrained dynamics, given J, M⁻¹ (N, N), ν̇_free and γ.

    Writes JM_inv = J M⁻¹ (m, N), L the Cholesky factor of Λ⁻¹ = J M⁻¹ Jᵀ,
    forces λ (m,) and accelerations ν̇ (N,).  Returns False (and leaves λ, ν̇
    unset) when Λ⁻¹ is singular to DEGENERACY_TOLERANCE."""
    m, N = J.shape
    matmul_into(J, M_inv, JM_inv)
    L[:] = 0.0
    scale = 1e-300
    for i in range(m):
        acc = 0.0
        for k in range(N):
            acc += JM_inv[i, k] * J[i, k]
        scale = max(scale, abs(acc))
    for i in range(m):  # Cholesky of Λ⁻¹, row by row, with the pivot test
        for j in range(i + 1):
            acc = 0.0
            for k in range(N):
                acc += JM_inv[i, k] * J[j, k]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            if i == j:
                if not acc > DEGENERACY_TOLERANCE * scale:
                    return False
                L[i, i] = np.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
    rhs = np.empty((m, 1))
    for i in range(m):
        acc = drift[i]
        for k in range(N):
            acc += J[i, k] * free_accelerations[k]
        rhs[i, 0] = -acc
    cholesky_solve_into(L, rhs)
    for i in range(m):
        forces[i] = rhs[i, 0]
    accelerations[:] = free_accelerations
    for i in range(m):
        for k in range(N):
            accelerations[k] += JM_inv[i, k] * forces[i]
    return True


def degeneracy_reason(contacts: tuple[Contact, ...], J: NDArray[np.float64], M_inv: NDArray[np.float64]) -> str:
    """Why Λ⁻¹ = J M⁻¹ Jᵀ is singular, naming the contacts (a ContactArrays' tuple of Contact) (for
    ContactError)."""
    inverse_inertia = J @ M_inv @ J.T
    scale = max(float(np.abs(np.diag(inverse_inertia)).max(initial=0.0)), 1e-300)
    rows = np.cumsum([0] + [c.dimension for c in contacts])
    held = [c.frame for c, lo, hi in zip(contacts, rows[:-1], rows[1:])
            if np.abs(np.diag(inverse_inertia)[lo:hi]).max() <= DEGENERACY_TOLERANCE * scale]
    if held:
        return (f"contacts {held} are on links that cannot move (their rows of J M⁻¹ Jᵀ are zero): "
                "remove them from the contact set")
    rank = int(np.linalg.matrix_rank(inverse_inertia, tol=np.sqrt(DEGENERACY_TOLERANCE) * scale))
    return (f"the contact set {[c.frame for c in contacts]} constrains {J.shape[0]} directions of which only "
            f"{rank} are independent (J M⁻¹ Jᵀ is singular): use point contacts or fewer 6d contacts")


def contact_kinematics(model: AnyModel, state: State, contacts: Contacts | ContactArrays, X_up: NDArray[np.float64],
                       v: NDArray[np.float64], a_bias: NDArray[np.float64]
                       ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(J (m, N), γ (m,)) of ``contacts`` (as :func:`contact_set` takes them; and of a CoupledModel's
    mimic couplings, in the last rows) given the tree's state, body transforms X_up, body twists v
    (n+1, 6) and body accelerations a_bias (n+1, 6) at ν̇ = 0 without gravity."""
    tree = tree_of(model)
    arrays = contact_set(model, contacts)
    ws = workspace(tree)
    ws.X_up[:], ws.v[:], ws.a[:] = X_up, v, a_bias
    base_frame_poses_into(tree.parent, tree.motion_subspaces, ws.X_up, tree.floating_base, ws.R, ws.t, ws.axes)
    data, scratch = arrays.data(ws)
    base_rotation = np.ascontiguousarray(floating_base_of(state)[0][:3, :3]) if tree.floating_base else np.eye(3)
    contact_kinematics_into(ws.model, ws.data, data, base_rotation)
    return scratch.J.copy(), scratch.drift.copy()


def contact_frame_kinematics(tree: Model, tree_state: State, contacts: tuple[Contact, ...]
                             ) -> tuple[SimpleNamespace, Workspace]:
    """:func:`contact_kinematics_into` at ``tree_state``'s positions, at rest (a tree, a Model):
    (scratch, ws) — this thread's scratch of ``contacts`` (a tuple of Contact) with J (m, N),
    J_local (k, 6, N) and rotation (k, 3, 3) = A_R_c filled, and the tree's workspace with the
    bodies' poses R (n+1, 3, 3), t (n+1, 3) in the base frame.  Both are overwritten by the
    thread's next call: copy what you keep.  (:func:`contact_frame_kinematics_many_into` of one
    configuration, which leaves them so.)"""
    arrays = contact_arrays(tree, contacts)
    ws = workspace(tree)
    data, scratch = arrays.data(ws)
    k = len(arrays.contacts)
    pose = np.array(tree_state.base_pose if tree.floating_base else np.eye(4), dtype=float)[None]
    contact_frame_kinematics_many_into(ws.model, ws.data, data, pose,
                                       np.array(tree_state.joint_positions, dtype=float)[None],
                                       np.tile(np.eye(4), (k, 1, 1)), np.empty((1, arrays.m, tree.n_velocities)),
                                       np.empty((1, k, 3)), np.empty((1, k, 3, 3)))
    return scratch, ws


@kernel
def contact_frame_kinematics_many_into(model: Any, data: Any, contacts: Any, poses: NDArray[np.float64],
                                       joint_positions: NDArray[np.float64], frames: NDArray[np.float64],
                                       J: NDArray[np.float64], positions: NDArray[np.float64],
                                       rotations: NDArray[np.float64]) -> None:
    """:func:`contact_kinematics_into` at rest at each of K configurations of a tree, the base's world
    poses (K, 4, 4) (the identity for a fixed base) and joint_positions (K, n): contacts.J into J (K,
    m, N), and the world placement of frames[i] (4, 4), a frame of contact i's body in its axes (the
    contact's own frame for its own point and axes): its origin into positions (K, k, 3), its rotation
    into rotations (K, k, 3, 3)."""
    rotation, in_base, turned = np.empty((3, 3)), np.empty(3), np.empty((3, 3))
    R, t, bodies = data.R, data.t, contacts.bodies
    for k in range(poses.shape[0]):
        body_transforms_into(model.S, model.tree_X, joint_positions[k], data.X_up)
        base_frame_poses_into(model.parent, model.S, data.X_up, model.floating_base, R, t, data.axes)
        data.v[:] = 0.0
        data.a[:] = 0.0
        rotation[:] = poses[k, :3, :3]
        contact_kinematics_into(model, data, contacts, rotation)
        J[k] = contacts.J
        for i in range(bodies.shape[0]):
            b = bodies[i]
            for r in range(3):  # 0_p = 0_R_b b_p + 0_t_b, then A_p = A_R_0 0_p + A_t_0; 0_R_f = 0_R_b b_R_f
                in_base[r] = R[b, r, 0] * frames[i, 0, 3] + R[b, r, 1] * frames[i, 1, 3] \
                    + R[b, r, 2] * frames[i, 2, 3] + t[b, r]
                for c in range(3):
                    turned[r, c] = R[b, r, 0] * frames[i, 0, c] + R[b, r, 1] * frames[i, 1, c] \
                        + R[b, r, 2] * frames[i, 2, c]
            for r in range(3):
                positions[k, i, r] = poses[k, r, 0] * in_base[0] + poses[k, r, 1] * in_base[1] \
                    + poses[k, r, 2] * in_base[2] + poses[k, r, 3]
                for c in range(3):  # A_R_f = A_R_0 0_R_f
                    rotations[k, i, r, c] = poses[k, r, 0] * turned[0, c] + poses[k, r, 1] * turned[1, c] \
                        + poses[k, r, 2] * turned[2, c]


def contact_frame_kinematics_many(tree: Model, contacts: tuple[Contact, ...], poses: NDArray[np.float64],
                                  joint_positions: NDArray[np.float64], frames: NDArray[np.float64]
                                  ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(positions (K, k, 3), J (K, m, N), rotations (K, k, 3, 3)) of
    :func:`contact_frame_kinematics_many_into` on ``tree`` (a Model) for ``contacts`` (a tuple of
    Contact), the base's world poses (K, 4, 4), joint_positions (K, n) and frames (k, 4, 4) in the
    contacts' bodies: K configurations in one compiled call (a horizon's knots).  The arrays are taken
    as they are (float64, C-ordered): the caller's own, made valid."""
    arrays = contact_arrays(tree, contacts)
    ws = workspace(tree)
    data, _ = arrays.data(ws)
    K, k = poses.shape[0], len(arrays.contacts)
    J, positions, rotations = np.empty((K, arrays.m, tree.n_velocities)), np.empty((K, k, 3)), np.empty((K, k, 3, 3))
    contact_frame_kinematics_many_into(ws.model, ws.data, data, poses, joint_positions, frames, J, positions, rotations)
    return positions, J, rotations


def bias_motion(model: Model, state: State, X_up: NDArray[np.float64]
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(v, a) (n+1, 6): body twists and body accelerations at ν̇ = 0 without gravity."""
    ws = workspace(model)
    ws.X_up[:] = X_up
    newton_euler_forward_into(ws.model, ws.data, base_twist(model, state), np.zeros(6), state.joint_velocities,
                              np.zeros(model.n_bodies - 1))
    return ws.v.copy(), ws.a.copy()


def constrained_forward_dynamics(model: AnyModel, state: State, joint_torques: ArrayLike | None,
                                 contacts: Contacts | ContactArrays = ()
                                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Forward dynamics with rigid contacts (and a CoupledModel's mimic joints):
    (ν̇ (N,), λ (m,)).

    ν̇ = [v̇; ṙ] (floating base) or ṙ; λ stacks each contact's force (point) or
    wrench [force; moment] (6d) on the robot, in the contact's reference axes.
    ContactError for a redundant or degenerate contact set.

    ``model``: a Model or CoupledModel; ``state``: its State; ``joint_torques`` τ (n,) (None:
    zeros); ``contacts``: names or :class:`~robot_linearization.Contact` objects ("FOOT" a point,
    "FOOT:6d" a wrench), or their :func:`contact_set`.
    """
    check_state(model, state)
    torques = joint_vector(model, joint_torques, "joint_torques")
    contacts = contact_set(model, contacts)
    tree = tree_of(model)
    if isinstance(model, CoupledModel):
        state, torques = model.tree_state(state), model.tree_torques(torques)
    base_acc, joint_acc = forward_dynamics(tree, state, torques)
    free = joint_acc if base_acc is None else np.concatenate([base_acc, joint_acc])
    X_up = body_transforms(tree, state.joint_positions)
    J, drift = contact_kinematics(model, state, contacts, X_up, *bias_motion(tree, state, X_up))
    M_inv = inverse_mass_matrix(tree, state.joint_positions)
    m, N = J.shape
    forces, accelerations = np.empty(m), np.empty(N)
    if not contact_forces_into(J, M_inv, free, drift, np.empty((m, N)), np.empty((m, m)), forces, accelerations):
        raise ContactError(degeneracy_reason(contacts.contacts, J, M_inv))
    if isinstance(model, CoupledModel):
        return accelerations[model.velocity_rows], forces[:m - len(model.coupling_multipliers)]
    return accelerations, forces
