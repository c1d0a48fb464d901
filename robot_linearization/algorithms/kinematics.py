"""Joint transforms and gravity: what every recursive pass needs first."""

from __future__ import annotations

import numpy as np

from ..compiled import kernel
from ..joints import joint_transform_into
from ..model import Model, State
from ..spatial import mat_mat_into


@kernel
def body_transforms_into(motion_subspaces, tree_transforms, joint_positions, X_up):
    """i_X_λ(i) = i_X_λ(i)|i(s_i) · λ(i)|i_X_λ(i) (Table 4.1 lines 14, 16) into
    X_up (n+1, 6, 6); entry 0 (the base has no parent) is the identity."""
    X_joint = np.empty((6, 6))
    X_up[0] = np.eye(6)
    for i in range(1, X_up.shape[0]):
        joint_transform_into(motion_subspaces[i], joint_positions[i - 1], X_joint)
        mat_mat_into(X_joint, tree_transforms[i], X_up[i])


def body_transforms(model: Model, joint_positions: np.ndarray) -> np.ndarray:
    """i_X_λ(i) for every body, shape (n+1, 6, 6)."""
    X_up = np.empty((model.n_bodies, 6, 6))
    body_transforms_into(model.motion_subspaces, model.tree_transforms,
                         np.ascontiguousarray(joint_positions, dtype=float), X_up)
    return X_up


@kernel(inline=True)
def base_gravity_into(base_pose, gravity, g0):
    """g_0 = [R^T g; 0] (6,) for the base pose A_H_0 (4, 4) with rotation R and the
    world gravity g (3,); a fixed base passes the identity (its root frame is the world)."""
    for j in range(3):
        g0[j] = base_pose[0, j] * gravity[0] + base_pose[1, j] * gravity[1] + base_pose[2, j] * gravity[2]
        g0[3 + j] = 0.0


def base_gravity(model: Model, state: State) -> np.ndarray:
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


def base_twist(model: Model, state: State) -> np.ndarray:
    """Twist of body 0 in its own frame: the state's body twist, or zero."""
    return state.base_twist if model.floating_base else np.zeros(6)
