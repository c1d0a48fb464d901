"""The generated kernels loaded in a process: a model's linearization, free or on a contact set, and
its impact map, each its cached shared library (build.py) behind a numba entry that checks the state
and takes the Euler step as the generic kernels do.  The entries take the C function's address as an
argument (one entry per kind for every robot, compiled once per machine and cached as the generic
kernels are), so that loading a kernel compiles nothing: a takeover costs its caller no GIL."""

from __future__ import annotations

import ctypes
import functools
import threading
import weakref

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ..compiled import kernel
from ..discretization import euler_step_into, euler_step_jacobians_into
from ..model import Model, first_invalid_state, invalid_state
from .build import GenerationError, Library, build
from .c_writer import _CONTACT_KERNELS, c_source, _contacts_c_source
from .tracer import trace, trace_constrained, trace_impact

GENERATED_OPERATIONS = 250_000
"""The largest trace (operations) compiled: a budget for the compiler (about a second of ``cc -O2`` per
1 500 operations on a 2-core machine, so at most about 3 minutes), not a guess at where the code stops
paying, which is measured (timing.py).  With the IMMAmb and the derivatives' backward pass left to
loops (runtime.c, from LOOPS_FROM on), the trace grows as the robot's bodies: talos 36 000 operations
free, 53 000 on its two soles, talos_full (50 joints) 51 000; a chain of 50 joints about random axes
92 000.  A tree whose
derivatives' product goes without M⁻¹ (workspace.derivative_products, from N = 80 on) traces that
product too, and exceeds it."""

LOOPS_FROM = 45_000
"""The trace (operations) from which the IMMAmb and the derivatives' backward pass are left to loops
(tracer._runtime_sweeps): below it their straight-line code, the robot's constants folded in, is the
faster (solo12's free kernel, 22 000 operations: 6.2 against 8.0 µs looped), above it the loops, which
stay in the caches (talos's impact map on its soles, 50 000 straight-line: 27.7 against 23.0 µs;
2026-11-27, quiet machine)."""

KINDS = {"linearize": "the linearization", "impact": "the impact map", "constrained": "the constrained linearization"}
"""The kernels generated: kind -> what it computes (the name a compile's log line gives)."""


def _traced_or_refused(model: Model, tracing):
    try:
        return tracing()
    except TypeError as error:  # (Traced's: a pass that branches on the state's values)
        raise GenerationError(f"model '{model.name}' cannot be traced: {error}") from None


def _within_bounds(model: Model, operations: int) -> None:
    if operations > GENERATED_OPERATIONS:
        raise GenerationError(f"model '{model.name}' traces to {operations} operations, above the "
                              f"{GENERATED_OPERATIONS} a generated kernel is compiled for (codegen/kernels.py)")


def _source(model: Model, contacts: tuple, kind: str) -> tuple:
    """(C source, operations, scratch doubles, symbol, pointers) of ``model``'s kernel of ``kind`` on
    ``contacts``: traced and written out, its sweeps as loops where straight-line they would make it
    longer than LOOPS_FROM (GenerationError where it cannot be made, or is over the budget)."""
    written = _written(model, contacts, kind, False)
    if written[1] > LOOPS_FROM:
        written = _written(model, contacts, kind, True)
    _within_bounds(model, written[1])
    return written


def _written(model: Model, contacts: tuple, kind: str, loops: bool) -> tuple:
    if kind == "linearize":
        traced = _traced_or_refused(model, lambda: trace(model, loops))
        source, operations, scratch_size = c_source(traced, model.name)
        return source, operations, scratch_size, "rl_linearize", 7
    traced = _traced_or_refused(model, (lambda: trace_impact(model, contacts, loops)) if kind == "impact"
                                else (lambda: trace_constrained(model, contacts, loops)))
    source, operations, scratch_size = _contacts_c_source(traced, kind, model.name)
    if kind == "impact":
        scratch_size += 1  # (e's slot, after what the kernel uses: _impact_entry)
    symbol, inputs = _CONTACT_KERNELS[kind]
    return source, operations, scratch_size, symbol, len(inputs) + len(traced.regions) + 1


def library(model: Model, contacts: tuple, kind: str) -> Library:
    """``model``'s kernel of ``kind`` ("linearize", "impact", "constrained") on ``contacts`` (a tuple of
    Contact; () for "linearize") in the cache, built first if it is not there (build.build).
    GenerationError when it cannot be built here."""
    what = KINDS[kind] + f" of model '{model.name}'" + (f" on {len(contacts)} contacts" if contacts else "")
    return build(model, contacts, kind, what, lambda: _source(model, contacts, kind))


class GeneratedKernel:
    """One model's generated linearization (the package's docstring), loaded in this process.

    ``call(scratch, arrays, out, dt)``: what linearization.run_linearize_into calls in place of
    linearize_into(data, arrays, out, dt), with ``scratch`` (``scratch_size``,) float64 in place
    of the workspace (one per thread); the same statuses.  ``call_at(scratch, arrays, addresses)``: the
    same without a step, its outputs given by their addresses (:func:`generated_linearize_at`), which
    ``addresses_of(out)`` takes from A, B, M_inv, ν̇; ``address`` the function's, for a compiled caller
    (generated_linearize_at).
    ``call_states(scratch, states, out, dt)``: linearize_states_into's K states likewise (a horizon).
    ``operations``: the trace's size; ``path``: the shared library."""

    def __init__(self, model: Model, library: Library):
        self.path, self.operations, self.scratch_size = library.path, library.operations, library.scratch_size
        self._function = library.function()  # (held: the library stays loaded while its address is used)
        self.address = address = _address(self._function)
        self.call = functools.partial(generated_linearize_into, address, model.floating_base)
        self.call_at = functools.partial(generated_linearize_at, address)
        self.addresses_of = output_addresses
        self.call_states = functools.partial(generated_linearize_states_into, address, model.floating_base)


class GeneratedContactKernel:
    """One model's generated kernel on one contact set, loaded in this process: kind "impact", the
    impact map (impact_map.impact_into traced, tracer.trace_impact), or "constrained", the constrained
    linearization (contact_linearization.constrained_linearize_into, tracer.trace_constrained).

    ``call(scratch, arrays, e, out)`` (impact, with the restitution e of each call) or ``call(scratch,
    arrays, out, dt)`` (constrained, its Euler step taken as the kernel's): the kernel's call with
    ``scratch`` (``scratch_size``,) float64 in place of the contact set's data (one per thread); the
    kernel's statuses (a nonzero one: run the generic kernel for its message).  ``operations``,
    ``path``, ``address`` as :class:`GeneratedKernel`'s."""

    def __init__(self, model: Model, kind: str, library: Library):
        self.path, self.operations, self.scratch_size = library.path, library.operations, library.scratch_size
        self._function = library.function()
        self.address = address = _address(self._function)
        self.call = (functools.partial(generated_impact_into, address) if kind == "impact"
                     else functools.partial(generated_constrained_linearize_into, address, model.floating_base))


def _address(function) -> int:
    """The address of a ctypes function (GenerationError for a null one)."""
    address = ctypes.cast(function, ctypes.c_void_p).value
    if not address:
        raise GenerationError(f"the generated function {function!r} has no address")
    return address


@intrinsic
def _call_at(typingctx, address, arrays):
    """``(*address)(p_1, …, p_k)``: the generated C function at ``address`` (int) on the data pointers
    of ``arrays`` (a tuple of k contiguous arrays), its int status (build.Library: k pointers in)."""
    if not isinstance(address, types.Integer) or not isinstance(arrays, types.BaseTuple) \
            or not all(isinstance(a, types.Array) for a in arrays.types):
        return None

    def codegen(context, builder, signature, arguments):
        address_value, tuple_value = arguments
        byte_pointer = ir.IntType(8).as_pointer()
        pointers = [builder.bitcast(context.make_array(array)(context, builder,
                                                             builder.extract_value(tuple_value, i)).data, byte_pointer)
                    for i, array in enumerate(arrays.types)]
        function_type = ir.FunctionType(ir.IntType(32), [byte_pointer] * len(pointers))
        return builder.call(builder.inttoptr(address_value, function_type.as_pointer()), pointers)

    return types.int32(address, arrays), codegen


@kernel
def generated_impact_into(address, scratch, state, e, out):
    """impact_into with the generated function at ``address`` in its place; e is handed over in the
    scratch's last entry."""
    problem = invalid_state(*state)
    if problem != 0:
        return -10 - problem
    M_inv, A, impulses, d_impulses, nu_plus = out
    last = scratch.shape[0] - 1
    scratch[last] = e
    return _call_at(address, (state[0], state[1], state[2], state[3], scratch[last:], M_inv, A, impulses, d_impulses,
                              nu_plus, scratch))


@kernel
def generated_constrained_linearize_into(address, floating_base, scratch, state, out, dt):
    """constrained_linearize_into with the generated function at ``address`` in its place."""
    problem = invalid_state(*state)
    if problem != 0:
        return -10 - problem
    pose, s, twist, r, tau = state
    A, B, M_inv, nu_dot, forces, d_forces, d_forces_dtau, A_d, B_d = out
    status = _call_at(address, (pose, s, twist, r, tau, A, B, M_inv, nu_dot, forces, d_forces, d_forces_dtau,
                                scratch))
    if status == 0 and dt > 0.0:
        euler_step_into(A, B, twist, nu_dot, floating_base, dt, A_d, B_d)
    return status


@kernel
def generated_linearize_into(address, floating_base, scratch, state, out, dt):
    """linearize_into with the generated function at ``address`` in place of linearize_state_into."""
    status = generated_linearize_at(address, scratch, state, output_addresses(out))
    if status > -10 and dt > 0.0:  # (−10 − p: an invalid state, nothing computed; else A, B, ν̇ are filled)
        A, B, M_inv, nu_dot, A_d, B_d = out
        euler_step_into(A, B, state[2], nu_dot, floating_base, dt, A_d, B_d)
    return status


@kernel
def generated_linearize_at(address, scratch, state, outputs):
    """generated_linearize_into without a step, its outputs A, B, M_inv, ν̇ given by their addresses
    ``outputs`` (4,) int64 (:func:`output_addresses`): a caller whose outputs never move (a
    Linearizer) hands over one array instead of six (≈ 0.2 µs less a call)."""
    problem = invalid_state(*state)
    if problem != 0:
        return -10 - problem
    pose, s, twist, r, tau = state
    return _call_at(address, (pose, s, twist, r, tau, outputs, scratch))


@kernel
def output_addresses(out):
    """The addresses of ``out``'s first four arrays (A, B, M_inv, ν̇), as the generated function takes them."""
    addresses = np.empty(4, dtype=np.int64)
    addresses[0], addresses[1], addresses[2], addresses[3] = (out[0].ctypes.data, out[1].ctypes.data,
                                                              out[2].ctypes.data, out[3].ctypes.data)
    return addresses


@kernel
def generated_linearize_states_into(address, floating_base, scratch, states, out, dt):
    """linearize_states_into with the generated function at ``address`` in place of
    linearize_state_into (a horizon of K states)."""
    base_poses, joint_positions, base_twists, joint_velocities, torques = states
    A, B, M_inv, accelerations, status, A_d, B_d = out
    invalid = first_invalid_state(base_poses, joint_positions, base_twists, joint_velocities, torques)
    if invalid[1] != 0:
        return invalid
    for k in range(joint_positions.shape[0]):
        status[k] = _call_at(address, (base_poses[k], joint_positions[k], base_twists[k], joint_velocities[k],
                                       torques[k], output_addresses((A[k], B[k], M_inv[k], accelerations[k])),
                                       scratch))
    if dt > 0.0:
        euler_step_jacobians_into(A, B, base_twists, accelerations, floating_base, dt, A_d, B_d)
    return invalid


_loaded: "weakref.WeakKeyDictionary[Model, dict]" = weakref.WeakKeyDictionary()
_loading = threading.Lock()


def generated(model: Model, contacts: tuple, kind: str):
    """``model``'s kernel of ``kind`` on ``contacts`` loaded in this process (a :class:`GeneratedKernel` for
    "linearize", else a :class:`GeneratedContactKernel`; an impact map's serves every restitution):
    from the cache, or built into it first, then kept for the process.  GenerationError when it
    cannot be built here."""
    kernels = _loaded.setdefault(model, {})
    key = (contacts, kind)
    kernel = kernels.get(key)
    if kernel is None:
        with _loading:  # (one load per process: a background thread and a caller may ask at once)
            kernel = kernels.get(key)
            if kernel is None:
                found = library(model, contacts, kind)
                kernel = kernels[key] = (GeneratedKernel(model, found) if kind == "linearize"
                                         else GeneratedContactKernel(model, kind, found))
    return kernel


def generated_kernel(model: Model) -> GeneratedKernel:
    """``model``'s generated linearization (:func:`generated`)."""
    return generated(model, (), "linearize")


def generated_contact_kernel(model: Model, contacts: tuple, kind: str) -> GeneratedContactKernel:
    """``model``'s generated kernel of ``kind`` ("impact", "constrained") on ``contacts`` (:func:`generated`)."""
    return generated(model, contacts, kind)
