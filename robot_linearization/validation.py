"""Independent checks of a linearization: geometric finite differences of the
forward dynamics on the state's Lie group, inv(CRBA), and a per-block report.

Used by the tests, the demo and the ROS validation service.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .algorithms.constrained_dynamics import constrained_forward_dynamics
from .algorithms.forward_dynamics import forward_dynamics
from .contacts import as_contacts
from .coupling import CoupledModel
from .algorithms.mass_matrix import mass_matrix
from .discretization import step as integrator_step, zero_order_hold
from .model import Model, State
from .spatial import se3_exp, se3_log

DEFAULT_STEP = 1e-3


def perturb(model: Model, state: State, z: np.ndarray) -> State:
    """The state g·exp(z): H·exp(z_H^), s + z_s, v + z_v, r + z_r (thesis (3.4))."""
    n = model.n_joints
    if not model.floating_base:
        return State(joint_positions=state.joint_positions + z[:n], joint_velocities=state.joint_velocities + z[n:])
    return State(base_pose=state.base_pose @ se3_exp(z[:6]),
                 joint_positions=state.joint_positions + z[6:6 + n],
                 base_twist=state.base_twist + z[6 + n:12 + n],
                 joint_velocities=state.joint_velocities + z[12 + n:])


def state_difference(model: Model, a: State, b: State) -> np.ndarray:
    """z (2N,) with b = a·exp(z) (the inverse of :func:`perturb`): [log(H_a⁻¹ H_b), Δs, Δv, Δr]."""
    parts = [b.joint_positions - a.joint_positions]
    if model.floating_base:
        parts = [se3_log(np.linalg.inv(a.base_pose) @ b.base_pose)] + parts + [b.base_twist - a.base_twist]
    return np.concatenate(parts + [b.joint_velocities - a.joint_velocities])


def _vector_field(model: Model, state: State, torques: np.ndarray, contacts=()) -> np.ndarray:
    """Left-trivialised vector field (v, r, v̇, ṙ) (3.22), (2N,), followed by the
    contact forces λ (m,) of the constrained dynamics when there are contacts."""
    if contacts or isinstance(model, CoupledModel):
        nu_dot, forces = constrained_forward_dynamics(model, state, torques, contacts)
    else:
        base_acceleration, joint_accelerations = forward_dynamics(model, state, torques)
        nu_dot = joint_accelerations if base_acceleration is None else np.concatenate(
            [base_acceleration, joint_accelerations])
        forces = np.zeros(0)
    velocities = state.joint_velocities if not model.floating_base else np.concatenate(
        [state.base_twist, state.joint_velocities])
    return np.concatenate([velocities, nu_dot, forces])


def finite_difference_linearization(model: Model, state: State, joint_torques=None, step: float = DEFAULT_STEP,
                                    contacts=()):
    """(A, B) by 4th-order central differences of the ABA(mb) along g·exp(±h e_j),
    g·exp(±2h e_j), and τ ± δ e_j.

    The dynamics rows are D₁λ∘DL_g(e) (2.47), differences of the forward dynamics.
    The kinematic rows (ż_H, ż_s) come from the flow instead (:func:`flow_kinematic_rows`),
    so that no formula of A (such as its −v× block) is assumed by the reference.
    The 4th-order stencil keeps truncation negligible at a step large enough that
    round-off stays small even when the accelerations are large (a falling or
    spinning robot).  Costs 4·2N + 2n forward-dynamics evaluations.

    With contacts, the constrained forward dynamics are differenced, and
    (A, B, ∂λ/∂z (m, 2N), ∂λ/∂τ (m, n)) is returned.
    """
    n, N = model.n_joints, model.n_velocities
    torques = np.zeros(n) if joint_torques is None else np.asarray(joint_torques, dtype=float)
    rows = 2 * N + sum(c.dimension for c in as_contacts(contacts))
    A = np.empty((rows, 2 * N))
    for j in range(2 * N):
        z = np.zeros(2 * N)
        z[j] = step
        f = [_vector_field(model, perturb(model, state, k * z), torques, contacts) for k in (-2, -1, 1, 2)]
        A[:, j] = (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * step)
    A[:N] = flow_kinematic_rows(model, state)
    # The dynamics are affine in τ, so central differences have no truncation
    # error there: a large step keeps round-off negligible.
    torque_step = max(1.0, float(np.abs(torques).max(initial=0.0)))
    B = np.empty((rows, n))
    for j in range(n):
        dt = np.zeros(n)
        dt[j] = torque_step
        B[:, j] = (_vector_field(model, state, torques + dt, contacts)
                   - _vector_field(model, state, torques - dt, contacts)) / (2 * torque_step)
    if contacts:
        return A[:2 * N], B[:2 * N], A[2 * N:], B[2 * N:]
    return A, B


def finite_difference_step(model: Model, state: State, joint_torques, dt: float, contacts=(),
                           step: float = DEFAULT_STEP):
    """(A_d (2N, 2N), B_d (2N, n)) of :func:`~robot_linearization.step` by 4th-order central
    differences along g·exp(±h e_j), g·exp(±2h e_j) and τ ± δ e_j, the result measured
    left-trivialised from the nominal step (:func:`state_difference`)."""
    n, N = model.n_joints, model.n_velocities
    torques = np.zeros(n) if joint_torques is None else np.asarray(joint_torques, dtype=float)
    nominal = integrator_step(model, state, torques, dt, contacts)

    def after(start, tau):
        return state_difference(model, nominal, integrator_step(model, start, tau, dt, contacts))

    A_d = np.empty((2 * N, 2 * N))
    for j in range(2 * N):
        z = np.zeros(2 * N)
        z[j] = step
        f = [after(perturb(model, state, k * z), torques) for k in (-2, -1, 1, 2)]
        A_d[:, j] = (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * step)
    torque_step = max(1.0, float(np.abs(torques).max(initial=0.0)))  # (ν⁺ is affine in τ; H⁺ nearly so)
    B_d = np.empty((2 * N, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1e-3 * torque_step
        f = [after(state, torques + k * e) for k in (-2, -1, 1, 2)]
        B_d[:, j] = (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * e[j])
    return A_d, B_d


def flow_kinematic_rows(model: Model, state: State, step: float = 1e-4) -> np.ndarray:
    """The kinematic rows of A (N, 2N) by differencing the flow of the configuration.

    Over a time t the configuration moves to (H·exp(t v^), s + t r).  For the
    perturbed state the left-trivialised difference to the nominal one is
    z_q(t) = [log(exp(−t v) exp(z_H) exp(t (v + z_v))); z_s + t z_r]; its mixed
    second difference in (t, z_j) at 0 is column j of [ż_H; ż_s] = A[:N] z.
    Central in both, so the truncation is O(step²)."""
    N = model.n_velocities
    rows = np.empty((N, 2 * N))

    def z_q(z, t):
        if not model.floating_base:
            return z[:N] + t * z[N:]
        v = state.base_twist
        H = se3_exp(-t * v) @ se3_exp(z[:6]) @ se3_exp(t * (v + z[N:N + 6]))
        return np.concatenate([se3_log(H), z[6:N] + t * z[N + 6:]])

    for j in range(2 * N):
        z = np.zeros(2 * N)
        z[j] = step
        rows[:, j] = (z_q(z, step) - z_q(-z, step) - z_q(z, -step) + z_q(-z, -step)) / (4 * step * step)
    return rows


@dataclass(frozen=True)
class BlockError:
    name: str
    max_abs: float
    max_rel: float


@dataclass(frozen=True)
class ComparisonReport:
    """Per-block errors of (A, B, M⁻¹) against a reference.

    max_rel = max|ours − ref| / scale with scale = the block's largest |entry|,
    floored at 10⁻³ of the matrix's largest |entry| so that blocks which are zero
    by structure (e.g. ∂ṙ/∂z_H) are measured against the matrix they live in.
    """

    blocks: list[BlockError]

    @property
    def max_rel(self) -> float:
        return max(b.max_rel for b in self.blocks)

    def passed(self, tolerance: float) -> bool:
        return all(np.isfinite(b.max_rel) and b.max_rel <= tolerance for b in self.blocks)

    def as_dict(self) -> dict:
        return {b.name: {"max_abs": b.max_abs, "max_rel": b.max_rel} for b in self.blocks}

    def summary(self, tolerance: float = 1e-6) -> str:
        """A table of the blocks under a PASS/FAIL line against ``tolerance``."""
        width = max(len(b.name) for b in self.blocks)
        lines = [f"{'PASS' if self.passed(tolerance) else 'FAIL'}: largest relative error {self.max_rel:.2e} "
                 f"(tolerance {tolerance:g})",
                 f"{'block':<{width}}  {'max abs':>10}  {'max rel':>10}"]
        lines += [f"{b.name:<{width}}  {b.max_abs:10.2e}  {b.max_rel:10.2e}" for b in self.blocks]
        return "\n".join(lines)


def _row_col_blocks(model: Model):
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


def compare(model: Model, A, B, M_inv, A_ref, B_ref, M_inv_ref, forces_jacobians=None,
            forces_jacobians_ref=None, step_jacobians=None, step_jacobians_ref=None) -> ComparisonReport:
    """Compare A (its dynamics rows v̇, ṙ and its kinematic rows ż_H, ż_s), the
    dynamics rows of B, and M⁻¹ block by block; with contacts also ∂λ/∂z per column
    block and ∂λ/∂τ (each a pair (∂λ/∂z, ∂λ/∂τ)); with a step also A_d, B_d per row
    block (each a pair (A_d, B_d); rows H+ … r+ are the next state's)."""
    N = model.n_velocities
    rows, kinematic, cols = _row_col_blocks(model)
    blocks = []

    def add(name, ours, ref, matrix_scale):
        if np.size(ref) == 0:  # e.g. the joint blocks of a robot without joints (a quadrotor)
            return
        err = np.abs(np.asarray(ours) - np.asarray(ref))
        max_abs = float(err.max()) if err.size else 0.0
        scale = max(float(np.abs(ref).max()) if ref.size else 0.0, 1e-3 * matrix_scale, 1e-300)
        blocks.append(BlockError(name, max_abs, max_abs / scale if np.isfinite(max_abs) else np.inf))

    A_dyn, A_dyn_ref = np.asarray(A)[N:], np.asarray(A_ref)[N:]
    B_dyn, B_dyn_ref = np.asarray(B)[N:], np.asarray(B_ref)[N:]
    a_scale, b_scale = float(np.abs(A_dyn_ref).max(initial=0.0)), float(np.abs(B_dyn_ref).max(initial=0.0))
    for rname, rs in rows:
        for cname, cs in cols:
            add(f"A[{rname},{cname}]", A_dyn[rs, cs], A_dyn_ref[rs, cs], a_scale)
    A_kin, A_kin_ref = np.asarray(A)[:N], np.asarray(A_ref)[:N]
    for rname, rs in kinematic:
        for cname, cs in cols:
            add(f"A[{rname},{cname}]", A_kin[rs, cs], A_kin_ref[rs, cs], float(np.abs(A_kin_ref).max(initial=0.0)))
    for rname, rs in rows:
        add(f"B[{rname}]", B_dyn[rs], B_dyn_ref[rs], b_scale)
    add("M_inv", M_inv, M_inv_ref, float(np.abs(M_inv_ref).max()))
    if forces_jacobians is not None:
        (dz, dtau), (dz_ref, dtau_ref) = forces_jacobians, forces_jacobians_ref
        z_scale = float(np.abs(dz_ref).max(initial=0.0))
        for cname, cs in cols:
            add(f"dlambda/dz[{cname}]", np.asarray(dz)[:, cs], np.asarray(dz_ref)[:, cs], z_scale)
        add("dlambda/dtau", dtau, dtau_ref, float(np.abs(dtau_ref).max(initial=0.0)))
    if step_jacobians is not None:
        (A_d, B_d), (A_d_ref, B_d_ref) = step_jacobians, step_jacobians_ref
        next_rows = [(name.removesuffix("dot") + "+", slice(N * half + rs.start, N * half + rs.stop))
                     for half, group in enumerate((kinematic, rows)) for name, rs in group]
        a_scale, b_scale = float(np.abs(A_d_ref).max()), float(np.abs(B_d_ref).max(initial=0.0))
        for rname, rs in next_rows:
            for cname, cs in cols:
                add(f"A_d[{rname},{cname}]", np.asarray(A_d)[rs, cs], np.asarray(A_d_ref)[rs, cs], a_scale)
            add(f"B_d[{rname}]", np.asarray(B_d)[rs], np.asarray(B_d_ref)[rs], b_scale)
    return ComparisonReport(blocks)


def _evaluation_point(model: Model, state, linearization, joint_torques):
    """(state, τ) of a single-state linearization of ``model``, checked against what was given."""
    if not hasattr(linearization, "A") or np.ndim(linearization.A) != 2:
        raise ValueError("validate takes the Linearization of one state (for a horizon, validate each state)")
    if tuple(linearization.state_labels) != tuple(model.state_labels):
        raise ValueError(f"this linearization is not of model '{model.name}' (its state has "
                         f"{len(linearization.state_labels)} entries, the model's {len(model.state_labels)}, "
                         "or they name other joints)")
    remembered, torques = linearization.state, linearization.joint_torques
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


def validate(model: Model, state, linearization=None, joint_torques=None, step: float = DEFAULT_STEP
             ) -> ComparisonReport:
    """Check a :class:`~robot_linearization.Linearization` against finite
    differences (A, B) and inv(CRBA) (M⁻¹); with contacts (linearization.contacts)
    against differences of the constrained forward dynamics, ∂λ included.

    With a step (lin.A_d, lin.dt) also A_d, B_d: against finite differences of
    :func:`~robot_linearization.step` ("euler"), or the zero-order hold of the
    differenced A, B ("zoh").

    ``validate(model, lin)`` checks it at the state and torques it remembers;
    ``validate(model, state, lin[, τ])`` (the older form) must name the same ones,
    else ValueError — never a comparison at another input.
    """
    if linearization is None:
        state, linearization = None, state
    state, joint_torques = _evaluation_point(model, state, linearization, joint_torques)
    lin, contacts = linearization, linearization.contacts
    M_inv_ref = np.linalg.inv(_mass_matrix(model, state))
    forces = forces_ref = steps = steps_ref = None
    if contacts:
        A_fd, B_fd, dz_fd, dtau_fd = finite_difference_linearization(model, state, joint_torques, step, contacts)
        forces = (lin.contact_forces_state_jacobian, lin.contact_forces_input_jacobian)
        forces_ref = (dz_fd, dtau_fd)
    else:
        A_fd, B_fd = finite_difference_linearization(model, state, joint_torques, step)
    if lin.A_d is not None:
        steps = (lin.A_d, lin.B_d)
        steps_ref = zero_order_hold(A_fd, B_fd, lin.dt) if lin.discretization == "zoh" \
            else finite_difference_step(model, state, joint_torques, lin.dt, contacts, step)
    return compare(model, lin.A, lin.B, lin.M_inv, A_fd, B_fd, M_inv_ref, forces, forces_ref, steps, steps_ref)
