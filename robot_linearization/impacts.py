"""The impact map: a rigid impact on a set of contacts, and its exact Jacobian; docs/impacts.md.

A contact set that closes at once (a foot touching down) changes the velocity in an instant.
With the impulses Λ (m) the environment gives the robot at the contacts (the same rl.Contact
kinds and references as the constrained dynamics, docs/contacts.md) and a restitution
coefficient e ∈ [0, 1] (0: inelastic, the contacts stop; 1: they bounce back at their speed):

    M (ν⁺ − ν⁻) = Jᵀ Λ,        J ν⁺ = −e J ν⁻
    Λ = −(1+e) Λ_J J ν⁻,   ν⁺ = ν⁻ + M⁻¹ Jᵀ Λ,     Λ_J = (J M⁻¹ Jᵀ)⁻¹

with M⁻¹ from the IMMAmb (thesis Table 4.7, no factorisation of M) and J M⁻¹ Jᵀ by Cholesky,
exactly as the contact forces (algorithms/constrained_dynamics.contact_forces_into, which
solves this very system with ν̇_free = (1+e)ν⁻ and no drift).  H and s do not jump.

Its Jacobian with respect to the left-trivialised pre-impact perturbation z⁻ = [z_H, z_s, z_v,
z_r] (the state order of A), z⁺ = A_impact z⁻:

    A_impact = [[I, 0], [∂ν⁺/∂z_q, ∂ν⁺/∂ν⁻]],   ∂ν⁺/∂ν⁻ = I − (1+e) M⁻¹Jᵀ Λ_J J,   ∂Λ/∂ν⁻ = −(1+e) Λ_J J.

∂/∂z_q (z_q = [z_H; z_s]) differentiates R = M(q)(ν⁺ − ν⁻) − J(q)ᵀΛ = 0 and a = J(q)(ν⁺ + eν⁻) = 0:
these are the residuals of the constrained linearization (contact_linearization.py) at a
fictitious motion with ν = 0 and no gravity, accelerations ν⁺ − ν⁻ with the impulses held as
contact wrenches (R), and accelerations ν⁺ + eν⁻ (a: J w is linear in w, and at ν = 0 there is
no drift).  So the same EIDAmb sweep gives ∂R and ∂a (two passes, one per acceleration) and the
same KKT elimination gives ∂ν⁺ and ∂Λ; the world-aligned turn of J multiplies J(ν⁺ + eν⁻) = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .algorithms.constrained_dynamics import (cholesky_solve_into, contact_arrays, contact_forces_into,
                                              contact_kinematics_into, degeneracy_reason)
from .algorithms.inverse_mass_matrix import inverse_mass_matrix
from .algorithms.kinematics import body_transforms
from .arguments import check_model, real_array
from .contact_linearization import eliminate_into, residual_derivatives_into
from .contacts import ContactError, as_contacts, contact_labels
from .model import State, check_state


@dataclass(frozen=True)
class Impact:
    """The result of :func:`impact` (shapes with N = n_velocities, m = Σ contact dimensions).

    state: the post-impact state (H, s, ν⁺); pre_impact_state: the state it was computed from.
    A (2N, 2N): z⁺ = A z⁻, both left-trivialised, state order [z_H, z_s, z_v, z_r].
    impulses Λ (m,): the impulse [N·s] (6d: [impulse; angular impulse]) on the robot at each
    contact, in its reference axes (as the contact forces λ); impulses_state_jacobian ∂Λ/∂z⁻
    (m, 2N); impulse_labels (m,) (<frame>:fx … :mz, as λ's); contacts; restitution e.
    """

    state: State
    A: np.ndarray
    impulses: np.ndarray
    impulses_state_jacobian: np.ndarray
    impulse_labels: tuple
    contacts: tuple
    restitution: float
    pre_impact_state: State

    def __repr__(self) -> str:
        return (f"<Impact: {len(self.contacts)} contacts, e = {self.restitution:g}, A {self.A.shape}, "
                f"impulses ({len(self.impulses)},)>")


def touchdown(previous_contacts, contacts) -> bool:
    """Whether going from ``previous_contacts`` to ``contacts`` closes a contact (one of
    ``contacts`` is not in the previous set: an impact on ``contacts``).  Removing contacts
    (lift-off) is not an impact: the velocity is continuous."""
    previous = set(as_contacts(previous_contacts))
    return any(c not in previous for c in as_contacts(contacts))


def restitution_coefficient(value) -> float:
    """e ∈ [0, 1], checked (ValueError naming ``restitution``)."""
    e = float(real_array(value, "restitution", (), what="a restitution coefficient in [0, 1]"))
    if not 0.0 <= e <= 1.0:
        raise ValueError(f"restitution: expected a restitution coefficient in [0, 1], got {e:g}")
    return e


def impact(model, state: State, contacts, restitution: float = 0.0) -> Impact:
    """The rigid impact of ``state`` on ``contacts`` (module docstring): the post-impact
    state, its Jacobian A (2N, 2N) with respect to the pre-impact perturbation, the
    impulses Λ (m,) and ∂Λ/∂z (m, 2N).  restitution e ∈ [0, 1] (0: inelastic).

    contacts as for :func:`~robot_linearization.linearize` (Contacts, link names or the
    node's text).  ContactError for a redundant or degenerate set; a mimic-coupled
    model (CoupledModel) is refused.  No contacts: nothing happens (A = I).
    """
    check_model(model)
    if hasattr(model, "tree"):
        raise ValueError(f"impact: model '{model.name}' has coupled mimic joints (CoupledModel), which the impact "
                         "map does not support yet: load it with mimic_joints='independent'")
    check_state(model, state)
    contacts = as_contacts(contacts)
    e = restitution_coefficient(restitution)
    arrays = contact_arrays(model, contacts)
    n, N, n_bodies, floating = model.n_joints, model.n_velocities, model.n_bodies, model.floating_base
    off = N - n
    k, m = len(contacts), arrays.m
    nu_minus = state.joint_velocities if not floating else np.concatenate([state.base_twist, state.joint_velocities])
    X_up = body_transforms(model, state.joint_positions)
    M_inv = inverse_mass_matrix(model, state.joint_positions)
    if not np.isfinite(M_inv).all():
        raise ValueError("impact: the mass matrix is singular at this state")
    # J (and its pieces) from the configuration alone: zero motion, so no drift
    zeros = np.zeros((n_bodies, 6))
    J, J_local, rotation, body_X_base = np.empty((m, N)), np.empty((k, 6, N)), np.empty((k, 3, 3)), np.empty((k, 6, 6))
    base_rotation = np.ascontiguousarray(state.base_pose[:3, :3]) if floating else np.eye(3)
    contact_kinematics_into(model.parent, model.motion_subspaces, X_up, floating, base_rotation, *arrays.arrays(),
                            zeros, zeros, J, np.zeros(m), J_local, rotation, body_X_base)
    # Λ = −(1+e) Λ_J J ν⁻ and (1+e)ν⁻ + M⁻¹JᵀΛ: contact_forces_into with ν̇_free = (1+e)ν⁻, γ = 0
    JM_inv, L, impulses, jumped = np.empty((m, N)), np.empty((m, m)), np.empty(m), np.empty(N)
    if not contact_forces_into(J, M_inv, (1.0 + e) * nu_minus, np.zeros(m), JM_inv, L, impulses, jumped):
        raise ContactError(degeneracy_reason(contacts, J, M_inv))
    nu_plus = jumped - e * nu_minus
    # ∂R and ∂a at the fictitious motion ν = 0, g = 0 (module docstring): ∂a from accelerations
    # w = ν⁺ + eν⁻, then ∂R from ν⁺ − ν⁻, each with the impulses held as contact wrenches
    scratch = [np.empty((n_bodies, 6)) for _ in range(3)] + [np.empty((n_bodies, 2 * N, 6)) for _ in range(3)]
    derivatives, d_accel, wrenches = np.empty((N, 2 * N)), np.empty((m, 2 * N)), np.empty((k, 6))
    no_gravity = np.zeros(6)

    def sweep(accelerations, d_accel):
        residual_derivatives_into(model.parent, model.motion_subspaces, model.inertias, X_up, model.ancestors,
                                  model.depth, model.subtree_end, floating, no_gravity, np.zeros(6),
                                  accelerations[:6] if floating else np.zeros(6), np.zeros(n), accelerations[off:],
                                  *scratch, derivatives, arrays.bodies, arrays.X_contact_body, arrays.dims,
                                  arrays.world_aligned, arrays.starts, rotation, J_local, body_X_base, impulses,
                                  wrenches, d_accel)

    sweep(nu_plus + e * nu_minus, d_accel)  # keeps ∂a
    sweep(nu_plus - nu_minus, np.empty((m, 2 * N)))  # keeps ∂R (in derivatives)
    d_nu, d_impulses = np.empty((N, 2 * N)), np.empty((m, 2 * N))
    eliminate_into(M_inv, J, JM_inv, L, derivatives, d_accel, floating, no_gravity, d_nu, d_impulses)
    # the ν⁻ columns directly: ∂Λ/∂ν⁻ = −(1+e) Λ_J J, ∂ν⁺/∂ν⁻ = I + M⁻¹Jᵀ ∂Λ/∂ν⁻
    d_impulses_dnu = J.copy()
    cholesky_solve_into(L, d_impulses_dnu)
    d_impulses_dnu *= -(1.0 + e)
    A = np.zeros((2 * N, 2 * N))
    A[:N, :N] = np.eye(N)
    A[N:, :N] = d_nu[:, :N]
    A[N:, N:] = np.eye(N) + JM_inv.T @ d_impulses_dnu
    d_impulses[:, N:] = d_impulses_dnu
    post = State(joint_positions=state.joint_positions, joint_velocities=nu_plus[off:]) if not floating else State(
        base_pose=state.base_pose, joint_positions=state.joint_positions, base_twist=nu_plus[:6],
        joint_velocities=nu_plus[off:])
    return Impact(state=post, A=A, impulses=impulses, impulses_state_jacobian=d_impulses,
                  impulse_labels=contact_labels(contacts), contacts=contacts, restitution=e, pre_impact_state=state)

