"""The compiled kernel of the impact map (impacts.py, docs/impacts.md): the post-impact velocity,
the impulses and the exact Jacobian of a rigid impact on a contact set, by the constrained
linearization's passes (contact_linearization.py) at a fictitious motion.  What impacts.py runs
and the generator (codegen/) traces."""

from __future__ import annotations

import numpy as np

from .algorithms.base_frame_derivatives import base_frame_motion_into, place_inertias_into
from .algorithms.constrained_dynamics import (cholesky_solve_into, contact_forces_into, contact_kinematics_into,
                                              multiply_add_into)
from .algorithms.forward_dynamics import articulated_inertias_into, singular_pivot
from .algorithms.inverse_mass_matrix import inverse_mass_matrix_into
from .algorithms.kinematics import base_frame_poses_into, body_transforms_into
from .compiled import kernel
from .contact_linearization import (contact_acceleration_derivatives_into, eliminate_into,
                                    held_wrench_derivatives_into)
from .model import invalid_state


@kernel
def impact_into(contacts, state, e, out):
    """The impact map (module docstring) of the pre-impact state = (pose (4, 4), s (n,),
    twist (6,), r (n,), τ (n,), unused) (model.state_arrays's) with restitution e,
    into out = (M_inv (N, N), A (2N, 2N), impulses Λ (m), d_impulses ∂Λ/∂z⁻ (m, 2N), nu_plus
    ν⁺ (N)).  Scratch: the contact set's (CONTACT_DATA) and its workspace contacts.workspace
    (workspace.DATA, with the model).  Returns 0; 1 when the contact set is degenerate (J,
    M_inv filled for the message); 2 + j when the mass matrix is singular because of joint j; −10 − p when the state
    is not valid (model.invalid_state's problem p; nothing computed)."""
    problem = invalid_state(*state)
    if problem != 0:
        return -10 - problem
    data = contacts.workspace
    model = data.model
    M_inv, A, impulses, d_impulses, nu_plus = out
    floating_base = model.floating_base
    s, base_rotation = state[1], state[0][:3, :3].copy()
    nu_minus = np.empty(M_inv.shape[0])
    if floating_base:
        nu_minus[:6] = state[2]
    nu_minus[nu_minus.shape[0] - s.shape[0]:] = state[3]
    J, JM_inv, L = contacts.J, contacts.JM_inv, contacts.L
    N = M_inv.shape[0]
    n = N - (6 if floating_base else 0)
    off = N - n
    m = J.shape[0]
    zero6, zero_n = np.zeros(6), np.zeros(n)
    # M⁻¹ (IMMAmb) and J from the configuration alone: zero motion, so no drift
    body_transforms_into(model.S, model.tree_X, s, data.X_up)
    articulated_inertias_into(model.parent, model.S, model.I, data.X_up, data.I_A, data.U, data.D)
    joint = singular_pivot(data.I_A, data.D)
    if joint >= 0:
        return 2 + joint
    base_frame_poses_into(model.parent, model.S, data.X_up, floating_base, data.R, data.t, data.axes)
    inverse_mass_matrix_into(model, data, M_inv)
    data.v[:] = 0.0
    data.a[:] = 0.0
    contact_kinematics_into(model, data, contacts, base_rotation)
    # Λ = −(1+e) Λ_J J ν⁻ and (1+e)ν⁻ + M⁻¹JᵀΛ: contact_forces_into with ν̇_free = (1+e)ν⁻, γ = 0
    jumped = np.empty(N)
    if not contact_forces_into(J, M_inv, (1.0 + e) * nu_minus, contacts.drift, JM_inv, L, impulses, jumped):
        return 1
    for i in range(N):
        nu_plus[i] = jumped[i] - e * nu_minus[i]
    # ∂a: the sweep's forward pass at ν = 0, g = 0 with accelerations w = ν⁺ + eν⁻
    w = nu_plus + e * nu_minus
    place_inertias_into(model, data)  # (once: the first forward pass leaves them, the backward pass sums them)
    base_frame_motion_into(model, data, zero6, w[:6] if floating_base else zero6, zero6, zero_n, w[off:])
    contact_acceleration_derivatives_into(model, data, contacts, zero6, False)  # (z_q's columns: ∂ν⁻'s below)
    # ∂R: forward with ν⁺ − ν⁻, backward with the impulses held as contact wrenches
    jump = nu_plus - nu_minus
    base_frame_motion_into(model, data, zero6, jump[:6] if floating_base else zero6, zero6, zero_n, jump[off:])
    held_wrench_derivatives_into(model, data, contacts, impulses, False)
    # the configuration's columns through the KKT elimination, the ν⁻ columns directly:
    # ∂Λ/∂ν⁻ = −(1+e) Λ_J J, ∂ν⁺/∂ν⁻ = I + M⁻¹Jᵀ ∂Λ/∂ν⁻ (into contiguous scratch, then placed)
    d_nu, d_impulses_dq = np.empty((N, N)), np.empty((m, N))
    eliminate_into(model, data, contacts, M_inv, zero6, d_nu, d_impulses_dq)
    d_impulses_dnu = J * -(1.0 + e)
    cholesky_solve_into(L, d_impulses_dnu)
    jumps = np.zeros((N, N))
    for i in range(N):
        jumps[i, i] = 1.0
    multiply_add_into(JM_inv.T, d_impulses_dnu, 1.0, jumps)  # M⁻¹Jᵀ = (J M⁻¹)ᵀ
    A[:] = 0.0
    for i in range(N):
        A[i, i] = 1.0
        for col in range(N):
            A[N + i, col] = d_nu[i, col]
            A[N + i, N + col] = jumps[i, col]
    for i in range(m):
        for col in range(N):
            d_impulses[i, col] = d_impulses_dq[i, col]
            d_impulses[i, N + col] = d_impulses_dnu[i, col]
    return 0
