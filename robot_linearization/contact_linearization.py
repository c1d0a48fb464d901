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

∂R comes from the EIDAmb derivative sweep in the base frame (Tables 4.2–4.5,
algorithms/base_frame_derivatives.py, the free linearization's) run with each
contact wrench held fixed in its body's frame, plus, for world-aligned
contacts, the turn of that wrench with the frame; ∂a from the same sweep's
forward-pass columns, carried to each contact frame.  Same state order and
left-trivialised z as :func:`robot_linearization.linearize`.
"""

from __future__ import annotations

import numpy as np

from .algorithms.base_frame_derivatives import base_frame_backward_into, base_frame_motion_into, place_inertias_into
from .algorithms.constrained_dynamics import (cholesky_solve_into, contact_forces_into, contact_kinematics_into,
                                              degeneracy_reason, multiply_add_into, tree_multiply_add_into,
                                              unconstrained_dynamics_into)
from .algorithms.forward_dynamics import bias_accelerations_into
from .compiled import announce_compilation, finite_sum, kernel
from .contacts import ContactError
from .discretization import NO_STEP, euler_step_into
from .coupling import CoupledModel
from .model import Model, State, invalid_state, stack_states, state_arrays, state_problem
from .workspace import singular_state_message
from .spatial import cross_motion_into, mat_vec_into, skew_entry


@kernel
def hold_contact_wrenches(contacts, forces, f):
    """Take each contact force λ_c (``forces`` (m,)) off its body's wrench f[body] (n+1, 6,
    base frame), held in the body's frame: contacts.wrenches[k] (6) receives λ_c in the
    contact frame's axes (world-aligned λ turned by rotation[k]ᵀ), f[body] −= T_kᵀ wrenches[k]."""
    bodies, dims, world_aligned, starts = contacts.bodies, contacts.dims, contacts.world_aligned, contacts.starts
    rotation, T, wrenches = contacts.rotation, contacts.T, contacts.wrenches
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
        b = bodies[k]
        for q in range(6):
            acc = 0.0
            for i in range(6):
                acc += T[k, i, q] * wrenches[k, i]
            f[b, q] -= acc


@kernel
def contact_acceleration_derivatives_into(model, data, contacts, g0, velocity_columns):
    """∂a (m, 2N) into contacts.d_accel: the derivatives of the constrained contact
    accelerations a = J ν̇ + γ, from the base-frame sweep's forward pass
    (base_frame_motion_into: body twists data.v, the columns ∂v/∂s, ∂a/∂s, ∂a/∂r, the axes
    J), g_0 (6,) and the contact transforms T (constrained_dynamics.contact_kinematics_into).

    Body b's own acceleration moves by ⁰X_b⁻¹(∂a/∂s_c − v_b × ∂v/∂s_c + g_0 × J_c) with joint c
    above it (the sweep's accelerations carry the fictitious −g_0, which turns with the body:
    ∂(b_X_0 g_0)/∂s_c = b_X_0 (g_0 × J_c)) and by ⁰X_b⁻¹(∂a/∂r_c − v_b × J_c) with its rate;
    base_frame_motion_into's docstring.  A point contact adds ∂(ω × v); world-aligned rows are
    turned like J's rows (the turn of the rotation multiplies a = 0).  z_H moves no contact
    acceleration (gravity is fictitious): its columns stay zero, as do those of joints not
    above the contact, and with velocity_columns=False the velocity columns z_v, z_r (the impact
    map needs the positions' alone)."""
    ancestors, depth, floating_base = model.ancestors, model.depth, model.floating_base
    J, v, columns = data.axes, data.v, data.columns
    bodies, T, dims, world_aligned = contacts.bodies, contacts.T, contacts.dims, contacts.world_aligned
    starts, rotation, d_accel = contacts.starts, contacts.rotation, contacts.d_accel
    N = J.shape[0]
    off = 6 if floating_base else 0
    dv_dq, da_dq, da_dr = columns[0], columns[1], columns[2]
    d_accel[:] = 0.0
    n_columns = 2 * depth.max() + 6
    cols = np.empty(n_columns, dtype=np.int64)
    dv_c = np.empty((n_columns, 6))
    da_c = np.empty((n_columns, 6))
    dv_b, da_b, tmp, v_c = np.empty(6), np.empty(6), np.empty(6), np.empty(6)
    gravity = False
    for x in g0:
        gravity = gravity or x != 0.0
    for k in range(bodies.shape[0]):
        b = bodies[k]
        Tk = T[k]
        count = 0
        moving = False  # (the terms with v_b, or with g_0, zero, left out: the same values)
        for x in v[b]:
            moving = moving or x != 0.0
        for d in range(depth[b] + (1 if floating_base else 0)):
            base = floating_base and d == depth[b]
            for q in range(6 if base else 1):
                c = q if base else off + ancestors[b, d]
                if base:  # the base twist's columns z_v only
                    if not velocity_columns:
                        break
                    dv_b[:] = J[c]
                    cross_motion_into(v[b], J[c], tmp)
                    for row in range(6):
                        da_b[row] = da_dr[c, row] - tmp[row]
                    mat_vec_into(Tk, dv_b, dv_c[count])
                    mat_vec_into(Tk, da_b, da_c[count])
                    cols[count] = N + c
                    count += 1
                    continue
                # joint c: its position column, then its velocity column
                da_b[:] = da_dq[c]
                if moving:
                    cross_motion_into(v[b], dv_dq[c], tmp)
                    for row in range(6):
                        da_b[row] -= tmp[row]
                if gravity:
                    cross_motion_into(g0, J[c], tmp)
                    for row in range(6):
                        da_b[row] += tmp[row]
                mat_vec_into(Tk, dv_dq[c], dv_c[count])
                mat_vec_into(Tk, da_b, da_c[count])
                cols[count] = c
                count += 1
                if velocity_columns:
                    cross_motion_into(v[b], J[c], tmp)
                    for row in range(6):
                        da_b[row] = da_dr[c, row] - tmp[row]
                    mat_vec_into(Tk, J[c], dv_c[count])
                    mat_vec_into(Tk, da_b, da_c[count])
                    cols[count] = N + c
                    count += 1
        if dims[k] == 3 and moving:  # ∂(a + ω × v) = ∂a − v^ ∂ω + ω^ ∂v
            mat_vec_into(Tk, v[b], v_c)
            for ci in range(count):
                w0, w1, w2 = dv_c[ci, 3], dv_c[ci, 4], dv_c[ci, 5]
                u0, u1, u2 = dv_c[ci, 0], dv_c[ci, 1], dv_c[ci, 2]
                da_c[ci, 0] += -(v_c[1] * w2 - v_c[2] * w1) + (v_c[4] * u2 - v_c[5] * u1)
                da_c[ci, 1] += -(v_c[2] * w0 - v_c[0] * w2) + (v_c[5] * u0 - v_c[3] * u2)
                da_c[ci, 2] += -(v_c[0] * w1 - v_c[1] * w0) + (v_c[3] * u1 - v_c[4] * u0)
        for i in range(dims[k]):  # rotated like the rows of J (R ∂a: the turn of R multiplies a = 0)
            block, row = i // 3, i % 3
            for ci in range(count):
                if world_aligned[k]:
                    acc = 0.0
                    for q in range(3):
                        acc += rotation[k, row, q] * da_c[ci, 3 * block + q]
                    d_accel[starts[k] + i, cols[ci]] = acc
                else:
                    d_accel[starts[k] + i, cols[ci]] = da_c[ci, i]


@kernel
def world_aligned_turn_into(contacts, derivatives):
    """λ fixed in world axes turns in the frame's axes: ∂λ_c = [f_c^; n_c^] J_ω z_q, so ∂R
    (N, 2N) gains −J_cᵀ [f_c^; n_c^] J_ω in the position columns z_q = [z_H; z_s] (the first
    N); contacts.J_local (k, 6, N) each frame's body Jacobian in its own axes, contacts.wrenches
    (k, 6) λ_c there."""
    dims, world_aligned, J_local, wrenches = contacts.dims, contacts.world_aligned, contacts.J_local, contacts.wrenches
    N = derivatives.shape[0]
    for k in range(dims.shape[0]):
        if not world_aligned[k]:
            continue
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
def held_wrench_derivatives_into(model, data, contacts, forces, velocity_columns):
    """∂R (N, 2N) into data.derivatives, R = ID̄ − Jᵀλ (``forces`` λ (m,)), after the
    base-frame sweep's forward pass (base_frame_motion_into, which left f, Y, Y_rate and the
    columns) and contact_kinematics_into (T): each contact force λ taken off its body's wrench
    (held in the body's frame, it turns with the joints above it as the body's own inertial
    wrench does), the backward pass (algorithms/base_frame_derivatives.py), then the turn of
    world-aligned λ.  contacts.wrenches (k, 6) receives each λ_c in its frame's axes.  The z_H
    columns of ID̄ (gravity) are left to the caller (eliminate_into), and with velocity_columns=False
    the velocity columns (base_frame_backward_into)."""
    hold_contact_wrenches(contacts, forces, data.f)
    base_frame_backward_into(model, data, False, velocity_columns)
    world_aligned_turn_into(contacts, data.derivatives)


@kernel
def eliminate_into(model, data, contacts, M_inv, gravity_acceleration, d_nu, d_forces):
    """The KKT elimination [M Jᵀ; J 0][∂ν̇; −∂λ] = [−∂R; −∂a] with the IMMAmb's M⁻¹ (N, N)
    and the Cholesky factor contacts.L of Λ⁻¹ = J M⁻¹ Jᵀ, for the first w columns of ∂R
    (data.derivatives) and ∂a (contacts.d_accel), w = d_nu.shape[1]: Y = M⁻¹ ∂R, ∂λ = Λ (J Y − ∂a)
    into d_forces (m, w), and ∂ν̇ = −Y + M⁻¹Jᵀ ∂λ into d_nu (N, w).  ∂R's z_H columns (gravity,
    left out by held_wrench_derivatives_into) enter directly: H enters ID̄ only through gravity,
    so M⁻¹ D₁ID̄ = [∂a_0/∂z_H; 0] with ∂a_0/∂z_H = [[0, −(Rᵀg)^], [0, 0]] (gravity_acceleration
    g_0 = [Rᵀg; 0])."""
    J, JM_inv, L, d_accel, derivatives = contacts.J, contacts.JM_inv, contacts.L, contacts.d_accel, data.derivatives
    w = d_nu.shape[1]
    d_nu[:] = 0.0
    # d_nu = −Y, then −Y + M⁻¹Jᵀ ∂λ: the products' signs flip each term exactly (no pass negates Y)
    tree_multiply_add_into(model, data, M_inv, derivatives, -1.0, d_nu)
    if model.floating_base:
        for row in range(3):
            for q in range(3):
                d_nu[row, 3 + q] += skew_entry(gravity_acceleration[:3], row, q)
    for i in range(d_forces.shape[0]):
        for c in range(w):
            d_forces[i, c] = -d_accel[i, c]
    multiply_add_into(J, d_nu, -1.0, d_forces)
    cholesky_solve_into(L, d_forces)
    multiply_add_into(JM_inv.T, d_forces, 1.0, d_nu)  # M⁻¹Jᵀ = (J M⁻¹)ᵀ


@kernel
def constrained_linearize_into(contacts, state, out, dt):
    """The constrained linearization (module docstring), on the contact set's workspace
    contacts.workspace (and its model), of one state = (pose (4, 4), s (n,),
    twist (6,), r (n,), τ (n,)) (model.state_arrays's) into out = (A (2N, 2N),
    B (2N, n), M_inv (N, N), ν̇ (N), λ (m), ∂λ/∂z (m, 2N), ∂λ/∂τ (m, n), A_d, B_d); dt > 0:
    also A_d (2N, 2N), B_d (2N, n) of one Euler step (discretization.euler_step_into), else
    they are not touched.  Returns 0; 1, with J
    and M_inv filled for the error message, when the contact set is degenerate; 2 + j when the
    mass matrix is singular at this state because of joint j; −1 when the result is not finite
    (an overflow); −10 − p when the state is not (model.invalid_state's problem p; nothing
    computed)."""
    problem = invalid_state(*state)
    if problem != 0:
        return -10 - problem
    data = contacts.workspace
    model = data.model
    pose, s, twist, r, tau = state
    A, B, M_inv, accelerations, forces, d_forces, d_forces_dtau, A_d, B_d = out
    floating_base = model.floating_base
    N = M_inv.shape[0]
    n = N - (6 if floating_base else 0)
    off = N - n
    m = forces.shape[0]
    joint = unconstrained_dynamics_into(model, data, pose, s, twist, r, tau, M_inv)
    if joint >= 0:
        return 2 + joint
    g0 = data.g0
    # contact Jacobians and drift from the motion at ν̇ = 0 without gravity (the ABAmb's twists); λ and ν̇
    bias_accelerations_into(model, data)
    contact_kinematics_into(model, data, contacts, pose[:3, :3].copy())
    if not contact_forces_into(contacts.J, M_inv, data.free, contacts.drift, contacts.JM_inv, contacts.L, forces,
                               accelerations):
        return 1
    # ∂a, ∂R: the base-frame EIDAmb sweep at the constrained ν̇, then with the contact forces held
    a0 = -g0
    if floating_base:
        a0 += accelerations[:6]
    place_inertias_into(model, data)
    base_frame_motion_into(model, data, twist, a0, g0, r, accelerations[off:])
    contact_acceleration_derivatives_into(model, data, contacts, g0, True)
    held_wrench_derivatives_into(model, data, contacts, forces, True)
    A[:N] = 0.0
    for i in range(N):
        A[i, N + i] = 1.0
    if floating_base:  # −v× = −[[ω^, v^], [0, ω^]]
        for row in range(3):
            for q in range(3):
                A[row, q] = -skew_entry(twist[3:], row, q)
                A[row, 3 + q] = -skew_entry(twist[:3], row, q)
                A[3 + row, 3 + q] = -skew_entry(twist[3:], row, q)
    eliminate_into(model, data, contacts, M_inv, g0, A[N:], d_forces)  # the dynamics rows of A: ∂ν̇
    JM_inv = contacts.JM_inv
    for i in range(m):
        for col in range(n):
            d_forces_dtau[i, col] = -JM_inv[i, off + col]
    cholesky_solve_into(contacts.L, d_forces_dtau)
    B[:N] = 0.0
    B[N:] = M_inv[:, off:]
    multiply_add_into(JM_inv.T, d_forces_dtau, 1.0, B[N:])  # ∂ν̇/∂τ = M⁻¹[0; I] + M⁻¹Jᵀ ∂λ/∂τ
    total = (finite_sum(A) + finite_sum(B) + finite_sum(M_inv) + finite_sum(accelerations) + finite_sum(forces)
             + finite_sum(d_forces) + finite_sum(d_forces_dtau))
    if not np.isfinite(total):
        return -1
    if dt > 0.0:
        euler_step_into(A, B, twist, accelerations, floating_base, dt, A_d, B_d)
    return 0


def linearize_with_contacts(model, state: State, joint_torques, arrays, workspace, dt: float = 0.0, generated=None):
    """(A, B, M_inv, ν̇, λ, ∂λ/∂z, ∂λ/∂τ) at (state, τ) with the contact set ``arrays``
    (constrained_dynamics.contact_arrays) rigidly held (and, for a CoupledModel, its mimic
    joints following their sources), then A_d, B_d of one Euler step of dt seconds
    (discretization.euler_step_into) when dt > 0 and the model is not a CoupledModel, else
    two empty arrays.

    Shapes: A (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,), λ (m,), ∂λ/∂z (m, 2N),
    ∂λ/∂τ (m, n), A_d as A, B_d as B, in the model's (independent) coordinates.
    ``workspace``: the tree's per-thread workspace.  ``generated``: (scratch, call) of the kernel
    generated for the model and contact set (kernel_choice.runnable; not for a CoupledModel), run
    first; where it has no result the generic kernel runs and says why.  ContactError for a
    redundant or degenerate contact set.
    """
    torques = np.asarray(joint_torques, dtype=float)
    coupled = isinstance(model, CoupledModel)
    tree = model.tree if coupled else model
    dt = 0.0 if coupled else dt  # (a CoupledModel's step is taken in its reduced coordinates, by the caller)
    if coupled:  # (checked here, on the independent coordinates, then the tree's)
        pose, s, twist, r, torques = (x[0] for x in stack_states(model, [state], torques[None]))
        tree_state = (pose, model.coupling @ s + model.offset, twist, model.coupling @ r, model.tree_torques(torques))
    else:  # (the values checked by the kernel)
        tree_state = state_arrays(model, state, torques)
    m, n, N = arrays.m, tree.n_bodies - 1, tree.n_velocities
    data = arrays.data(workspace)
    out = (np.empty((2 * N, 2 * N)), np.empty((2 * N, n)), np.empty((N, N)), np.empty(N), np.empty(m),
           np.empty((m, 2 * N)), np.empty((m, n))) + (
        (np.empty((2 * N, 2 * N)), np.empty((2 * N, n))) if dt > 0.0 else NO_STEP)
    if generated is not None and generated[1].call(generated[0], tree_state, out, dt) == 0:
        return out
    run_constrained_linearize_into(tree, arrays, data, tree_state, out, dt)
    return _reduced(model, arrays, data[1].J, out[:7]) + NO_STEP if coupled else out


def run_constrained_linearize_into(tree: Model, arrays, data: tuple, tree_state: tuple, out: tuple, dt: float,
                                   call=constrained_linearize_into) -> None:
    """:func:`constrained_linearize_into` on the contact set ``arrays`` (``data``: ``arrays.data(workspace)``) at
    ``tree_state`` (model.state_arrays of the tree), into ``out`` = (A, B, M_inv, ν̇, λ, ∂λ/∂z, ∂λ/∂τ,
    A_d, B_d) of the shapes :func:`linearize_with_contacts` returns (with dt = 0.0, A_d and B_d are
    discretization.NO_STEP), called as ``call`` (the kernel, or a compiled.TypedCall of it).
    ContactError for a redundant or degenerate contact set, ValueError at a state without a
    linearization (then ``out`` holds no result)."""
    announce_compilation(constrained_linearize_into)
    status = call(data[0], tree_state, out, dt)
    if status <= -10:
        raise ValueError(state_problem(0, -10 - status, 1))
    if status == 1:
        raise ContactError(degeneracy_reason(arrays.contacts, data[1].J, out[2]))
    if status >= 2:
        raise ValueError(singular_state_message(tree, status - 2))
    if status == -1:
        raise ValueError("the linearization overflows at this state: inf/NaN in the result")


def _reduced(model: CoupledModel, arrays, J: np.ndarray, out):
    """The tree's constrained linearization in the independent coordinates (coupling.py):
    rows of the independent joints, columns through Ĝ (state) and E (torques); M⁻¹
    projected onto the couplings."""
    A, B, M_inv, nu_dot, forces, d_forces, d_forces_dtau = out
    rows, state_rows, G_state = model.velocity_rows, model.state_rows, model.state_map
    independent = model.independent
    J_c = J[arrays.m_contacts:]
    MJ = M_inv @ J_c.T
    projected = M_inv - MJ @ np.linalg.solve(J_c @ MJ, MJ.T)  # = Ĝ (Ĝᵀ M Ĝ)⁻¹ Ĝᵀ
    c = arrays.m_contacts
    return (A[state_rows] @ G_state, B[state_rows][:, independent], projected[np.ix_(rows, rows)], nu_dot[rows],
            forces[:c], d_forces[:c] @ G_state, d_forces_dtau[:c][:, independent])
