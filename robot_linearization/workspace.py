"""The per-model, per-thread workspace of the compiled kernels: every scratch array of one
linearization, allocated once (Pinocchio's Data beside its Model)."""

from __future__ import annotations

import numpy as np

from .model import Model


class Workspace:
    """Every scratch array of one linearization, allocated once per model and thread.

    It also holds this thread's own copy of the model's (small) arrays: compiled
    code reference-counts every array view it takes, and two threads viewing the
    same array contend for one cache line on every access.
    """

    def __init__(self, model: Model):
        n_bodies, N = model.n_bodies, model.n_velocities
        self.model_arrays = tuple(np.array(a) for a in (
            model.parent, model.motion_subspaces, model.tree_transforms, model.inertias, model.ancestors,
            model.depth, model.subtree_end)) + (model.floating_base, np.array(model.gravity))
        self.X_up = np.empty((n_bodies, 6, 6))
        self.I_A = np.empty((n_bodies, 6, 6))
        self.U = np.zeros((n_bodies, 6))
        self.D = np.zeros(n_bodies)
        self.v, self.c, self.p, self.a, self.f = (np.empty((n_bodies, 6)) for _ in range(5))
        self.F, self.P = np.empty((n_bodies, N, 6)), np.empty((n_bodies, N, 6))
        self.R, self.t, self.axes = np.empty((n_bodies, 3, 3)), np.empty((n_bodies, 3)), np.empty((N, 6))
        self.U_base = np.empty((n_bodies, 6))
        self.derivatives = np.empty((N, 2 * N))
        # the base-frame sweep: composite inertias and their rates, its columns; −M⁻¹ D transposed
        self.Y, self.Y_rate = np.empty((n_bodies, 6, 6)), np.empty((n_bodies, 6, 6))
        self.columns = np.empty((7, N, 6))
        self.product = np.empty((2 * N, N))
        # linearize_into's arguments before the states, and its scratch, in its order (the path
        # tables ancestors and depth are the contact kernel's only)
        parent, S, tree_X, I, _, _, subtree_end, floating, gravity = self.model_arrays
        self.tree_arrays = parent, S, tree_X, I, subtree_end, floating, gravity
        self.scratch = self.arrays() + (self.product,)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.scratch) + sum(getattr(a, "nbytes", 0) for a in self.model_arrays)

    def arrays(self):
        """The scratch of both kernels (linearize_into's, then its ``product``)."""
        return (self.X_up, self.I_A, self.U, self.D, self.v, self.c, self.p, self.a, self.f, self.F, self.P,
                self.R, self.t, self.axes, self.U_base, self.derivatives, self.Y, self.Y_rate, self.columns)


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
