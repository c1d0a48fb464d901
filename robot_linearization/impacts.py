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
no drift).  So the same base-frame EIDAmb sweep gives ∂a (its forward pass with ν⁺ + eν⁻) and
∂R (forward with ν⁺ − ν⁻, backward with the impulses held), and the same KKT elimination gives
∂ν⁺ and ∂Λ; the world-aligned turn of J multiplies J(ν⁺ + eν⁻) = 0.  All of it is one compiled
kernel (impact_map.impact_into) over the model's cached workspace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algorithms.constrained_dynamics import ContactArrays, contact_set, contact_tuple, degeneracy_reason
from .arguments import check_model, real_array
from .compiled import TypedCall, announce_compilation
from .contacts import Contact, ContactError, Contacts
from .coupling import AnyModel, CoupledModel, tree_of
from .impact_map import impact_into
from .kernel_choice import generated_now, kernel_argument, runnable, takeover
from .model import Model, State, given_arrays, state_arrays, state_problem
from .workspace import Workspace, singular_state_message, workspace


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
    A: NDArray[np.float64]
    impulses: NDArray[np.float64]
    impulses_state_jacobian: NDArray[np.float64]
    impulse_labels: tuple
    contacts: tuple
    restitution: float
    pre_impact_state: State

    def __repr__(self) -> str:
        return (f"<Impact: {len(self.contacts)} contacts, e = {self.restitution:g}, A {self.A.shape}, "
                f"impulses ({len(self.impulses)},)>")


def touchdown(previous_contacts: Contacts | ContactArrays, contacts: Contacts | ContactArrays) -> bool:
    """Whether going from ``previous_contacts`` to ``contacts`` closes a contact (one of
    ``contacts`` is not in the previous set: an impact on ``contacts``).  Removing contacts
    (lift-off) is not an impact: the velocity is continuous.  Each set: Contacts, or its
    constrained_dynamics.contact_set."""
    previous = set(contact_tuple(previous_contacts))
    return any(c not in previous for c in contact_tuple(contacts))


def restitution_coefficient(value: ArrayLike) -> float:
    """e ∈ [0, 1], checked (ValueError naming ``restitution``)."""
    if type(value) is float and 0.0 <= value <= 1.0:  # the common case, every cycle
        return value
    e = float(real_array(value, "restitution", (), what="a restitution coefficient in [0, 1]"))
    if not 0.0 <= e <= 1.0:
        raise ValueError(f"restitution: expected a restitution coefficient in [0, 1], got {e:g}")
    return e


def impact(model: AnyModel, state: State, contacts: Contacts | ContactArrays, restitution: float = 0.0, *,
           kernel: str | None = None) -> Impact:
    """The rigid impact of ``state`` on ``contacts`` (module docstring): the post-impact
    state, its Jacobian A (2N, 2N) with respect to the pre-impact perturbation, the
    impulses Λ (m,) and ∂Λ/∂z (m, 2N).  restitution e ∈ [0, 1] (0: inelastic).

    contacts as for :func:`~robot_linearization.linearize` (Contacts, link names or the
    node's text, or their constrained_dynamics.contact_set).  ContactError for a redundant or
    degenerate set.  No contacts: nothing happens (A = I).  kernel: as :class:`ImpactMap`'s (the
    same values bit for bit).  A mimic-coupled model (CoupledModel) jumps in its independent
    coordinates: its couplings are rows of the impact's constraints (:func:`run_coupled_impact_into`).
    """
    check_model(model)
    if isinstance(model, CoupledModel):
        return _coupled_impact(model, state, contacts, restitution, kernel)
    pre_impact = state_arrays(model, state, None)  # (values: the kernel)
    arrays = contact_set(model, contacts)
    e = restitution_coefficient(restitution)
    n, N, floating = model.n_joints, model.n_velocities, model.floating_base
    m = arrays.m
    out = (np.empty((N, N)), np.empty((2 * N, 2 * N)), np.empty(m), np.empty((m, 2 * N)), np.empty(N))
    kernel = kernel_argument(kernel)
    generated = runnable(model, arrays.contacts, "impact", kernel) if arrays.contacts else None
    if generated is None or generated[1].call(generated[0], pre_impact, e, out) != 0:
        # (where the generated kernel has no result, the generic one says why)
        run_impact_into(model, arrays.contacts, arrays.data(workspace(model)), pre_impact, e, out)
    _, A, impulses, d_impulses, nu_plus = out
    post = State._given(None if state.base_pose is None else state.base_pose.copy(), state.joint_positions.copy(),
                        nu_plus[:6] if floating else None, nu_plus[N - n:])
    jump = object.__new__(Impact)  # (Impact(...) sets its 8 frozen fields one by one: ≈ 2 µs of a cycle)
    jump.__dict__.update(state=post, A=A, impulses=impulses, impulses_state_jacobian=d_impulses,
                         impulse_labels=arrays.labels, contacts=arrays.contacts, restitution=e,
                         pre_impact_state=state)
    return jump


def _coupled_impact(model: CoupledModel, state: State, contacts: Contacts | ContactArrays, restitution: float,
                   kernel: str | None = None) -> Impact:
    """:func:`impact` of a CoupledModel (coupling.py), by :func:`run_coupled_impact_into` (the
    generic kernel, whatever ``kernel`` says, as rl.linearize of a CoupledModel)."""
    kernel_argument(kernel)
    pre_impact = state_arrays(model, state, None)  # (values: the kernel, on the tree's)
    arrays = contact_set(model, contacts)
    e = restitution_coefficient(restitution)
    N, N_tree, m, c = model.n_velocities, model.tree.n_velocities, arrays.m, arrays.m_contacts
    tree_out = (np.empty((N_tree, N_tree)), np.empty((2 * N_tree, 2 * N_tree)), np.empty(m), np.empty((m, 2 * N_tree)),
                np.empty(N_tree))
    out = (np.empty((2 * N, 2 * N)), np.empty(c), np.empty((c, 2 * N)), np.empty(N))
    run_coupled_impact_into(model, arrays, arrays.data(workspace(model.tree)), pre_impact, e, tree_out, out)
    A, impulses, d_impulses, nu_plus = out
    n = model.n_joints
    post = State._given(None if state.base_pose is None else state.base_pose.copy(), state.joint_positions.copy(),
                        nu_plus[:6] if model.floating_base else None, nu_plus[N - n:])
    return Impact(state=post, A=A, impulses=impulses, impulses_state_jacobian=d_impulses,
                  impulse_labels=arrays.labels, contacts=arrays.contacts, restitution=e, pre_impact_state=state)


def run_coupled_impact_into(model: CoupledModel, arrays, data: tuple, pre_impact: tuple, e: float, tree_out: tuple,
                            out: tuple, call: Callable[..., int] = impact_into) -> None:
    """The impact map of a CoupledModel (coupling.py) at ``pre_impact`` (model.state_arrays's, the
    independent coordinates) on the contact set ``arrays`` (contact_arrays of the model, whose
    coupling rows J_c ν = 0 follow the contacts'; ``data``: its data on the tree's workspace):
    the tree's impact map under all those rows (:func:`run_impact_into` into ``tree_out``, of the
    tree's shapes), whose couplings hold before and after (J_c ν⁻ = 0, so J_c ν⁺ = −e J_c ν⁻ = 0),
    in the independent coordinates: ``out`` = (A (2N, 2N), impulses (m_contacts,), ∂Λ/∂z⁻
    (m_contacts, 2N), ν⁺ (N)), the rows of the independent joints and the columns through
    blockdiag(Ĝ, Ĝ) (z_tree = Ĝ z); the couplings' own impulses are internal and left out."""
    pose, s, twist, r = pre_impact[:4]
    with np.errstate(invalid="ignore", over="ignore"):  # (NaN or inf: the kernel's check says which, in one line)
        tree_state = (pose, model.coupling @ s + model.offset, twist, model.coupling @ r,
                      np.zeros(model.tree.n_joints))
    run_impact_into(model.tree, arrays.contacts, data, tree_state, e, tree_out, call)
    _, A_tree, impulses_tree, d_impulses_tree, nu_plus_tree = tree_out
    A, impulses, d_impulses, nu_plus = out
    c = arrays.m_contacts
    np.matmul(A_tree[model.state_rows], model.state_map, out=A)
    impulses[:] = impulses_tree[:c]
    np.matmul(d_impulses_tree[:c], model.state_map, out=d_impulses)
    nu_plus[:] = nu_plus_tree[model.velocity_rows]


def run_impact_into(model: Model, contacts: tuple[Contact, ...], data: tuple, pre_impact: tuple, e: float,
                    out: tuple, call: Callable[..., int] = impact_into) -> None:
    """:func:`impact_into` of ``contacts`` (a ContactArrays' tuple of Contact), on their ``data``
    (the ContactArrays' .data(…) or .new_data(…)), at ``pre_impact`` (model.state_arrays's), into
    ``out`` (impact_into's), called as ``call`` (the kernel, or a compiled.TypedCall of it).
    ContactError for a redundant or degenerate set, ValueError at a state without an impact map
    (then ``out`` holds no result)."""
    announce_compilation(impact_into)
    status = call(data[0], pre_impact, e, out)
    if status <= -10:
        raise ValueError(state_problem(0, -10 - status, 1))
    if status == 1:
        raise ContactError(degeneracy_reason(contacts, data[1].J, out[0]))
    if status >= 2:
        raise ValueError(f"impact: {singular_state_message(model, status - 2)}")


class ImpactMap:
    """:func:`impact` of one model, contact set and restitution, at state after state, into the
    same arrays (as :class:`~robot_linearization.Linearizer` is rl.linearize's)::

        touchdown = rl.ImpactMap(model, ["FL_FOOT", "HR_FOOT"])  # allocates
        jump = touchdown.impact(state)  # the map itself, filled in place
        jump.A, jump.impulses, jump.impulses_state_jacobian, jump.base_twist, jump.joint_velocities
        touchdown.impact_arrays(s, r, base_pose=[x, y, z, qx, qy, qz, qw], base_twist=v)

    Its fields are :class:`Impact`'s, equal to rl.impact's bit for bit: A (2N, 2N), impulses Λ
    (m,), impulses_state_jacobian ∂Λ/∂z⁻ (m, 2N), impulse_labels, contacts, restitution; the
    post-impact velocity ν⁺ is base_twist (6,) (floating base; else None) and joint_velocities
    (n,), and ``state`` the post-impact State (built when read).  Every call overwrites them
    (``np.copy`` what you keep); no array is allocated per call but the kernel's scratch (and, for a
    CoupledModel, the tree's state and the reduction's row selections).  One
    per thread.  After a ValueError or ContactError its arrays hold no result and ``state`` is None.
    A CoupledModel's map is in its independent coordinates, as rl.impact's (:func:`run_coupled_impact_into`),
    by the generic kernel ("generated" is refused; "auto" stays generic).

    ``kernel`` (robot_linearization.kernel_choice): "auto" (the default; None: $ROBOT_LINEARIZATION_KERNEL
    or "auto") runs the generic kernel until the
    kernel generated for this robot and contact set is built in the background, then that one (the
    restitution one of its arguments: robot_linearization.codegen, impact_into traced into
    straight-line C, compiled once per machine and cached, one for every restitution; the same
    values bit for bit); "generated" builds it now; "generic" never.  The attribute ``kernel`` says
    which runs now ("generic" with "generated", and a warning, where it cannot be built here: no C
    compiler, a model too large for it to pay); the generic kernel gives the messages of a state or
    contact set without an impact map.
    """

    def __init__(self, model: AnyModel, contacts: Contacts, restitution: float = 0.0,
                 kernel: str | None = None) -> None:
        kernel = kernel_argument(kernel)
        check_model(model)
        coupled = isinstance(model, CoupledModel)
        if coupled and kernel == "generated":
            raise ValueError("kernel: 'generated' covers a Model, not a CoupledModel; use kernel='generic' or 'auto' "
                             "here")
        self._arrays = arrays = contact_set(model, contacts)
        self.model, self.contacts = model, arrays.contacts
        self._restitution = restitution_coefficient(restitution)
        tree = tree_of(model)
        N, n, N_tree = model.n_velocities, model.n_joints, tree.n_velocities
        self.impulse_labels = arrays.labels
        self._data = arrays.new_data(Workspace(tree))
        # (a CoupledModel: the tree's, then in the independent coordinates in _reduced, run_coupled_impact_into's out)
        self._out = (np.empty((N_tree, N_tree)), np.empty((2 * N_tree, 2 * N_tree)), np.empty(arrays.m),
                     np.empty((arrays.m, 2 * N_tree)), np.empty(N_tree))
        self._reduced: tuple = (np.empty((2 * N, 2 * N)), np.empty(arrays.m_contacts),
                                np.empty((arrays.m_contacts, 2 * N)), np.empty(N)) if coupled else ()
        fields = self._reduced or self._out[1:]  # (A, Λ, ∂Λ/∂z⁻, ν⁺ in the model's coordinates)
        self.A: NDArray[np.float64] = fields[0]
        self.impulses: NDArray[np.float64] = fields[1]
        self.impulses_state_jacobian: NDArray[np.float64] = fields[2]
        nu_plus = fields[3]
        self.base_twist = nu_plus[:6] if model.floating_base else None
        self.joint_velocities = nu_plus[N - n:]
        self._call = TypedCall(impact_into)  # (its own data and arrays, kernel-ready state arrays: the same types)
        self._pose, self._zeros = np.eye(4), np.zeros(n)
        self._pre_impact: tuple | None = None
        self._state: State | None = None
        self.kernel, self._takeover = "generic", None
        self._generated: TypedCall | None = None
        if kernel == "generated" and self.contacts and isinstance(model, Model):
            generated = generated_now(model, self.contacts, "impact")
            if generated is not None:
                self._take(generated)
        elif kernel == "auto" and self.contacts and isinstance(model, Model):  # (a CoupledModel stays generic)
            self._takeover = takeover(model, self.contacts, "impact")

    def _take(self, generated) -> None:
        """Run ``generated`` (kernels.GeneratedContactKernel) from now on."""
        self._scratch, self._generated = np.empty(generated.scratch_size), TypedCall(generated.call)
        self.kernel, self._takeover = "generated", None

    def impact(self, state: State) -> "ImpactMap":
        """Fill the fields at the pre-impact ``state``; returns self.  Errors as rl.impact's."""
        self._run(state_arrays(self.model, state, self._zeros))
        return self

    def impact_arrays(self, joint_positions: ArrayLike, joint_velocities: ArrayLike, *,
                      base_pose: ArrayLike | None = None, base_twist: ArrayLike | None = None) -> "ImpactMap":
        """The same at a pre-impact state given as arrays: s, r (n,), and for a floating base its
        pose (H (4, 4), or position and quaternion x, y, z, w (7,)) and twist (6,) in the base
        frame, as :meth:`Linearizer.linearize_arrays <robot_linearization.Linearizer.linearize_arrays>`
        takes them.  Returns self.

        ``joint_positions``, ``joint_velocities``: s, r (n,); ``base_pose``: H (4, 4) or (7,);
        ``base_twist``: (6,) [v; ω] in the base frame.  ValueError naming the argument."""
        self._run(given_arrays(self.model, joint_positions, joint_velocities, self._zeros, base_pose, base_twist,
                               self._pose))
        return self

    def _run(self, pre_impact: tuple) -> None:
        self._pre_impact = self._state = None
        if self._takeover is not None and self._takeover.kernel is not None:  # (kernel="auto": it is ready)
            self._take(self._takeover.kernel)
        generated, model = self._generated, self.model
        if isinstance(model, CoupledModel):
            run_coupled_impact_into(model, self._arrays, self._data, pre_impact, self._restitution, self._out,
                                    self._reduced, self._call.call)
        elif generated is None or generated.call(self._scratch, pre_impact, self._restitution, self._out) != 0:
            # (where the generated kernel has no result, the generic one says why)
            run_impact_into(model, self.contacts, self._data, pre_impact, self._restitution, self._out,
                            self._call.call)
        self._pre_impact = pre_impact

    @property
    def restitution(self) -> float:
        """e ∈ [0, 1], the map's own, fixed when it is made (a map per restitution: they share one kernel)."""
        return self._restitution

    @property
    def state(self) -> State | None:
        """The post-impact State of the last call (None before the first and after an error)."""
        if self._state is None and self._pre_impact is not None:
            pose, s = self._pre_impact[:2]
            self._state = State(base_pose=np.array(pose) if self.model.floating_base else None, joint_positions=s,
                                base_twist=self.base_twist, joint_velocities=self.joint_velocities)
        return self._state

    def __repr__(self) -> str:
        filled = "filled" if self._pre_impact is not None else "not filled"
        return (f"<ImpactMap of '{self.model.name}': {len(self.contacts)} contacts, e = {self.restitution:g}, "
                f"A {self.A.shape}, impulses ({len(self.impulses)},); {filled}>")
