"""Composite Rigid Body Algorithm: CRBA and CRBAmb (app. E.3, E.4)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..compiled import kernel
from ..arguments import check_tree, joint_vector
from ..model import Model
from ..spatial import congruence_add
from .kinematics import body_transforms


@kernel
def composite_inertias_into(parent: NDArray[np.int64], X_up: NDArray[np.float64], I: NDArray[np.float64],
                            I_c: NDArray[np.float64]) -> None:
    """M^c_i: inertia of the subtree rooted at body i, in frame i, into I_c (n+1, 6, 6)."""
    tmp = np.empty((6, 6))
    I_c[:] = I
    for i in range(I.shape[0] - 1, 0, -1):
        congruence_add(X_up[i], I_c[i], I_c[parent[i]], tmp)


def composite_inertias(model: Model, X_up: NDArray[np.float64]) -> NDArray[np.float64]:
    I_c = np.empty_like(model.inertias)
    composite_inertias_into(model.parent, X_up, model.inertias, I_c)
    return I_c


def mass_matrix(model: Model, joint_positions: ArrayLike) -> NDArray[np.float64]:
    """Mass matrix M(s), (N, N): CRBAmb for a floating base (blocks M11 = M^c_0,
    M12 = ₀F, M22, see (2.64)), CRBA for a fixed base.  A reference algorithm:
    the linearization itself never forms M.

    ``model``: a Model; ``joint_positions`` s (n,)."""
    positions = joint_vector(check_tree(model, "mass_matrix"), joint_positions, "joint_positions", default_zero=False)
    X_up = body_transforms(model, positions)
    I_c = composite_inertias(model, X_up)
    S = model.motion_subspaces
    off = 6 if model.floating_base else 0
    M = np.zeros((model.n_velocities, model.n_velocities))
    if model.floating_base:
        M[:6, :6] = I_c[0]
    for i in range(1, model.n_bodies):
        F = I_c[i] @ S[i]  # iF_Bi (4.6): wrench supporting unit acceleration of joint i
        row = off + i - 1
        M[row, row] = S[i] @ F
        j = i
        while model.parent[j] > 0:
            F = X_up[j].T @ F
            j = model.parent[j]
            M[row, off + j - 1] = M[off + j - 1, row] = S[j] @ F
        if model.floating_base:
            F = X_up[j].T @ F  # ₀F_Bi (4.7)
            M[:6, row] = M[row, :6] = F
    return M
