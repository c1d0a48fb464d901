"""The geometric linearization ż = A z + B w (thesis Propositions 3.1–3.3).

State perturbation z = [z_H (6), z_s (n), z_v (6), z_r (n)] about (H, s, v, r),
left-trivialised: H → H·exp(z_H^), s → s + z_s, v → v + z_v, r → r + z_r, with
z_H = [translation; rotation] in the base frame.  Input perturbation w = δτ.
For a fixed base, z = [z_s, z_r].
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algorithms.constrained_dynamics import ContactArrays, contact_set
from .arguments import check_model, choice, joint_vector, positive_number
from .compiled import TypedCall, announce_compilation
from .contact_linearization import linearize_with_contacts
from .contacts import Contact, Contacts
from .coupling import AnyModel, CoupledModel, tree_of
from .discretization import METHODS, NO_STEP, step_jacobians
from .free_linearization import coupled_linearize_into, linearize_into, linearize_states_into
from .impacts import Impact, impact, restitution_coefficient, touchdown
from .kernel_choice import current, kernel_argument, runnable
from .model import Model, State, check_state, stack_states, state_arrays, state_problem
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

    A: NDArray[np.float64]
    B: NDArray[np.float64]
    M_inv: NDArray[np.float64]
    base_acceleration: NDArray[np.float64] | None
    joint_accelerations: NDArray[np.float64]
    state_labels: tuple[str, ...]
    contact_forces: NDArray[np.float64] | None = None
    contact_forces_state_jacobian: NDArray[np.float64] | None = None
    contact_forces_input_jacobian: NDArray[np.float64] | None = None
    contact_labels: tuple = ()
    contacts: tuple = ()
    state: State | tuple[State, ...] | None = None
    joint_torques: NDArray[np.float64] | None = None
    A_d: NDArray[np.float64] | None = None
    B_d: NDArray[np.float64] | None = None
    dt: float | None = None
    discretization: str | None = None
    impact: Impact | tuple[Impact | None, ...] | None = None
    previous_contacts: tuple | None = None

    @classmethod
    def _make(cls, fields: dict | None) -> "Linearization":
        """The same object as Linearization(**fields) (None: no fields), built by dict updates: a
        frozen dataclass's __init__ sets each of its 19 fields through object.__setattr__,
        ≈ 3 µs of every control cycle."""
        self = object.__new__(cls)
        values = self.__dict__
        values.update(_DEFAULTS)
        if fields:
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


def linearize_allocating(model: AnyModel, state: State, joint_torques: ArrayLike | None, held: ContactArrays | None,
                         previous: ContactArrays | None, e: float, step: dict, kernel: str) -> Linearization:
    """:func:`~robot_linearization.linearize` with its arguments checked (``held``, ``previous``: the
    contact sets, constrained_dynamics.contact_set's, or None; ``e``: the restitution; ``step``:
    check_step's; ``kernel``: kernel_argument's) and arrays allocated for the result: every case,
    where rl.linearize has no lent arrays for it (linearizer.py)."""
    if previous is not None:
        return _linearize_held(model, state, joint_torques, held if held is not None else contact_set(model, ()),
                               previous, e, step, kernel)
    if held is not None:
        return _linearize_with_contacts(model, state, joint_torques, held, step, kernel)
    return _linearize_free(model, state, joint_torques, step, kernel)


def _linearize_free(model: AnyModel, state: State, joint_torques, step: dict, kernel: str) -> Linearization:
    """linearize without contacts (a CoupledModel: under its couplings)."""
    if isinstance(model, CoupledModel):
        return _linearize_coupled(model, state, joint_torques, step)
    arrays = state_arrays(model, state, joint_torques)  # (the kernel checks the values)
    dt = step["dt"]
    fused = dt is not None and step["discretization"] == "euler"
    generic = _generic_free_call(model)
    shape_A, shape_B, shape_M, shape_nu = generic[2]
    out = (np.empty(shape_A), np.empty(shape_B), np.empty(shape_M), np.empty(shape_nu)) + (
        (np.empty(shape_A), np.empty(shape_B)) if fused else NO_STEP)
    data, call = runnable(model, (), "linearize", kernel) or generic[:2]
    run_linearize_into(model, data, arrays, out, dt if fused else 0.0, call.call)
    A, B, M_inv, nu_dot = out[:4]
    return linearization_of(model, A, B, M_inv, nu_dot, state, arrays[4], step, out[4:] if fused else None)


def _generic_free_call(model: Model) -> tuple:
    """(this thread's workspace data of ``model``, a compiled.TypedCall of :func:`linearize_into`, the
    shapes of A, B, M_inv, ν̇): the generic kernel called as the generated one is, without numba's
    dispatcher typing every argument of every call (the state_arrays and the outputs have the model's
    shapes at every call)."""
    local = model.thread_local
    found = getattr(local, "generic_linearize", None)
    if found is None:
        N, n = model.n_velocities, model.n_joints
        found = local.generic_linearize = (workspace(model).data, TypedCall(linearize_into),
                                           ((2 * N, 2 * N), (2 * N, n), (N, N), (N,)))
    return found


def run_linearize_into(model: Model, data: Any, arrays: tuple, out: tuple, dt: float,
                       call: Callable[..., int] = linearize_into) -> None:
    """:func:`linearize_into` on a workspace's ``data``, the :func:`~robot_linearization.model.state_arrays`
    ``arrays`` and ``out`` = (A (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,), A_d, B_d) (with dt > 0 an
    Euler step's (2N, 2N), (2N, n), else discretization.NO_STEP), called as ``call``: the kernel, a
    compiled.TypedCall of it, or of a generated kernel's (generated.GeneratedKernel.call, whose
    ``data`` is its scratch).  ValueError at a state that has no linearization (then ``out`` holds
    no result)."""
    announce_compilation(linearize_into)
    check_status(model, call(data, arrays, out, dt), arrays)


def check_status(model: Model, status: int, arrays: tuple) -> None:
    """ValueError (one line) unless ``status``, a linearization kernel's at the state ``arrays``, is −1 (a result)."""
    if status != -1:
        raise ValueError(_status_message(model, status, arrays))


def linearize_trajectory(model: AnyModel, states: Sequence[State], joint_torques: ArrayLike | None = None, *,
                         workers: int | None = None, contacts: Contacts | Sequence[Contacts] = None,
                         dt: float | None = None, discretization: str | None = None,
                         previous_contacts: Contacts = None, restitution: float = 0.0,
                         kernel: str | None = None) -> Linearization:
    """Linearize K states at once (e.g. an MPC horizon): A (K, 2N, 2N), B (K, 2N, n),
    M_inv (K, N, N), accelerations with a leading K axis.

    joint_torques (K, n), default zeros.  The states are split over ``workers``
    threads (default: the machine's cores); the kernels run without the GIL.

    contacts: one contact set for every state, or a list of K sets (a gait; an
    empty set is a flight phase).  The contact arrays gain a leading K axis when
    every state has the same set; otherwise they are tuples of K arrays (and
    contact_labels a tuple of K label tuples).

    dt: also A_d (K, 2N, 2N), B_d (K, 2N, n), each state's one-step
    discrete-time linearization, as in :func:`~robot_linearization.linearize`.

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

    kernel: as :func:`~robot_linearization.linearize`'s: on a Model (with
    contacts, with no step or the Euler step, or without contacts, any step) the kernel generated for
    the robot and each contact set, the same values bit for bit.

    discretization: "euler" (the default) or "zoh", as in :func:`~robot_linearization.linearize`.
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
    kernel = kernel_argument(kernel)
    if contacts or isinstance(model, CoupledModel) or previous_contacts is not None:
        return _linearize_trajectory_with_contacts(model, states, joint_torques, contacts, workers, step,
                                                   previous_contacts, restitution, kernel)
    arrays = stack_states(model, states, joint_torques)
    fused = dt is not None and step["discretization"] == "euler"
    generated = current(model, (), "linearize", kernel)
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
    A, B, M_inv, nu_dot = out[:4]
    return linearization_of(model, A, B, M_inv, nu_dot, tuple(states), arrays[-1], step, out[5:] if fused else None)


def check_step(model: AnyModel, dt: float | None, discretization: str | None) -> dict:
    """{"dt", "discretization"} checked (and the model), ValueError before any work; a
    method without a step is an error, not ignored."""
    if type(model) is not Model:
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


def free_result(model: Model, A, B, M_inv, nu_dot, state: State, joint_torques, dt: float = 0.0,
                euler_step: tuple | None = None) -> Linearization:
    """The Linearization :func:`~robot_linearization.linearize` returns, without contacts, for its kernel's
    outputs A (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,) at ``state`` and ``joint_torques`` (n,); with
    ``dt`` > 0, the Euler step's (A_d, B_d) ``euler_step`` computed with them (the arrays are taken, not
    copied)."""
    step = {"dt": dt, "discretization": "euler"} if dt else _CONTINUOUS
    return linearization_of(model, A, B, M_inv, nu_dot, state, joint_torques, step, euler_step)


def linearization_of(model: AnyModel, A, B, M_inv, nu_dot, state, joint_torques, step: dict, jacobians=None,
                     fields: dict | None = None) -> Linearization:
    """The Linearization of (A, B, M_inv, ν̇) at ``state`` and ``joint_torques``; ``step``:
    check_step's {"dt", "discretization"}, with dt also A_d, B_d (``jacobians``, when the kernel
    computed them); ``fields``: the other fields (contacts, impact).  Built by dict assignments,
    not keyword arguments: ≈ 1.5 µs of every control cycle."""
    self = Linearization._make(fields)
    values = self.__dict__
    values["A"], values["B"], values["M_inv"] = A, B, M_inv
    if model.floating_base:
        values["base_acceleration"], values["joint_accelerations"] = (
            (nu_dot[:6], nu_dot[6:]) if nu_dot.ndim == 1 else (nu_dot[..., :6], nu_dot[..., 6:]))
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
    return linearization_of(model, *out, state, torques, step)


def run_coupled_linearize_into(model: CoupledModel, coupling: Any, arrays: tuple, out: tuple,
                               call: Callable[..., int] = coupled_linearize_into) -> None:
    """:func:`coupled_linearize_into` on ``coupling`` (``model.coupling_data()`` or a
    ``new_coupling_data``), the independent coordinates' state_arrays ``arrays``, and ``out`` =
    (A (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,)) in them, called as ``call`` (as for
    :func:`run_linearize_into`).  ValueError at a state that has no linearization (then ``out``
    holds no result)."""
    announce_compilation(coupled_linearize_into)
    status = call(coupling, arrays, out)
    if status != -1:
        raise ValueError(_status_message(model.tree, status, arrays))


def _linearize_with_contacts(model: AnyModel, state: State, joint_torques, arrays: ContactArrays, step: dict,
                             kernel: str) -> Linearization:
    """linearize on the contact set ``arrays`` (constrained_dynamics.contact_set)."""
    torques = joint_vector(model, joint_torques, "joint_torques", finite=False)
    coupled = isinstance(model, CoupledModel)
    fused = step["dt"] is not None and step["discretization"] == "euler" and not coupled
    generated = None if isinstance(model, CoupledModel) or not arrays.contacts else runnable(
        model, arrays.contacts, "constrained", kernel)
    out = linearize_with_contacts(model, state, torques, arrays, workspace(tree_of(model)),
                                  step["dt"] if fused else 0.0, generated)  # (fused: with A_d, B_d)
    jacobians = out[7:] if fused else None
    # (a CoupledModel without contacts: no contact fields)
    return linearization_of(model, out[0], out[1], out[2], out[3], state, torques, step, jacobians,
                            contact_fields(out, arrays.labels, arrays.contacts) if arrays.contacts else None)


def contact_fields(out: tuple, labels: tuple, contacts: tuple) -> dict:
    """The contact fields of a Linearization (λ, ∂λ/∂z, ∂λ/∂τ, their labels and the Contacts) from a
    constrained linearization's outputs ``out`` = (A, B, M_inv, ν̇, λ, ∂λ/∂z, ∂λ/∂τ, …)."""
    return {"contact_forces": out[4], "contact_forces_state_jacobian": out[5], "contact_forces_input_jacobian": out[6],
            "contact_labels": labels, "contacts": contacts}


def _linearize_held(model: AnyModel, state: State, joint_torques, held: ContactArrays, previous: ContactArrays | None,
                    e: float, step: dict, kernel: str) -> Linearization:
    """linearize on the contact set ``held`` (constrained_dynamics.contact_set; empty: without
    contacts) after ``previous`` (None: no previous set): at a touchdown, at the post-impact
    state with A_d composed with the impact's Jacobian, restitution e (docs/impacts.md)."""
    if previous is None:
        if held.contacts:
            return _linearize_with_contacts(model, state, joint_torques, held, step, kernel)
        return _linearize_free(model, state, joint_torques, step, kernel)
    check_state(model, state)
    if not touchdown(previous, held):
        lin = _linearize_held(model, state, joint_torques, held, None, e, step, kernel)
        return Linearization._make({**lin.__dict__, "previous_contacts": previous.contacts})
    if step["dt"] is None:
        raise ValueError("previous_contacts: a touchdown's impact enters the step's Jacobians only: give dt too")
    jump = impact(model, state, held, e, kernel=kernel)
    lin = _linearize_held(model, jump.state, joint_torques, held, None, e, step, kernel)
    assert lin.A_d is not None  # (a step: dt is given)
    return Linearization._make({**lin.__dict__, "A_d": lin.A_d @ jump.A, "state": state, "impact": jump,
                                  "previous_contacts": previous.contacts})


def _linearize_trajectory_with_contacts(model: AnyModel, states, joint_torques, contacts, workers, step,
                                        previous_contacts, restitution, kernel) -> Linearization:
    K = len(states)
    contacts = contacts or ()
    per_state = isinstance(contacts, (list, tuple)) and len(contacts) > 0 \
        and all(c is None or not isinstance(c, (str, Contact)) for c in contacts)
    if per_state and len(contacts) != K:
        raise ValueError(f"contacts: {len(contacts)} contact sets for {K} states (give one set for every state, "
                         "or a single set for all)")
    sets = [contact_set(model, c) for c in contacts] if per_state else [contact_set(model, contacts)] * K
    torques = stack_states(model, states, joint_torques)[-1]
    workers = max(1, min(workers or os.cpu_count() or 1, K))
    previous: list[ContactArrays | None] = [
        None if previous_contacts is None else contact_set(model, previous_contacts), *sets[:-1]]
    if step["dt"] is None:  # the continuous A, B of each state: an impact enters only a step's Jacobians
        previous = [None] * K
    one = lambda k: _linearize_held(model, states[k], torques[k], sets[k], previous[k], restitution, step,  # noqa
                                    kernel)
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
    fields["previous_contacts"] = tuple(None if p is None else p.contacts for p in previous)
    jacobians = None if step["dt"] is None else (stack("A_d"), stack("B_d"))
    nu_dot = np.concatenate([stack("base_acceleration"), stack("joint_accelerations")], axis=1) \
        if model.floating_base else stack("joint_accelerations")
    return linearization_of(model, stack("A"), stack("B"), stack("M_inv"), nu_dot, tuple(states), torques, step,
                            jacobians, fields)
