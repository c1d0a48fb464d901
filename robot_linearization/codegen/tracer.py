"""The tracer: a kernel's passes run once on one robot in Python, on traced values that stand for
the state's entries, recording the arithmetic that depends on the state (the package's docstring).
The kernels traced (free_linearization, contact_linearization, impact_map) are read, never changed."""

from __future__ import annotations

import types
from types import SimpleNamespace

import numpy as np

from .. import compiled
from ..algorithms.constrained_dynamics import contact_arrays
from ..contact_linearization import constrained_linearize_into
from ..free_linearization import linearize_state_into
from ..impact_map import impact_into
from ..model import Model
from ..workspace import DATA, DENSE_PRODUCTS, MODEL_ARRAYS, Workspace, derivative_products, model_arrays


class Traced:
    """A double of the state's arithmetic: operation ``index`` of ``graph``."""

    __slots__ = ("graph", "index")

    def __init__(self, graph, index):
        self.graph, self.index = graph, index

    def _binary(self, operation, a, b):
        return self.graph.add(operation, (_operand(a), _operand(b)))

    def __add__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented  # (numpy: element by element, each element's own operation)
        return self if _is_constant(other, 0.0) else self._binary("+", self, other)

    def __radd__(self, other):
        return self if _is_constant(other, 0.0) else self._binary("+", other, self)

    def __sub__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented  # (numpy: element by element, each element's own operation)
        return self if _is_constant(other, 0.0) else self._binary("-", self, other)

    def __rsub__(self, other):
        return -self if _is_constant(other, 0.0) else self._binary("-", other, self)

    def __mul__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented  # (numpy: element by element, each element's own operation)
        return _product(self, other, self, other)

    def __rmul__(self, other):
        return _product(self, other, other, self)

    def __truediv__(self, other):
        if isinstance(other, np.ndarray):
            return NotImplemented  # (numpy: element by element, each element's own operation)
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

    def __init__(self) -> None:
        self.operations: list = []
        self._index: dict = {}
        self.status: np.ndarray | None = None  # (1,) the status a contact kernel's trace writes

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


def _runtime_call(graph: _Graph, name: str, inputs, outputs, offset: int) -> Traced:
    """A runtime routine (``name``: its kind and sizes, c_writer._RUNTIME_CALLS) on ``inputs``' entries (row
    by row) copied into its block of the scratch; ``outputs`` receive its results, which it leaves in that
    block from ``offset`` on (after the inputs; an output that is also an input is read where its copy lies)."""
    operands = tuple(_operand(x) for array in inputs for x in np.asarray(array, dtype=object).ravel())
    call = graph.add(name, operands)
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
        _runtime_call(graph, f"multiply_add {p} {q} {w} {float(sign)!r}", (A, B[:, :w], out), (out,), p * q + q * w)

    def cholesky_solve(L, B):
        _runtime_call(graph, f"cholesky_solve {L.shape[0]} {B.shape[1]}", (L, B), (B,), L.size)

    def contact_forces(J, M_inv, free_accelerations, drift, JM_inv, L, forces, accelerations):
        m, N = J.shape
        _runtime_call(graph, f"contact_forces {m} {N}", (J, M_inv, free_accelerations, drift),
                      (JM_inv, L, forces, accelerations, graph.status), m * N + N * N + N + m)
        return True

    return {"multiply_add_into": multiply_add, "cholesky_solve_into": cholesky_solve,
            "contact_forces_into": contact_forces}


def _runtime_sweeps(graph: _Graph) -> dict:
    """inverse_mass_matrix_into and base_frame_backward_into (the IMMAmb and the derivatives' backward
    pass) as runtime routines of the trace (runtime.c: rl_inverse_mass_matrix, rl_base_frame_backward),
    loops in the C: their work grows as n times the tree's depth (straight-line, half of a 50-joint
    robot's trace), their inputs and outputs as n and N²."""
    def inverse_mass_matrix(model, data, M_inv):
        n_bodies, N = data.U.shape[0], M_inv.shape[0]
        inputs = (model.parent, model.subtree_end, data.R, data.t, data.axes, data.I_A[0], data.U, data.D)
        _runtime_call(graph, f"inverse_mass_matrix {n_bodies} {N} {int(model.floating_base)}", inputs,
                      (M_inv, data.U_base), sum(np.size(array) for array in inputs))

    def backward(model, data, with_base_pose, velocity_columns):
        n_bodies, N, columns = data.f.shape[0], data.derivatives.shape[0], data.columns
        moving = any(type(x) is Traced or x != 0.0 for x in data.v.ravel())  # (as the pass decides it traced)
        inputs = (model.parent, model.subtree_end, data.axes, columns[0], columns[1], columns[2], data.f, data.Y,
                  data.Y_rate)
        _runtime_call(graph, f"base_frame_backward {n_bodies} {N} {int(model.floating_base)} {int(moving)} "
                             f"{int(model.rigid_inertias)} {int(with_base_pose)} {int(velocity_columns)}", inputs,
                      (data.f, data.Y, data.Y_rate, *columns[3:7], data.derivatives), 2 * n_bodies + 24 * N)

    return {"inverse_mass_matrix_into": inverse_mass_matrix, "base_frame_backward_into": backward}


def trace(model: Model, loops: bool = False) -> SimpleNamespace:
    """linearize_state_into traced on ``model`` (module docstring; ``loops``: the sweeps left to loops,
    :func:`_runtime_sweeps`): the graph, the outputs A
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

    replacements = {**_runtime_factorisation(graph), **(_runtime_sweeps(graph) if loops else {}),
                    "singular_pivot": pivots, "_finite": lambda A, M_inv: True, "finite_sum": lambda x: 0.0}
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


def _trace_on_contacts(model: Model, contacts: tuple, kernel, arguments, loops: bool) -> SimpleNamespace:
    """``kernel`` (a kernel on a contact set: impact_map.impact_into, contact_linearization.constrained_linearize_into)
    traced on ``model`` and ``contacts`` (a tuple of Contact), called with the traced contact set and
    ``arguments(graph, state)`` (state: :func:`_traced_state`'s), the sweeps left to loops where ``loops``:
    the graph, the status of J M⁻¹ Jᵀ's factorisation (1,) and what singular_pivot reads (as :func:`trace`)."""
    graph = _Graph()
    graph.status = _TracedNumpy.empty(1)
    found = SimpleNamespace(pivots=None)

    def pivots(I_A, D):
        found.pivots = (I_A.copy(), D.copy())
        return -1  # (none: the C tests them, _contacts_c_source)

    passes = _python_passes({"singular_pivot": pivots, "invalid_state": lambda *state: 0,
                             "finite_sum": lambda x: 0.0, **_runtime_factorisation(graph), **_runtime_products(graph),
                             **(_runtime_sweeps(graph) if loops else {})})
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


def trace_impact(model: Model, contacts: tuple, loops: bool = False) -> SimpleNamespace:
    """impact_map.impact_into traced on ``model`` and ``contacts`` (a tuple of Contact), the restitution e
    an input as the state is (one kernel serves every e; ``loops`` as :func:`trace`'s):
    :func:`_trace_on_contacts`'s, and the outputs (M_inv (N, N), A (2N, 2N), impulses (m,), d_impulses
    (m, 2N), nu_plus (N,)) as ``regions``, by their C names."""
    N, m = model.n_velocities, contact_arrays(model, contacts).m
    regions = {name: _TracedNumpy.empty(shape) for name, shape in (
        ("M_inv", (N, N)), ("A", (2 * N, 2 * N)), ("impulses", (m,)), ("d_impulses", (m, 2 * N)), ("nu_plus", (N,)))}
    traced = _trace_on_contacts(model, contacts, impact_into, lambda graph, state: (
        state + (np.zeros(model.n_joints).astype(object),), graph.inputs("e", (1,))[0], tuple(regions.values())),
        loops)
    traced.regions = regions
    return traced


def trace_constrained(model: Model, contacts: tuple, loops: bool = False) -> SimpleNamespace:
    """contact_linearization.constrained_linearize_into traced on ``model`` and ``contacts`` (a tuple of
    Contact), without a step (``loops`` as :func:`trace`'s): :func:`_trace_on_contacts`'s, and the outputs
    (A (2N, 2N), B (2N, n), M_inv (N, N), ν̇ (N,), λ (m,), ∂λ/∂z (m, 2N), ∂λ/∂τ (m, n)) as ``regions``, by
    their C names."""
    N, n, m = model.n_velocities, model.n_joints, contact_arrays(model, contacts).m
    regions = {name: _TracedNumpy.empty(shape) for name, shape in (
        ("A", (2 * N, 2 * N)), ("B", (2 * N, n)), ("M_inv", (N, N)), ("nu_dot", (N,)), ("forces", (m,)),
        ("d_forces", (m, 2 * N)), ("d_forces_dtau", (m, n)))}
    no_step = (np.empty((0, 0)), np.empty((0, 0)))
    traced = _trace_on_contacts(model, contacts, constrained_linearize_into, lambda graph, state: (
        state + (graph.inputs("tau", (n,)),), tuple(regions.values()) + no_step, 0.0), loops)
    traced.regions = regions
    return traced
