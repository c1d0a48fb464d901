"""The compiled model and its workspace: what every kernel takes, Pinocchio's Model and Data.

A kernel reads the robot's arrays from one structure (``model.parent``, ``model.I``) and its
scratch from another (``data.X_up``, ``data.columns``), instead of some forty positional
arrays.  Both are per model and per thread (:func:`workspace`).  The workspace also holds
its model (``data.model``): the control cycle's entry kernels take ``data`` alone, since each
structure a compiled call receives from Python costs about a microsecond of numba's argument
typing (an array a tenth of that), and pass both on to the passes they call.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.experimental import structref

from .compiled import INDEX_TABLE, INDICES, MATRICES, MATRIX, VECTOR, Structure, kernel, structure
from .model import Model
from .spatial import is_rigid_body_inertia


@structref.register
class ModelArraysType(types.StructRef):
    """The numba type of the compiled model (:data:`MODEL_ARRAYS`)."""


MODEL_ARRAYS = ModelArraysType([
    ("parent", INDICES), ("S", MATRIX), ("tree_X", MATRICES), ("I", MATRICES), ("ancestors", INDEX_TABLE),
    ("depth", INDICES), ("subtree_end", INDICES), ("floating_base", types.boolean), ("gravity", VECTOR),
    ("derivative_products", types.int64), ("rigid_inertias", types.boolean)])
"""The model's arrays as the kernels read them (Model's attributes of the same meaning):
parent (n+1,), S = motion_subspaces (n+1, 6), tree_X = tree_transforms (n+1, 6, 6),
I = inertias (n+1, 6, 6), ancestors (n+1, depth), depth (n+1,), subtree_end (n+1,),
floating_base, gravity (3,) in the world frame; derivative_products: how M⁻¹ multiplies the
EIDAmb derivatives D (:func:`derivative_products`); rigid_inertias: whether every body's inertia
has the rigid-body form (spatial.is_rigid_body_inertia; not the raw matrices of thesis Table D.3),
which the base-frame sweep places in fewer operations."""
structref.define_boxing(ModelArraysType, Structure)

DENSE_PRODUCTS, TREE_PRODUCTS, ARTICULATED_PRODUCTS = 0, 1, 2
"""How products with the EIDAmb derivatives D, M⁻¹D, are taken (constrained_dynamics.tree_multiply_add_into):
the dense product with M⁻¹; column by column over D's non-zeros on the tree; or without M⁻¹, by the
IMMAmb's passes (inverse_mass_matrix.inverse_mass_matrix_product_into, O(N) per column)."""

SPARSE_BELOW = 0.2
"""TREE_PRODUCTS when the tree leaves fewer than this fraction of D non-zero: each of those
multiply-adds costs about five of the dense product's (measured on talos, 2026-11-25), so the
dense product is faster on limbed robots of tens of joints (talos: 0.37 of D) and the sparse one
on large branched trees (200 random joints: ≈ 0.1, 2.7× faster)."""

ARTICULATED_FROM = 80
"""ARTICULATED_PRODUCTS, when D is not that sparse, from this many velocities N on: the IMMAmb's
passes cost O(n) per column against the dense product's O(N²), but their six-row sweeps run at
≈ 3.5 flops a nanosecond against the product's 12, so they win only on long chains (2026-11-25,
a 2-core machine: N = 56 74 against 57 µs, N = 106 248 against 370 µs, N = 206 1155 against 2723 µs)."""


def derivative_products(model: Model) -> int:
    """DENSE_PRODUCTS, TREE_PRODUCTS or ARTICULATED_PRODUCTS for ``model`` (chosen once per workspace)."""
    if derivative_density(model) < SPARSE_BELOW:
        return TREE_PRODUCTS
    return ARTICULATED_PRODUCTS if model.n_velocities >= ARTICULATED_FROM else DENSE_PRODUCTS


def derivative_density(model: Model) -> float:
    """The fraction of D (N, N per half) the tree can make non-zero: a base row everywhere, a
    joint's row in the base's, its ancestors', its own and its subtree's columns."""
    off = 6 if model.floating_base else 0
    N = model.n_velocities
    bodies = np.arange(1, model.n_bodies)
    nonzero = off * N + int(np.sum(off + model.depth[1:] - 1 + model.subtree_end[1:] - bodies + 1))
    return nonzero / (N * N) if N else 1.0


def model_arrays(model: Model) -> tuple:
    """The values of :data:`MODEL_ARRAYS`'s fields for ``model``, in its order (copies)."""
    return (*(np.array(a) for a in (model.parent, model.motion_subspaces, model.tree_transforms, model.inertias,
                                    model.ancestors, model.depth, model.subtree_end)),
            model.floating_base, np.array(model.gravity, dtype=float), derivative_products(model),
            all(is_rigid_body_inertia(inertia) for inertia in model.inertias))


@kernel
def _new_model_arrays(parent, S, tree_X, I, ancestors, depth, subtree_end, floating_base, gravity,
                      derivative_products, rigid_inertias):
    model = structref.new(MODEL_ARRAYS)
    model.parent, model.S, model.tree_X, model.I = parent, S, tree_X, I
    model.ancestors, model.depth, model.subtree_end = ancestors, depth, subtree_end
    model.floating_base, model.gravity, model.derivative_products = floating_base, gravity, derivative_products
    model.rigid_inertias = rigid_inertias
    return model


@structref.register
class DataType(types.StructRef):
    """The numba type of a workspace (:data:`DATA`)."""


DATA = DataType([
    ("model", MODEL_ARRAYS), ("X_up", MATRICES), ("I_A", MATRICES), ("U", MATRIX), ("D", VECTOR), ("v", MATRIX),
    ("c", MATRIX), ("p", MATRIX), ("a", MATRIX), ("f", MATRIX), ("F", MATRICES), ("P", MATRICES), ("R", MATRICES),
    ("t", MATRIX), ("axes", MATRIX), ("U_base", MATRIX), ("derivatives", MATRIX), ("Y", MATRICES), ("Y_rate", MATRICES),
    ("columns", MATRICES), ("g0", VECTOR), ("free", VECTOR)])
"""One linearization's scratch, n+1 bodies and N velocities, and the compiled model it is for
(model, :data:`MODEL_ARRAYS`): the body transforms i_X_λ(i)
X_up (n+1, 6, 6); the ABAmb's articulated inertias I_A (n+1, 6, 6), U (n+1, 6), pivots D
(n+1,), body twists v, velocity-product accelerations c, bias wrenches p, accelerations a and
wrenches f (n+1, 6); the IMMAmb's F, P (n+1, 6, N) and U_base (n+1, 6); the body poses in the
base frame R (n+1, 3, 3), t (n+1, 3) and the column axes (N, 6); [D₁ … D₄]ID̄ derivatives
(N, 2N); the base-frame sweep's composite inertias Y and their rates Y_rate (n+1, 6, 6) and
its columns (7, N, 6); g0 (6,), gravity as a base acceleration; free (N,), the unconstrained ν̇."""
structref.define_boxing(DataType, Structure)


@kernel
def _new_data(model, X_up, I_A, U, D, v, c, p, a, f, F, P, R, t, axes, U_base, derivatives, Y, Y_rate, columns, g0,
              free):
    data = structref.new(DATA)
    data.model = model
    data.X_up, data.I_A, data.U, data.D = X_up, I_A, U, D
    data.v, data.c, data.p, data.a, data.f = v, c, p, a, f
    data.F, data.P, data.R, data.t, data.axes, data.U_base = F, P, R, t, axes, U_base
    data.derivatives, data.Y, data.Y_rate, data.columns = derivatives, Y, Y_rate, columns
    data.g0, data.free = g0, free
    return data


class Workspace:
    """The compiled model (``model``, :data:`MODEL_ARRAYS`) and every scratch array of one
    linearization (``data``, :data:`DATA`, whose arrays are also this object's attributes),
    allocated once per model and thread.

    ``model`` holds this thread's own copy of the model's (small) arrays: compiled code
    reference-counts every array view it takes, and two threads viewing the same array
    contend for one cache line on every access.
    """

    def __init__(self, model: Model):
        n_bodies, N = model.n_bodies, model.n_velocities
        self.model = structure(MODEL_ARRAYS, _new_model_arrays, *model_arrays(model))
        self.X_up = np.empty((n_bodies, 6, 6))
        self.I_A = np.empty((n_bodies, 6, 6))
        self.U = np.zeros((n_bodies, 6))
        self.D = np.zeros(n_bodies)
        self.v, self.c, self.p, self.a, self.f = (np.empty((n_bodies, 6)) for _ in range(5))
        self.F, self.P = np.empty((n_bodies, 6, N)), np.empty((n_bodies, 6, N))
        self.R, self.t, self.axes = np.empty((n_bodies, 3, 3)), np.empty((n_bodies, 3)), np.empty((N, 6))
        self.U_base = np.empty((n_bodies, 6))
        self.derivatives = np.empty((N, 2 * N))
        self.Y, self.Y_rate = np.empty((n_bodies, 6, 6)), np.empty((n_bodies, 6, 6))
        self.columns = np.empty((7, N, 6))
        self.g0, self.free = np.zeros(6), np.empty(N)
        self.data = structure(DATA, _new_data, self.model, *self.arrays())

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays())

    def arrays(self) -> tuple:
        """The arrays of ``data``, in :data:`DATA`'s order (after its model)."""
        return tuple(getattr(self, name) for name in DATA.field_dict if name != "model")


def workspace(model: Model) -> Workspace:
    """This thread's workspace for ``model`` (created on first use)."""
    local = model.thread_local
    if getattr(local, "workspace", None) is None:
        local.workspace = Workspace(model)
    return local.workspace


def singular_state_message(model: Model, joint: int, where: str = "") -> str:
    return (f"the mass matrix is singular at this state{where}: joint '{model.joint_names[joint]}' moves bodies "
            f"that have no inertia along its motion there (link '{model.body_names[joint + 1]}' and its "
            "descendants); no linearization exists at it")
