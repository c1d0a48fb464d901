"""The compiled kernels of the free linearization ż = A z + B w (thesis Proposition 3.3), of one
state, of K states (a horizon), and of a tree whose mimic joints follow their sources: what
linearization.py runs and the generator (codegen/) traces.  Shapes, frames and the state
order as in linearization.py (docs/conventions.md)."""

from __future__ import annotations

import numpy as np

from .algorithms.base_frame_derivatives import base_frame_derivatives_into
from .algorithms.constrained_dynamics import (contact_forces_into, multiply_add_into, tree_multiply_add_into,
                                              unconstrained_dynamics_into)
from .algorithms.forward_dynamics import forward_dynamics_into, singular_pivot
from .algorithms.inverse_mass_matrix import inverse_mass_matrix_into
from .algorithms.kinematics import base_frame_poses_into, base_gravity_into, body_transforms_into
from .compiled import finite_sum, kernel
from .discretization import euler_step_into, euler_step_jacobians_into
from .model import first_invalid_state, invalid_state


@kernel(inline=True)
def _set_minus_skew(A, row, col, x):
    """A[row:row+3, col:col+3] = −x^."""
    A[row, col + 1], A[row, col + 2] = x[2], -x[1]
    A[row + 1, col], A[row + 1, col + 2] = -x[2], x[0]
    A[row + 2, col], A[row + 2, col + 1] = x[1], -x[0]


@kernel
def _assemble_into(model, M_inv, twist, g0, A, B):
    """A = [[−v×, 0, I, 0], [0, 0, 0, I], [−M⁻¹D₁ID̄, 0, 0, 0]] (3.42) and B = [0; M⁻¹S] (3.29) from
    M⁻¹ (N, N), the base twist v and g_0: the caller then adds −M⁻¹[0 | D₂ | D₃ | D₄]ID̄ into
    A[N:] (its z_H columns are zero, so the gravity block written here stays as it is)."""
    floating_base = model.floating_base
    N = M_inv.shape[0]
    n = B.shape[1]
    A[:] = 0.0
    for i in range(N):
        A[i, N + i] = 1.0  # ż_H = … + z_v, ż_s = z_r (3.20)
    if floating_base:  # −v× = −[[ω^, v^], [0, ω^]] (2.33): the left-trivialised base kinematics
        _set_minus_skew(A, 0, 0, twist[3:])
        _set_minus_skew(A, 0, 3, twist[:3])
        _set_minus_skew(A, 3, 3, twist[3:])
        # H enters only through gravity, as a base acceleration: D₁ID̄ = M[:, :6] ∂a_0/∂z_H, so
        # −M⁻¹D₁ID̄ = [−∂a_0/∂z_H; 0] exactly, with −∂a_0/∂z_H = [[0, (R^T g)^], [0, 0]].
        _set_minus_skew(A, N, 3, -g0[:3])
    B[:] = 0.0
    B[N:, :] = M_inv[:, N - n:]



@kernel
def _finite(A, M_inv):
    """Whether A's dynamics rows (after −M⁻¹D was added into them) and M⁻¹ (N, N) are finite."""
    N = M_inv.shape[0]
    return np.isfinite(finite_sum(A[N:]) + finite_sum(M_inv))

@kernel
def linearize_state_into(model, data, state, out):
    """One state = (base pose (4, 4), s (n,), base twist (6,), r (n,), τ (n,)) into out = (A (2N, 2N),
    B (2N, n), M_inv (N, N), ν̇ (N,)): A = [[−v×, 0, I, 0], [0, 0, 0, I], −M⁻¹[D₁ID̄ … D₄ID̄]]
    (3.42), B = [0; M⁻¹S] (3.29), M⁻¹ by the IMMAmb (Table 4.7), ν̇ by the ABAmb, where the
    derivatives are evaluated (Proposition 3.3), by the base-frame sweep
    (algorithms/base_frame_derivatives.py).  The values are not checked (model.invalid_state).
    Returns −1; a joint whose articulated-body pivot vanishes (M singular there); −2 if the
    result is not finite."""
    pose, s, twist, r, tau = state
    A, B, M_inv, accelerations = out
    floating_base = model.floating_base
    N = M_inv.shape[0]
    n = N - (6 if floating_base else 0)
    g0 = data.g0
    body_transforms_into(model.S, model.tree_X, s, data.X_up)
    base_gravity_into(pose, model.gravity, g0)
    forward_dynamics_into(model, data, twist, r, tau, accelerations)
    singular = singular_pivot(data.I_A, data.D)
    a0 = -g0
    if floating_base:
        a0 += accelerations[:6]
    base_frame_poses_into(model.parent, model.S, data.X_up, floating_base, data.R, data.t, data.axes)
    base_frame_derivatives_into(model, data, twist, a0, g0, r, accelerations[N - n:], False)
    inverse_mass_matrix_into(model, data, M_inv)
    _assemble_into(model, M_inv, twist, g0, A, B)
    tree_multiply_add_into(model, data, M_inv, data.derivatives, -1.0, A[N:])
    finite = _finite(A, M_inv)
    if singular < 0 and not (finite and np.isfinite(finite_sum(accelerations))):
        return -2  # overflowed (e.g. joint velocities of 1e200); B is M⁻¹'s columns
    return singular


@kernel
def linearize_into(data, state, out, dt):
    """The control cycle's entry, on the workspace ``data`` (and its model): one state
    (model.state_arrays) into out = (A, B, M_inv, ν̇,
    A_d, B_d) by :func:`linearize_state_into`; dt > 0: also A_d (2N, 2N), B_d (2N, n) of one
    Euler step (discretization.euler_step_into), else they are not touched.
    Returns linearize_state_into's status, or −10 − p when the state is not valid
    (model.invalid_state's problem p; nothing computed)."""
    problem = invalid_state(*state)
    if problem != 0:
        return -10 - problem
    model = data.model
    A, B, M_inv, accelerations, A_d, B_d = out
    status = linearize_state_into(model, data, state, (A, B, M_inv, accelerations))
    if dt > 0.0:
        euler_step_into(A, B, state[2], accelerations, model.floating_base, dt, A_d, B_d)
    return status


@kernel
def linearize_states_into(data, states, out, dt):
    """On the workspace ``data`` (and its model), K states = (base poses (K, 4, 4), joint
    positions (K, n), base twists (K, 6), joint velocities (K, n), torques (K, n)) into out =
    (A, B, M_inv, accelerations, status, A_d, B_d), each with a leading axis K, by
    :func:`linearize_state_into` (status[k]: its return);
    dt > 0: also A_d, B_d of one Euler step, else they are not touched.  Returns
    model.first_invalid_state of the inputs, (0, 0) when they are valid (nothing computed
    otherwise)."""
    model = data.model
    base_poses, joint_positions, base_twists, joint_velocities, torques = states
    A, B, M_inv, accelerations, status, A_d, B_d = out
    invalid = first_invalid_state(base_poses, joint_positions, base_twists, joint_velocities, torques)
    if invalid[1] != 0:
        return invalid
    for k in range(joint_positions.shape[0]):
        status[k] = linearize_state_into(model, data, (base_poses[k], joint_positions[k], base_twists[k],
                                                       joint_velocities[k], torques[k]),
                                         (A[k], B[k], M_inv[k], accelerations[k]))
    if dt > 0.0:
        euler_step_jacobians_into(A, B, base_twists, accelerations, model.floating_base, dt, A_d, B_d)
    return invalid


@kernel
def coupled_linearize_into(coupling, state, out):
    """The linearization of a tree whose mimic joints follow their sources (coupling.py), in
    the independent coordinates: out = (A (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N)) of the
    reduced model at state = (pose (4, 4), s (n,), twist (6,), r (n,), τ (n,))
    (model.state_arrays's, independent coordinates), with coupling = CoupledModel.coupling_data()
    (coupling.COUPLING_DATA, which holds the scratch and the tree's workspace).  The tree's state is s_tree = G s + o,
    r_tree = G r, and its torques E τ (zero on the mimic joints).

    A mimic joint is a reduced-coordinate map ν_tree = Ĝ ν with Ĝ fixed (Ĝ[i, index[i]] =
    factor[i]), not a contact: its constraint J_c ν̇ = 0 (J_c = e_m − a e_j, c rows) has no
    drift and no derivative, and the torque J_cᵀλ that keeps it is a constant joint torque.
    So the tree's ABAmb and IMMAmb give ν̇ = ν̇_free + M⁻¹J_cᵀλ, the free sweep at that ν̇ gives
    ∂ID̄ (as linearize_into), and the reduced dynamics rows are −M_red⁻¹ Ĝᵀ ∂ID̄ Ĝ_z with
    M_red⁻¹ = (ĜᵀMĜ)⁻¹ = [M⁻¹ − M⁻¹J_cᵀ(J_cM⁻¹J_cᵀ)⁻¹J_cM⁻¹] on the independent ``rows``.
    Returns −1, a joint j ≥ 0 whose pivot vanishes, −2 when the result is not finite, or −10 − p
    when the state is not valid (model.invalid_state's problem p; nothing computed)."""
    problem = invalid_state(*state)
    if problem != 0:
        return -10 - problem
    data = coupling.workspace
    model = data.model
    coupling_rows, coupling_multipliers, index, factor, rows, offset = (
        coupling.coupling_rows, coupling.coupling_multipliers, coupling.index, coupling.factor, coupling.rows,
        coupling.offset)
    M_tree, J_c, JM_inv, L, W, reduced = coupling.M_tree, coupling.J_c, coupling.JM_inv, coupling.L, coupling.W, \
        coupling.reduced
    pose, twist = state[0], state[2]
    A, B, M_inv, accelerations = out
    floating_base = model.floating_base
    N_tree = M_tree.shape[0]
    N = M_inv.shape[0]
    n_tree = N_tree - (6 if floating_base else 0)
    off = N_tree - n_tree
    s, r, tau = coupling.tree_state[0], coupling.tree_state[1], coupling.tree_state[2]
    tau[:] = 0.0
    for j in range(n_tree):  # Ĝ: each tree joint is factor × one independent joint (or none: a multiplier 0)
        source, a = index[off + j] - off, factor[off + j]
        s[j] = offset[j] + (a * state[1][source] if a != 0.0 else 0.0)
        r[j] = a * state[3][source] if a != 0.0 else 0.0
    for k in range(off, N):
        tau[rows[k] - off] = state[4][k - off]
    tree_accelerations = coupling.tree_accelerations
    joint = unconstrained_dynamics_into(model, data, pose, s, twist, r, tau, M_tree)
    if joint >= 0:
        return joint
    g0 = data.g0
    m = J_c.shape[0]
    J_c[:] = 0.0
    for i in range(m):
        J_c[i, off + coupling_rows[i, 0]] = 1.0
        J_c[i, off + coupling_rows[i, 1]] -= coupling_multipliers[i]
    if not contact_forces_into(J_c, M_tree, data.free, coupling.drift, JM_inv, L, coupling.forces, tree_accelerations):
        return -2
    a0 = -g0
    if floating_base:
        a0 += tree_accelerations[:6]
    base_frame_derivatives_into(model, data, twist, a0, g0, r, tree_accelerations[off:], False)
    derivatives = data.derivatives
    # M_red⁻¹: W = L⁻¹ J_c M⁻¹, so M⁻¹J_cᵀ Λ J_c M⁻¹ = WᵀW
    for i in range(m):
        for col in range(N_tree):
            acc = JM_inv[i, col]
            for k in range(i):
                acc -= L[i, k] * JM_inv[k, col]
            JM_inv[i, col] = acc / L[i, i]
    for i in range(N):  # W's independent columns, contiguous for the product below
        for k in range(m):
            W[k, i] = JM_inv[k, rows[i]]
        for j in range(N):
            M_inv[i, j] = M_tree[rows[i], rows[j]]
    multiply_add_into(W.T, W, -1.0, M_inv)
    # Ĝᵀ ∂ID̄ Ĝ_z (N, 2N), into the tree's derivative rows' first N rows
    reduced[:] = 0.0
    for i in range(N_tree):
        target, source, a = reduced[index[i]], derivatives[i], factor[i]
        for j in range(N_tree):
            if source[j] != 0.0 or source[N_tree + j] != 0.0:  # (D has the tree's zeros)
                scale = a * factor[j]
                target[index[j]] += scale * source[j]
                target[N + index[j]] += scale * source[N_tree + j]
    for i in range(N):
        accelerations[i] = tree_accelerations[rows[i]]
    _assemble_into(model, M_inv, twist, g0, A, B)
    multiply_add_into(M_inv, reduced, -1.0, A[N:])  # (dense: Ĝ merges rows, so no tree zeros)
    finite = _finite(A, M_inv)
    return -1 if finite and np.isfinite(finite_sum(accelerations)) else -2
