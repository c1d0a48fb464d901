"""Contact-constrained forward dynamics (thesis §6.2, eq. (2.62)); docs/contacts.md.

    M ν̇ + h = S τ + Jᵀ λ,     J ν̇ + γ = 0

with J (m, N) the contact Jacobian and γ the contact acceleration at ν̇ = 0 (the
drift J̇ν, plus ω × v for point contacts, whose constraint is the classical
acceleration of the point).  Eliminating ν̇ = ν̇_free + M⁻¹Jᵀλ gives

    λ = −Λ (J ν̇_free + γ),   Λ⁻¹ = J M⁻¹ Jᵀ (the operational-space inverse inertia),

with M⁻¹ from the IMMA(mb) and ν̇_free from the ABA(mb): no factorisation of M.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..contacts import ContactError, ResolvedContact, resolve
from ..model import Model, State
from .forward_dynamics import forward_dynamics
from .inverse_dynamics import newton_euler_forward_into
from .inverse_mass_matrix import inverse_mass_matrix
from .kinematics import base_twist, body_transforms

DEGENERACY_TOLERANCE = 1e-10
"""Λ⁻¹ = J M⁻¹ Jᵀ is refused as singular when a Cholesky pivot² falls below this
fraction of its largest diagonal entry (redundant or unreachable constraints)."""


@dataclass(frozen=True)
class ContactKinematics:
    """Contact frames at one configuration and velocity, m = Σ contact dimensions.

    J (m, N): the constraint Jacobian in each contact's reference axes;
    drift γ (m): the constrained acceleration at ν̇ = 0 (no gravity);
    J_local[c] (6, N): body Jacobian of contact c's frame, in that frame;
    rotation[c] (3, 3): A_R_c, the frame's orientation in the world;
    twist[c] (6,): the frame's body twist (in its own axes);
    body_X_base[c] (6, 6): velocity transform from the base (or world, fixed base) to contact c's body.
    """

    contacts: tuple[ResolvedContact, ...]
    J: np.ndarray
    drift: np.ndarray
    J_local: tuple
    rotation: tuple
    twist: tuple
    body_X_base: tuple


def body_jacobian(model: Model, X_up: np.ndarray, body: int):
    """(J_b (6, N), b_X_0 (6, 6)): the body Jacobian of ``body`` in its own frame
    (columns [base twist (floating only); joints]) and the transform from the base."""
    N, off = model.n_velocities, (6 if model.floating_base else 0)
    S = model.motion_subspaces
    J = np.zeros((6, N))
    X = np.eye(6)
    i = body
    while i > 0:
        J[:, off + i - 1] = X @ S[i]
        X = X @ X_up[i]
        i = model.parent[i]
    if model.floating_base:
        J[:, :6] = X
    return J, X


def reference_rotation(rc: ResolvedContact, R: np.ndarray) -> np.ndarray:
    """The (d, d) rotation from a contact's local axes to its reference axes:
    blockdiag(R, R) or R for a world-aligned contact, the identity for a local one."""
    d = rc.contact.dimension
    if rc.contact.reference == "local":
        return np.eye(d)
    return np.kron(np.eye(d // 3), R)


def contact_kinematics(model: Model, state: State, contacts, X_up: np.ndarray, v: np.ndarray,
                       a_bias: np.ndarray) -> ContactKinematics:
    """J and γ of ``contacts`` given the body transforms X_up, body twists v (n+1, 6)
    and the body accelerations a_bias (n+1, 6) at ν̇ = 0 without gravity."""
    resolved = contacts if contacts and isinstance(contacts[0], ResolvedContact) else resolve(model, contacts)
    m = sum(rc.contact.dimension for rc in resolved)
    J = np.empty((m, model.n_velocities))
    drift = np.empty(m)
    base_R = state.base_pose[:3, :3] if model.floating_base else np.eye(3)
    J_locals, rotations, twists, transforms = [], [], [], []
    for rc in resolved:
        J_b, b_X_0 = body_jacobian(model, X_up, rc.body)
        X_cb = rc.X_contact_body
        J_c = X_cb @ J_b
        R_c = base_R @ b_X_0[:3, :3].T @ X_cb[3:, 3:].T  # A_R_0 · 0_R_b · b_R_c
        v_c, a_c = X_cb @ v[rc.body], X_cb @ a_bias[rc.body]
        T = reference_rotation(rc, R_c)
        if rc.contact.kind == "6d":
            J[rc.rows], drift[rc.rows] = T @ J_c, T @ a_c
        else:  # the classical acceleration of the point: a + ω × v
            J[rc.rows], drift[rc.rows] = T @ J_c[:3], T @ (a_c[:3] + np.cross(v_c[3:], v_c[:3]))
        J_locals.append(J_c)
        rotations.append(R_c)
        twists.append(v_c)
        transforms.append(b_X_0)
    return ContactKinematics(resolved, J, drift, tuple(J_locals), tuple(rotations), tuple(twists), tuple(transforms))


def operational_space_inertia_factor(kinematics: ContactKinematics, M_inv: np.ndarray) -> np.ndarray:
    """Cholesky factor L of Λ⁻¹ = J M⁻¹ Jᵀ (m, m); ContactError, naming the
    contacts, when the constraints are redundant or cannot be satisfied."""
    J = kinematics.J
    inverse_inertia = J @ M_inv @ J.T
    scale = max(float(np.abs(np.diag(inverse_inertia)).max(initial=0.0)), 1e-300)
    try:
        L = np.linalg.cholesky(inverse_inertia)
        degenerate = float(np.min(np.diag(L)) ** 2) < DEGENERACY_TOLERANCE * scale
    except np.linalg.LinAlgError:
        degenerate = True
    if degenerate:
        raise ContactError(_degeneracy_reason(kinematics, inverse_inertia, scale))
    return L


def _degeneracy_reason(kinematics: ContactKinematics, inverse_inertia: np.ndarray, scale: float) -> str:
    names = [rc.contact.frame for rc in kinematics.contacts]
    held = [rc.contact.frame for rc in kinematics.contacts
            if np.abs(np.diag(inverse_inertia)[rc.rows]).max() <= DEGENERACY_TOLERANCE * scale]
    if held:
        return (f"contacts {held} are on links that cannot move (their rows of J M⁻¹ Jᵀ are zero): "
                "remove them from the contact set")
    m = kinematics.J.shape[0]
    rank = int(np.linalg.matrix_rank(inverse_inertia, tol=np.sqrt(DEGENERACY_TOLERANCE) * scale))
    return (f"the contact set {names} constrains {m} directions of which only {rank} are independent "
            f"(J M⁻¹ Jᵀ is singular): use point contacts or fewer 6d contacts")


def solve_contact_forces(L: np.ndarray, J: np.ndarray, free_accelerations: np.ndarray, drift: np.ndarray):
    """λ = −Λ (J ν̇_free + γ) with Λ⁻¹ = L Lᵀ."""
    return -_cholesky_solve(L, J @ free_accelerations + drift)


def _cholesky_solve(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.linalg import solve_triangular

    return solve_triangular(L, solve_triangular(L, b, lower=True), lower=True, trans="T")


def bias_motion(model: Model, state: State, X_up: np.ndarray):
    """(v, a) (n+1, 6): body twists and body accelerations at ν̇ = 0 without gravity."""
    n_bodies = model.n_bodies
    v, a, f = np.empty((n_bodies, 6)), np.empty((n_bodies, 6)), np.empty((n_bodies, 6))
    newton_euler_forward_into(model.parent, model.motion_subspaces, model.inertias, X_up, base_twist(model, state),
                              np.zeros(6), state.joint_velocities, np.zeros(model.n_joints), v, a, f)
    return v, a


def constrained_forward_dynamics(model: Model, state: State, joint_torques, contacts):
    """Forward dynamics with rigid contacts: (ν̇ (N,), λ (m,)).

    ν̇ = [v̇; ṙ] (floating base) or ṙ; λ stacks each contact's force (point) or
    wrench [force; moment] (6d) on the robot, in the contact's reference axes.
    """
    state.check(model)
    torques = np.zeros(model.n_joints) if joint_torques is None else np.asarray(joint_torques, dtype=float)
    base_acc, joint_acc = forward_dynamics(model, state, torques)
    free = joint_acc if base_acc is None else np.concatenate([base_acc, joint_acc])
    X_up = body_transforms(model, state.joint_positions)
    v, a_bias = bias_motion(model, state, X_up)
    kinematics = contact_kinematics(model, state, resolve(model, contacts), X_up, v, a_bias)
    M_inv = inverse_mass_matrix(model, state.joint_positions)
    L = operational_space_inertia_factor(kinematics, M_inv)
    forces = solve_contact_forces(L, kinematics.J, free, kinematics.drift)
    return free + M_inv @ (kinematics.J.T @ forces), forces

