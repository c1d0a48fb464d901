"""The geometric linearization ż = A z + B w (thesis Propositions 3.1–3.3).

State perturbation z = [z_H (6), z_s (n), z_v (6), z_r (n)] about (H, s, v, r),
left-trivialised: H → H·exp(z_H^), s → s + z_s, v → v + z_v, r → r + z_r, with
z_H = [translation; rotation] in the base frame.  Input perturbation w = δτ.
For a fixed base, z = [z_s, z_r].
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .algorithms.base_frame_derivatives import base_frame_derivatives_into
from .algorithms.constrained_dynamics import (contact_arrays, contact_forces_into, multiply_add_into,
                                              tree_multiply_add_into, unconstrained_dynamics_into)
from .algorithms.forward_dynamics import forward_dynamics_into, singular_pivot
from .algorithms.inverse_mass_matrix import inverse_mass_matrix_into
from .algorithms.kinematics import base_frame_poses_into, base_gravity_into, body_transforms_into
from .arguments import check_model, choice, joint_vector, positive_number
from .compiled import announce_compilation, finite_sum, kernel
from .contact_linearization import linearize_with_contacts
from .contacts import Contact, as_contacts, resolve
from .coupling import CoupledModel, tree_of
from .discretization import METHODS, NO_STEP, euler_step_into, euler_step_jacobians_into, step_jacobians
from .impacts import impact, restitution_coefficient, touchdown
from .model import (Model, State, check_state, first_invalid_state, invalid_state, stack_states, state_arrays,
                    state_problem)
from .workspace import singular_state_message, workspace


@dataclass(frozen=True)
class Linearization:
    """A (2N, 2N), B (2N, n), M_inv (N, N) at one state and input; N = n_velocities.

    base_acceleration v̇ (6,) or None and joint_accelerations ṙ (n,) are the
    forward dynamics at (state, τ), where the derivatives were evaluated.
    state_labels names the rows/columns of A (and rows of B), see Model.state_labels.
    For :func:`linearize_trajectory` every array gains a leading axis K.

    With contacts (docs/contacts.md) A, B and the accelerations are those of the
    constrained dynamics, and, with m = Σ contact dimensions:
    contact_forces λ (m,) on the robot, in each contact's reference axes;
    contact_forces_state_jacobian ∂λ/∂z (m, 2N), same z as A's columns;
    contact_forces_input_jacobian ∂λ/∂τ (m, n); contact_labels (m,) names λ's
    entries (<frame>:fx … :mz); contacts the Contact set itself.  Without
    contacts they are None / ().

    state and joint_torques are where it was evaluated (for a horizon: the tuple
    of K states and the (K, n) torques), so :func:`~robot_linearization.validate`
    needs only the model and the linearization.

    With a step dt [s]: A_d (2N, 2N), B_d (2N, n), the discrete-time linearization
    z⁺ = A_d z + B_d w of one step (:func:`~robot_linearization.discretize`,
    docs/discretization.md) by ``discretization`` ("euler": the Jacobians of
    :func:`~robot_linearization.step`; "zoh": the zero-order hold of A, B).
    Without dt they are None.

    At a touchdown (``previous_contacts`` given and ``contacts`` closing one of them not
    held, docs/impacts.md): impact is the :class:`~robot_linearization.impacts.Impact` of
    ``state`` on ``contacts``; A, B, the accelerations and λ are evaluated at its
    post-impact state impact.state (where the step integrates from), and
    A_d = A_d(step at impact.state)·impact.A, B_d = B_d(step at impact.state); ``state``
    stays the pre-impact state, the one A_d's columns perturb.  Otherwise impact is None.
    For a horizon: impact and previous_contacts are tuples of K (None where no impact).
    """

    A: np.ndarray
    B: np.ndarray
    M_inv: np.ndarray
    base_acceleration: np.ndarray | None
    joint_accelerations: np.ndarray
    state_labels: tuple[str, ...]
    contact_forces: np.ndarray | None = None
    contact_forces_state_jacobian: np.ndarray | None = None
    contact_forces_input_jacobian: np.ndarray | None = None
    contact_labels: tuple = ()
    contacts: tuple = ()
    state: State | tuple | None = None
    joint_torques: np.ndarray | None = None
    A_d: np.ndarray | None = None
    B_d: np.ndarray | None = None
    dt: float | None = None
    discretization: str | None = None
    impact: object = None
    previous_contacts: tuple | None = None

    @classmethod
    def _make(cls, fields: dict) -> "Linearization":
        """The same object as Linearization(**fields), built by two dict updates: a frozen
        dataclass's __init__ sets each of its 19 fields through object.__setattr__,
        ≈ 3 µs of every control cycle."""
        self = object.__new__(cls)
        values = self.__dict__
        values.update(_DEFAULTS)
        values.update(fields)
        return self

    def __repr__(self) -> str:
        horizon = f"{self.A.shape[0]} states, " if self.A.ndim == 3 else ""
        contacts = "no contacts" if not self.contacts else (
            f"{len(self.contacts)} contacts" if isinstance(self.contacts[0], Contact)
            else "contacts varying along the horizon")
        step = "" if self.dt is None else f", A_d and B_d of a {self.discretization} step of {self.dt:g} s"
        return (f"<Linearization: {horizon}A {self.A.shape[-2:]}, B {self.B.shape[-2:]}, M_inv {self.M_inv.shape[-2:]} "
                f"(state [z_H, z_s, z_v, z_r] of {len(self.state_labels)}), {contacts}{step}>")


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Linearization) if f.default is not dataclasses.MISSING}


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


def _linearize_stack(model: Model, arrays, out, dt: float, generated=None) -> None:
    """linearize_states_into on stacked (poses, s, v, r, τ) into ``out`` (:func:`_allocate`), or the
    ``generated`` kernel's (generated.GeneratedKernel.call_states, on scratch of its own); ValueError
    for a NaN/inf or non-rigid input."""
    if generated is None:
        announce_compilation(linearize_states_into)
        k, problem = linearize_states_into(workspace(model).data, tuple(arrays), tuple(out), dt)
    else:
        k, problem = generated.call_states(np.empty(generated.scratch_size), tuple(arrays), tuple(out), dt)
    if problem:
        raise ValueError(state_problem(k, problem, len(arrays[0])))


def _allocate(model: Model, K: int, step: bool):
    """(A, B, M_inv, ν̇, status, A_d, B_d) of K states; A_d, B_d empty (shared, never written)
    unless ``step``."""
    N, n = model.n_velocities, model.n_joints
    return (np.empty((K, 2 * N, 2 * N)), np.empty((K, 2 * N, n)), np.empty((K, N, N)), np.empty((K, N)),
            np.empty(K, dtype=np.int64)) + ((np.empty((K, 2 * N, 2 * N)), np.empty((K, 2 * N, n))) if step
                                            else _NO_STEPS)


_NO_STEPS = (np.empty((0, 0, 0)),) * 2  # A_d, B_d of K states without a step (never written)


def linearize(model: Model, state: State, joint_torques=None, *, contacts=None, dt: float | None = None,
              discretization: str | None = None, previous_contacts=None, restitution: float = 0.0) -> Linearization:
    """Left-trivialised linearization of the forward dynamics at (state, τ).

    joint_torques τ (n,), default zeros.  A is (3.42) with the dynamics rows
    −M⁻¹[D₁ID̄, D₂ID̄, D₃ID̄, D₄ID̄] (Proposition 3.3) evaluated at the ABAmb
    accelerations; B = [0; M⁻¹S] (3.29); M⁻¹ by the IMMAmb (Table 4.7).
    Fixed base: A = [[0, I], [∂ṙ/∂s, ∂ṙ/∂r]], B = [0; M⁻¹].

    contacts: frames rigidly held (:class:`~robot_linearization.Contact` or link
    names, a name being a world-aligned point contact); A, B are then those of
    the constrained dynamics and the contact forces are filled in
    (contact_linearization.py, docs/contacts.md).  ContactError for a redundant
    or degenerate set.

    dt: also fill A_d, B_d, the discrete-time linearization of one step of dt
    seconds by ``discretization`` ("euler", the default: of
    :func:`~robot_linearization.step`; "zoh": the zero-order hold of A, B).

    previous_contacts: the set held over the step before (with dt).  If ``contacts``
    closes one it did not hold (a touchdown), the step starts with the rigid impact on
    ``contacts`` (restitution e ∈ [0, 1]), as :func:`~robot_linearization.step` with the
    same arguments does: A_d = A_d(at the post-impact state)·A_impact (docs/impacts.md;
    the Linearization's ``impact`` field).

    contacts also take the text of the node and the CLI ("left_sole_link:6d, right_sole_link:6d").
    Every argument is checked first: ValueError names the one that is wrong.
    """
    step = check_step(model, dt, discretization)
    if previous_contacts is not None:
        return _linearize_after_impact(model, state, joint_torques, contacts, previous_contacts, restitution, step)
    restitution_coefficient(restitution)
    if not contacts and isinstance(model, CoupledModel):
        return _linearize_coupled(model, state, joint_torques, step)
    if contacts:
        return _linearize_with_contacts(model, state, joint_torques, contacts, step)
    arrays = state_arrays(model, state, joint_torques)  # (the kernel checks the values)
    torques = arrays[4]
    N, n = model.n_velocities, model.n_joints
    fused = dt is not None and step["discretization"] == "euler"
    out = (np.empty((2 * N, 2 * N)), np.empty((2 * N, n)), np.empty((N, N)), np.empty(N)) + (
        (np.empty((2 * N, 2 * N)), np.empty((2 * N, n))) if fused else NO_STEP)
    run_linearize_into(model, workspace(model).data, arrays, out, step["dt"] if fused else 0.0)
    return _result(model, *out[:4], state, torques, step, out[4:] if fused else None)


def run_linearize_into(model: Model, data, arrays: tuple, out: tuple, dt: float, call=linearize_into) -> None:
    """:func:`linearize_into` on a workspace's ``data``, the :func:`~robot_linearization.model.state_arrays`
    ``arrays`` and ``out`` = (A (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,), A_d, B_d) (with dt > 0 an
    Euler step's (2N, 2N), (2N, n), else discretization.NO_STEP), called as ``call``: the kernel, a
    compiled.TypedCall of it, or of a generated kernel's (generated.GeneratedKernel.call, whose
    ``data`` is its scratch).  ValueError at a state that has no linearization (then ``out`` holds
    no result)."""
    announce_compilation(linearize_into)
    status = call(data, arrays, out, dt)
    if status != -1:
        raise ValueError(_status_message(model, status, arrays))


def linearize_trajectory(model: Model, states: Sequence[State], joint_torques=None, *,
                         workers: int | None = None, contacts=None, dt: float | None = None,
                         discretization: str | None = None, previous_contacts=None,
                         restitution: float = 0.0, kernel: str = "generic") -> Linearization:
    """Linearize K states at once (e.g. an MPC horizon): A (K, 2N, 2N), B (K, 2N, n),
    M_inv (K, N, N), accelerations with a leading K axis.

    joint_torques (K, n), default zeros.  The states are split over ``workers``
    threads (default: the machine's cores); the kernels run without the GIL.

    contacts: one contact set for every state, or a list of K sets (a gait; an
    empty set is a flight phase).  The contact arrays gain a leading K axis when
    every state has the same set; otherwise they are tuples of K arrays (and
    contact_labels a tuple of K label tuples).

    dt: also A_d (K, 2N, 2N), B_d (K, 2N, n), each state's one-step
    discrete-time linearization, as in :func:`linearize`.

    A gait: contacts[k] is the set held over the step from states[k] (the interval
    [t_k, t_k+1]).  Where contacts[k] closes a contact that contacts[k−1] did not hold (a
    touchdown; for k = 0 against ``previous_contacts``, none by default), knot k carries
    the impact: states[k] is the pre-impact state, its step starts with the rigid impact on
    contacts[k] (restitution e), and A_d[k] = A_d(step at the post-impact state)·A_impact,
    B_d[k] = B_d(step at the post-impact state) — the Jacobians of
    ``rl.step(model, states[k], τ_k, dt, contacts[k], previous_contacts=contacts[k−1])``
    (docs/impacts.md).  Crocoddyl puts its impulse model as a knot of its own between the
    two phases; here it is folded into the touchdown knot.  A lift-off is not an impact.
    Without dt there is no step and no impact: A, B are each state's own.

    kernel="generated": a horizon without contacts on a Model (any step) runs the kernel generated
    for the robot (robot_linearization.generated, as :class:`~robot_linearization.Linearizer`'s
    ``kernel``), the same values bit for bit; where it cannot be built here (no C compiler, a model
    too large for it to pay) the generic kernel runs, with a warning.
    """
    if isinstance(states, State) or not isinstance(states, Sequence) or isinstance(states, str):
        raise ValueError(f"states: expected a sequence of States, got {type(states).__name__} "
                         "(for one state use rl.linearize)")
    K = len(states)
    if K == 0:
        raise ValueError("states: expected at least one state, got none")
    step = check_step(model, dt, discretization)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers: expected a positive number of threads, got {workers!r}")
    restitution = restitution_coefficient(restitution)
    kernel = choice(kernel, "kernel", ("generic", "generated"))
    if contacts or isinstance(model, CoupledModel) or previous_contacts is not None:
        if kernel == "generated":
            raise ValueError("kernel: 'generated' covers a horizon without contacts on a Model; use "
                             "kernel='generic' here (or an rl.Linearizer(model, contacts=…, kernel='generated') "
                             "per knot)")
        return _linearize_trajectory_with_contacts(model, states, joint_torques, contacts, workers, step,
                                                   previous_contacts, restitution)
    arrays = stack_states(model, states, joint_torques)
    fused = dt is not None and step["discretization"] == "euler"
    generated = _generated_or_none(model) if kernel == "generated" else None
    out = _allocate(model, K, fused)
    workers = max(1, min(workers or os.cpu_count() or 1, K))
    dt_fused = step["dt"] if fused else 0.0
    if workers == 1:
        _linearize_stack(model, arrays, out, dt_fused, generated)
    else:
        bounds = np.linspace(0, K, workers + 1).astype(int)
        chunks = [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
        list(_pool(workers).map(lambda ch: _linearize_stack(model, [x[ch] for x in arrays], [x[ch] for x in out],
                                                            dt_fused, generated), chunks))
    _check_finite(model, out, arrays)
    return _result(model, *out[:4], tuple(states), arrays[-1], step, out[5:] if fused else None)


def _generated_or_none(model: Model):
    """``model``'s generated.GeneratedKernel, or None (with a warning, as a Linearizer's) when it
    cannot be built here."""
    from .generated import GenerationError, generated_kernel  # (generated.py imports this module)

    try:
        return generated_kernel(model)
    except GenerationError as error:
        logging.getLogger("robot_linearization").warning("the generic kernel runs: %s", error)
        return None


def check_step(model, dt, discretization) -> dict:
    """{"dt", "discretization"} checked (and the model), ValueError before any work; a
    method without a step is an error, not ignored."""
    check_model(model)
    if dt is None:
        if discretization is not None:
            raise ValueError(f"discretization={discretization!r} needs dt, the step in seconds")
        return _CONTINUOUS
    if type(dt) is float and 0.0 < dt < math.inf and discretization is None:  # (the control cycle's case)
        return {"dt": dt, "discretization": "euler"}
    return {"dt": positive_number(dt, "dt", "seconds"),
            "discretization": "euler" if discretization is None else choice(discretization, "discretization",
                                                                              METHODS)}


_CONTINUOUS = {"dt": None, "discretization": "euler"}  # check_step without a step (read, never written)


@functools.lru_cache(maxsize=None)
def _pool(workers: int) -> ThreadPoolExecutor:
    """One long-lived pool per size, so its threads keep their warm workspaces."""
    return ThreadPoolExecutor(workers, thread_name_prefix="linearize")


def _check_finite(model: Model, out, arrays) -> None:
    """ValueError, naming the state, if linearize_states_into's status (out[4]) says the mass
    matrix is singular there or A, B or M⁻¹ overflowed: never a matrix of inf/NaN without a word."""
    status = out[4]
    if status.max() == -1 and status.min() == -1:
        return
    k = int(np.flatnonzero(status != -1)[0])
    raise ValueError(_status_message(model, int(status[k]), [a[k] for a in arrays],
                                     f" (state {k})" if len(status) > 1 else ""))


def _status_message(model: Model, status: int, state, where: str = "") -> str:
    """What a linearization kernel's status ≠ −1 means (linearize_into, coupled_linearize_into)
    at the state (pose, s, v, r, τ): −10 − p an invalid state (model.invalid_state's p), a joint
    j ≥ 0 whose pivot vanishes (M singular), −2 an overflow (e.g. joint velocities of 1e200)."""
    if status <= -10:
        return state_problem(0, -10 - status, 1)
    if status >= 0:
        return singular_state_message(model, status, where)
    largest = max(float(np.abs(x).max(initial=0.0)) for x in state[1:])
    return (f"the linearization overflows at this state{where}: inf/NaN in the result; its largest position, "
            f"velocity or torque is {largest:.3g}")


def _result(model: Model, A, B, M_inv, nu_dot, state, joint_torques, step: dict, jacobians=None,
            fields: dict | None = None) -> Linearization:
    """The Linearization of (A, B, M_inv, ν̇) at ``state`` and ``joint_torques``; ``step``:
    check_step's {"dt", "discretization"}, with dt also A_d, B_d (``jacobians``, when the kernel
    computed them); ``fields``: the other fields (contacts, impact).  Built by dict assignments,
    not keyword arguments: ≈ 1.5 µs of every control cycle."""
    self = Linearization._make(fields or {})
    values = self.__dict__
    values["A"], values["B"], values["M_inv"] = A, B, M_inv
    if model.floating_base:
        values["base_acceleration"], values["joint_accelerations"] = nu_dot[..., :6], nu_dot[..., 6:]
    else:
        values["base_acceleration"], values["joint_accelerations"] = None, nu_dot
    values["state_labels"], values["state"], values["joint_torques"] = model.state_labels, state, joint_torques
    dt = step["dt"]
    if dt is not None:
        if jacobians is None:
            base = values["base_acceleration"]
            twists = None if base is None else (state.base_twist if isinstance(state, State)
                                                else np.array([s.base_twist for s in state]))
            jacobians = step_jacobians(A, B, twists, base, dt, step["discretization"])
        values["A_d"], values["B_d"] = jacobians
        values["dt"], values["discretization"] = float(dt), step["discretization"]
    return self


def _linearize_coupled(model: CoupledModel, state: State, joint_torques, step) -> Linearization:
    """A CoupledModel without contacts: coupled_linearize_into on the tree's workspace."""
    arrays = state_arrays(model, state, joint_torques)  # (values: the kernel)
    torques = arrays[4]
    N = model.n_velocities
    out = np.empty((2 * N, 2 * N)), np.empty((2 * N, model.n_joints)), np.empty((N, N)), np.empty(N)
    run_coupled_linearize_into(model, model.coupling_data(), arrays, out)
    return _result(model, *out, state, torques, step)


def run_coupled_linearize_into(model: CoupledModel, coupling, arrays: tuple, out: tuple,
                               call=coupled_linearize_into) -> None:
    """:func:`coupled_linearize_into` on ``coupling`` (``model.coupling_data()`` or a
    ``new_coupling_data``), the independent coordinates' state_arrays ``arrays``, and ``out`` =
    (A (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,)) in them, called as ``call`` (as for
    :func:`run_linearize_into`).  ValueError at a state that has no linearization (then ``out``
    holds no result)."""
    announce_compilation(coupled_linearize_into)
    status = call(coupling, arrays, out)
    if status != -1:
        raise ValueError(_status_message(model.tree, status, arrays))


def _linearize_with_contacts(model: Model, state: State, joint_torques, contacts, step) -> Linearization:
    arrays = contact_arrays(model, as_contacts(contacts))  # resolved once per (model, contacts)
    torques = joint_vector(model, joint_torques, "joint_torques", finite=False)
    fused = step["dt"] is not None and step["discretization"] == "euler" and not isinstance(model, CoupledModel)
    out = linearize_with_contacts(model, state, torques, arrays, workspace(tree_of(model)),
                                  step["dt"] if fused else 0.0)  # (fused: with A_d, B_d)
    A, B, M_inv, nu_dot, forces, d_forces, d_forces_dtau = out[:7]
    jacobians = out[7:] if fused else None
    if not arrays.contacts:  # a CoupledModel without contacts: no contact fields
        return _result(model, A, B, M_inv, nu_dot, state, torques, step, jacobians)
    return _result(model, A, B, M_inv, nu_dot, state, torques, step, jacobians, fields={
        "contact_forces": forces, "contact_forces_state_jacobian": d_forces,
        "contact_forces_input_jacobian": d_forces_dtau, "contact_labels": arrays.labels, "contacts": arrays.contacts})


def _linearize_after_impact(model: Model, state: State, joint_torques, contacts, previous_contacts, restitution,
                            step) -> Linearization:
    """linearize with a previous contact set: at a touchdown, at the post-impact state with
    A_d composed with the impact's Jacobian (docs/impacts.md)."""
    contacts, previous = as_contacts(contacts), as_contacts(previous_contacts)
    check_state(model, state)
    resolve(model, previous)
    e = restitution_coefficient(restitution)
    if not touchdown(previous, contacts):
        lin = linearize(model, state, joint_torques, contacts=contacts, **_step_arguments(step))
        return Linearization._make({**lin.__dict__, "previous_contacts": previous})
    if step["dt"] is None:
        raise ValueError("previous_contacts: a touchdown's impact enters the step's Jacobians only: give dt too")
    jump = impact(model, state, contacts, e)
    lin = linearize(model, jump.state, joint_torques, contacts=contacts, **_step_arguments(step))
    return Linearization._make({**lin.__dict__, "A_d": lin.A_d @ jump.A, "state": state, "impact": jump,
                                  "previous_contacts": previous})


def _step_arguments(step: dict) -> dict:
    """linearize's dt and discretization from a checked check_step (no method without dt)."""
    return step if step["dt"] is not None else {"dt": None}


def _linearize_trajectory_with_contacts(model: Model, states, joint_torques, contacts, workers, step,
                                        previous_contacts=None, restitution=0.0) -> Linearization:
    K = len(states)
    contacts = contacts or ()
    per_state = isinstance(contacts, (list, tuple)) and len(contacts) > 0 \
        and all(c is None or not isinstance(c, (str, Contact)) for c in contacts)
    if per_state and len(contacts) != K:
        raise ValueError(f"contacts: {len(contacts)} contact sets for {K} states (give one set for every state, "
                         "or a single set for all)")
    sets = [as_contacts(c) for c in contacts] if per_state else [as_contacts(contacts)] * K
    torques = stack_states(model, states, joint_torques)[-1]
    workers = max(1, min(workers or os.cpu_count() or 1, K))
    previous = [None if previous_contacts is None else as_contacts(previous_contacts)] + sets[:-1]
    if step["dt"] is None:  # the continuous A, B of each state: an impact enters only a step's Jacobians
        previous = [None] * K
    one = lambda k: linearize(model, states[k], torques[k], contacts=sets[k], previous_contacts=previous[k],  # noqa
                              restitution=restitution, **_step_arguments(step))
    results = list(_pool(workers).map(one, range(K))) if workers > 1 else [one(k) for k in range(K)]
    stack = lambda name: np.stack([getattr(x, name) for x in results])  # noqa: E731
    fields = {}
    same = len({x.contact_labels for x in results}) == 1
    for name in ("contact_forces", "contact_forces_state_jacobian", "contact_forces_input_jacobian"):
        values = [getattr(x, name) for x in results]
        fields[name] = None if all(v is None for v in values) else np.stack(values) if same else tuple(values)
    fields["contact_labels"] = results[0].contact_labels if same else tuple(x.contact_labels for x in results)
    fields["contacts"] = results[0].contacts if same else tuple(x.contacts for x in results)
    if any(x.impact is not None for x in results):
        fields["impact"] = tuple(x.impact for x in results)
    fields["previous_contacts"] = tuple(previous)
    jacobians = None if step["dt"] is None else (stack("A_d"), stack("B_d"))
    nu_dot = np.concatenate([stack("base_acceleration"), stack("joint_accelerations")], axis=1) \
        if model.floating_base else stack("joint_accelerations")
    return _result(model, stack("A"), stack("B"), stack("M_inv"), nu_dot, tuple(states), torques, step, jacobians,
                   fields)
