"""A linearization whose arrays are allocated once and filled at every call: what a control
loop or an MPC holds, as Pinocchio's Data and Crocoddyl's ActionData are; and rl.linearize, whose
results take the arrays of such linearizers while nothing else holds them."""

from __future__ import annotations

import copy
from sys import getrefcount

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algorithms import constrained_dynamics
from .algorithms.constrained_dynamics import ContactArrays
from .contact_linearization import constrained_linearize_into, run_constrained_linearize_into
from .contacts import Contact, Contacts
from .coupling import AnyModel, CoupledModel, tree_of
from .discretization import NO_STEP, euler_step_into
from .compiled import TypedCall
from .free_linearization import coupled_linearize_into, linearize_into
from .impacts import restitution_coefficient
from .linearization import (Linearization, check_status, check_step, contact_fields, linearization_of,
                            linearize_allocating, run_coupled_linearize_into, run_linearize_into)
from .model import Model, State, given_arrays, state_arrays
from .kernel_choice import generated_now, kernel_argument, takeover
from .workspace import Workspace


class Linearizer:
    """:func:`~robot_linearization.linearize` of one model, contact set and step, at state after
    state, into the same arrays::

        linearizer = rl.Linearizer(model, contacts=["FL_FOOT", "FR_FOOT"], dt=0.001)  # allocates
        lin = linearizer.linearize(state, joint_torques)  # the linearizer itself, filled in place
        lin.A, lin.B, lin.M_inv, lin.A_d, lin.B_d, lin.contact_forces, ...
        linearizer.linearize_arrays(s, r, joint_torques, base_pose=[x, y, z, qx, qy, qz, qw], base_twist=v)

    Its fields are :class:`~robot_linearization.Linearization`'s, of the same shapes, frames and
    state order (docs/conventions.md), and equal to ``rl.linearize(model, state, joint_torques,
    contacts=…, dt=…, discretization=…)``'s bit for bit; every call overwrites them (``np.copy``
    what you keep).  Without a step or with the Euler step, on a
    :class:`~robot_linearization.Model` (with contacts or without) or a
    :class:`~robot_linearization.CoupledModel` without contacts, the compiled kernels write straight
    into them: no array is allocated per call.  A CoupledModel with contacts or
    ``discretization="zoh"``: rl.linearize's result, copied in.  A touchdown's impact
    (``previous_contacts``) changes the result's fields: call rl.linearize for it.

    ``kernel`` (robot_linearization.kernel_choice): "auto" (the default; None: $ROBOT_LINEARIZATION_KERNEL
    or "auto") runs the generic kernel from the
    first call and, on a Model with no step or the Euler step, the kernel generated for it and its
    contact set once that is built in the background (robot_linearization.codegen: its passes
    traced into straight-line C, compiled once per machine, equal bit for bit; on a 12-joint
    quadruped a whole call is ≈ 1.6–1.9× faster, docs/performance.md); "generated" builds it now
    (the constructor waits); "generic" never.  The attribute ``kernel`` says which runs now:
    "generated" or "generic" (with "generated", and a warning, where it cannot be built here: no C
    compiler, a robot too large for it to pay).

    A Linearizer owns its workspace: use one per thread.  After a ValueError or ContactError its
    arrays hold no result and ``state`` is None.
    """

    def __init__(self, model: AnyModel, *, contacts: Contacts = None, dt: float | None = None,
                 discretization: str | None = None, kernel: str | None = None) -> None:
        kernel = kernel_argument(kernel)
        step = check_step(model, dt, discretization)
        self.model = model
        contact_set = constrained_dynamics.contact_set(model, contacts) if contacts else None
        if contact_set is not None and not contact_set.contacts:
            contact_set = None
        N, n, m = model.n_velocities, model.n_joints, len(contact_set.labels) if contact_set else 0
        self.dt, self.discretization = step["dt"], step["discretization"] if step["dt"] is not None else None
        coupled = isinstance(model, CoupledModel)
        self._direct = step["discretization"] == "euler" and not (coupled and contact_set)
        self._dt = self.dt if self.dt is not None and self._direct else 0.0
        out = [np.empty((2 * N, 2 * N)), np.empty((2 * N, n)), np.empty((N, N)), np.empty(N)]
        if contact_set:
            out += [np.empty(m), np.empty((m, 2 * N)), np.empty((m, n))]
        out += [np.empty((2 * N, 2 * N)), np.empty((2 * N, n))] if self.dt is not None else NO_STEP
        self._out = tuple(out)
        self._contact_set = contact_set
        self.A, self.B, self.M_inv = out[:3]
        self.A_d: NDArray[np.float64] | None = out[-2] if self.dt is not None else None
        self.B_d: NDArray[np.float64] | None = out[-1] if self.dt is not None else None
        self.contact_forces: NDArray[np.float64] | None
        self.contact_forces_state_jacobian: NDArray[np.float64] | None
        self.contact_forces_input_jacobian: NDArray[np.float64] | None
        if contact_set:
            self.contact_forces, self.contact_forces_state_jacobian, self.contact_forces_input_jacobian = out[4:7]
            self.contact_labels, self.contacts = contact_set.labels, contact_set.contacts
        else:
            self.contact_forces = self.contact_forces_state_jacobian = self.contact_forces_input_jacobian = None
            self.contact_labels, self.contacts = (), ()
        floating = model.floating_base
        self.base_acceleration = out[3][:6] if floating else None  # (views of ν̇, which the kernel fills)
        self.joint_accelerations = out[3][6:] if floating else out[3]
        self.state_labels = model.state_labels
        self.impact = self.previous_contacts = None
        self._state: State | None = None
        self._arrays: tuple | None = None  # (H, s, v, r, τ) of linearize_arrays' last call
        self._pose = np.eye(4)  # H of a base_pose given as position and quaternion
        self.joint_torques: np.ndarray | None = None
        if self._direct:
            workspace = Workspace(tree_of(model))
            self._data = (model.new_coupling_data(workspace) if isinstance(model, CoupledModel) else
                          contact_set.new_data(workspace) if contact_set else workspace.data)
            self._run = (self._run_coupled if coupled else self._run_with_contacts if contact_set else
                         self._run_free)
            # (its own workspace and arrays, and kernel_ready state arrays of the model's shapes: the
            # same types at every call)
            self._call = TypedCall(coupled_linearize_into if coupled else constrained_linearize_into if contact_set
                                   else linearize_into)
        self.kernel = "generic"
        covered = self._direct and not coupled
        if kernel == "generated" and not covered:
            raise ValueError("kernel: 'generated' covers a Model, with contacts or without, with no step or the "
                             "Euler step; use kernel='generic' or 'auto' here")
        if covered and kernel != "generic" and isinstance(model, Model):  # (covered: a Model)
            contacts, kind = (contact_set.contacts, "constrained") if contact_set else ((), "linearize")
            if kernel == "generated":
                generated = generated_now(model, contacts, kind)
                if generated is not None:
                    self._take(generated)
            else:
                self._takeover, self._generic_run = takeover(model, contacts, kind), self._run
                self._run = self._run_until_taken_over

    def _take(self, generated) -> None:
        """Run ``generated`` (kernels.GeneratedKernel or GeneratedContactKernel) from now on."""
        if self._contact_set:  # (the generic kernel's data kept: it says why where the generated one has no result)
            self._scratch, self._generated = np.empty(generated.scratch_size), TypedCall(generated.call)
            self._run = self._run_generated_with_contacts
        elif self._dt:
            self._data, self._call = np.empty(generated.scratch_size), TypedCall(generated.call)
            self._run = self._run_free
        else:  # (no step: the outputs, which never move, handed over by their addresses)
            self._data, self._call = np.empty(generated.scratch_size), TypedCall(generated.call_at)
            self._addresses_of = generated.addresses_of
            self._addresses = self._addresses_of(self._out)
            self._run = self._run_generated
        self.kernel = "generated"

    def _run_until_taken_over(self, arrays):
        """kernel="auto": the generic kernel, until the generated one is ready (kernel_choice.Takeover)."""
        if self._takeover.kernel is not None:
            self._take(self._takeover.kernel)
            return self._run(arrays)
        return self._generic_run(arrays)

    def linearize(self, state: State, joint_torques: ArrayLike | None = None) -> "Linearizer":
        """Fill the fields at ``state`` and joint torques τ (n,) (default zeros); returns self.
        Every argument is checked as rl.linearize checks it (ValueError naming it).

        ``state``: a :class:`~robot_linearization.State` of the model; ``joint_torques``: τ (n,) in
        ``model.joint_names`` order [N·m or N]."""
        self._state = self._arrays = None
        if self._direct:
            arrays = state_arrays(self.model, state, joint_torques)  # (the kernel checks the values)
            self._run(arrays)
            self._state, self.joint_torques = state, arrays[4]
            return self
        result = linearize_allocating(self.model, state, joint_torques, self._contact_set, None, 0.0,
                                      check_step(self.model, self.dt, self.discretization), kernel_argument(None))
        for name in ("A", "B", "M_inv", "base_acceleration", "joint_accelerations", "contact_forces",
                     "contact_forces_state_jacobian", "contact_forces_input_jacobian", "A_d", "B_d"):
            if getattr(self, name) is not None:
                np.copyto(getattr(self, name), getattr(result, name))
        self._state, self.joint_torques = state, result.joint_torques
        return self

    def linearize_arrays(self, joint_positions: ArrayLike, joint_velocities: ArrayLike,
                         joint_torques: ArrayLike | None = None, *, base_pose: ArrayLike | None = None,
                         base_twist: ArrayLike | None = None) -> "Linearizer":
        """The same at a state given as the arrays a robot's drivers and estimators hand over, with
        no State built per call: joint positions s and velocities r (n,) in ``model.joint_names``
        order, τ (n,) (default zeros), and for a floating base its pose in the world, as H (4, 4) or
        as (7,) = position [m] then unit quaternion (x, y, z, w) (ROS's and Pinocchio's order), and
        its twist [v; ω] (6,) in the base frame (docs/conventions.md).  Returns self; ``state`` is
        then a State of these arrays (built when read).  ValueError naming the argument.

        Arguments: ``joint_positions``, ``joint_velocities``, ``joint_torques`` as said;
        ``base_pose``, ``base_twist`` keyword-only (None for a fixed base)."""
        self._state = self._arrays = None
        arrays = given_arrays(self.model, joint_positions, joint_velocities, joint_torques, base_pose, base_twist,
                              self._pose)
        if not self._direct:
            self.linearize(self._state_of(*arrays[:4]), arrays[4])
        else:
            self._run(arrays)  # (the kernel checks the values)
            self.joint_torques = arrays[4]
        self._arrays = arrays
        return self

    def _state_of(self, pose, s, twist, r) -> State:
        if self.model.floating_base:
            return State(base_pose=np.array(pose), joint_positions=s, base_twist=twist, joint_velocities=r)
        return State(joint_positions=s, joint_velocities=r)

    @property
    def state(self) -> State | None:
        """The State the fields were filled at (None before the first call and after an error)."""
        if self._state is None and self._arrays is not None:
            self._state = self._state_of(*self._arrays[:4])
        return self._state

    def _run_free(self, arrays):
        run_linearize_into(self.model, self._data, arrays, self._out, self._dt, self._call.call)

    def __deepcopy__(self, memo: dict) -> "Linearizer":
        """A copy with arrays of its own, which the generated kernel then fills (the addresses it writes
        to taken anew)."""
        copied = Linearizer.__new__(Linearizer)
        memo[id(self)] = copied
        for name, value in vars(self).items():
            setattr(copied, name, copy.deepcopy(value, memo))
        if "_addresses" in vars(self):
            copied._addresses = copied._addresses_of(copied._out)
        return copied

    def _run_generated(self, arrays):
        status = self._call.call(self._data, arrays, self._addresses)
        if status != -1:
            check_status(self.model, status, arrays)

    def _run_with_contacts(self, arrays):
        run_constrained_linearize_into(self.model, self._contact_set, self._data, arrays, self._out, self._dt,
                                       self._call.call)

    def _run_generated_with_contacts(self, arrays):
        if self._generated.call(self._scratch, arrays, self._out, self._dt) != 0:
            self._run_with_contacts(arrays)  # (the generic kernel: at a state the generated one refuses, it says why)

    def _run_coupled(self, arrays):
        """The coupled kernel has no step inside: its Euler step's Jacobians are a second call, as
        rl.linearize takes them (discretization.step_jacobians)."""
        A, B, M_inv, nu_dot, A_d, B_d = self._out
        run_coupled_linearize_into(self.model, self._data, arrays, (A, B, M_inv, nu_dot), self._call.call)
        if self._dt:
            euler_step_into(A, B, arrays[2], nu_dot, self.model.floating_base, self._dt, A_d, B_d)

    def __repr__(self) -> str:
        contacts = f"{len(self.contacts)} contacts" if self.contacts else "no contacts"
        step = "" if self.dt is None else f", A_d and B_d of a {self.discretization} step of {self.dt:g} s"
        filled = "not filled" if self._state is None and self._arrays is None else "filled"
        return (f"<Linearizer of '{self.model.name}': A {self.A.shape}, B {self.B.shape}, M_inv {self.M_inv.shape}, "
                f"{contacts}{step}; {filled}>")


def linearize(model: AnyModel, state: State, joint_torques: ArrayLike | None = None, *,
              contacts: Contacts | ContactArrays = None, dt: float | None = None, discretization: str | None = None,
              previous_contacts: Contacts | ContactArrays = None, restitution: float = 0.0,
              kernel: str | None = None) -> Linearization:
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

    contacts also take the text of the node and the CLI ("left_sole_link:6d, right_sole_link:6d"); each
    set is read once, here (constrained_dynamics.contact_set, which takes its own result as is).

    kernel: "auto", "generic", "generated" or None (default: "auto", or $ROBOT_LINEARIZATION_KERNEL),
    as :class:`~robot_linearization.Linearizer`'s
    (robot_linearization.kernel_choice): the same values bit for bit; with "auto" the kernel generated
    for the model and contact set takes over once it is built in the background, kept per model and
    contact set for the process.
    Every argument is checked first: ValueError names the one that is wrong (a call that repeats the
    thread's last call's arguments, as a control loop does, finds them checked).

    The result's arrays are its own: no later call writes to them while the result, one of its
    arrays or a view of one is alive anywhere.  On a Model, without ``previous_contacts`` and with
    no step or the Euler step, they are lent by one of two :class:`Linearizer` kept per thread, model,
    contact set, step and kernel, when nothing else holds that one's arrays: a loop that keeps the
    last result costs a Linearizer's call and the result's fields, no allocation.
    """
    if previous_contacts is None and type(model) is Model:
        lender = _lender(model, contacts, dt, discretization, kernel, restitution)
        if lender is not None:
            free = lender.free()
            if free is None:  # (both lent: arrays of the result's own)
                return linearize_allocating(model, state, joint_torques, lender.held, None, 0.0, lender.step,
                                            lender.kernel)
            linearizer, result = free
            linearizer.linearize(state, joint_torques)
            values = result.__dict__
            values["state"], values["joint_torques"] = state, linearizer.joint_torques
            return result
    step = check_step(model, dt, discretization)
    kernel = kernel_argument(kernel)
    e = restitution_coefficient(restitution)
    held = constrained_dynamics.contact_set(model, contacts) if contacts or previous_contacts is not None else None
    previous = constrained_dynamics.contact_set(model, previous_contacts) if previous_contacts is not None else None
    return linearize_allocating(model, state, joint_torques, held, previous, e, step, kernel)


class _Lender:
    """Two Linearizers of one model, contact set, step and kernel, on one thread, and a Linearization
    of each one's arrays, which rl.linearize returns in turn.  One is lent only while nothing else
    holds it, its arrays or views of them: while the reference count of each is what it was when it
    was made.  A result kept anywhere (the Linearization, one of its arrays, a view of one) counts,
    so its Linearizer is passed over until it is gone."""

    def __init__(self, model: Model, held, step: dict, kernel: str) -> None:
        self.held, self.step, self.kernel = held, step, kernel  # (for the path that allocates, when both are lent)
        dt = step["dt"]
        self._linearizers = [Linearizer(model, contacts=held, dt=dt, discretization=step["discretization"] if dt
                                        else None, kernel=kernel) for _ in range(2)]
        self._results = [self._result_of(linearizer, step) for linearizer in self._linearizers]
        # (what a caller can hold: the result, the views it has of ν̇, and every array the Linearizer fills
        # but the shared empty A_d, B_d of no step)
        self._lent = [tuple(a for a in linearizer._out if a is not NO_STEP[0] and a is not NO_STEP[1])
                      + (result, result.joint_accelerations)
                      + ((result.base_acceleration,) if model.floating_base else ())
                      for linearizer, result in zip(self._linearizers, self._results)]
        self._pairs = list(zip(self._linearizers, self._results))
        self._last = 0
        # (last: each count can only be at least what it is now, so their sum says whether all are)
        self._counts = [sum(map(getrefcount, lent)) for lent in self._lent]

    @staticmethod
    def _result_of(linearizer: Linearizer, step: dict) -> Linearization:
        """The Linearization of ``linearizer``'s arrays (its state and torques set at each call)."""
        out = linearizer._out
        fields = contact_fields(out, linearizer.contact_labels, linearizer.contacts) if linearizer.contacts else None
        return linearization_of(linearizer.model, out[0], out[1], out[2], out[3], None, None, step,
                                out[-2:] if step["dt"] is not None else None, fields)

    def free(self) -> tuple[Linearizer, Linearization] | None:
        """A Linearizer and its result that nothing else holds, or None: the pair lent last if it is back (its
        arrays still in the cache), else the other."""
        k = self._last
        if sum(map(getrefcount, self._lent[k])) != self._counts[k]:
            k = 1 - k
            if sum(map(getrefcount, self._lent[k])) != self._counts[k]:
                return None
        self._last = k
        return self._pairs[k]


_LENDERS_PER_MODEL = 8
"""Lenders kept per model and thread (contact sets, steps and kernels); the oldest goes first."""


def _lender(model: Model, contacts, dt, discretization, kernel, restitution) -> _Lender | None:
    """This thread's :class:`_Lender` of ``model`` for rl.linearize's arguments (checked, ValueError naming
    the one that is wrong), or None where a Linearizer does not cover them (the zero-order hold).  The
    arguments of the thread's last call are kept beside its lender: a control loop, which repeats them,
    finds it by one comparison, neither checking nor reading the contact set again."""
    arguments = (tuple(contacts) if type(contacts) is list else contacts, dt, type(dt), discretization, kernel,
                 restitution, type(restitution))
    local = model.thread_local
    try:
        if arguments == local.last_call[0]:
            return local.last_call[1]
    except (AttributeError, ValueError, TypeError):  # (the thread's first call; a comparison that has no answer)
        pass
    step = check_step(model, dt, discretization)
    kernel = kernel_argument(kernel)
    restitution_coefficient(restitution)
    if step["discretization"] != "euler":
        return None
    held = constrained_dynamics.contact_set(model, contacts) if contacts else None
    key = (held, step["dt"], kernel)  # (a contact set is read once per model: constrained_dynamics.contact_set)
    table = getattr(local, "lenders", None)
    if table is None:
        table = local.lenders = {}
    lender = table.get(key)
    if lender is None:
        if len(table) == _LENDERS_PER_MODEL:
            del table[next(iter(table))]
        lender = table[key] = _Lender(model, held, step, kernel)
    # (kept only for arguments that cannot change behind it: no list or other mutable inside the contacts)
    if contacts is None or type(contacts) is str or isinstance(contacts, ContactArrays) or all(
            type(contact) is str or type(contact) is Contact for contact in arguments[0]):
        local.last_call = (arguments, lender)
    return lender
