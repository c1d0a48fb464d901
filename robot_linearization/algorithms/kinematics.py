"""Joint transforms and gravity: what every recursive pass needs first."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..compiled import kernel
from ..joints import joint_transform_into
from ..arguments import check_tree, joint_vector
from ..coupling import AnyModel, CoupledModel, tree_of
from ..model import Model, State, floating_base_of
from ..spatial import transform_product_into


@kernel
def body_transforms_into(motion_subspaces: NDArray[np.float64], tree_transforms: NDArray[np.float64],
                         joint_positions: NDArray[np.float64], X_up: NDArray[np.float64]) -> None:
    """i_X_λ(i) = i_X_λ(i)|i(s_i) · λ(i)|i_X_λ(i) (Table 4.1 lines 14, 16) into
    X_up (n+1, 6, 6); entry 0 (the base has no parent) is the identity."""
    X_joint = np.empty((6, 6))
    X_up[0] = np.eye(6)
    for i in range(1, X_up.shape[0]):
        joint_transform_into(motion_subspaces[i], joint_positions[i - 1], X_joint)
        transform_product_into(X_joint, tree_transforms[i], X_up[i])


@kernel
def base_frame_poses_into(parent: NDArray[np.int64], S: NDArray[np.float64], X_up: NDArray[np.float64],
                          floating_base: bool, R: NDArray[np.float64], t: NDArray[np.float64], axes: NDArray[np.float64]
                         ) -> None:
    """Every body's pose in the base frame, rotation R (n+1, 3, 3) and origin t
    (n+1, 3), and the axis of every velocity column in that frame, axes (N, 6):
    the base's Γ_0 = I₆ (floating base), then ⁰X_i Γ_i = [R Γ_l + t × R Γ_a; R Γ_a]
    for the joint moving body i.  From the i_X_λ(i) of :func:`body_transforms_into`."""
    off = 6 if floating_base else 0
    R[0] = 0.0
    t[0] = 0.0
    for k in range(3):
        R[0, k, k] = 1.0
    for c in range(off):
        axes[c] = 0.0
        axes[c, c] = 1.0
    for i in range(1, R.shape[0]):
        p, c = parent[i], off + i - 1
        X = X_up[i]
        # X = i_X_λ = [[E, Q], [0, E]], Q = q^ E with q the parent's origin in body i, so
        # R_i = R_λ Eᵀ and t_i = t_λ + R_λ u with u = −Eᵀ q, u^ = −Eᵀ Q
        for row in range(3):
            for col in range(3):
                R[i, row, col] = (R[p, row, 0] * X[3 + col, 3] + R[p, row, 1] * X[3 + col, 4]
                                  + R[p, row, 2] * X[3 + col, 5])
        u0 = -(X[3, 5] * X[0, 4] + X[4, 5] * X[1, 4] + X[5, 5] * X[2, 4])
        u1 = -(X[3, 3] * X[0, 5] + X[4, 3] * X[1, 5] + X[5, 3] * X[2, 5])
        u2 = -(X[3, 4] * X[0, 3] + X[4, 4] * X[1, 3] + X[5, 4] * X[2, 3])
        for row in range(3):
            t[i, row] = t[p, row] + R[p, row, 0] * u0 + R[p, row, 1] * u1 + R[p, row, 2] * u2
        s = S[i]
        J = axes[c]
        for row in range(3):
            J[3 + row] = R[i, row, 0] * s[3] + R[i, row, 1] * s[4] + R[i, row, 2] * s[5]
            J[row] = R[i, row, 0] * s[0] + R[i, row, 1] * s[1] + R[i, row, 2] * s[2]
        J[0] += t[i, 1] * J[5] - t[i, 2] * J[4]
        J[1] += t[i, 2] * J[3] - t[i, 0] * J[5]
        J[2] += t[i, 0] * J[4] - t[i, 1] * J[3]


def body_transforms(model: Model, joint_positions: ArrayLike) -> NDArray[np.float64]:
    """i_X_λ(i) for every body, shape (n+1, 6, 6)."""
    positions = joint_vector(check_tree(model, "body_transforms"), joint_positions, "joint_positions",
                             default_zero=False)
    X_up = np.empty((model.n_bodies, 6, 6))
    body_transforms_into(model.motion_subspaces, model.tree_transforms, positions, X_up)
    return X_up


@kernel(inline=True)
def base_gravity_into(base_pose: NDArray[np.float64], gravity: NDArray[np.float64], g0: NDArray[np.float64]) -> None:
    """g_0 = [R^T g; 0] (6,) for the base pose A_H_0 (4, 4) with rotation R and the
    world gravity g (3,); a fixed base passes the identity (its root frame is the world)."""
    for j in range(3):
        g0[j] = base_pose[0, j] * gravity[0] + base_pose[1, j] * gravity[1] + base_pose[2, j] * gravity[2]
        g0[3 + j] = 0.0


def base_gravity(model: Model, state: State) -> NDArray[np.float64]:
    """Gravitational acceleration as a 6D acceleration of the base frame, (6,).

    [R^T g; 0] for a floating base with A_R_0 = R; [g; 0] for a fixed base,
    whose root frame is the world frame.  The recursive passes use the usual
    trick of giving the base the fictitious acceleration −base_gravity (the
    "base accelerates upwards"), so no body needs its own gravity term.
    """
    pose = np.asarray(state.base_pose, dtype=float) if model.floating_base else np.eye(4)
    g0 = np.empty(6)
    base_gravity_into(pose, np.asarray(model.gravity, dtype=float), g0)
    return g0


def base_twist(model: Model, state: State) -> NDArray[np.float64]:
    """Twist of body 0 in its own frame: the state's body twist, or zero."""
    return floating_base_of(state)[1] if model.floating_base else np.zeros(6)


def frame_poses(model: AnyModel, state: State, frames: Sequence[str], X_up: NDArray[np.float64] | None = None
                ) -> NDArray[np.float64]:
    """A_H_c (k, 4, 4): the world pose of each link or frame in ``frames`` (names) at ``state``
    (of a Model or a CoupledModel), A_H_0 · 0_H_b · b_H_c; the world is the root link's frame
    for a fixed base.  X_up: the tree's body transforms at the state, if already computed."""
    tree = tree_of(model)
    full = model.tree_state(state) if isinstance(model, CoupledModel) else state
    if X_up is None:
        X_up = body_transforms(tree, full.joint_positions)
    R, t = np.empty((tree.n_bodies, 3, 3)), np.empty((tree.n_bodies, 3))
    base_frame_poses_into(tree.parent, tree.motion_subspaces, X_up, tree.floating_base, R, t,
                          np.empty((tree.n_velocities, 6)))
    placed = [tree.frames[frame] for frame in frames]  # (body, b_H_c) of each
    bodies = [body for body, _ in placed]
    body_poses = np.zeros((len(frames), 4, 4))  # 0_H_b of each frame's body
    body_poses[:, :3, :3], body_poses[:, :3, 3], body_poses[:, 3, 3] = R[bodies], t[bodies], 1.0
    frame_offsets = np.array([body_H_frame for _, body_H_frame in placed]).reshape(len(frames), 4, 4)
    return (floating_base_of(full)[0] if tree.floating_base else np.eye(4)) @ body_poses @ frame_offsets
