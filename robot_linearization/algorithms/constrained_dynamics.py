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

import numpy as np

from ..compiled import kernel
from ..contacts import ContactError, as_contacts, contact_labels, resolve
from ..arguments import joint_vector
from ..model import Model, State, check_state
from ..spatial import mat_mat_into
from .forward_dynamics import forward_dynamics, forward_dynamics_into, singular_pivot
from .inverse_dynamics import newton_euler_forward_into
from .inverse_mass_matrix import inverse_mass_matrix, inverse_mass_matrix_into
from .kinematics import base_frame_poses_into, base_gravity_into, base_twist, body_transforms, body_transforms_into

DEGENERACY_TOLERANCE = 1e-10
"""Λ⁻¹ = J M⁻¹ Jᵀ is refused as singular when a Cholesky pivot² falls below this
fraction of its largest diagonal entry (redundant or unreachable constraints)."""


class ContactArrays:
    """A contact set bound to a model, as the compiled passes take it (k contacts):
    bodies (k,), X_contact_body (k, 6, 6) = c_X_b, dims (k,) 3 or 6, world_aligned (k,)
    bool, starts (k,) first row of each contact in J and λ; m_contacts rows.  After
    them, the joint-space rows of a CoupledModel's mimic joints (coupling.py):
    coupling_rows (c, 2) tree indices (mimic, source) and coupling_multipliers (c,);
    m rows in all.  labels (m_contacts,) names λ's entries.  Resolved once per (model,
    contacts) (:func:`contact_arrays`); :meth:`scratch` is each thread's own."""

    def __init__(self, model, contacts):
        self.contacts = as_contacts(contacts)
        self.labels = contact_labels(self.contacts)
        self._local = threading.local()
        resolved = resolve(model, self.contacts)
        self.bodies = np.array([rc.body for rc in resolved], dtype=np.int64)
        self.X_contact_body = np.array([rc.X_contact_body for rc in resolved]).reshape(-1, 6, 6)
        self.dims = np.array([c.dimension for c in self.contacts], dtype=np.int64)
        self.world_aligned = np.array([c.reference == "world_aligned" for c in self.contacts], dtype=np.bool_)
        self.starts = np.concatenate([[0], np.cumsum(self.dims)[:-1]]).astype(np.int64)
        self.m_contacts = int(self.dims.sum())
        self.coupling_rows = getattr(model, "coupling_rows", np.zeros((0, 2), dtype=np.int64))
        self.coupling_multipliers = getattr(model, "coupling_multipliers", np.zeros(0))
        self.m = self.m_contacts + len(self.coupling_multipliers)

    def arrays(self):
        return (self.bodies, self.X_contact_body, self.dims, self.world_aligned, self.starts, self.coupling_rows,
                self.coupling_multipliers)

    def scratch(self, N: int):
        """This thread's scratch of the contact kernels for N velocities: J (m, N), γ (m,),
        J_local (k, 6, N), A_R_c (k, 3, 3), b_X_0 (k, 6, 6), c_X_0 (k, 6, 6), J M⁻¹ (m, N),
        the Cholesky factor (m, m) and the contact wrenches (k, 6)."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None or scratch[0].shape[1] != N:
            k, m = len(self.contacts), self.m
            scratch = self._local.scratch = (
                np.empty((m, N)), np.empty(m), np.empty((k, 6, N)), np.empty((k, 3, 3)), np.empty((k, 6, 6)),
                np.empty((k, 6, 6)), np.empty((m, N)), np.empty((m, m)), np.empty((k, 6)))
        return scratch


@functools.lru_cache(maxsize=256)
def contact_arrays(model, contacts: tuple) -> ContactArrays:
    """The ContactArrays of ``contacts`` (a tuple of Contact) on ``model`` (a Model or
    CoupledModel), built once."""
    return ContactArrays(model, contacts)


@kernel
def matmul_into(A, B, out):
    """out = A B in plain loops (no BLAS: the threads of a horizon stay parallel)."""
    out[:] = 0.0
    for i in range(A.shape[0]):
        for k in range(A.shape[1]):
            factor = A[i, k]
            if factor != 0.0:
                for j in range(B.shape[1]):
                    out[i, j] += factor * B[k, j]


@kernel
def contact_kinematics_into(parent, S, X_up, floating_base, base_rotation, bodies, X_cb, dims, world_aligned, starts,
                            coupling_rows, coupling_multipliers, v, a, J, drift, J_local, rotation, body_X_base):
    """J (m, N) in each contact's reference axes and γ (m) from the body twists v and
    body accelerations a (n+1, 6) at ν̇ = 0 without gravity.  Also per contact k:
    J_local[k] (6, N) the frame's body Jacobian in its own axes, rotation[k] = A_R_c,
    body_X_base[k] = b_X_0 (base, or world for a fixed base, to its body).  The last
    rows are the mimic couplings e_m − a e_j (no drift)."""
    N = J.shape[1]
    off = 6 if floating_base else 0
    first = J.shape[0] - coupling_multipliers.shape[0]  # (the contact rows come first)
    for i in range(coupling_multipliers.shape[0]):
        J[first + i] = 0.0
        J[first + i, off + coupling_rows[i, 0]] = 1.0
        J[first + i, off + coupling_rows[i, 1]] -= coupling_multipliers[i]
        drift[first + i] = 0.0
    X = np.empty((6, 6))
    X_next = np.empty((6, 6))
    J_body = np.empty((6, N))
    v_c = np.empty(6)
    a_c = np.empty(6)
    local = np.empty(6)
    for k in range(bodies.shape[0]):
        b = bodies[k]
        J_body[:] = 0.0
        X[:] = np.eye(6)
        i = b
        while i > 0:  # walk to the base: column of joint i is b_X_i Γ_i
            for r in range(6):
                acc = 0.0
                for c in range(6):
                    acc += X[r, c] * S[i, c]
                J_body[r, off + i - 1] = acc
            mat_mat_into(X, X_up[i], X_next)
            X[:] = X_next
            i = parent[i]
        if floating_base:
            J_body[:, :6] = X
        body_X_base[k] = X
        matmul_into(X_cb[k], J_body, J_local[k])
        for r in range(3):  # A_R_c = A_R_0 · (b_R_0)ᵀ · (c_R_b)ᵀ
            for c in range(3):
                acc = 0.0
                for p in range(3):
                    for q in range(3):
                        acc += base_rotation[r, p] * X[q, p] * X_cb[k, 3 + c, 3 + q]
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
def unconstrained_dynamics_into(parent, S, tree_X, I, subtree_end, floating_base, gravity, pose, s, twist, r, tau,
                                X_up, I_A, U, D, v, c, p, a, F, P, R, t, axes, U_base, g0, free, M_inv):
    """The unconstrained pieces of the constrained dynamics at (pose, s, twist, r, τ): the body
    transforms, g_0 (6) into g0, ν̇_free (N) by the ABAmb into free, the body poses and axes in
    the base frame, and M⁻¹ (N, N) by the IMMAmb from the same articulated inertias.  Returns a
    joint whose pivot vanishes (M singular; nothing after the ABAmb computed), else −1."""
    body_transforms_into(S, tree_X, s, X_up)
    base_gravity_into(pose, gravity, g0)
    forward_dynamics_into(parent, S, I, X_up, floating_base, twist, g0, r, tau, I_A, U, D, v, c, p, a, free)
    joint = singular_pivot(I_A, D)
    if joint >= 0:
        return joint
    base_frame_poses_into(parent, S, X_up, floating_base, R, t, axes)
    inverse_mass_matrix_into(parent, subtree_end, floating_base, R, t, axes, I_A, U, D, U_base, F, P, M_inv)
    return -1


@kernel
def cholesky_solve_into(L, B):
    """B ← (L Lᵀ)⁻¹ B in place, for L lower triangular (m, m) and B (m, c)."""
    m = L.shape[0]
    for j in range(B.shape[1]):
        for i in range(m):
            acc = B[i, j]
            for k in range(i):
                acc -= L[i, k] * B[k, j]
            B[i, j] = acc / L[i, i]
        for i in range(m - 1, -1, -1):
            acc = B[i, j]
            for k in range(i + 1, m):
                acc -= L[k, i] * B[k, j]
            B[i, j] = acc / L[i, i]


@kernel
def contact_forces_into(J, M_inv, free_accelerations, drift, JM_inv, L, forces, accelerations):
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


def degeneracy_reason(contacts, J: np.ndarray, M_inv: np.ndarray) -> str:
    """Why Λ⁻¹ = J M⁻¹ Jᵀ is singular, naming the contacts (for ContactError)."""
    contacts = as_contacts(contacts)
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


def contact_kinematics(model, state: State, contacts, X_up: np.ndarray, v: np.ndarray, a_bias: np.ndarray):
    """(J (m, N), γ (m,)) of ``contacts`` (and of a CoupledModel's mimic couplings, in the
    last rows) given the tree's state, body transforms X_up, body twists v (n+1, 6)
    and body accelerations a_bias (n+1, 6) at ν̇ = 0 without gravity."""
    tree = getattr(model, "tree", model)
    arrays = contact_arrays(model, as_contacts(contacts))
    k, N = len(arrays.contacts), tree.n_velocities
    J, drift = np.empty((arrays.m, N)), np.empty(arrays.m)
    base_rotation = np.ascontiguousarray(state.base_pose[:3, :3]) if tree.floating_base else np.eye(3)
    contact_kinematics_into(tree.parent, tree.motion_subspaces, X_up, tree.floating_base, base_rotation,
                            *arrays.arrays(), v, a_bias, J, drift, np.empty((k, 6, N)), np.empty((k, 3, 3)),
                            np.empty((k, 6, 6)))
    return J, drift


def bias_motion(model: Model, state: State, X_up: np.ndarray):
    """(v, a) (n+1, 6): body twists and body accelerations at ν̇ = 0 without gravity."""
    n_bodies = model.n_bodies
    v, a, f = np.empty((n_bodies, 6)), np.empty((n_bodies, 6)), np.empty((n_bodies, 6))
    newton_euler_forward_into(model.parent, model.motion_subspaces, model.inertias, X_up, base_twist(model, state),
                              np.zeros(6), state.joint_velocities, np.zeros(model.n_bodies - 1), v, a, f)
    return v, a


def constrained_forward_dynamics(model, state: State, joint_torques, contacts=()):
    """Forward dynamics with rigid contacts (and a CoupledModel's mimic joints):
    (ν̇ (N,), λ (m,)).

    ν̇ = [v̇; ṙ] (floating base) or ṙ; λ stacks each contact's force (point) or
    wrench [force; moment] (6d) on the robot, in the contact's reference axes.
    ContactError for a redundant or degenerate contact set.
    """
    check_state(model, state)
    torques = joint_vector(model, joint_torques, "joint_torques")
    contacts = as_contacts(contacts)
    coupled = hasattr(model, "tree")
    tree = model.tree if coupled else model
    if coupled:
        state, torques = model.tree_state(state), model.tree_torques(torques)
    base_acc, joint_acc = forward_dynamics(tree, state, torques)
    free = joint_acc if base_acc is None else np.concatenate([base_acc, joint_acc])
    X_up = body_transforms(tree, state.joint_positions)
    J, drift = contact_kinematics(model, state, contacts, X_up, *bias_motion(tree, state, X_up))
    M_inv = inverse_mass_matrix(tree, state.joint_positions)
    m, N = J.shape
    forces, accelerations = np.empty(m), np.empty(N)
    if not contact_forces_into(J, M_inv, free, drift, np.empty((m, N)), np.empty((m, m)), forces, accelerations):
        raise ContactError(degeneracy_reason(contacts, J, M_inv))
    if coupled:
        return accelerations[model.velocity_rows], forces[:m - len(model.coupling_multipliers)]
    return accelerations, forces
