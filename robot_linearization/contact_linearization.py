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

from .algorithms.constrained_dynamics import (cholesky_solve_into, contact_arrays, contact_forces_into,
                                              contact_kinematics_into, degeneracy_reason, matmul_into)
from .algorithms.derivatives import derivatives_into
from .algorithms.forward_dynamics import forward_dynamics_into, singular_pivot
from .algorithms.inverse_dynamics import newton_euler_forward_into
from .algorithms.inverse_mass_matrix import inverse_mass_matrix_into
from .algorithms.kinematics import base_frame_poses_into, base_gravity_into, body_transforms_into
from .compiled import announce_compilation, kernel
from .contacts import ContactError, as_contacts
from .coupling import CoupledModel
from .model import State, stack_states
from .spatial import cross_motion_into, skew_entry, transform_force_add


@kernel
def residual_derivatives_into(parent, S, I, X_up, ancestors, depth, subtree_end, floating_base, gravity_acceleration,
                              twist, base_acceleration, r, joint_accelerations, v, a, f, dv, da, df, derivatives,
                              bodies, X_cb, dims, world_aligned, starts, rotation, J_local, body_X_base,
                              forces, wrenches, d_accel):
    """∂R (N, 2N) into ``derivatives`` and ∂a (m, 2N) into ``d_accel`` (module docstring) at the
    motion (twist, r) with accelerations (base_acceleration a_0 including the fictitious −gravity,
    joint_accelerations) and the contact forces λ held (rotation, J_local, body_X_base from
    contact_kinematics_into; wrenches (k, 6) receives each λ_c in its frame's axes).

    R = ID̄ − Jᵀλ by the EIDAmb derivative sweep (Tables 4.2–4.5, algorithms/derivatives.py)
    with each contact wrench b_X^c λ_c held in its body's frame, plus the turn of world-aligned
    λ; a = the contact accelerations from the same sweep's columns of each contact body.  The
    z_H columns of ID̄ (gravity) are left to the caller; ∂a drops (∂R_c) a_c, zero at a solution."""
    N = derivatives.shape[0]
    n = N - (6 if floating_base else 0)
    col_s, col_v, col_r = N - n, 6 + n, 2 * N - n
    tmp = np.empty(6)
    newton_euler_forward_into(parent, S, I, X_up, twist, base_acceleration, r, joint_accelerations, v, a, f)
    for k in range(bodies.shape[0]):
        wrenches[k] = 0.0
        for i in range(dims[k]):  # λ_c = blockdiag(Rᵀ) λ in the frame's axes (world-aligned), else λ
            block, row = i // 3, i % 3
            if world_aligned[k]:
                acc = 0.0
                for q in range(3):
                    acc += rotation[k, q, row] * forces[starts[k] + 3 * block + q]
                wrenches[k, i] = acc
            else:
                wrenches[k, i] = forces[starts[k] + i]
        tmp[:] = -wrenches[k]
        transform_force_add(X_cb[k], tmp, f[bodies[k]])
    derivatives_into(parent, S, I, X_up, ancestors, depth, subtree_end, floating_base, gravity_acceleration, r,
                     v, a, f, dv, da, df, derivatives, False)
    # ∂a: the constrained accelerations' derivatives, from the sweep's columns of each contact body
    d_accel[:] = 0.0
    dv_c = np.zeros((6, 2 * N))
    da_c = np.zeros((6, 2 * N))
    dv_b = np.zeros(6)
    da_b = np.zeros(6)
    g_b = np.empty(6)
    v_c = np.empty(6)
    columns = np.empty(2 * depth.max() + 6, dtype=np.int64)
    for k in range(bodies.shape[0]):
        b = bodies[k]
        count = 0
        for d in range(depth[b]):
            columns[count], columns[count + 1] = col_s + ancestors[b, d], col_r + ancestors[b, d]
            count += 2
        if floating_base:
            for q in range(6):
                columns[count] = col_v + q
                count += 1
        for q in range(6):
            acc = 0.0
            for t in range(6):
                acc += body_X_base[k, q, t] * gravity_acceleration[t]
            g_b[q] = acc  # gravity in the body's axes, [Rᵀg; 0]
        dv_c[:] = 0.0
        da_c[:] = 0.0
        for ci in range(count):
            col = columns[ci]
            dv_b[:] = dv[b, col]
            da_b[:] = da[b, col]
            if col_s <= col < col_s + n:
                # the sweep's accelerations carry the fictitious −gravity, which turns with the body:
                # ∂(b_X_0 g_0)/∂s_j = (b_X_0 g_0) × (body Jacobian column j) = g_b × ∂v_b/∂r_j
                cross_motion_into(g_b, dv[b, col - col_s + col_r], tmp)
                for q in range(6):
                    da_b[q] += tmp[q]
            for q in range(6):
                acc_v = 0.0
                acc_a = 0.0
                for t in range(6):
                    acc_v += X_cb[k, q, t] * dv_b[t]
                    acc_a += X_cb[k, q, t] * da_b[t]
                dv_c[q, col], da_c[q, col] = acc_v, acc_a
        for q in range(6):
            acc = 0.0
            for t in range(6):
                acc += X_cb[k, q, t] * v[b, t]
            v_c[q] = acc
        if dims[k] == 3:  # ∂(a + ω × v) = ∂a − v^ ∂ω + ω^ ∂v
            for ci in range(count):
                col = columns[ci]
                w0, w1, w2 = dv_c[3, col], dv_c[4, col], dv_c[5, col]
                u0, u1, u2 = dv_c[0, col], dv_c[1, col], dv_c[2, col]
                da_c[0, col] += -(v_c[1] * w2 - v_c[2] * w1) + (v_c[4] * u2 - v_c[5] * u1)
                da_c[1, col] += -(v_c[2] * w0 - v_c[0] * w2) + (v_c[5] * u0 - v_c[3] * u2)
                da_c[2, col] += -(v_c[0] * w1 - v_c[1] * w0) + (v_c[3] * u1 - v_c[4] * u0)
        for i in range(dims[k]):  # rotated like the rows of J (R ∂a: the turn of R multiplies a = 0)
            block, row = i // 3, i % 3
            for ci in range(count):
                col = columns[ci]
                if world_aligned[k]:
                    acc = 0.0
                    for q in range(3):
                        acc += rotation[k, row, q] * da_c[3 * block + q, col]
                    d_accel[starts[k] + i, col] = acc
                else:
                    d_accel[starts[k] + i, col] = da_c[i, col]
        if world_aligned[k]:
            # λ fixed in world axes turns in the frame's axes: ∂λ_c = [f_c^; n_c^] J_ω z_q, so ∂R
            # gains −J_cᵀ [f_c^; n_c^] J_ω in the position columns z_q = [z_H; z_s] (the first N)
            d = dims[k]
            turn = np.zeros((d, N))
            for i in range(d):
                block, row = i // 3, i % 3
                for q in range(3):
                    factor = skew_entry(wrenches[k, 3 * block:3 * block + 3], row, q)
                    if factor != 0.0:
                        for col in range(N):
                            turn[i, col] += factor * J_local[k, 3 + q, col]
            for row in range(N):
                for i in range(d):
                    factor = J_local[k, i, row]
                    if factor != 0.0:
                        for col in range(N):
                            derivatives[row, col] -= factor * turn[i, col]


@kernel
def eliminate_into(M_inv, J, JM_inv, L, derivatives, d_accel, floating_base, gravity_acceleration, Y, d_forces):
    """The KKT elimination [M Jᵀ; J 0][∂ν̇; −∂λ] = [−∂R; −∂a] with the IMMAmb's M⁻¹ and the
    Cholesky factor L of Λ⁻¹ = J M⁻¹ Jᵀ: Y = M⁻¹ ∂R (N, 2N), ∂λ = Λ (J Y − ∂a) into d_forces
    (m, 2N), and Y ← ∂ν̇ = −Y + M⁻¹Jᵀ ∂λ in place.  ∂R's z_H columns (gravity, left out by
    residual_derivatives_into) enter directly: H enters ID̄ only through gravity, so
    M⁻¹ D₁ID̄ = [∂a_0/∂z_H; 0] with ∂a_0/∂z_H = [[0, −(Rᵀg)^], [0, 0]] (gravity_acceleration g_0 = [Rᵀg; 0])."""
    m, N = J.shape
    matmul_into(M_inv, derivatives, Y)
    if floating_base:
        for row in range(3):
            for q in range(3):
                Y[row, 3 + q] -= skew_entry(gravity_acceleration[:3], row, q)
    matmul_into(J, Y, d_forces)
    for i in range(m):
        for col in range(d_forces.shape[1]):
            d_forces[i, col] -= d_accel[i, col]
    cholesky_solve_into(L, d_forces)
    for row in range(N):  # M⁻¹Jᵀ = (J M⁻¹)ᵀ
        for col in range(Y.shape[1]):
            Y[row, col] = -Y[row, col]
        for i in range(m):
            factor = JM_inv[i, row]
            if factor != 0.0:
                for col in range(Y.shape[1]):
                    Y[row, col] += factor * d_forces[i, col]


@kernel
def constrained_linearize_into(parent, S, tree_X, I, ancestors, depth, subtree_end, floating_base, gravity,
                               pose, s, twist, r, tau,
                               X_up, I_A, U, D, v, c, p, a, f, dv, da, df, F, P, R_bodies, t_bodies, axes, U_base,
                               derivatives,
                               bodies, X_cb, dims, world_aligned, starts, coupling_rows, coupling_multipliers,
                               J, drift, J_local, rotation, body_X_base, JM_inv, L, wrenches,
                               A, B, M_inv, accelerations, forces, d_forces, d_forces_dtau):
    """The constrained linearization (module docstring) of one state into A (2N, 2N),
    B (2N, n), M_inv, ν̇ (N), λ (m), ∂λ/∂z (m, 2N), ∂λ/∂τ (m, n).  Returns 0; 1, with J
    and M_inv filled for the error message, when the contact set is degenerate; 2 + j
    when the mass matrix is singular at this state because of joint j."""
    N = M_inv.shape[0]
    n = N - (6 if floating_base else 0)
    off = N - n
    m = J.shape[0]
    g0 = np.zeros(6)
    free = np.empty(N)
    # unconstrained pieces: ν̇_free (ABAmb), M⁻¹ (IMMAmb, from the same articulated inertias)
    body_transforms_into(S, tree_X, s, X_up)
    base_gravity_into(pose, gravity, g0)
    forward_dynamics_into(parent, S, I, X_up, floating_base, twist, g0, r, tau, I_A, U, D, v, c, p, a, free)
    joint = singular_pivot(I_A, D)
    if joint >= 0:
        return 2 + joint
    base_frame_poses_into(parent, S, X_up, floating_base, R_bodies, t_bodies, axes)
    inverse_mass_matrix_into(parent, subtree_end, floating_base, R_bodies, t_bodies, axes, I_A, U, D, U_base, F, P,
                             M_inv)
    # contact Jacobians and drift from the motion at ν̇ = 0 without gravity; λ and ν̇
    newton_euler_forward_into(parent, S, I, X_up, twist, np.zeros(6), r, np.zeros(n), v, a, f)
    contact_kinematics_into(parent, S, X_up, floating_base, pose[:3, :3].copy(), bodies, X_cb, dims, world_aligned,
                            starts, coupling_rows, coupling_multipliers, v, a, J, drift, J_local, rotation, body_X_base)
    if not contact_forces_into(J, M_inv, free, drift, JM_inv, L, forces, accelerations):
        return 1
    # ∂R, ∂a: the EIDAmb sweep at the constrained ν̇ with the contact wrenches held
    a0 = -g0
    if floating_base:
        a0 += accelerations[:6]
    d_accel = np.empty((m, 2 * N))
    residual_derivatives_into(parent, S, I, X_up, ancestors, depth, subtree_end, floating_base, g0, twist, a0, r,
                              accelerations[off:], v, a, f, dv, da, df, derivatives, bodies, X_cb, dims, world_aligned,
                              starts, rotation, J_local, body_X_base, forces, wrenches, d_accel)
    d_nu = np.empty((N, 2 * N))
    eliminate_into(M_inv, J, JM_inv, L, derivatives, d_accel, floating_base, g0, d_nu, d_forces)
    for i in range(m):
        for col in range(n):
            d_forces_dtau[i, col] = -JM_inv[i, off + col]
    cholesky_solve_into(L, d_forces_dtau)
    A[:] = 0.0
    B[:] = 0.0
    for i in range(N):
        A[i, N + i] = 1.0
    if floating_base:  # −v× = −[[ω^, v^], [0, ω^]]
        for row in range(3):
            for q in range(3):
                A[row, q] = -skew_entry(twist[3:], row, q)
                A[row, 3 + q] = -skew_entry(twist[:3], row, q)
                A[3 + row, 3 + q] = -skew_entry(twist[3:], row, q)
    for row in range(N):
        for col in range(2 * N):
            A[N + row, col] = d_nu[row, col]
        for col in range(n):
            B[N + row, col] = M_inv[row, off + col]
        for i in range(m):
            factor = JM_inv[i, row]
            if factor != 0.0:
                for col in range(n):
                    B[N + row, col] += factor * d_forces_dtau[i, col]
    return 0


def linearize_with_contacts(model, state: State, joint_torques, contacts, workspace):
    """(A, B, M_inv, ν̇, λ, ∂λ/∂z, ∂λ/∂τ) at (state, τ) with ``contacts`` rigidly held
    (and, for a CoupledModel, its mimic joints following their sources).

    Shapes: A (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,), λ (m,), ∂λ/∂z (m, 2N),
    ∂λ/∂τ (m, n), in the model's (independent) coordinates.  ``workspace``: the
    tree's per-thread scratch arrays.  ContactError for a redundant or degenerate
    contact set.
    """
    contacts = as_contacts(contacts)
    arrays = contact_arrays(model, contacts)
    torques = None if joint_torques is None else np.asarray(joint_torques, dtype=float)[None]
    poses, s, twists, r, torques = stack_states(model, [state], torques)
    coupled = isinstance(model, CoupledModel)
    tree = model.tree if coupled else model
    s, r, tau = s[0], r[0], torques[0]
    if coupled:
        s, r, tau = model.coupling @ s + model.offset, model.coupling @ r, model.tree_torques(tau)
    k, m, n, N = len(contacts), arrays.m, tree.n_bodies - 1, tree.n_velocities
    J, JM_inv = np.empty((m, N)), np.empty((m, N))
    out = (np.empty((2 * N, 2 * N)), np.empty((2 * N, n)), np.empty((N, N)), np.empty(N), np.empty(m),
           np.empty((m, 2 * N)), np.empty((m, n)))
    announce_compilation(constrained_linearize_into)
    status = constrained_linearize_into(*workspace.model_arrays, poses[0], s, twists[0], r, tau,
                                        *workspace.arrays(), *arrays.arrays(),
                                        J, np.empty(m), np.empty((k, 6, N)), np.empty((k, 3, 3)), np.empty((k, 6, 6)),
                                        JM_inv, np.empty((m, m)), np.empty((k, 6)), *out)
    if status == 1:
        raise ContactError(degeneracy_reason(contacts, J, out[2]))
    if status >= 2:
        from .linearization import singular_state_message

        raise ValueError(singular_state_message(tree, status - 2))
    if not all(np.isfinite(x).all() for x in out):
        raise ValueError("the linearization overflows at this state: inf/NaN in the result")
    return _reduced(model, arrays, J, out) if coupled else out


def _reduced(model: CoupledModel, arrays, J: np.ndarray, out):
    """The tree's constrained linearization in the independent coordinates (coupling.py):
    rows of the independent joints, columns through Ĝ (state) and E (torques); M⁻¹
    projected onto the couplings."""
    A, B, M_inv, nu_dot, forces, d_forces, d_forces_dtau = out
    G, rows = model.velocity_map, model.velocity_rows
    N_tree = G.shape[0]
    state_rows = np.concatenate([rows, N_tree + rows])
    G_state = np.zeros((2 * N_tree, 2 * G.shape[1]))
    G_state[:N_tree, :G.shape[1]] = G
    G_state[N_tree:, G.shape[1]:] = G
    independent = model.independent
    J_c = J[arrays.m_contacts:]
    MJ = M_inv @ J_c.T
    projected = M_inv - MJ @ np.linalg.solve(J_c @ MJ, MJ.T)  # = Ĝ (Ĝᵀ M Ĝ)⁻¹ Ĝᵀ
    c = arrays.m_contacts
    return (A[state_rows] @ G_state, B[state_rows][:, independent], projected[np.ix_(rows, rows)], nu_dot[rows],
            forces[:c], d_forces[:c] @ G_state, d_forces_dtau[:c][:, independent])
