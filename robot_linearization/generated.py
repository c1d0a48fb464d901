"""Robot-specific kernels: one model's linearization traced into straight-line C.

The generic kernel (linearization.linearize_state_into) walks the tree in loops and reads
the model's arrays at every step.  For one robot all of that is fixed: the tree, the joint
axes, the inertias.  Only the state varies.  :func:`generated_kernel` runs the same passes
once on that robot, in Python (their functions, compiled.KERNELS), on traced values that
stand for the state's entries, and records the arithmetic that depends on the state:

- a product with a model constant 0 (most of a joint's motion subspace and transform, the
  zeros of an inertia) is dropped, and a product with 1 is its operand;
- an operation met again on the same operands is computed once;
- what remains is written out as C in the passes' own order and grouping, and compiled
  without floating-point contraction.

So every result is the same IEEE operation on the same operands as the generic kernel's, and
A, B, M⁻¹ and ν̇ are equal to its own bit for bit (but for the sign of a zero).

Three pieces stay functions of the values:
- the base's 6×6 LU factorisation and solves, since their pivoting depends on the values
  (spatial.lu_factor6, lu_solve6);
- the product −M⁻¹D, a dense loop in multiply_add_into's order, which the compiler vectorises;
- the status: a singular pivot (forward_dynamics.singular_pivot) or an overflow, as
  linearize_state_into reports them.

The code grows with the robot, and so does its compile time:
- solo12: 22 000 operations, 15 s of ``cc -O2``;
- talos_reduced: 82 000 operations, 72 s, and no faster than the generic kernel, since its
  code no longer fits the caches.

So a model whose trace exceeds :data:`GENERATED_OPERATIONS` is left to the generic kernel.
The shared library is cached on disk per C source and compiler command
(:func:`cache_directory`), one per robot name and instruction set (:func:`target_flags`):
compiling a robot's kernel anew (another version of the package, another compiler) removes that
robot's older ones of the same set.  A process loads it and
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
from .discretization import euler_step_into
from .linearization import linearize_state_into
from .model import PIVOT_TOLERANCE, Model, invalid_state
from .workspace import DATA, DENSE_PRODUCTS, MODEL_ARRAYS, Workspace, model_arrays

GENERATED_OPERATIONS = 40_000
"""The largest trace (operations) compiled: about 30 s of ``cc -O2`` on a 2-core machine
(2026-11-26); beyond it the generated code stops paying (module docstring)."""

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


def trace(model: Model) -> SimpleNamespace:
    """linearize_state_into traced on ``model`` (module docstring): the graph, the outputs A
    (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,) as arrays of traced values and constants, the
    product left to a loop (D (N, 2N), its sign) or None, and the articulated inertias and
    pivots singular_pivot reads (I_A (n+1, 6, 6), D (n+1,))."""
    graph = _Graph()
    found = SimpleNamespace(product=None, pivots=None)

    def factor(M, LU, pivots):
        LU[0, 0] = graph.add("factor6", tuple(_operand(x) for x in M.ravel()))

    def solve(LU, pivots, b, x):
        solved = graph.add("solve6", (_operand(LU[0, 0]),) + tuple(_operand(v) for v in b))
        for k in range(6):
            x[k] = graph.add("solved", (("n", solved.index), ("c", float(k))))

    def pivots(I_A, D):
        found.pivots = (I_A.copy(), D.copy())
        return 0

    def product(model, data, M_inv, D, sign, out):
        found.product = (D.copy(), sign)

    replacements = {"lu_factor6": factor, "lu_solve6": solve, "singular_pivot": pivots,
                    "_finite": lambda A, M_inv: True, "finite_sum": lambda x: 0.0}
    if model_arrays(model)[-1] == DENSE_PRODUCTS:  # (else the product is traced like the rest)
        replacements["tree_multiply_add_into"] = product
    passes = _python_passes(replacements)
    model_fields = SimpleNamespace(**dict(zip(MODEL_ARRAYS.field_dict, model_arrays(model))))
    workspace = Workspace(model)
    data = SimpleNamespace(model=model_fields, **{
        name: _TracedNumpy.empty(array.shape) for name, array in zip(
            [name for name in DATA.field_dict if name != "model"], workspace.arrays())})
    n, N = model.n_joints, model.n_velocities
    if model.floating_base:
        pose, twist = graph.inputs("pose", (4, 4)), graph.inputs("twist", (6,))
    else:  # (the identity and zeros, as model.state_arrays gives them)
        pose, twist = np.eye(4).astype(object), np.zeros(6).astype(object)
    state = (pose, graph.inputs("s", (n,)), twist, graph.inputs("r", (n,)), graph.inputs("tau", (n,)))
    out = tuple(_TracedNumpy.empty(shape) for shape in ((2 * N, 2 * N), (2 * N, n), (N, N), (N,)))
    passes(linearize_state_into)(model_fields, data, state, out)
    return SimpleNamespace(graph=graph, A=out[0], B=out[1], M_inv=out[2], nu_dot=out[3], product=found.product,
                           pivots=found.pivots)


_RUNTIME = r"""
#include <math.h>

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
static void rl_multiply_add(const double *restrict A, const double *restrict B, int p, int q, int w, int ldb,
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

_ARGUMENTS = ("const double *restrict pose, const double *restrict s, const double *restrict twist, "
              "const double *restrict r, const double *restrict tau, double *restrict A, double *restrict B, "
              "double *restrict M_inv, double *restrict nu_dot, double *restrict w")


def _literal(value: float) -> str:
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    return repr(value)


def c_source(traced: SimpleNamespace, model_name: str = "") -> tuple[str, int, int]:
    """The C of a :func:`trace`: ``int rl_linearize(pose, s, twist, r, tau, A, B, M_inv, nu_dot, w)``
    (row-major doubles as model.state_arrays and linearize_into take them; w: scratch) returning
    linearize_state_into's status.  Returns (source, operations, scratch doubles)."""
    operations = traced.graph.operations
    N, n_bodies = traced.M_inv.shape[0], traced.pivots[1].shape[0]
    regions = {"A": traced.A, "B": traced.B, "M_inv": traced.M_inv, "nu_dot": traced.nu_dot}
    size = 0
    scratch = {}  # what the status and the product read back, in w: name -> its offset
    for name, array in (("derivatives", traced.product[0] if traced.product else None),
                        ("inertias", traced.pivots[0]), ("pivots", traced.pivots[1])):
        if array is not None:
            scratch[name] = size
            regions[f"w + {size}"] = array
            size += array.size
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
    blocks = {}  # factor6 (42 doubles: LU, pivots) and solve6 (6) results live in w
    for k in order:
        if operations[k][0] in ("factor6", "solve6"):
            blocks[k] = size
            size += 42 if operations[k][0] == "factor6" else 6
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
    source = [f"/* robot_linearization: the linearization of model '{model_name}', generated (generated.py) */",
              _RUNTIME]
    for i, lines in enumerate(parts):
        source.append(f"__attribute__((noinline)) static void part{i}({_ARGUMENTS}) {{\n    "
                      + "\n    ".join(lines) + "\n}\n")
    calls = [f"part{i}(pose, s, twist, r, tau, A, B, M_inv, nu_dot, w);" for i in range(len(parts))]
    if traced.product is not None:
        calls.append(f"rl_multiply_add(M_inv, w + {scratch['derivatives']}, {N}, {N}, {2 * N}, {2 * N}, "
                     f"{_literal(float(traced.product[1]))}, A + {N * 2 * N}, {2 * N});")
    inertias, pivots = scratch["inertias"], scratch["pivots"]
    source.append(f"""int rl_linearize({_ARGUMENTS}) {{
    {"(void)0;" if not constants else " ".join(constants)}
    {chr(10).join("    " + call for call in calls).strip()}
    int singular = -1;  /* forward_dynamics.singular_pivot */
    for (int i = {n_bodies - 1}; i > 0; i--) {{
        double scale = 0.0;
        const double *I_A = w + {inertias} + 36 * i;
        for (int k = 0; k < 36; k++) if (fabs(I_A[k]) > scale) scale = fabs(I_A[k]);
        if (!(fabs(w[{pivots} + i]) > {_literal(PIVOT_TOLERANCE)} * scale)) {{ singular = i - 1; break; }}
    }}
    if (singular < 0 && !(isfinite(rl_finite_sum(A + {N * 2 * N}, {N * 2 * N}) + rl_finite_sum(M_inv, {N * N}))
                          && isfinite(rl_finite_sum(nu_dot, {N}))))
        return -2;
    return singular;
}}
""")
    return "\n".join(source), len(live), size


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


class GeneratedKernel:
    """One model's generated linearization (module docstring), loaded in this process.

    ``call(scratch, arrays, out, dt)``: what linearization.run_linearize_into calls in place of
    linearize_into(data, arrays, out, dt), with ``scratch`` (``scratch_size``,) float64 in place
    of the workspace (one per thread); the same statuses.  ``operations``: the trace's size;
    ``path``: the shared library."""

    def __init__(self, model: Model, traced: SimpleNamespace | None = None):
        try:
            traced = traced or trace(model)
        except TypeError as error:  # (Traced's: a pass that branches on the state's values)
            raise GenerationError(f"model '{model.name}' cannot be traced: {error}") from None
        source, self.operations, self.scratch_size = c_source(traced, model.name)
        if self.operations > GENERATED_OPERATIONS:
            raise GenerationError(f"model '{model.name}' traces to {self.operations} operations, above the "
                                  f"{GENERATED_OPERATIONS} for which a generated kernel pays (generated.py)")
        compiler = c_compiler() or ""
        instructions, flags = target_flags()
        key = hashlib.sha256("\0".join((source, compiler, *COMPILE_FLAGS, *flags)).encode()).hexdigest()[:24]
        # (a name has no '-': the prefix of one robot and instruction set is no other's)
        prefix = "linearize-" + re.sub(r"[^A-Za-z0-9_.]", "_", model.name)[:40] + f"-{instructions}-"
        directory = cache_directory()
        self.path = os.path.join(directory, f"{prefix}{key}.so")
        if not os.path.exists(self.path):
            _log.warning("compiling the generated kernel of model '%s' (%d operations): about %d s, once per "
                         "machine; cached in %s", model.name, self.operations, 1 + self.operations // 1500, directory)
            _compile(source, self.path, flags)
            for name in os.listdir(directory):  # the same robot's older kernels (another version of the package)
                if name.startswith(prefix) and name.endswith(".so") and name != os.path.basename(self.path):
                    os.remove(os.path.join(directory, name))
        try:
            function = ctypes.CDLL(self.path).rl_linearize
        except OSError as error:
            raise GenerationError(f"cannot load {self.path}: {error}") from None
        function.restype = ctypes.c_int
        function.argtypes = [ctypes.c_void_p] * 10
        self._function = function  # (kept: the entry below holds its address only)
        self.call = _entry(function, model.floating_base)


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


_kernels: "weakref.WeakKeyDictionary[Model, GeneratedKernel]" = weakref.WeakKeyDictionary()


def generated_kernel(model: Model) -> GeneratedKernel:
    """``model``'s :class:`GeneratedKernel`, traced, compiled (or loaded from the cache) and
    wrapped on first use in this process.  GenerationError when it cannot be built here."""
    kernel = _kernels.get(model)
    if kernel is None:
        kernel = _kernels[model] = GeneratedKernel(model)
    return kernel
