"""The geometric linearization with rigid contacts (docs/contacts.md).

With contacts the dynamics rows of A and B are the derivatives of the
constrained forward dynamics (ν̇, λ) of algorithms/constrained_dynamics.py.
Differentiating its two equations at fixed (ν̇, λ),

    R(z) = ID̄(z; ν̇) − Jᵀλ = S τ        (the EIDAmb with the contact wrenches)
    a(z) = J ν̇ + γ = 0                  (the constrained contact accelerations)

gives the KKT system [M Jᵀ; J 0][∂ν̇; −∂λ] = [−∂R; −∂a], solved with the
IMMAmb's M⁻¹ and the Cholesky factor of Λ⁻¹ = J M⁻¹ Jᵀ:

    Y = M⁻¹ ∂R,   ∂λ = Λ (J Y − ∂a),   ∂ν̇ = −Y + M⁻¹ Jᵀ ∂λ,
    ∂λ/∂τ = −Λ J M⁻¹ S,   ∂ν̇/∂τ = M⁻¹ S + M⁻¹ Jᵀ ∂λ/∂τ.

∂R comes from the EIDAmb derivative sweep (Tables 4.2–4.5) run with each
contact wrench held fixed in its body's frame, plus, for world-aligned
contacts, the turn of that wrench with the frame; ∂a from the same sweep's
body-velocity and body-acceleration columns.  Same state order and
left-trivialised z as :func:`robot_linearization.linearize`.
"""

from __future__ import annotations

import numpy as np

from .algorithms.constrained_dynamics import (bias_motion, contact_kinematics, operational_space_inertia_factor,
                                              solve_contact_forces)
from .algorithms.derivatives import derivatives_into
from .algorithms.forward_dynamics import forward_dynamics_into
from .algorithms.inverse_dynamics import newton_euler_forward_into
from .algorithms.inverse_mass_matrix import inverse_mass_matrix_into
from .algorithms.kinematics import base_gravity_into, body_transforms_into
from .contacts import contact_labels, resolve
from .model import Model, State, stack_states
from .spatial import cross_motion, skew


def linearize_with_contacts(model: Model, state: State, joint_torques, contacts, workspace):
    """(A, B, M_inv, ν̇, λ, ∂λ/∂z, ∂λ/∂τ) at (state, τ) with ``contacts`` rigidly held.

    Shapes: A (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,), λ (m,), ∂λ/∂z (m, 2N),
    ∂λ/∂τ (m, n).  ``workspace``: the model's per-thread scratch arrays.
    """
    ws = workspace
    parent, S, tree_X, I, ancestors, depth, subtree_end, floating_base, gravity = ws.model_arrays
    torques = None if joint_torques is None else np.asarray(joint_torques, dtype=float)[None]
    poses, s, twists, r, torques = stack_states(model, [state], torques)
    pose, s, twist, r, tau = poses[0], s[0], twists[0], r[0], torques[0]
    n, N = model.n_joints, model.n_velocities
    off = 6 if floating_base else 0

    # unconstrained pieces: ν̇_free (ABAmb), M⁻¹ (IMMAmb, from the same articulated inertias)
    body_transforms_into(S, tree_X, s, ws.X_up)
    g0 = np.zeros(6)
    base_gravity_into(pose, gravity, g0)
    free = np.empty(N)
    forward_dynamics_into(parent, S, I, ws.X_up, floating_base, twist, g0, r, tau,
                          ws.I_A, ws.U, ws.D, ws.v, ws.c, ws.p, ws.a, free)
    M_inv = np.empty((N, N))
    inverse_mass_matrix_into(parent, S, ws.X_up, subtree_end, floating_base, ws.I_A, ws.U, ws.D, ws.F, ws.P, M_inv)

    # contact kinematics and forces
    v_bias, a_bias = bias_motion(model, state, ws.X_up)
    kin = contact_kinematics(model, state, resolve(model, contacts), ws.X_up, v_bias, a_bias)
    L = operational_space_inertia_factor(kin, M_inv)
    forces = solve_contact_forces(L, kin.J, free, kin.drift)
    J = kin.J
    nu_dot = free + M_inv @ (J.T @ forces)

    # EIDAmb forward pass at the constrained ν̇, each contact wrench held in its body's frame
    a0 = -g0 + (nu_dot[:6] if floating_base else 0.0)
    newton_euler_forward_into(parent, S, I, ws.X_up, twist, a0, r, nu_dot[off:], ws.v, ws.a, ws.f)
    local_forces = []
    for rc, R_c in zip(kin.contacts, kin.rotation):
        wrench = np.zeros(6)
        d = rc.contact.dimension
        T = np.kron(np.eye(d // 3), R_c) if rc.contact.reference == "world_aligned" else np.eye(d)
        wrench[:d] = T.T @ forces[rc.rows]  # λ in the contact frame's axes
        local_forces.append(wrench)
        ws.f[rc.body] -= rc.X_contact_body.T @ wrench  # b_X^c λ: the contact wrench on body b
    # the sweep accumulates f and fills the columns z_s, z_v, z_r (z_H is below)
    derivatives_into(parent, S, I, ws.X_up, ancestors, depth, subtree_end, floating_base, g0, r,
                     ws.v, ws.a, ws.f, ws.dv, ws.da, ws.df, ws.derivatives, False)
    dR = ws.derivatives.copy()
    if floating_base:
        dR[:, :6] = 0.0
    dA = np.zeros((J.shape[0], 2 * N))  # ∂a: derivative of the constrained contact accelerations
    col_s, col_v, col_r = off, 6 + n, N + off
    for k, rc in enumerate(kin.contacts):
        b, d = rc.body, rc.contact.dimension
        R_c, J_c, w = kin.rotation[k], kin.J_local[k], local_forces[k]
        path = ancestors[b, :depth[b]]
        valid = np.concatenate([col_s + path, col_r + path] + ([np.arange(col_v, col_v + 6)] if floating_base else []))
        dv = np.zeros((6, 2 * N))
        da = np.zeros((6, 2 * N))
        dv[:, valid] = ws.dv[b, valid].T
        da[:, valid] = ws.da[b, valid].T
        # the sweep's accelerations carry the fictitious −gravity, which turns with the body:
        # ∂(b_X_0 g_0)/∂s_j = (b_X_0 g_0) × (column j of the body Jacobian)
        g_b = kin.body_X_base[k] @ g0
        da[:, col_s + path] += cross_motion(g_b) @ dv[:, col_r + path]
        X_cb = rc.X_contact_body
        dv_c, da_c = X_cb @ dv, X_cb @ da
        v_c = X_cb @ ws.v[b]
        T = np.kron(np.eye(d // 3), R_c) if rc.contact.reference == "world_aligned" else np.eye(d)
        if d == 6:
            dA[rc.rows] = T @ da_c
        else:  # ∂(a + ω × v) = ∂a − v^ ∂ω + ω^ ∂v
            dA[rc.rows] = T @ (da_c[:3] - skew(v_c[:3]) @ dv_c[3:] + skew(v_c[3:]) @ dv_c[:3])
        # (the turn of T multiplies the constrained acceleration, which is zero here)
        if rc.contact.reference == "world_aligned":
            # λ fixed in world axes turns in the frame's axes: ∂λ_c = λ_c^ δθ_c with δθ_c = J_ω z_q
            turn = np.vstack([skew(w[:3]), skew(w[3:])])[:d] @ J_c[3:]  # (d, N) over z_q = [z_H; z_s]
            dR[:, :N] -= J_c[:d].T @ turn
    Y = M_inv @ dR
    if floating_base:  # H enters ID̄ only through gravity: M⁻¹ D₁ID̄ = [∂a_0/∂z_H; 0] (see linearize_into)
        Y[:3, 3:6] -= skew(g0[:3])  # ∂a_0/∂z_H = [[0, −(R^T g)^], [0, 0]]
    JY = J @ Y
    d_forces = _lambda_solve(L, JY - dA)
    d_forces_dtau = -_lambda_solve(L, J @ M_inv[:, off:])
    A = np.zeros((2 * N, 2 * N))
    A[:N, N:] = np.eye(N)
    if floating_base:
        A[:6, :6] = -cross_motion(twist)
    A[N:] = -Y + M_inv @ (J.T @ d_forces)
    B = np.zeros((2 * N, n))
    B[N:] = M_inv[:, off:] + M_inv @ (J.T @ d_forces_dtau)
    return A, B, M_inv, nu_dot, forces, d_forces, d_forces_dtau, contact_labels([rc.contact for rc in kin.contacts])


def _lambda_solve(L, b):
    """Λ b with Λ⁻¹ = L Lᵀ."""
    from scipy.linalg import cho_solve

    return cho_solve((L, True), b)
