"""Robot-specific kernels: one model's linearization, free or on a contact set, and its impact
map, traced into straight-line C.

The generic kernels (linearization.linearize_state_into, contact_linearization.
constrained_linearize_into, impacts.impact_into) walk the tree in loops and read the model's
arrays at every step.  For one robot and contact set all of that is fixed: the tree, the joint
axes, the inertias, the contact frames.  Only the state varies.  :func:`generated_kernel` (and
:func:`generated_contact_kernel`) runs the same passes once on that robot, in Python (their
functions, compiled.KERNELS), on traced values that stand for the state's entries, and records
the arithmetic that depends on the state:

- a product with a model constant 0 (most of a joint's motion subspace and transform, the
  zeros of an inertia) is dropped, and a product with 1 is its operand;
- an operation met again on the same operands is computed once;
- what remains is written out as C in the passes' own order and grouping, and compiled
  without floating-point contraction.

So every result is the same IEEE operation on the same operands as the generic kernel's, and
A, B, M⁻¹ and ν̇ are equal to its own bit for bit (but for the sign of a zero).

Some pieces stay functions of the values, run by routines written in C in the generic kernels'
order:
- the base's 6×6 LU factorisation and solves, since their pivoting depends on the values
  (spatial.lu_factor6, lu_solve6);
- the dense products (−M⁻¹D; on a contact set every multiply_add_into), loops the compiler
  vectorises;
- on a contact set, J M⁻¹ Jᵀ's Cholesky factorisation with its pivot test and the solves with it
  (constrained_dynamics.contact_forces_into, cholesky_solve_into);
- the status: a singular pivot (forward_dynamics.singular_pivot), a degenerate contact set or an
  overflow, as the generic kernels report them (where a kernel on a contact set has no result, its
  caller runs the generic one, which says why).

The code grows with the robot, and so does its compile time:
- solo12: 22 000 operations, 15 s of ``cc -O2`` (on its four feet: the impact map 17 000, 4 s;
  the constrained linearization 38 000, 9 s);
- talos_reduced: 63 000 operations, 15–45 s; its impact map on two soles 50 000, 25–35 s; its
  constrained linearization on them 111 000, 40–75 s, and 1.35× slower than the generic kernel:
  its code no longer fits the caches.

So a model whose trace exceeds :data:`GENERATED_OPERATIONS` is left to the generic kernel.
The shared library is cached on disk per C source and compiler command
(:func:`cache_directory`), one per kernel, robot name (and contact set and restitution) and
instruction set (:func:`target_flags`): compiling a robot's kernel anew (another version of the
package, another compiler) removes that kernel's older ones of the same set.  A process loads it and
compiles a small numba entry around it (well under a second) that checks the state and takes
the Euler step as linearize_into does.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import math
import os
import platform
import re
import shutil
import subprocess
import types
import weakref
from types import SimpleNamespace

import numpy as np
from numba import njit

from . import compiled
from .algorithms.constrained_dynamics import DEGENERACY_TOLERANCE, contact_arrays
from .discretization import euler_step_into, euler_step_jacobians_into
from .linearization import linearize_state_into
from .model import PIVOT_TOLERANCE, Model, first_invalid_state, invalid_state
from .workspace import DATA, DENSE_PRODUCTS, MODEL_ARRAYS, Workspace, derivative_products, model_arrays

GENERATED_OPERATIONS = 70_000
"""The largest trace (operations) compiled: 15–45 s of ``cc -O2`` on a 2-core machine; beyond it the
generated code stops paying (module docstring).  On talos (2026-11-27, one core, back to back): the
free kernel, 63 000 operations, 21.2 against the generic 29.9 µs; the impact map of its soles,
50 000, 31.7 against 33.3 µs; the constrained linearization on them, 111 000, 59 against 44 µs."""

COMPILE_FLAGS = ("-O2", "-fPIC", "-shared", "-ffp-contract=off")
"""No contraction of a multiply and an add into one FMA: it would round differently from the
generic kernel.  The instruction set comes from :func:`target_flags`."""

PART = 1500
"""Operations per C function: one function of 22 000 statements takes gcc minutes, since its
register allocation grows faster than linearly; values crossing parts go through the scratch."""

_log = logging.getLogger("robot_linearization")


class GenerationError(RuntimeError):
    """The generated kernel cannot be built here (no C compiler, a failed compile, a model too large)."""


class Traced:
    """A double of the state's arithmetic: operation ``index`` of ``graph``."""

    __slots__ = ("graph", "index")

    def __init__(self, graph, index):
        self.graph, self.index = graph, index

    def _binary(self, operation, a, b):
        return self.graph.add(operation, (_operand(a), _operand(b)))

    def __add__(self, other):
        return self if _is_constant(other, 0.0) else self._binary("+", self, other)

    def __radd__(self, other):
        return self if _is_constant(other, 0.0) else self._binary("+", other, self)

    def __sub__(self, other):
        return self if _is_constant(other, 0.0) else self._binary("-", self, other)

    def __rsub__(self, other):
        return -self if _is_constant(other, 0.0) else self._binary("-", other, self)

    def __mul__(self, other):
        return _product(self, other, self, other)

    def __rmul__(self, other):
        return _product(self, other, other, self)

    def __truediv__(self, other):
        return self if _is_constant(other, 1.0) else self._binary("/", self, other)

    def __rtruediv__(self, other):
        return self._binary("/", other, self)

    def __neg__(self):
        return self.graph.add("neg", (_operand(self),))

    def sin(self):  # (np.sin of an object array calls it)
        return self.graph.add("sin", (_operand(self),))

    def cos(self):
        return self.graph.add("cos", (_operand(self),))

    def __ne__(self, other):
        """True: the passes compare a value with 0 only to skip work that would add nothing
        (a zero factor, a robot at rest), and that work, done, gives the same values."""
        return True

    def __eq__(self, other):
        raise TypeError("a traced value cannot decide a branch")

    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("a traced value cannot decide a branch")


def _is_constant(x, value) -> bool:
    return type(x) is not Traced and x == value


def _product(traced, other, a, b):
    if type(other) is not Traced:
        if other == 0.0:
            return 0.0
        if other == 1.0:
            return traced
        if other == -1.0:
            return -traced
    return traced._binary("*", a, b)


def _operand(x):
    return ("n", x.index) if type(x) is Traced else ("c", float(x))


class _Graph:
    """Operations on traced values, each kept once: (operation, operands) → its index."""

    def __init__(self):
        self.operations: list = []
        self._index: dict = {}

    def add(self, operation, operands) -> Traced:
        key = (operation, operands)
        index = self._index.get(key)
        if index is None:
            index = self._index[key] = len(self.operations)
            self.operations.append(key)
        return Traced(self, index)

    def inputs(self, name: str, shape: tuple) -> np.ndarray:
        array = np.empty(shape, dtype=object)
        for k, index in enumerate(np.ndindex(*shape)):
            array[index] = self.add("in", (name, k))
        return array


class _TracedNumpy:
    """numpy as the traced passes see it: the float arrays they allocate hold traced values."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(shape, dtype=float):
        if np.dtype(dtype) != np.float64:
            return np.empty(shape, dtype)
        array = np.empty(shape, dtype=object)
        array.fill(0.0)
        return array

    zeros = empty

    @staticmethod
    def eye(n):
        array = _TracedNumpy.empty((n, n))
        for i in range(n):
            array[i, i] = 1.0
        return array


def _python_passes(replacements: dict):
    """A function giving, for a kernel, a copy of its Python function whose calls to kernels go
    to such copies too, with numpy as :class:`_TracedNumpy` and the kernels named in
    ``replacements`` replaced: the package's modules themselves stay untouched."""
    copies: dict = {}

    def copy(function):
        function = getattr(function, "py_func", function)
        if function in copies:
            return copies[function]
        scope = dict(function.__globals__)
        clone = types.FunctionType(function.__code__, scope, function.__name__, function.__defaults__,
                                   function.__closure__)
        copies[function] = clone
        for name, value in scope.items():
            if name in replacements:
                scope[name] = replacements[name]
            elif isinstance(getattr(value, "py_func", value), types.FunctionType) \
                    and getattr(value, "py_func", value) in compiled.KERNELS:
                scope[name] = copy(value)
        scope["np"] = _TracedNumpy()
        return clone
    return copy


def _traced_workspace(model: Model) -> SimpleNamespace:
    """The workspace (workspace.DATA) as the traced passes take it: the model's arrays (constants)
    as ``model``, every scratch array of traced values."""
    model_fields = SimpleNamespace(**dict(zip(MODEL_ARRAYS.field_dict, model_arrays(model))))
    return SimpleNamespace(model=model_fields, **{
        name: _TracedNumpy.empty(array.shape) for name, array in zip(
            [name for name in DATA.field_dict if name != "model"], Workspace(model).arrays())})


def _traced_state(graph: _Graph, model: Model) -> tuple:
    """(pose (4, 4), s (n,), twist (6,), r (n,)) of traced inputs; a fixed base's pose and twist are
    the identity and zeros, as model.state_arrays gives them."""
    n = model.n_joints
    if model.floating_base:
        pose, twist = graph.inputs("pose", (4, 4)), graph.inputs("twist", (6,))
    else:
        pose, twist = np.eye(4).astype(object), np.zeros(6).astype(object)
    return pose, graph.inputs("s", (n,)), twist, graph.inputs("r", (n,))


def _runtime_call(graph: _Graph, name: str, inputs, outputs) -> Traced:
    """A runtime routine (``name``: its kind and sizes, :data:`_RUNTIME_CALLS`) on ``inputs``' entries (row by
    row) copied into its block of the scratch; ``outputs`` receive its results, which it leaves in that
    block after the inputs (an output that is also an input is read where its copy lies)."""
    operands = tuple(_operand(x) for array in inputs for x in np.asarray(array, dtype=object).ravel())
    call = graph.add(name, operands)
    offset = _RUNTIME_CALLS[name.split()[0]][0](*map(float, name.split()[1:]))
    for array in outputs:
        for index in np.ndindex(*array.shape):
            array[index] = graph.add("solved", (("n", call.index), ("c", float(offset))))
            offset += 1
    return call


def _runtime_factorisation(graph: _Graph) -> dict:
    """spatial.lu_factor6 and lu_solve6 as runtime routines of the trace (their pivoting depends on the
    values): the factorisation's node stands in LU[0, 0]; a solve's six results are its entries."""
    def factor(M, LU, pivots):
        LU[0, 0] = graph.add("factor6", tuple(_operand(x) for x in M.ravel()))

    def solve(LU, pivots, b, x):
        solved = graph.add("solve6", (_operand(LU[0, 0]),) + tuple(_operand(v) for v in b))
        for k in range(6):
            x[k] = graph.add("solved", (("n", solved.index), ("c", float(k))))

    return {"lu_factor6": factor, "lu_solve6": solve}


def _runtime_products(graph: _Graph) -> dict:
    """multiply_add_into, cholesky_solve_into and contact_forces_into (constrained_dynamics) as runtime
    routines of the trace: dense loops the compiler vectorises, and a Cholesky factorisation whose pivot
    test depends on the values; contact_forces_into's status (its block's last entry) goes to
    ``graph.status`` (1,)."""
    def multiply_add(A, B, sign, out):
        (p, q), w = A.shape, out.shape[1]
        _runtime_call(graph, f"multiply_add {p} {q} {w} {float(sign)!r}", (A, B[:, :w], out), (out,))

    def cholesky_solve(L, B):
        _runtime_call(graph, f"cholesky_solve {L.shape[0]} {B.shape[1]}", (L, B), (B,))

    def contact_forces(J, M_inv, free_accelerations, drift, JM_inv, L, forces, accelerations):
        m, N = J.shape
        _runtime_call(graph, f"contact_forces {m} {N}", (J, M_inv, free_accelerations, drift),
                      (JM_inv, L, forces, accelerations, graph.status))
        return True

    return {"multiply_add_into": multiply_add, "cholesky_solve_into": cholesky_solve,
            "contact_forces_into": contact_forces}


def trace(model: Model) -> SimpleNamespace:
    """linearize_state_into traced on ``model`` (module docstring): the graph, the outputs A
    (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,) as arrays of traced values and constants, the
    product left to a loop (D (N, 2N), its sign) or None, and the articulated inertias and
    pivots singular_pivot reads (I_A (n+1, 6, 6), D (n+1,))."""
    graph = _Graph()
    found = SimpleNamespace(product=None, pivots=None)

    def pivots(I_A, D):
        found.pivots = (I_A.copy(), D.copy())
        return 0

    def product(model, data, M_inv, D, sign, out):
        found.product = (D.copy(), sign)

    replacements = {**_runtime_factorisation(graph), "singular_pivot": pivots,
                    "_finite": lambda A, M_inv: True, "finite_sum": lambda x: 0.0}
    if derivative_products(model) == DENSE_PRODUCTS:  # (else the product is traced like the rest)
        replacements["tree_multiply_add_into"] = product
    passes = _python_passes(replacements)
    data = _traced_workspace(model)
    n, N = model.n_joints, model.n_velocities
    state = _traced_state(graph, model) + (graph.inputs("tau", (n,)),)
    out = tuple(_TracedNumpy.empty(shape) for shape in ((2 * N, 2 * N), (2 * N, n), (N, N), (N,)))
    passes(linearize_state_into)(data.model, data, state, out)
    return SimpleNamespace(graph=graph, A=out[0], B=out[1], M_inv=out[2], nu_dot=out[3], product=found.product,
                           pivots=found.pivots)


def _trace_on_contacts(model: Model, contacts: tuple, kernel, arguments) -> SimpleNamespace:
    """``kernel`` (a kernel on a contact set: impacts.impact_into, contact_linearization.constrained_linearize_into)
    traced on ``model`` and ``contacts`` (a tuple of Contact), called with the traced contact set and
    ``arguments(graph, state)`` (state: :func:`_traced_state`'s): the graph, the status of J M⁻¹ Jᵀ's
    factorisation (1,) and what singular_pivot reads (as :func:`trace`)."""
    graph = _Graph()
    graph.status = _TracedNumpy.empty(1)
    found = SimpleNamespace(pivots=None)

    def pivots(I_A, D):
        found.pivots = (I_A.copy(), D.copy())
        return -1  # (none: the C tests them, _contacts_c_source)

    passes = _python_passes({"singular_pivot": pivots, "invalid_state": lambda *state: 0,
                             "finite_sum": lambda x: 0.0, **_runtime_factorisation(graph), **_runtime_products(graph)})
    data = _traced_workspace(model)
    arrays = contact_arrays(model, contacts)
    k, m, N = len(arrays.contacts), arrays.m, model.n_velocities
    scratch = {name: _TracedNumpy.empty(shape) for name, shape in (
        ("J", (m, N)), ("drift", (m,)), ("J_local", (k, 6, N)), ("rotation", (k, 3, 3)), ("body_X_base", (k, 6, 6)),
        ("T", (k, 6, 6)), ("JM_inv", (m, N)), ("L", (m, m)), ("wrenches", (k, 6)), ("d_accel", (m, 2 * N)))}
    contact_fields = SimpleNamespace(
        bodies=arrays.bodies, X_cb=arrays.X_contact_body, dims=arrays.dims, world_aligned=arrays.world_aligned,
        starts=arrays.starts, coupling_rows=arrays.coupling_rows, coupling_multipliers=arrays.coupling_multipliers,
        workspace=data, **scratch)
    passes(kernel)(contact_fields, *arguments(graph, _traced_state(graph, model)))
    return SimpleNamespace(graph=graph, status=graph.status, pivots=found.pivots)


def trace_impact(model: Model, contacts: tuple, restitution: float) -> SimpleNamespace:
    """impacts.impact_into traced on ``model``, ``contacts`` (a tuple of Contact) and the restitution:
    :func:`_trace_on_contacts`'s, and the outputs (M_inv (N, N), A (2N, 2N), impulses (m,), d_impulses
    (m, 2N), nu_plus (N,)) as ``regions``, by their C names."""
    from .impacts import impact_into  # (impacts.py makes its generated kernels here)

    N, m = model.n_velocities, contact_arrays(model, contacts).m
    regions = {name: _TracedNumpy.empty(shape) for name, shape in (
        ("M_inv", (N, N)), ("A", (2 * N, 2 * N)), ("impulses", (m,)), ("d_impulses", (m, 2 * N)), ("nu_plus", (N,)))}
    traced = _trace_on_contacts(model, contacts, impact_into, lambda graph, state: (
        state + (np.zeros(model.n_joints).astype(object),), float(restitution), tuple(regions.values())))
    traced.regions = regions
    return traced


def trace_constrained(model: Model, contacts: tuple) -> SimpleNamespace:
    """contact_linearization.constrained_linearize_into traced on ``model`` and ``contacts`` (a tuple of
    Contact), without a step: :func:`_trace_on_contacts`'s, and the outputs (A (2N, 2N), B (2N, n), M_inv
    (N, N), ν̇ (N,), λ (m,), ∂λ/∂z (m, 2N), ∂λ/∂τ (m, n)) as ``regions``, by their C names."""
    from .contact_linearization import constrained_linearize_into  # (it imports this module)

    N, n, m = model.n_velocities, model.n_joints, contact_arrays(model, contacts).m
    regions = {name: _TracedNumpy.empty(shape) for name, shape in (
        ("A", (2 * N, 2 * N)), ("B", (2 * N, n)), ("M_inv", (N, N)), ("nu_dot", (N,)), ("forces", (m,)),
        ("d_forces", (m, 2 * N)), ("d_forces_dtau", (m, n)))}
    no_step = (np.empty((0, 0)), np.empty((0, 0)))
    traced = _trace_on_contacts(model, contacts, constrained_linearize_into, lambda graph, state: (
        state + (graph.inputs("tau", (n,)),), tuple(regions.values()) + no_step, 0.0))
    traced.regions = regions
    return traced


_RUNTIME = r"""
#include <math.h>

/* The routines' loops over a row are vectorised (-O3's loop vectoriser; -O2 keeps them scalar):
   each entry's sums stay in their order, and -ffp-contract=off still forbids FMA */
#if defined(__GNUC__) && !defined(__clang__)
#define RL_LOOPS __attribute__((optimize("O3")))
#else
#define RL_LOOPS
#endif

/* spatial.lu_factor6 in place on LU (6x6, row-major), its pivot rows as doubles */
static void rl_factor6(double *LU, double *pivots) {
    for (int k = 0; k < 6; k++) {
        int best = k;
        for (int r = k + 1; r < 6; r++)
            if (fabs(LU[6 * r + k]) > fabs(LU[6 * best + k])) best = r;
        pivots[k] = best;
        if (best != k)
            for (int c = 0; c < 6; c++) {
                double swap = LU[6 * k + c]; LU[6 * k + c] = LU[6 * best + c]; LU[6 * best + c] = swap;
            }
        for (int r = k + 1; r < 6; r++) {
            LU[6 * r + k] /= LU[6 * k + k];
            for (int c = k + 1; c < 6; c++) LU[6 * r + c] -= LU[6 * r + k] * LU[6 * k + c];
        }
    }
}

/* spatial.lu_solve6: x = M^-1 x in place */
static void rl_solve6(const double *LU, const double *pivots, double *x) {
    for (int k = 0; k < 6; k++) {
        int p = (int)pivots[k];
        double swap = x[k]; x[k] = x[p]; x[p] = swap;
    }
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < r; c++) x[r] -= LU[6 * r + c] * x[c];
    for (int r = 5; r >= 0; r--) {
        for (int c = r + 1; c < 6; c++) x[r] -= LU[6 * r + c] * x[c];
        x[r] /= LU[6 * r + r];
    }
}

/* compiled.finite_sum */
static double rl_finite_sum(const double *x, long n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    long end = n - n % 4;
    for (long j = 0; j < end; j += 4) { s0 += x[j]; s1 += x[j + 1]; s2 += x[j + 2]; s3 += x[j + 3]; }
    for (long j = end; j < n; j++) s0 += x[j];
    return (s0 + s1) + (s2 + s3);
}

/* constrained_dynamics.multiply_add_into: out (p, w; rows ldo apart) += sign A (p, q) B (q, >= w; rows ldb
   apart), each entry summed in the same order */
RL_LOOPS static void rl_multiply_add(const double *restrict A, const double *restrict B, int p, int q, int w, int ldb,
                            double sign, double *restrict out, int ldo) {
    int end = q - q % 4, top = p - p % 4;
    for (int i = 0; i < top; i += 4) {
        double *r0 = out + i * ldo, *r1 = r0 + ldo, *r2 = r1 + ldo, *r3 = r2 + ldo;
        const double *A0 = A + i * q, *A1 = A0 + q, *A2 = A1 + q, *A3 = A2 + q;
        for (int k = 0; k < end; k += 4) {
            double a00 = sign * A0[k], a01 = sign * A0[k + 1], a02 = sign * A0[k + 2], a03 = sign * A0[k + 3];
            double a10 = sign * A1[k], a11 = sign * A1[k + 1], a12 = sign * A1[k + 2], a13 = sign * A1[k + 3];
            double a20 = sign * A2[k], a21 = sign * A2[k + 1], a22 = sign * A2[k + 2], a23 = sign * A2[k + 3];
            double a30 = sign * A3[k], a31 = sign * A3[k + 1], a32 = sign * A3[k + 2], a33 = sign * A3[k + 3];
            const double *B0 = B + k * ldb, *B1 = B0 + ldb, *B2 = B1 + ldb, *B3 = B2 + ldb;
            for (int j = 0; j < w; j++) {
                double x0 = B0[j], x1 = B1[j], x2 = B2[j], x3 = B3[j];
                r0[j] += a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3;
                r1[j] += a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3;
                r2[j] += a20 * x0 + a21 * x1 + a22 * x2 + a23 * x3;
                r3[j] += a30 * x0 + a31 * x1 + a32 * x2 + a33 * x3;
            }
        }
        for (int k = end; k < q; k++) {
            double f0 = sign * A0[k], f1 = sign * A1[k], f2 = sign * A2[k], f3 = sign * A3[k];
            const double *Bk = B + k * ldb;
            for (int j = 0; j < w; j++) {
                double x = Bk[j];
                r0[j] += f0 * x; r1[j] += f1 * x; r2[j] += f2 * x; r3[j] += f3 * x;
            }
        }
    }
    for (int i = top; i < p; i++) {
        double *row = out + i * ldo;
        const double *Ai = A + i * q;
        for (int k = 0; k < end; k += 4) {
            double f0 = sign * Ai[k], f1 = sign * Ai[k + 1], f2 = sign * Ai[k + 2], f3 = sign * Ai[k + 3];
            const double *B0 = B + k * ldb, *B1 = B0 + ldb, *B2 = B1 + ldb, *B3 = B2 + ldb;
            for (int j = 0; j < w; j++) row[j] += f0 * B0[j] + f1 * B1[j] + f2 * B2[j] + f3 * B3[j];
        }
        for (int k = end; k < q; k++) {
            double f = sign * Ai[k];
            const double *Bk = B + k * ldb;
            for (int j = 0; j < w; j++) row[j] += f * Bk[j];
        }
    }
}
"""

_RUNTIME_CONTACTS = r"""
/* constrained_dynamics.cholesky_solve_into: B (m, c) <- (L L^T)^-1 B in place */
RL_LOOPS static void rl_cholesky_solve(const double *restrict L, double *restrict B, int m, int c) {
    for (int i = 0; i < m; i++) {
        double *row = B + i * c;
        for (int k = 0; k < i; k++) {
            double factor = L[i * m + k]; const double *Bk = B + k * c;
            for (int j = 0; j < c; j++) row[j] -= factor * Bk[j];
        }
        for (int j = 0; j < c; j++) row[j] /= L[i * m + i];
    }
    for (int i = m - 1; i >= 0; i--) {
        double *row = B + i * c;
        for (int k = i + 1; k < m; k++) {
            double factor = L[k * m + i]; const double *Bk = B + k * c;
            for (int j = 0; j < c; j++) row[j] -= factor * Bk[j];
        }
        for (int j = 0; j < c; j++) row[j] /= L[i * m + i];
    }
}

/* constrained_dynamics.contact_forces_into: JM_inv (m, N), L (m, m), forces (m), accelerations (N) from J (m, N),
   M_inv (N, N), the free accelerations (N) and the drift (m); 0 when J M^-1 J^T is singular, else 1 */
RL_LOOPS static double rl_contact_forces(const double *restrict J, const double *restrict M_inv,
                                const double *restrict free_accelerations, const double *restrict drift,
                                double *restrict JM_inv, double *restrict L, double *restrict forces,
                                double *restrict accelerations, int m, int N) {
    for (int i = 0; i < m * N; i++) JM_inv[i] = 0.0;
    for (int i = 0; i < m; i++)
        for (int k = 0; k < N; k++) {
            double factor = J[i * N + k];
            if (factor != 0.0)
                for (int j = 0; j < N; j++) JM_inv[i * N + j] += factor * M_inv[k * N + j];
        }
    for (int i = 0; i < m * m; i++) L[i] = 0.0;
    double scale = 1e-300;
    for (int i = 0; i < m; i++) {
        double acc = 0.0;
        for (int k = 0; k < N; k++) acc += JM_inv[i * N + k] * J[i * N + k];
        if (fabs(acc) > scale) scale = fabs(acc);
    }
    for (int i = 0; i < m; i++)
        for (int j = 0; j <= i; j++) {
            double acc = 0.0;
            for (int k = 0; k < N; k++) acc += JM_inv[i * N + k] * J[j * N + k];
            for (int k = 0; k < j; k++) acc -= L[i * m + k] * L[j * m + k];
            if (i == j) {
                if (!(acc > DEGENERACY_TOLERANCE * scale)) return 0.0;
                L[i * m + i] = sqrt(acc);
            } else L[i * m + j] = acc / L[j * m + j];
        }
    for (int i = 0; i < m; i++) {
        double acc = drift[i];
        for (int k = 0; k < N; k++) acc += J[i * N + k] * free_accelerations[k];
        forces[i] = -acc;
    }
    rl_cholesky_solve(L, forces, m, 1);
    for (int k = 0; k < N; k++) accelerations[k] = free_accelerations[k];
    for (int i = 0; i < m; i++)
        for (int k = 0; k < N; k++) accelerations[k] += JM_inv[i * N + k] * forces[i];
    return 1.0;
}
"""


def _contact_forces_call(b: str, m: int, N: int) -> str:
    J, M_inv, free, drift = 0, m * N, m * N + N * N, m * N + N * N + N
    JM_inv, L = drift + m, drift + m + m * N
    forces, accelerations = L + m * m, L + m * m + m
    return (f"{b}[{accelerations + N}] = rl_contact_forces({b} + {J}, {b} + {M_inv}, {b} + {free}, {b} + {drift}, "
            f"{b} + {JM_inv}, {b} + {L}, {b} + {forces}, {b} + {accelerations}, {m}, {N});")


_RUNTIME_CALLS = {  # kind -> (offset of its results in its block, block size, C call on block b) of its sizes
    "multiply_add": (lambda p, q, w, sign: int(p * q + q * w), lambda p, q, w, sign: int(p * q + q * w + p * w),
                     lambda b, p, q, w, sign: f"rl_multiply_add({b}, {b} + {int(p * q)}, {int(p)}, {int(q)}, {int(w)}, "
                                              f"{int(w)}, {_literal(sign)}, {b} + {int(p * q + q * w)}, {int(w)});"),
    "cholesky_solve": (lambda m, c: int(m * m), lambda m, c: int(m * m + m * c),
                       lambda b, m, c: f"rl_cholesky_solve({b}, {b} + {int(m * m)}, {int(m)}, {int(c)});"),
    "contact_forces": (lambda m, N: int(m * N + N * N + N + m),
                       lambda m, N: int(2 * m * N + N * N + 2 * N + 2 * m + m * m + 1),
                       lambda b, m, N: _contact_forces_call(b, int(m), int(N))),
}
"""What a trace may leave to a runtime routine (:func:`_runtime_products`); a contact_forces block ends with
its status (1.0, or 0.0 for a singular J M⁻¹ Jᵀ)."""

_ARGUMENTS = ("const double *restrict pose, const double *restrict s, const double *restrict twist, "
              "const double *restrict r, const double *restrict tau, double *restrict A, double *restrict B, "
              "double *restrict M_inv, double *restrict nu_dot, double *restrict w")


def _literal(value: float) -> str:
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    return repr(value)


def _straight_line(graph: _Graph, regions: dict, size: int) -> tuple[list, list, int, int]:
    """The C statements of what ``regions`` ({C pointer expression: array of traced values and constants})
    receive: (the statements of each part, the constants' stores, the scratch doubles used — from ``size``
    on: the runtime routines' blocks, and the values crossing parts —, the operations kept)."""
    operations = graph.operations
    writes: dict = {}  # operation -> [(region, flat index)]; constants written at the start
    constants = []
    for region, array in regions.items():
        for k, value in enumerate(array.ravel()):
            if type(value) is Traced:
                writes.setdefault(value.index, []).append((region, k))
            else:
                constants.append(f"({region})[{k}] = {_literal(float(value))};")
    live, stack = set(), list(writes)
    while stack:
        k = stack.pop()
        if k not in live:
            live.add(k)
            operation, operands = operations[k]
            if operation != "in":
                stack.extend(index for kind, index in operands if kind == "n")
    order = sorted(live)
    part = {k: i // PART for i, k in enumerate(order)}
    blocks = {}  # factor6 (42 doubles: LU, pivots), solve6 (6) and the runtime calls' blocks live in w
    for k in order:
        kind, *sizes = operations[k][0].split()
        if kind in ("factor6", "solve6"):
            blocks[k] = size
            size += 42 if kind == "factor6" else 6
        elif kind in _RUNTIME_CALLS:
            blocks[k] = size
            size += _RUNTIME_CALLS[kind][1](*map(float, sizes))
    slots = {}
    for k in order:
        operation, operands = operations[k]
        if operation == "in":
            continue
        for kind, index in operands:
            if kind == "n" and part[index] != part[k] and index not in slots and index not in blocks:
                slots[index] = size
                size += 1

    def value(x):
        kind, v = x
        if kind == "c":
            return _literal(v)
        if operations[v][0] == "solved":
            return f"w[{blocks[operations[v][1][0][1]] + int(operations[v][1][1][1])}]"
        return f"w[{slots[v]}]" if v in slots else f"t{v}"

    parts = [[] for _ in range(max(part.values(), default=0) + 1)]
    for k in order:
        operation, operands = operations[k]
        kind, *sizes = operation.split()
        lines = parts[part[k]]
        if operation == "solved":
            target = value(("n", k))
        elif operation == "factor6":
            lines.append(f"{{ double *LU = w + {blocks[k]}; "
                         + " ".join(f"LU[{j}] = {value(x)};" for j, x in enumerate(operands))
                         + " rl_factor6(LU, LU + 36); }")
            continue
        elif operation == "solve6":
            factor = blocks[operands[0][1]]
            lines.append(f"{{ double *x = w + {blocks[k]}; "
                         + " ".join(f"x[{j}] = {value(x)};" for j, x in enumerate(operands[1:]))
                         + f" rl_solve6(w + {factor}, w + {factor + 36}, x); }}")
            continue
        elif kind in _RUNTIME_CALLS:
            lines.append(f"{{ double *b = w + {blocks[k]}; "
                         + " ".join(f"b[{j}] = {value(x)};" for j, x in enumerate(operands))
                         + " " + _RUNTIME_CALLS[kind][2]("b", *map(float, sizes)) + " }")
            continue
        else:
            if operation == "in":
                expression = f"{operands[0]}[{operands[1]}]"
            elif operation == "neg":
                expression = f"-{value(operands[0])}"
            elif operation in ("sin", "cos"):
                expression = f"{operation}({value(operands[0])})"
            else:
                expression = f"{value(operands[0])} {operation} {value(operands[1])}"
            target = f"w[{slots[k]}]" if k in slots else f"t{k}"
            lines.append(f"{target if k in slots else 'const double ' + target} = {expression};")
        lines.extend(f"({region})[{i}] = {target};" for region, i in writes.get(k, ()))
    return parts, constants, size, len(live)


def _scratch_regions(regions: dict, arrays: dict) -> tuple[dict, int]:
    """``arrays`` ({name: array or None}) placed one after the other at the start of the scratch w, as more
    ``regions``: ({name: its offset}, the doubles they take)."""
    size, offsets = 0, {}
    for name, array in arrays.items():
        if array is not None:
            offsets[name] = size
            regions[f"w + {size}"] = array
            size += array.size
    return offsets, size


def _singular_pivot_c(offsets: dict, n_bodies: int) -> str:
    """forward_dynamics.singular_pivot in C, on the articulated inertias and pivots the trace left in w."""
    return f"""int singular = -1;  /* forward_dynamics.singular_pivot */
    for (int i = {n_bodies - 1}; i > 0; i--) {{
        double scale = 0.0;
        const double *I_A = w + {offsets["inertias"]} + 36 * i;
        for (int k = 0; k < 36; k++) if (fabs(I_A[k]) > scale) scale = fabs(I_A[k]);
        if (!(fabs(w[{offsets["pivots"]} + i]) > {_literal(PIVOT_TOLERANCE)} * scale)) {{ singular = i - 1; break; }}
    }}"""


def _parts_source(parts: list, arguments: str, call_arguments: str) -> tuple[list, list]:
    """(the C functions of :func:`_straight_line`'s parts, each taking ``arguments``; the entry's calls
    of them, in order, with ``call_arguments``)."""
    return ([f"__attribute__((noinline)) static void part{i}({arguments}) {{\n    " + "\n    ".join(lines) + "\n}\n"
             for i, lines in enumerate(parts)], [f"    part{i}({call_arguments});" for i in range(len(parts))])


def c_source(traced: SimpleNamespace, model_name: str = "") -> tuple[str, int, int]:
    """The C of a :func:`trace`: ``int rl_linearize(pose, s, twist, r, tau, A, B, M_inv, nu_dot, w)``
    (row-major doubles as model.state_arrays and linearize_into take them; w: scratch) returning
    linearize_state_into's status.  Returns (source, operations, scratch doubles)."""
    N, n_bodies = traced.M_inv.shape[0], traced.pivots[1].shape[0]
    regions = {"A": traced.A, "B": traced.B, "M_inv": traced.M_inv, "nu_dot": traced.nu_dot}
    # what the status and the product read back, in w
    scratch, size = _scratch_regions(regions, {"derivatives": traced.product[0] if traced.product else None,
                                               "inertias": traced.pivots[0], "pivots": traced.pivots[1]})
    parts, constants, size, operations = _straight_line(traced.graph, regions, size)
    functions, calls = _parts_source(parts, _ARGUMENTS, "pose, s, twist, r, tau, A, B, M_inv, nu_dot, w")
    if traced.product is not None:
        calls.append(f"    rl_multiply_add(M_inv, w + {scratch['derivatives']}, {N}, {N}, {2 * N}, {2 * N}, "
                     f"{_literal(float(traced.product[1]))}, A + {N * 2 * N}, {2 * N});")
    source = [f"/* robot_linearization: the linearization of model '{model_name}', generated (generated.py) */",
              _RUNTIME, *functions]
    source.append(f"""int rl_linearize({_ARGUMENTS}) {{
    {"(void)0;" if not constants else " ".join(constants)}
{chr(10).join(calls)}
    {_singular_pivot_c(scratch, n_bodies)}
    if (singular < 0 && !(isfinite(rl_finite_sum(A + {N * 2 * N}, {N * 2 * N}) + rl_finite_sum(M_inv, {N * N}))
                          && isfinite(rl_finite_sum(nu_dot, {N}))))
        return -2;
    return singular;
}}
""")
    return "\n".join(source), operations, size


_CONTACT_KERNELS = {"impact": ("rl_impact", ("pose", "s", "twist", "r")),  # kind -> (its C function, its inputs)
                    "constrained": ("rl_constrained", ("pose", "s", "twist", "r", "tau"))}


def _contacts_c_source(traced: SimpleNamespace, kind: str, model_name: str = "") -> tuple[str, int, int]:
    """The C of a :func:`trace_impact` (``kind`` "impact") or :func:`trace_constrained` ("constrained"):
    ``int rl_impact(pose, s, twist, r, <the regions>, w)`` / ``rl_constrained(pose, s, twist, r, tau, …, w)``
    (row-major doubles; w: scratch) returning, for a valid state, the kernel's status: 0; 1 when J M⁻¹ Jᵀ
    is singular; 2 + j when M is singular because of joint j; −1 (constrained) when the result is not
    finite.  Returns (source, operations, scratch doubles)."""
    symbol, inputs = _CONTACT_KERNELS[kind]
    regions = dict(traced.regions)
    scratch, size = _scratch_regions(regions, {"inertias": traced.pivots[0], "pivots": traced.pivots[1],
                                               "status": traced.status})
    parts, constants, size, operations = _straight_line(traced.graph, regions, size)
    arguments = ", ".join([f"const double *restrict {name}" for name in inputs]
                          + [f"double *restrict {name}" for name in traced.regions] + ["double *restrict w"])
    functions, calls = _parts_source(parts, arguments, ", ".join([*inputs, *traced.regions, "w"]))
    finite = " + ".join(f"rl_finite_sum({name}, {array.size})" for name, array in traced.regions.items())
    overflow = f"if (!isfinite({finite})) return -1;" if kind == "constrained" else ""
    source = [f"/* robot_linearization: the {kind} kernel of model '{model_name}' on a contact set, generated "
              "(generated.py) */", f"#define DEGENERACY_TOLERANCE {_literal(DEGENERACY_TOLERANCE)}", _RUNTIME,
              _RUNTIME_CONTACTS, *functions]
    source.append(f"""int {symbol}({arguments}) {{
    {"(void)0;" if not constants else " ".join(constants)}
{chr(10).join(calls)}
    {_singular_pivot_c(scratch, traced.pivots[1].shape[0])}
    if (singular >= 0) return 2 + singular;
    if (w[{scratch["status"]}] != 1.0) return 1;
    {overflow}
    return 0;
}}
""")
    return "\n".join(source), operations, size


def cache_directory() -> str:
    """Where generated libraries are kept: $NUMBA_CACHE_DIR/robot_linearization when numba's
    cache is redirected, else $XDG_CACHE_HOME (default ~/.cache)/robot_linearization."""
    numba_cache = os.environ.get("NUMBA_CACHE_DIR")
    if numba_cache:
        return os.path.join(numba_cache, "robot_linearization")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                        "robot_linearization")


def c_compiler() -> str | None:
    """$CC, else cc or gcc on PATH, else None."""
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def target_flags() -> tuple[str, ...]:
    """("avx2", ("-mavx2",)) on an x86-64 CPU with AVX2, else ("baseline", ()): the instruction set
    the library is compiled for, that of the machine that loads it.  AVX2 vectorises the product
    −M⁻¹D and part of the straight-line code: solo12's kernel took 8.6–9.1 instead of 10.9–11.0 µs
    (2026-11-26), the same bits, since without contraction each lane does the same IEEE operations.
    The set is part of the library's name, so machines sharing a cache never load, or remove, each
    other's."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        from llvmlite import binding  # (numba's, which reads the CPU's features)

        if binding.get_host_cpu_features().get("avx2"):
            return "avx2", ("-mavx2",)
    return "baseline", ()


def _compile(source: str, path: str, flags: tuple) -> None:
    """The shared library of ``source`` at ``path``, written under another name and renamed
    into place, so a failed or interrupted compile leaves nothing behind."""
    compiler = c_compiler()
    if compiler is None:
        raise GenerationError("no C compiler found (set CC, or install gcc)")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    try:
        done = subprocess.run([compiler, *COMPILE_FLAGS, *flags, "-x", "c", "-", "-o", partial, "-lm"],
                              input=source.encode(), capture_output=True, timeout=600)
        if done.returncode != 0:
            lines = done.stderr.decode(errors="replace").strip().splitlines()
            raise GenerationError(f"{compiler} failed: {lines[-1] if lines else f'exit status {done.returncode}'}")
        os.replace(partial, path)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GenerationError(f"{compiler}: {error}") from None
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _library(source: str, operations: int, what: str, prefix: str, symbol: str, pointers: int) -> tuple:
    """(path, the ctypes function ``symbol`` (int, of ``pointers`` pointers)) of ``source``'s shared library in the
    cache, compiled first if it is not there (said once, as the compile of ``what``).  ``prefix``: the
    kernel's kind and robot, without '-'; a library compiled anew removes the older ones of its prefix
    and instruction set only (another version of the package)."""
    compiler = c_compiler() or ""
    instructions, flags = target_flags()
    key = hashlib.sha256("\0".join((source, compiler, *COMPILE_FLAGS, *flags)).encode()).hexdigest()[:24]
    prefix = f"{prefix}-{instructions}-"  # (no '-' within the prefix's parts: one prefix is no other's start)
    directory = cache_directory()
    path = os.path.join(directory, f"{prefix}{key}.so")
    if not os.path.exists(path):
        _log.warning("compiling the generated kernel of %s (%d operations): about %d s, once per machine; "
                     "cached in %s", what, operations, 1 + operations // 1500, directory)
        _compile(source, path, flags)
        for name in os.listdir(directory):
            if name.startswith(prefix) and name.endswith(".so") and name != os.path.basename(path):
                os.remove(os.path.join(directory, name))
    try:
        function = getattr(ctypes.CDLL(path), symbol)
    except OSError as error:
        raise GenerationError(f"cannot load {path}: {error}") from None
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_void_p] * pointers
    return path, function


def _robot_name(model: Model) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", model.name)[:40]


def _traced_or_refused(model: Model, tracing):
    try:
        return tracing()
    except TypeError as error:  # (Traced's: a pass that branches on the state's values)
        raise GenerationError(f"model '{model.name}' cannot be traced: {error}") from None


def _within_bounds(model: Model, operations: int) -> None:
    if operations > GENERATED_OPERATIONS:
        raise GenerationError(f"model '{model.name}' traces to {operations} operations, above the "
                              f"{GENERATED_OPERATIONS} for which a generated kernel pays (generated.py)")


class GeneratedKernel:
    """One model's generated linearization (module docstring), loaded in this process.

    ``call(scratch, arrays, out, dt)``: what linearization.run_linearize_into calls in place of
    linearize_into(data, arrays, out, dt), with ``scratch`` (``scratch_size``,) float64 in place
    of the workspace (one per thread); the same statuses.  ``call_states(scratch, states, out, dt)``:
    linearization.linearize_states_into's K states likewise (a horizon).  ``operations``: the
    trace's size; ``path``: the shared library."""

    def __init__(self, model: Model, traced: SimpleNamespace | None = None):
        traced = traced or _traced_or_refused(model, lambda: trace(model))
        source, self.operations, self.scratch_size = c_source(traced, model.name)
        _within_bounds(model, self.operations)
        self.path, self._function = _library(source, self.operations, f"model '{model.name}'",
                                             f"linearize-{_robot_name(model)}", "rl_linearize", 10)
        self.call = _entry(self._function, model.floating_base)  # (the entry holds the function's address only)
        self.call_states = _states_entry(self._function, model.floating_base)


class GeneratedContactKernel:
    """One model's generated kernel on one contact set, loaded in this process: kind "impact", the
    impact map with ``restitution`` (impacts.impact_into traced, :func:`trace_impact`), or
    "constrained", the constrained linearization (contact_linearization.constrained_linearize_into,
    :func:`trace_constrained`).

    ``call(scratch, arrays, e, out)`` (impact) or ``call(scratch, arrays, out, dt)`` (constrained, its
    Euler step taken as the kernel's): the kernel's call with ``scratch`` (``scratch_size``,) float64
    in place of the contact set's data (one per thread); the kernel's statuses (a nonzero one: run
    the generic kernel for its message).  ``operations``, ``path`` as :class:`GeneratedKernel`'s."""

    def __init__(self, model: Model, contacts: tuple, kind: str, restitution: float = 0.0):
        traced = _traced_or_refused(model, (lambda: trace_impact(model, contacts, restitution)) if kind == "impact"
                                    else (lambda: trace_constrained(model, contacts)))
        source, self.operations, self.scratch_size = _contacts_c_source(traced, kind, model.name)
        _within_bounds(model, self.operations)
        symbol, inputs = _CONTACT_KERNELS[kind]
        contact_set = hashlib.sha256(repr((contacts, float(restitution))).encode()).hexdigest()[:8]
        what = "the impact map" if kind == "impact" else "the constrained linearization"
        self.path, self._function = _library(
            source, self.operations, f"{what} of model '{model.name}' on {len(contacts)} contacts",
            f"{kind}-{_robot_name(model)}_{contact_set}", symbol, len(inputs) + len(traced.regions) + 1)
        self.call = (_impact_entry(self._function) if kind == "impact"
                     else _constrained_entry(self._function, model.floating_base))


def _impact_entry(function):
    """impact_into with the generated function in its place (compiled here, not cached)."""
    @njit(nogil=True, error_model="numpy")
    def generated_impact_into(scratch, state, e, out):
        problem = invalid_state(*state)
        if problem != 0:
            return -10 - problem
        M_inv, A, impulses, d_impulses, nu_plus = out
        return function(state[0].ctypes, state[1].ctypes, state[2].ctypes, state[3].ctypes, M_inv.ctypes,
                        A.ctypes, impulses.ctypes, d_impulses.ctypes, nu_plus.ctypes, scratch.ctypes)
    return generated_impact_into


def _constrained_entry(function, floating_base: bool):
    """constrained_linearize_into with the generated function in its place (compiled here, not cached)."""
    @njit(nogil=True, error_model="numpy")
    def generated_constrained_linearize_into(scratch, state, out, dt):
        problem = invalid_state(*state)
        if problem != 0:
            return -10 - problem
        pose, s, twist, r, tau = state
        A, B, M_inv, nu_dot, forces, d_forces, d_forces_dtau, A_d, B_d = out
        status = function(pose.ctypes, s.ctypes, twist.ctypes, r.ctypes, tau.ctypes, A.ctypes, B.ctypes,
                          M_inv.ctypes, nu_dot.ctypes, forces.ctypes, d_forces.ctypes, d_forces_dtau.ctypes,
                          scratch.ctypes)
        if status == 0 and dt > 0.0:
            euler_step_into(A, B, twist, nu_dot, floating_base, dt, A_d, B_d)
        return status
    return generated_constrained_linearize_into


def _entry(function, floating_base: bool):
    """linearize_into with the generated function in place of linearize_state_into (compiled
    here, not cached: the function's address is this process's)."""
    @njit(nogil=True, error_model="numpy")
    def generated_linearize_into(scratch, state, out, dt):
        problem = invalid_state(*state)
        if problem != 0:
            return -10 - problem
        pose, s, twist, r, tau = state
        A, B, M_inv, nu_dot, A_d, B_d = out
        status = function(pose.ctypes, s.ctypes, twist.ctypes, r.ctypes, tau.ctypes, A.ctypes, B.ctypes,
                          M_inv.ctypes, nu_dot.ctypes, scratch.ctypes)
        if dt > 0.0:
            euler_step_into(A, B, twist, nu_dot, floating_base, dt, A_d, B_d)
        return status
    return generated_linearize_into


def _states_entry(function, floating_base: bool):
    """linearize_states_into with the generated function in place of linearize_state_into (compiled
    here, not cached)."""
    @njit(nogil=True, error_model="numpy")
    def generated_linearize_states_into(scratch, states, out, dt):
        base_poses, joint_positions, base_twists, joint_velocities, torques = states
        A, B, M_inv, accelerations, status, A_d, B_d = out
        invalid = first_invalid_state(base_poses, joint_positions, base_twists, joint_velocities, torques)
        if invalid[1] != 0:
            return invalid
        for k in range(joint_positions.shape[0]):
            status[k] = function(base_poses[k].ctypes, joint_positions[k].ctypes, base_twists[k].ctypes,
                                 joint_velocities[k].ctypes, torques[k].ctypes, A[k].ctypes, B[k].ctypes,
                                 M_inv[k].ctypes, accelerations[k].ctypes, scratch.ctypes)
        if dt > 0.0:
            euler_step_jacobians_into(A, B, base_twists, accelerations, floating_base, dt, A_d, B_d)
        return invalid
    return generated_linearize_states_into


_kernels: "weakref.WeakKeyDictionary[Model, GeneratedKernel]" = weakref.WeakKeyDictionary()


def generated_kernel(model: Model) -> GeneratedKernel:
    """``model``'s :class:`GeneratedKernel`, traced, compiled (or loaded from the cache) and
    wrapped on first use in this process.  GenerationError when it cannot be built here."""
    kernel = _kernels.get(model)
    if kernel is None:
        kernel = _kernels[model] = GeneratedKernel(model)
    return kernel


_contact_kernels: "weakref.WeakKeyDictionary[Model, dict]" = weakref.WeakKeyDictionary()


def generated_contact_kernel(model: Model, contacts: tuple, kind: str,
                             restitution: float = 0.0) -> GeneratedContactKernel:
    """``model``'s :class:`GeneratedContactKernel` of ``kind`` on ``contacts`` (a tuple of Contact), built on
    first use in this process as :func:`generated_kernel`.  GenerationError when it cannot be built here."""
    kernels = _contact_kernels.setdefault(model, {})
    key = (contacts, kind, float(restitution))
    if key not in kernels:
        kernels[key] = GeneratedContactKernel(model, contacts, kind, restitution)
    return kernels[key]
