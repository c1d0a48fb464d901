"""Independent checks of a linearization: geometric finite differences of the
forward dynamics on the state's Lie group, inv(CRBA), and a per-block report.

Used by the tests, the demo and the ROS validation service.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algorithms.constrained_dynamics import (ContactArrays, bias_motion, constrained_forward_dynamics,
                                              contact_kinematics, contact_set)
from .algorithms.forward_dynamics import forward_dynamics
from .algorithms.inverse_dynamics import extended_inverse_dynamics, inverse_dynamics
from .algorithms.kinematics import body_transforms, frame_poses
from .contacts import Contacts, as_contacts
from .coupling import AnyModel, CoupledModel, tree_of
from .algorithms.mass_matrix import mass_matrix
from .arguments import check_linearization, joint_vector, positive_number
from .integrator import step as integrator_step
from .impacts import impact
from .model import State, check_state, floating_base_of
from .spatial import se3_exp, se3_log

if TYPE_CHECKING:
    from .linearization import Linearization
    from .linearizer import Linearizer

DEFAULT_STEP = 1e-2
"""The largest step of the extrapolated finite differences (it halves down to DEFAULT_STEP/2048 at most)."""


def perturb(model: AnyModel, state: State, z: np.ndarray) -> State:
    """The state g·exp(z): H·exp(z_H^), s + z_s, v + z_v, r + z_r (thesis (3.4)); z (2N,) float64.
    (Every array of the result is new: built without the State constructor's copies.)"""
    n = model.n_joints
    if not model.floating_base:
        return State._given(None, state.joint_positions + z[:n], None, state.joint_velocities + z[n:])
    return State._given(state.base_pose @ se3_exp(z[:6]), state.joint_positions + z[6:6 + n],
                        state.base_twist + z[6 + n:12 + n], state.joint_velocities + z[12 + n:])


def state_difference(model: AnyModel, a: State, b: State) -> np.ndarray:
    """z (2N,) with b = a·exp(z) (the inverse of :func:`perturb`): [log(H_a⁻¹ H_b), Δs, Δv, Δr].

    ``a`` and ``b`` must be states of ``model`` (ValueError naming the one that is not)."""
    check_state(model, a, "a")
    check_state(model, b, "b")
    parts = [b.joint_positions - a.joint_positions]
    if model.floating_base:
        (pose_a, twist_a), (pose_b, twist_b) = floating_base_of(a), floating_base_of(b)
        parts = [se3_log(np.linalg.inv(pose_a) @ pose_b)] + parts + [twist_b - twist_a]
    return np.concatenate(parts + [b.joint_velocities - a.joint_velocities])


def _vector_field(model: AnyModel, state: State, torques: np.ndarray, held: ContactArrays) -> np.ndarray:
    """Left-trivialised vector field (v, r, v̇, ṙ) (3.22), (2N,), followed by the contact forces
    λ (m,) of the constrained dynamics when the contact set ``held`` (contact_set's) has contacts."""
    if held.contacts or isinstance(model, CoupledModel):
        nu_dot, forces = constrained_forward_dynamics(model, state, torques, held)
    else:
        base_acceleration, joint_accelerations = forward_dynamics(model, state, torques)
        nu_dot = joint_accelerations if base_acceleration is None else np.concatenate(
            [base_acceleration, joint_accelerations])
        forces = np.zeros(0)
    return np.concatenate([_velocities(model, state), nu_dot, forces])


def _extrapolated(estimate, largest_step: float, shrink: float = 2.0, levels: int = 12):
    """Ridders' extrapolation of a central difference to zero step, entry by entry.

    ``estimate(h)`` is a central difference with step h, an even function of h:
    D(h) = D + c₁h² + c₂h⁴ + … + round-off.  It is evaluated at h₀, h₀/2, h₀/4, …
    (at most ``levels`` steps) and each new value is Richardson-extrapolated against
    the previous row of the tableau (eliminating h², h⁴, … one by one).  Every
    tableau entry comes with an error estimate (its difference to its two parents);
    each entry of the result is the one with the smallest estimate.  An entry is
    settled once its estimate is small (10⁻⁸ of itself, or 10⁻¹² of the largest entry:
    a structural zero's noise) and its newest extrapolation moves by more than twice
    that — round-off has taken over: its later, smaller steps are noise that may agree
    by chance, so it keeps its best.  The sequence stops when every entry is settled
    (after at least 5 steps: the first, large steps can look converged by accident
    near a singularity).  Returns (derivative, error estimate).
    """
    factor = shrink * shrink
    previous = [np.asarray(estimate(largest_step), dtype=float)]
    best, error = previous[0].copy(), np.full(previous[0].shape, np.inf)
    settled = np.zeros(best.shape, dtype=bool)
    h = largest_step
    for level in range(1, levels):
        h /= shrink
        row = [np.asarray(estimate(h), dtype=float)]
        weight = factor
        for k in range(1, level + 1):
            row.append((weight * row[k - 1] - previous[k - 1]) / (weight - 1.0))
            weight *= factor
            change = np.maximum(np.abs(row[k] - row[k - 1]), np.abs(row[k] - previous[k - 1]))
            better = (change <= error) & ~settled
            best, error = np.where(better, row[k], best), np.where(better, change, error)
        small = (error <= 1e-8 * np.abs(best)) | (error <= 1e-12 * np.abs(best).max(initial=0.0))
        settled |= (np.abs(row[level] - previous[level - 1]) >= 2.0 * error) & small
        if level >= 4 and settled.all():
            break
        previous = row
    return best, error


def finite_difference_linearization(model: AnyModel, state: State, joint_torques: ArrayLike | None = None,
                                    step: float = DEFAULT_STEP, contacts: Contacts = ()
                                    ) -> tuple[NDArray[np.float64], ...]:
    """(A, B) of the forward dynamics by extrapolated central differences along g·exp(±h e_j) and τ ± δ e_j.

    The dynamics rows are D₁λ∘DL_g(e) (2.47), differences of the forward dynamics
    (ABAmb; with contacts or mimic joints the constrained forward dynamics) at the
    perturbed states g·exp(±h e_j): nothing of the linearization is used.  The
    kinematic rows (ż_H, ż_s) come from the flow instead (:func:`flow_kinematic_rows`),
    so that no formula of A (such as its −v× block) is assumed by the reference.

    Error model.  A central difference of f with step h is
    D(h) = f′ + h² f‴/6 + h⁴ f⁽⁵⁾/120 + … (truncation) + ~eps·F/h (round-off), where F is
    the size of the terms f is computed from — not of f itself: a locked robot's ν̇ is
    ~0 but is M⁻¹(τ − h + Jᵀλ) with each term ~10³.  No fixed step suits every state:
    near a singular contact Jacobian f⁽⁵⁾ is so large that h = 10⁻³ leaves 1 % of
    truncation in ∂λ/∂s, while a step small enough for it has 100× the round-off
    elsewhere.  So each column is Ridders' extrapolation (:func:`_extrapolated`) of
    central differences at h = ``step``, step/2, … step/2048: Richardson's elimination
    of the h², h⁴, … terms, with an error estimate per entry, keeping for each entry
    the extrapolation with the smallest estimate.  The columns in τ need none: the
    dynamics (ν̇ and λ) are affine in τ, so one central difference with a large step
    has no truncation error and negligible round-off.  Costs 10 to 24 forward-dynamics
    evaluations per column of z (most converge in 10–12) and 2 per joint torque: about 6× the
    former fixed 4th-order stencil (talos 0.37 s), for 10⁻¹⁰–10⁻¹¹ instead of 10⁻⁸.

    With contacts, the constrained forward dynamics are differenced, and
    (A, B, ∂λ/∂z (m, 2N), ∂λ/∂τ (m, n)) is returned.

    ``model``, ``state``: where; ``joint_torques`` τ (n,) (default zeros); ``step``: the largest
    step h of the extrapolation (the state's perturbation size); ``contacts``: the contact set held
    (names or Contact objects, as :func:`~robot_linearization.linearize` takes them).
    """
    n, N = model.n_joints, model.n_velocities
    check_state(model, state)
    torques = joint_vector(model, joint_torques, "joint_torques")
    step = positive_number(step, "step")
    held = contact_set(model, contacts)
    rows = 2 * N + held.m_contacts
    A = np.empty((rows, 2 * N))
    for j in range(2 * N):
        def central(h, j=j):
            z = np.zeros(2 * N)
            z[j] = h
            return (_vector_field(model, perturb(model, state, z), torques, held)
                    - _vector_field(model, perturb(model, state, -z), torques, held)) / (2.0 * h)
        A[:, j] = _extrapolated(central, step)[0]
    A[:N] = flow_kinematic_rows(model, state)
    torque_step = max(1.0, float(np.abs(torques).max(initial=0.0)))
    B = np.empty((rows, n))
    for j in range(n):
        dt = np.zeros(n)
        dt[j] = torque_step
        B[:, j] = (_vector_field(model, state, torques + dt, held)
                   - _vector_field(model, state, torques - dt, held)) / (2 * torque_step)
    if contacts:
        return A[:2 * N], B[:2 * N], A[2 * N:], B[2 * N:]
    return A, B


def finite_difference_step(model: AnyModel, state: State, joint_torques: ArrayLike | None, dt: float,
                           contacts: Contacts = (), step: float = DEFAULT_STEP, *, previous_contacts: Contacts = None,
                           restitution: float = 0.0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(A_d (2N, 2N), B_d (2N, n)) of :func:`~robot_linearization.step` by extrapolated central
    differences (:func:`_extrapolated`, error model in :func:`finite_difference_linearization`)
    along g·exp(±h e_j) and τ ± δ e_j, the result measured left-trivialised from the
    nominal step (:func:`state_difference`).  In τ too: ν⁺ is affine in τ but H⁺ = H·exp(dt v⁺^) is not.
    previous_contacts, restitution: as rl.step's (a touchdown's impact is part of the step)."""
    n, N = model.n_joints, model.n_velocities
    torques = joint_vector(model, joint_torques, "joint_torques")
    held = contact_set(model, contacts)
    previous = None if previous_contacts is None else contact_set(model, previous_contacts)
    nominal = integrator_step(model, state, torques, dt, held, previous_contacts=previous, restitution=restitution)

    def after(start, tau):
        return state_difference(model, nominal, integrator_step(model, start, tau, dt, held,
                                                                previous_contacts=previous, restitution=restitution))

    A_d = np.empty((2 * N, 2 * N))
    for j in range(2 * N):
        def central(h, j=j):
            z = np.zeros(2 * N)
            z[j] = h
            return (after(perturb(model, state, z), torques) - after(perturb(model, state, -z), torques)) / (2.0 * h)
        A_d[:, j] = _extrapolated(central, step)[0]
    torque_step = max(1.0, float(np.abs(torques).max(initial=0.0)))
    B_d = np.empty((2 * N, n))
    for j in range(n):
        def central(h, j=j):
            e = np.zeros(n)
            e[j] = h
            return (after(state, torques + e) - after(state, torques - e)) / (2.0 * h)
        B_d[:, j] = _extrapolated(central, 0.1 * torque_step)[0]
    return A_d, B_d


def finite_difference_impact(model: AnyModel, state: State, contacts: Contacts, restitution: float = 0.0,
                             step: float = DEFAULT_STEP) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(A_impact (2N, 2N), ∂Λ/∂z (m, 2N)) of :func:`~robot_linearization.impact` by extrapolated
    central differences (:func:`_extrapolated`) along g·exp(±h e_j), the post-impact state
    measured left-trivialised from the nominal one (:func:`state_difference`)."""
    N = model.n_velocities
    held = contact_set(model, contacts)
    nominal = impact(model, state, held, restitution)

    def central(h, j):
        z = np.zeros(2 * N)
        z[j] = h
        plus, minus = impact(model, perturb(model, state, z), held, restitution), \
            impact(model, perturb(model, state, -z), held, restitution)
        return np.concatenate([state_difference(model, nominal.state, plus.state)
                               - state_difference(model, nominal.state, minus.state),
                               plus.impulses - minus.impulses]) / (2.0 * h)

    columns = np.column_stack([_extrapolated(lambda h, j=j: central(h, j), step)[0] for j in range(2 * N)])
    return columns[:2 * N], columns[2 * N:]


def flow_kinematic_rows(model: AnyModel, state: State, step: float = DEFAULT_STEP) -> np.ndarray:
    """The kinematic rows of A (N, 2N) by differencing the flow of the configuration.

    Over a time t the configuration moves to (H·exp(t v^), s + t r).  For the
    perturbed state the left-trivialised difference to the nominal one is
    z_q(t) = [log(exp(−t v) exp(z_H) exp(t (v + z_v))); z_s + t z_r]; its mixed
    second difference in (t, z_j) at 0, [z_q(h, h) − z_q(−h, h) − z_q(h, −h) + z_q(−h, −h)]/(4h²)
    (an even function of h: truncation h²(∂³_t∂_z + ∂_t∂³_z)z_q/6 + O(h⁴), round-off
    ~eps/h²), is column j of [ż_H; ż_s] = A[:N] z, extrapolated to h → 0 as in
    :func:`_extrapolated` from h = step/max(1, |v|) (the flow's own time scale: the
    truncation grows as |v|³ — a fast-spinning base made a fixed h = 10⁻⁴ miss by 10⁻⁵)."""
    N = model.n_velocities
    rows = np.empty((N, 2 * N))

    def z_q(z, t):
        if not model.floating_base:
            return z[:N] + t * z[N:]
        v = state.base_twist
        H = se3_exp(-t * v) @ se3_exp(z[:6]) @ se3_exp(t * (v + z[N:N + 6]))
        return np.concatenate([se3_log(H), z[6:N] + t * z[N + 6:]])

    speed = float(np.abs(floating_base_of(state)[1]).max()) if model.floating_base else 0.0
    for j in range(2 * N):
        def mixed(h, j=j):
            z = np.zeros(2 * N)
            z[j] = h
            return (z_q(z, h) - z_q(-z, h) - z_q(z, -h) + z_q(-z, -h)) / (4 * h * h)
        rows[:, j] = _extrapolated(mixed, step / max(1.0, speed))[0]
    return rows


def _frame_jacobian_and_drift(model: AnyModel, state: State, contact, step: float = DEFAULT_STEP):
    """(J (d, N), γ (d,)) of one contact from its frame's world pose T(q) alone
    (:func:`~robot_linearization.algorithms.kinematics.frame_poses`), by extrapolated differences
    (:func:`_extrapolated`) of ξ = log(T₀⁻¹ T):

    - the body Jacobian's column j is ∂ξ/∂z_j along q·exp(h e_j);
    - along the flow q(t) = q·exp(t [ν; 0]), at constant ν (so ν̇ = 0), the frame's body
      acceleration is ξ̈(0) = [ξ(t) + ξ(−t)]/t² as t → 0 (the ½ ad_ξ̇ ξ̇ term of the SE(3)
      Jacobian vanishes).
    Then the rows of docs/contacts.md's table: a 6d contact's [v; ω] and [a; α], a point contact's
    linear rows with γ = a + ω × v (the origin's classical acceleration), each rotated by
    blockdiag(A_R_c) when world-aligned.  Nothing of the contact kinematics of the engine is used."""
    N = model.n_velocities
    T0_inverse = np.linalg.inv(frame_poses(model, state, [contact.frame])[0])

    def xi(z):
        return se3_log(T0_inverse @ frame_poses(model, perturb(model, state, z), [contact.frame])[0])

    def unit(j, h):
        z = np.zeros(2 * N)
        z[j] = h
        return z

    J = np.column_stack([_extrapolated(lambda h, j=j: (xi(unit(j, h)) - xi(unit(j, -h))) / (2.0 * h), step)[0]
                         for j in range(N)])
    nu = _velocities(model, state)
    flow = np.concatenate([nu, np.zeros(N)])
    # a second difference: its round-off grows as 1/t² (the Jacobian's as 1/h), so its steps start 10×
    # larger, where Richardson's tableau still removes the t², t⁴ … terms before round-off takes over
    a = _extrapolated(lambda t: (xi(t * flow) + xi(-t * flow)) / (t * t),
                      10.0 * step / max(1.0, float(np.abs(nu).max(initial=0.0))))[0]
    twist = J @ nu
    if contact.kind == "point":
        J, gamma = J[:3], a[:3] + np.cross(twist[3:], twist[:3])
    else:
        gamma = a
    if contact.reference != "local":
        R = np.linalg.inv(T0_inverse)[:3, :3]
        rotation = np.kron(np.eye(len(gamma) // 3), R)
        J, gamma = rotation @ J, rotation @ gamma
    return J, gamma


def _velocities(model: AnyModel, state: State) -> np.ndarray:
    return state.joint_velocities if not model.floating_base else np.concatenate(
        [state.base_twist, state.joint_velocities])


def reference_constrained_dynamics(model: AnyModel, state: State, joint_torques: ArrayLike | None, contacts: Contacts,
                                   step: float = DEFAULT_STEP) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(ν̇ (N,), λ (m,)) of M ν̇ + h = Sτ + Jᵀλ, J ν̇ + γ = 0 by a dense solve of the KKT system
    [M Jᵀ; J 0] [ν̇; −λ] = [Sτ − h; −γ], from parts that share nothing with the engine's
    constrained dynamics: M by the CRBA, h by the Newton–Euler inverse dynamics at ν̇ = 0 (both on
    a CoupledModel's tree, reduced by Ĝ), J and γ from differences of each contact frame's pose
    (:func:`_frame_jacobian_and_drift`)."""
    tree = tree_of(model)
    full = model.tree_state(state) if isinstance(model, CoupledModel) else state
    torques = joint_vector(model, joint_torques, "joint_torques")
    if tree.floating_base:
        h = np.concatenate(extended_inverse_dynamics(tree, full, np.zeros(6), np.zeros(tree.n_joints)))
    else:
        h = inverse_dynamics(tree, full, np.zeros(tree.n_joints))[0]
    applied = np.concatenate([np.zeros(6 if tree.floating_base else 0),
                              model.tree_torques(torques) if isinstance(model, CoupledModel) else torques])
    generalized = applied - h
    if isinstance(model, CoupledModel):
        generalized = model.velocity_map.T @ generalized
    M = _mass_matrix(model, state)
    parts = [_frame_jacobian_and_drift(model, state, contact, step) for contact in as_contacts(contacts)]
    m, N = sum(len(gamma) for _, gamma in parts), model.n_velocities
    if not m:
        return np.linalg.solve(M, generalized), np.zeros(0)
    J, gamma = np.vstack([J for J, _ in parts]), np.concatenate([gamma for _, gamma in parts])
    kkt = np.block([[M, J.T], [J, np.zeros((m, m))]])
    solution = np.linalg.solve(kkt, np.concatenate([generalized, -gamma]))
    return solution[:N], -solution[N:]


def held_input_flow(A: NDArray[np.float64], B: NDArray[np.float64], dt: float
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(A_d, B_d) of ż = A z + B w over dt with w held, integrated: Φ' = AΦ, Ψ' = AΨ + B from
    (I, 0), by classical Runge–Kutta in k steps of dt·‖A‖₁/k ≤ 0.02 (local error ~10⁻¹⁰ of the
    flow) — the zero-order hold's reference, which shares nothing with its matrix exponential."""
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    steps = max(8, int(np.ceil(dt * np.abs(A).sum(axis=0).max(initial=0.0) / 0.02)))
    h = dt / steps

    def rate(Phi, Psi):
        return A @ Phi, A @ Psi + B

    Phi, Psi = np.eye(A.shape[0]), np.zeros(B.shape)
    for _ in range(steps):
        k1 = rate(Phi, Psi)
        k2 = rate(Phi + 0.5 * h * k1[0], Psi + 0.5 * h * k1[1])
        k3 = rate(Phi + 0.5 * h * k2[0], Psi + 0.5 * h * k2[1])
        k4 = rate(Phi + h * k3[0], Psi + h * k3[1])
        Phi = Phi + h / 6.0 * (k1[0] + 2.0 * k2[0] + 2.0 * k3[0] + k4[0])
        Psi = Psi + h / 6.0 * (k1[1] + 2.0 * k2[1] + 2.0 * k3[1] + k4[1])
    return Phi, Psi


@dataclass(frozen=True)
class BlockError:
    """One block's largest absolute error, the scale it is measured against, and their ratio."""

    name: str
    max_abs: float
    max_rel: float
    scale: float = float("nan")


@dataclass(frozen=True)
class ComparisonReport:
    """Per-block errors of (A, B, M⁻¹, λ, ∂λ, A_d, B_d) against a reference.

    max_rel = max|ours − ref| / scale, where scale is the size of what the block's
    entries are made of (:func:`compare`): a block that is zero by structure is
    measured against the terms that cancel in it, not against its own noise.

    ``blocks``: one BlockError (name, max_abs, max_rel, scale) per compared block, in the order A,
    B, M⁻¹, λ, ∂λ/∂z, ∂λ/∂τ, A_d, B_d (those the linearization has).
    """

    blocks: list[BlockError]

    @property
    def max_rel(self) -> float:
        return max(b.max_rel for b in self.blocks)

    def passed(self, tolerance: float) -> bool:
        """True when every block's max_rel is finite and at most ``tolerance`` (relative, e.g. 1e-6)."""
        return all(np.isfinite(b.max_rel) and b.max_rel <= tolerance for b in self.blocks)

    def as_dict(self) -> dict:
        """{block name: {"max_abs": …, "max_rel": …}}: the report as plain numbers (JSON)."""
        return {b.name: {"max_abs": b.max_abs, "max_rel": b.max_rel} for b in self.blocks}

    def summary(self, tolerance: float = 1e-6) -> str:
        """A table of the blocks under a PASS/FAIL line against ``tolerance``."""
        width = max(len(b.name) for b in self.blocks)
        lines = [f"{'PASS' if self.passed(tolerance) else 'FAIL'}: largest relative error {self.max_rel:.2e} "
                 f"(tolerance {tolerance:g})",
                 f"{'block':<{width}}  {'max abs':>10}  {'scale':>10}  {'max rel':>10}"]
        lines += [f"{b.name:<{width}}  {b.max_abs:10.2e}  {b.scale:10.2e}  {b.max_rel:10.2e}" for b in self.blocks]
        return "\n".join(lines)


def _row_col_blocks(model: AnyModel):
    n = model.n_joints
    if model.floating_base:
        rows = [("vdot", slice(0, 6)), ("rdot", slice(6, 6 + n))]
        kinematic = [("Hdot", slice(0, 6)), ("sdot", slice(6, 6 + n))]
        cols = [("H", slice(0, 6)), ("s", slice(6, 6 + n)), ("v", slice(6 + n, 12 + n)),
                ("r", slice(12 + n, 12 + 2 * n))]
    else:
        rows, kinematic = [("rdot", slice(0, n))], [("sdot", slice(0, n))]
        cols = [("s", slice(0, n)), ("r", slice(n, 2 * n))]
    return rows, kinematic, cols


def compare(model: AnyModel, A: NDArray[np.float64], B: NDArray[np.float64], M_inv: NDArray[np.float64],
            A_ref: NDArray[np.float64], B_ref: NDArray[np.float64], M_inv_ref: NDArray[np.float64],
            forces_jacobians: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
            forces_jacobians_ref: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
            step_jacobians: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
            step_jacobians_ref: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None, *,
            contact_forces: NDArray[np.float64] | None = None, contact_forces_ref: NDArray[np.float64] | None = None,
            magnitudes: dict | None = None) -> ComparisonReport:
    """Compare A (its dynamics rows v̇, ṙ and its kinematic rows ż_H, ż_s), the
    dynamics rows of B, and M⁻¹ block by block; with contacts also λ, ∂λ/∂z per column
    block and ∂λ/∂τ (each a pair (∂λ/∂z, ∂λ/∂τ)); with a step also A_d, B_d per row
    block (each a pair (A_d, B_d); rows H+ … r+ are the next state's).

    Each block's error is max|ours − ref| / scale.  ``magnitudes`` (what
    :func:`validate` passes) maps "A" (the dynamics rows), "B", "lambda", "B_d" to entrywise magnitudes of the
    terms each reference entry is a sum of (same shape as the reference, e.g. |M⁻¹|·|D|
    for −M⁻¹D): the scale of a block is then the largest of them in the block, so a
    block that is zero by structure (a locked robot's ṙ) compares the noise of both
    sides with the terms that cancel, and a non-zero block is measured against the
    sizes it is made of (≥ its own largest entry); floored at 10⁻³ of the largest term
    of the whole matrix, for blocks whose terms all vanish at this state (∂ṙ/∂r at
    ν = 0 is quadratic in ν).  Elsewhere, and for the groups
    without magnitudes, the scale is the block's largest reference entry floored at
    10⁻³ of its matrix's (the kinematic rows hold I: ≥ 10⁻³; M⁻¹ and λ are one block each).
    """
    N = model.n_velocities
    rows, kinematic, cols = _row_col_blocks(model)
    magnitudes = magnitudes or {}
    blocks = []

    def add(name, ours, ref, matrix_scale, terms=None):
        ref = np.asarray(ref, dtype=float)
        if ref.size == 0:  # e.g. the joint blocks of a robot without joints (a quadrotor)
            return
        err = np.abs(np.asarray(ours, dtype=float) - ref)
        max_abs = float(err.max())
        scale = float(np.abs(ref).max())
        if terms is not None:  # (block's terms, all of its matrix's terms)
            scale = max(scale, float(np.max(terms[0])), 1e-3 * float(np.max(terms[1])))
        else:
            scale = max(scale, 1e-3 * matrix_scale)
        scale = max(scale, 1e-300)
        blocks.append(BlockError(name, max_abs, max_abs / scale if np.isfinite(max_abs) else np.inf, scale))

    def terms_of(key, rs, cs):
        T = magnitudes.get(key)
        return None if T is None else (np.asarray(T)[rs, cs], T)

    A_dyn, A_dyn_ref = np.asarray(A)[N:], np.asarray(A_ref)[N:]
    B_dyn, B_dyn_ref = np.asarray(B)[N:], np.asarray(B_ref)[N:]
    a_scale, b_scale = float(np.abs(A_dyn_ref).max(initial=0.0)), float(np.abs(B_dyn_ref).max(initial=0.0))
    for rname, rs in rows:
        for cname, cs in cols:
            add(f"A[{rname},{cname}]", A_dyn[rs, cs], A_dyn_ref[rs, cs], a_scale, terms_of("A", rs, cs))
    A_kin, A_kin_ref = np.asarray(A)[:N], np.asarray(A_ref)[:N]
    for rname, rs in kinematic:
        for cname, cs in cols:
            add(f"A[{rname},{cname}]", A_kin[rs, cs], A_kin_ref[rs, cs], float(np.abs(A_kin_ref).max(initial=0.0)))
    for rname, rs in rows:
        add(f"B[{rname}]", B_dyn[rs], B_dyn_ref[rs], b_scale, terms_of("B", rs, slice(None)))
    add("M_inv", M_inv, M_inv_ref, float(np.abs(M_inv_ref).max()))
    if contact_forces_ref is not None:
        add("lambda", contact_forces, contact_forces_ref, float(np.abs(contact_forces_ref).max(initial=0.0)),
            None if "lambda" not in magnitudes else (magnitudes["lambda"], magnitudes["lambda"]))
    if forces_jacobians is not None:
        if forces_jacobians_ref is None:
            raise ValueError("forces_jacobians_ref: the reference is needed with forces_jacobians")
        (dz, dtau), (dz_ref, dtau_ref) = forces_jacobians, forces_jacobians_ref
        z_scale = float(np.abs(dz_ref).max(initial=0.0))
        for cname, cs in cols:
            add(f"dlambda/dz[{cname}]", np.asarray(dz)[:, cs], np.asarray(dz_ref)[:, cs], z_scale)
        add("dlambda/dtau", dtau, dtau_ref, float(np.abs(dtau_ref).max(initial=0.0)))
    if step_jacobians is not None:
        if step_jacobians_ref is None:
            raise ValueError("step_jacobians_ref: the reference is needed with step_jacobians")
        (A_d, B_d), (A_d_ref, B_d_ref) = step_jacobians, step_jacobians_ref
        next_rows = [(name.removesuffix("dot") + "+", slice(N * half + rs.start, N * half + rs.stop))
                     for half, group in enumerate((kinematic, rows)) for name, rs in group]
        a_scale, b_scale = float(np.abs(A_d_ref).max()), float(np.abs(B_d_ref).max(initial=0.0))
        for rname, rs in next_rows:
            for cname, cs in cols:
                add(f"A_d[{rname},{cname}]", np.asarray(A_d)[rs, cs], np.asarray(A_d_ref)[rs, cs], a_scale)
            add(f"B_d[{rname}]", np.asarray(B_d)[rs], np.asarray(B_d_ref)[rs], b_scale,
                terms_of("B_d", rs, slice(None)))
    return ComparisonReport(blocks)


def _evaluation_point(model: AnyModel, state, linearization, joint_torques):
    """(state, τ) of a single-state linearization of ``model``, checked against what was given."""
    check_linearization(model, linearization)
    if np.ndim(linearization.A) != 2:
        raise ValueError("linearization: validate takes the Linearization of one state (for a horizon, validate "
                         "each state)")
    remembered, torques = linearization.state, linearization.joint_torques
    if state is not None:
        check_state(model, state)
    if state is None:
        if remembered is None:
            raise ValueError("this linearization does not remember its state: pass it, validate(model, state, lin)")
        state = remembered
    elif remembered is not None and not _same_state(state, remembered):
        raise ValueError("the state given is not the one this linearization was computed at")
    if joint_torques is None:
        joint_torques = torques
    elif torques is not None and not np.array_equal(np.asarray(joint_torques, dtype=float), torques):
        raise ValueError("the joint_torques given are not the ones this linearization was computed at")
    return state, joint_torques


def _same_state(a: State, b: State) -> bool:
    return all((x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
               for x, y in ((a.base_pose, b.base_pose), (a.joint_positions, b.joint_positions),
                            (a.base_twist, b.base_twist), (a.joint_velocities, b.joint_velocities)))


def _mass_matrix(model, state: State) -> np.ndarray:
    """M by the CRBA; for a CoupledModel Ĝᵀ M_tree Ĝ (coupling.py)."""
    if isinstance(model, CoupledModel):
        G = model.velocity_map
        return G.T @ mass_matrix(model.tree, model.tree_state(state).joint_positions) @ G
    return mass_matrix(model, state.joint_positions)


def _contact_jacobian(model, state: State, contacts) -> np.ndarray:
    """J (m, N) of ``contacts`` in the model's coordinates (Ĝ-reduced for a CoupledModel)."""
    tree = getattr(model, "tree", model)
    full = model.tree_state(state) if tree is not model else state
    X_up = body_transforms(tree, full.joint_positions)
    held = contact_set(model, contacts)
    J, _ = contact_kinematics(model, full, held, X_up, *bias_motion(tree, full, X_up))
    J = J[:held.m_contacts]  # (a CoupledModel's coupling rows follow)
    return J @ model.velocity_map if tree is not model else J


def term_magnitudes(model: AnyModel, state: State, A_ref: NDArray[np.float64], B_ref: NDArray[np.float64],
                    M_inv_ref: NDArray[np.float64], M_ref: NDArray[np.float64], contacts: Contacts = (),
                    forces_ref: NDArray[np.float64] | None = None,
                    forces_jacobians_ref: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
                    joint_torques: ArrayLike | None = None, dt: float | None = None) -> dict:
    """The sizes of the terms each reference entry is a sum of, for :func:`compare`'s scales.

    Dynamics rows: M ν̇ = Sτ − h(z) + Jᵀλ, so ∂ν̇/∂z = M⁻¹·(M A_dyn) is a sum of
    M⁻¹ times the derivatives of the generalized forces, and those are themselves
    the derivatives of the applied and bias forces plus Jᵀ∂λ/∂z (which cancel each
    other on a locked robot).  Hence |M⁻¹|·(|M A_dyn| + |Jᵀ|·|∂λ/∂z|) for A and
    |M⁻¹|·(|M B_dyn| + |Jᵀ|·|∂λ/∂τ|) for B, every factor from the reference (CRBA,
    the differences) but J, the engine's contact Jacobian, which only sizes the scale
    (the contact geometry itself is checked in test/test_contact_geometry.py).  λ:
    |λ| + |∂λ/∂τ|·|τ|.  B_d of a step dt: dt²·|B| terms in the position rows and dt·|B|
    in the velocity rows (ν⁺ = ν + dt ν̇, q⁺ = q·exp(dt ν⁺))."""
    N = model.n_velocities
    M_abs_inv = np.abs(M_inv_ref)
    generalized_A = np.abs(M_ref @ np.asarray(A_ref)[N:])
    generalized_B = np.abs(M_ref @ np.asarray(B_ref)[N:])
    magnitudes = {}
    if contacts:
        if forces_ref is None or forces_jacobians_ref is None or joint_torques is None:
            raise ValueError("forces_ref, forces_jacobians_ref, joint_torques: needed with contacts")
        J_abs = np.abs(_contact_jacobian(model, state, contacts))
        dz_ref, dtau_ref = forces_jacobians_ref
        generalized_A = generalized_A + J_abs.T @ np.abs(dz_ref)
        generalized_B = generalized_B + J_abs.T @ np.abs(dtau_ref)
        magnitudes["lambda"] = np.abs(forces_ref) + np.abs(dtau_ref) @ np.abs(joint_torques)
    magnitudes["A"] = M_abs_inv @ generalized_A
    magnitudes["B"] = M_abs_inv @ generalized_B
    if dt is not None:
        magnitudes["B_d"] = np.concatenate([dt * dt * magnitudes["B"], dt * magnitudes["B"]])
    return magnitudes


def validate(model: AnyModel, state: State | Linearization | Linearizer,
             linearization: Linearization | Linearizer | None = None, joint_torques: ArrayLike | None = None,
             step: float = DEFAULT_STEP) -> ComparisonReport:
    """Check a :class:`~robot_linearization.Linearization` against finite
    differences (A, B, :func:`finite_difference_linearization`) and inv(CRBA) (M⁻¹);
    with contacts (linearization.contacts) against differences of the constrained
    forward dynamics, ∂λ included, and λ against a dense KKT solve built from the CRBA, the inverse
    dynamics and the contact frames' poses (:func:`reference_constrained_dynamics`).

    With a step (lin.A_d, lin.dt) also A_d, B_d: against finite differences of
    :func:`~robot_linearization.step` ("euler"), or the integrated flow (:func:`held_input_flow`) of the
    differenced A, B ("zoh").  Each block is measured against the size of the terms
    it is made of (:func:`term_magnitudes`, :func:`compare`).

    ``validate(model, lin)`` checks it at the state and torques it remembers;
    ``validate(model, state, lin[, τ])`` (the older form) must name the same ones,
    else ValueError — never a comparison at another input.

    ``joint_torques`` τ (n,): as the linearization's (default: those it remembers); ``step``: the
    finite differences' largest step (:func:`finite_difference_linearization`). Returns a
    :class:`ComparisonReport`; its ``passed(tolerance)`` says whether every block is within a
    relative ``tolerance``.
    """
    if linearization is None:
        return _validate(model, None, state, joint_torques, step)
    return _validate(model, state, linearization, joint_torques, step)


def _validate(model: AnyModel, state, linearization, joint_torques, step: float) -> ComparisonReport:
    state, joint_torques = _evaluation_point(model, state, linearization, joint_torques)
    lin, contacts = linearization, linearization.contacts
    torques = np.zeros(model.n_joints) if joint_torques is None else np.asarray(joint_torques, dtype=float)
    before, jump = state, lin.impact
    if jump is not None:  # a touchdown (docs/impacts.md): A, B, λ are those at the post-impact state
        state = jump.state
    M_ref = _mass_matrix(model, state)
    M_inv_ref = np.linalg.inv(M_ref)
    forces = forces_ref = lam = lam_ref = steps = steps_ref = None
    if contacts:
        A_fd, B_fd, dz_fd, dtau_fd = finite_difference_linearization(model, state, torques, step, contacts)
        forces = (lin.contact_forces_state_jacobian, lin.contact_forces_input_jacobian)
        forces_ref = (dz_fd, dtau_fd)
        lam, lam_ref = lin.contact_forces, reference_constrained_dynamics(model, state, torques, contacts, step)[1]
    else:
        A_fd, B_fd = finite_difference_linearization(model, state, torques, step)
    if lin.A_d is not None:
        steps = (lin.A_d, lin.B_d)
        if lin.discretization == "zoh":
            steps_ref = held_input_flow(A_fd, B_fd, lin.dt)
            if jump is not None:
                steps_ref = (steps_ref[0] @ finite_difference_impact(model, before, contacts, jump.restitution,
                                                                     step)[0], steps_ref[1])
        else:
            steps_ref = finite_difference_step(model, before, torques, lin.dt, contacts, step,
                                               previous_contacts=lin.previous_contacts,
                                               restitution=0.0 if jump is None else jump.restitution)
    magnitudes = term_magnitudes(model, state, A_fd, B_fd, M_inv_ref, M_ref, contacts, lam_ref, forces_ref, torques,
                                 lin.dt if lin.A_d is not None else None)
    return compare(model, lin.A, lin.B, lin.M_inv, A_fd, B_fd, M_inv_ref, forces, forces_ref, steps, steps_ref,
                   contact_forces=lam, contact_forces_ref=lam_ref, magnitudes=magnitudes)
