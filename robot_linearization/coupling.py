"""Mimic joints in reduced coordinates (URDF ``<mimic joint multiplier offset>``).

A mimic joint m follows its source joint j: s_m = a·s_j + b.  The tree keeps
every joint (the mimic joint's bodies move and carry inertia), but the state,
the input and A, B, M⁻¹ are in the independent joints only:

    s_tree = G s + o,   r_tree = G r,   ν_tree = Ĝ ν,   Ĝ = blockdiag(I_6, G)

with G (n_tree, n) the coupling map.  The reduced dynamics Ĝᵀ M Ĝ ν̇ + Ĝᵀ h = τ
are the tree's dynamics under the joint-space constraint J_c ν̇_tree = 0, J_c =
e_m − a e_j, with the tree torque E τ (zero on the mimic joints): the same KKT
elimination as the rigid contacts (contact_linearization.py), whose rows they
join.  M⁻¹ of the reduced model is the tree's M⁻¹ projected onto the coupling,
P (M⁻¹ − M⁻¹J_cᵀ(J_c M⁻¹ J_cᵀ)⁻¹J_c M⁻¹) Pᵀ = (Ĝᵀ M Ĝ)⁻¹.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from collections.abc import Iterable
from typing import Any, TypeAlias

import threading

import numpy as np
from numpy.typing import ArrayLike, NDArray
from numba import types
from numba.experimental import structref

from .compiled import INDEX_TABLE, INDICES, MATRIX, VECTOR, Structure, kernel, structure
from .model import Model, ModelError, State, state_labels
from .workspace import DATA, Workspace, workspace


@structref.register
class CouplingDataType(types.StructRef):
    """The numba type of a coupling's arrays and scratch (:data:`COUPLING_DATA`)."""


COUPLING_DATA = CouplingDataType([
    ("coupling_rows", INDEX_TABLE), ("coupling_multipliers", VECTOR), ("index", INDICES), ("factor", VECTOR),
    ("rows", INDICES), ("offset", VECTOR), ("M_tree", MATRIX), ("J_c", MATRIX), ("JM_inv", MATRIX), ("L", MATRIX),
    ("W", MATRIX), ("reduced", MATRIX), ("tree_state", MATRIX), ("tree_accelerations", VECTOR), ("forces", VECTOR),
    ("drift", VECTOR), ("workspace", DATA)])
"""A coupling as linearization.coupled_linearize_into takes it (c couplings, N_tree and N
velocities, n_tree joints): coupling_rows (c, 2) tree indices (mimic, source),
coupling_multipliers (c,), the reduction's index and factor (N_tree,) (CoupledModel.reduction),
rows = velocity_rows (N,), offset (n_tree,); then the scratch of one thread: M_tree (N_tree,
N_tree), J_c, J_c M⁻¹ (c, N_tree), a Cholesky factor L (c, c), W (c, N), the reduced
derivatives (N, 2N), tree_state (3, n_tree) (the tree's s, r, τ), tree_accelerations (N_tree,),
forces and drift (c,) (zero), and the tree's workspace of the same thread (workspace.DATA)."""
structref.define_boxing(CouplingDataType, Structure)


@kernel
def _new_coupling_data(coupling_rows, coupling_multipliers, index, factor, rows, offset, M_tree, J_c, JM_inv, L, W,
                       reduced, tree_state, tree_accelerations, forces, drift, workspace):
    coupling = structref.new(COUPLING_DATA)
    coupling.coupling_rows, coupling.coupling_multipliers, coupling.index = coupling_rows, coupling_multipliers, index
    coupling.factor, coupling.rows, coupling.offset, coupling.M_tree = factor, rows, offset, M_tree
    coupling.J_c, coupling.JM_inv, coupling.L, coupling.W, coupling.reduced = J_c, JM_inv, L, W, reduced
    coupling.tree_state, coupling.tree_accelerations = tree_state, tree_accelerations
    coupling.forces, coupling.drift, coupling.workspace = forces, drift, workspace
    return coupling


@dataclass(frozen=True, eq=False)
class CoupledModel:
    """A :class:`Model` tree whose mimic joints follow other joints.

    It describes the state like a Model (joint_names: the independent joints, the
    order of s, r and τ; n_joints, n_velocities, state_labels), and passes the rest
    through to ``tree`` (the full tree, every joint, for the recursive algorithms).
    coupling G (n_tree, n), offset o (n_tree,): s_tree = G s + o.
    mimics: (mimic joint, source joint, multiplier, offset) by name.

    ``independent`` (n,): the tree index of each independent joint; ``coupling_rows`` (k, 2): the
    tree indices (mimic, source) of each mimic joint; ``coupling_multipliers`` (k,): its multiplier.
    Made by :func:`~robot_linearization.load_urdf` (``mimic_joints="coupled"``), not by hand.
    """

    tree: Model
    joint_names: tuple[str, ...]
    coupling: np.ndarray
    offset: np.ndarray
    mimics: tuple
    independent: np.ndarray = field(repr=False)  # tree index of each independent joint
    coupling_rows: np.ndarray = field(repr=False)  # (k, 2) tree indices (mimic, source)
    coupling_multipliers: np.ndarray = field(repr=False)  # (k,)
    _local: threading.local = field(default_factory=threading.local, init=False, repr=False)  # (coupling_data)

    name = property(lambda self: self.tree.name)
    floating_base = property(lambda self: self.tree.floating_base)
    body_names = property(lambda self: self.tree.body_names)
    frames = property(lambda self: self.tree.frames)
    gravity = property(lambda self: self.tree.gravity)
    n_bodies = property(lambda self: self.tree.n_bodies)

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    @property
    def n_velocities(self) -> int:
        return self.n_joints + (6 if self.floating_base else 0)

    @functools.cached_property
    def state_labels(self) -> tuple[str, ...]:
        return state_labels(self.joint_names, self.floating_base)

    def joint_index(self, name: str) -> int:
        """The index of joint ``name`` in ``joint_names`` (s, r, τ); KeyError naming it if it is not an
        independent joint of the model (a mimic joint says which joint it follows)."""
        try:
            return self.joint_names.index(name)
        except ValueError:
            mimic = next((m for m in self.mimics if m[0] == name), None)
            if mimic is not None:
                raise KeyError(f"joint '{name}' of model '{self.name}' mimics '{mimic[1]}': it is not a state or "
                               "input (load with mimic_joints='independent' to make it one)") from None
            raise KeyError(f"model '{self.name}' has no joint '{name}'") from None

    def __repr__(self) -> str:
        names = ", ".join(self.joint_names[:4]) + (", …" if self.n_joints > 4 else "")
        mimics = ", ".join(f"{m} follows {s}" for m, s, _, _ in self.mimics[:3]) + (", …" if len(self.mimics) > 3
                                                                                    else "")
        return (f"<CoupledModel '{self.name}': {'floating' if self.floating_base else 'fixed'} base "
                f"'{self.body_names[0]}', {self.n_joints} independent joints ({names}), {len(self.mimics)} mimic "
                f"joints ({mimics}), {self.n_bodies} bodies, N = {self.n_velocities} velocities>")

    @functools.cached_property
    def velocity_map(self) -> np.ndarray:
        """Ĝ (N_tree, N): ν_tree = Ĝ ν."""
        off = 6 if self.floating_base else 0
        G = np.zeros((off + self.coupling.shape[0], off + self.n_joints))
        G[:off, :off] = np.eye(off)
        G[off:, off:] = self.coupling
        return G

    @functools.cached_property
    def velocity_rows(self) -> np.ndarray:
        """Indices of the independent coordinates among the tree's ν."""
        off = 6 if self.floating_base else 0
        return np.concatenate([np.arange(off), off + self.independent])

    @functools.cached_property
    def state_map(self) -> np.ndarray:
        """blockdiag(Ĝ, Ĝ) (2 N_tree, 2 N): the tree's state perturbation [z_q; z_ν] of one of the
        independent coordinates (the tree's columns of A are mapped through it)."""
        G = self.velocity_map
        return np.block([[G, np.zeros_like(G)], [np.zeros_like(G), G]])

    @functools.cached_property
    def state_rows(self) -> np.ndarray:
        """Indices of the independent coordinates among the tree's state [z_q; z_ν] (2N,)."""
        return np.concatenate([self.velocity_rows, self.velocity_map.shape[0] + self.velocity_rows])

    @functools.cached_property
    def reduction(self) -> tuple[np.ndarray, np.ndarray]:
        """(index, factor) (N_tree,): Ĝ has one entry per row, Ĝ[i, index[i]] = factor[i] (the
        base's rows and the independent joints' are 1), so Ĝᵀ x sums x[i]·factor[i] into index[i]."""
        G = self.velocity_map
        index = np.argmax(G != 0.0, axis=1).astype(np.int64)
        return index, G[np.arange(G.shape[0]), index].copy()

    def coupling_data(self) -> Any:  # (a compiled structure, COUPLING_DATA)
        """This thread's ``coupling`` argument of linearization.coupled_linearize_into
        (:meth:`new_coupling_data` on the thread's workspace of the tree), made on its first use
        in the thread."""
        data = getattr(self._local, "data", None)
        if data is None:
            data = self._local.data = self.new_coupling_data(workspace(self.tree))
        return data

    def new_coupling_data(self, tree_workspace: Workspace) -> Any:
        """A new :data:`COUPLING_DATA` on ``tree_workspace`` (a
        :class:`~robot_linearization.workspace.Workspace` of the tree)."""
        c, N_tree, N = len(self.coupling_multipliers), self.tree.n_velocities, self.n_velocities
        return structure(
            COUPLING_DATA, _new_coupling_data, np.ascontiguousarray(self.coupling_rows, dtype=np.int64),
            np.ascontiguousarray(self.coupling_multipliers, dtype=float), *self.reduction, self.velocity_rows,
            np.ascontiguousarray(self.offset, dtype=float), np.empty((N_tree, N_tree)), np.empty((c, N_tree)),
            np.empty((c, N_tree)), np.empty((c, c)), np.empty((c, N)), np.empty((N, 2 * N)),
            np.empty((3, self.tree.n_joints)), np.empty(N_tree), np.empty(c), np.zeros(c), tree_workspace.data)

    def tree_state(self, state: State) -> State:
        """The tree's state for a state of the independent joints."""
        return State(base_pose=state.base_pose, joint_positions=self.coupling @ state.joint_positions + self.offset,
                     base_twist=state.base_twist, joint_velocities=self.coupling @ state.joint_velocities)

    def tree_torques(self, joint_torques: ArrayLike | None) -> NDArray[np.float64]:
        """E τ: the independent joints' torques in the tree, zero on the mimic joints.

        ``joint_torques`` τ (n,) of the independent joints; returns (n_tree,)."""
        torques = np.zeros(self.coupling.shape[0])
        torques[self.independent] = np.zeros(self.n_joints) if joint_torques is None else joint_torques
        return torques


def couple(tree: Model, mimics: Iterable[tuple[str, str, float, float]]) -> CoupledModel:
    """The reduced model of ``tree`` with ``mimics`` [(mimic, source, multiplier, offset)]
    by joint name; a mimic of a mimic follows the chain to an independent joint."""
    names = list(tree.joint_names)
    follows = {}
    for mimic, source, multiplier, offset in mimics:
        if source not in names:
            raise ModelError(f"joint '{mimic}' mimics joint '{source}', which is not a moving joint of the model")
        if not (np.isfinite(multiplier) and np.isfinite(offset)):
            raise ModelError(f"joint '{mimic}': mimic multiplier and offset must be finite")
        follows[mimic] = (source, float(multiplier), float(offset))
    independent = [j for j in names if j not in follows]
    column = {j: k for k, j in enumerate(independent)}
    G, o = np.zeros((len(names), len(independent))), np.zeros(len(names))
    for i, joint in enumerate(names):
        multiplier, offset, seen = 1.0, 0.0, [joint]
        while joint in follows:  # s = a·s_source + b, composed along a chain of mimics
            joint, a, b = follows[joint]
            if joint in seen:
                raise ModelError(f"mimic joints follow each other in a cycle: {' -> '.join(seen + [joint])}")
            seen.append(joint)
            offset, multiplier = offset + multiplier * b, multiplier * a
        G[i, column[joint]], o[i] = multiplier, offset
    rows = np.array([[names.index(m), names.index(s)] for m, (s, _, _) in follows.items()], dtype=np.int64)
    return CoupledModel(tree=tree, joint_names=tuple(independent), coupling=G, offset=o,
                        mimics=tuple((m, s, a, b) for m, (s, a, b) in follows.items()),
                        independent=np.array([names.index(j) for j in independent], dtype=np.int64),
                        coupling_rows=rows.reshape(-1, 2),
                        coupling_multipliers=np.array([a for _, a, _ in follows.values()]))


AnyModel: TypeAlias = Model | CoupledModel  # what the public functions take: load_urdf gives either


def tree_of(model: AnyModel) -> Model:
    """The Model whose recursive algorithms run: the model itself, or a CoupledModel's tree."""
    return model.tree if isinstance(model, CoupledModel) else model
