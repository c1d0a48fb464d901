"""Building a :class:`~robot_linearization.model.Model` in code (the URDF loader uses it too):
bodies, joints and frames in any order, renumbered depth-first, checked on the way, and
the finished tree checked for a mass matrix that is singular everywhere."""

from __future__ import annotations

import logging

import numpy as np
from numpy.typing import ArrayLike

from .algorithms.forward_dynamics import articulated_inertias, singular_pivot
from .algorithms.kinematics import body_transforms
from .arguments import real_array
from .joints import Joint
from .model import STANDARD_GRAVITY, Model, ModelError
from .spatial import inverse_transform, is_rotation, velocity_transform


class ModelBuilder:
    """Assemble a :class:`Model` programmatically (e.g. the thesis's test system).

    Bodies may be added in any order in which each parent already exists; the
    built model renumbers them depth-first, children in insertion order.

    ``base_name``: the base body's name; ``base_inertia`` (6, 6): its spatial inertia at its frame,
    [lin; ang] blocks; ``floating_base``: True: the base is free (state on SE(3)×ℝⁿ×ℝ⁶×ℝⁿ), False:
    welded to the world; ``gravity`` (3,): in the world frame [m/s²]; ``name``: the model's name.
    ModelError for a bad inertia or gravity.
    """

    def __init__(self, base_name: str, base_inertia: ArrayLike, *, floating_base: bool = True,
                 gravity: ArrayLike = STANDARD_GRAVITY, name: str = "robot") -> None:
        self._name = name
        self._floating = floating_base
        self._gravity = real_array(gravity, "gravity", (3,), what="in the world frame [m/s²]", error=ModelError)
        self._names = [base_name]
        self._parents = [-1]
        self._joints: list[Joint] = []  # (of bodies 1, 2, …)
        self._placements = [np.eye(4)]
        self._inertias = [_check_inertia_matrix(base_inertia, base_name)]
        self._frames: dict[str, tuple[str, np.ndarray]] = {base_name: (base_name, np.eye(4))}

    def add_body(self, name: str, *, parent: str, joint: Joint, placement: np.ndarray,
                 inertia: np.ndarray) -> None:
        """Attach body ``name`` to ``parent`` through ``joint``.

        placement (4×4): parent_H_joint, the joint frame in the parent body frame
        (the body frame coincides with the joint frame at s = 0).
        inertia (6×6): raw spatial inertia at the body frame, [lin; ang] blocks;
        use :func:`robot_linearization.spatial.spatial_inertia` for a physical one.
        """
        _check_name(name, "body name")
        if name in self._frames:
            raise ModelError(f"duplicate body or frame name '{name}'")
        if parent not in self._names:
            raise ModelError(f"body '{name}': parent '{parent}' has not been added")
        if joint.name in (j.name for j in self._joints):
            raise ModelError(f"duplicate joint name '{joint.name}'")
        placement = _check_transform(placement, f"joint '{joint.name}' placement")
        inertia = _check_inertia_matrix(inertia, name)
        self._parents.append(self._names.index(parent))
        self._names.append(name)
        self._joints.append(joint)
        self._placements.append(placement)
        self._inertias.append(inertia)
        self._frames[name] = (name, np.eye(4))

    def add_frame(self, name: str, *, body: str, placement: np.ndarray) -> None:
        """Record a frame rigidly attached to ``body`` (body_H_frame).

        ``name``: the frame's name (unique among bodies and frames); ``placement`` (4, 4):
        body_H_frame, a rigid transform.  ModelError for a duplicate name, an unknown body or a
        placement that is not a rigid transform."""
        _check_name(name, "frame name")
        if name in self._frames:
            raise ModelError(f"duplicate frame name '{name}'")
        if body not in self._names:
            raise ModelError(f"frame '{name}': body '{body}' has not been added")
        self._frames[name] = (body, _check_transform(placement, f"frame '{name}' placement"))

    def build(self) -> Model:
        """The :class:`Model` of the bodies and frames added so far, bodies renumbered depth-first."""
        children: list[list[int]] = [[] for _ in self._names]
        for i, p in enumerate(self._parents[1:], start=1):
            children[p].append(i)
        order: list[int] = []
        stack = [0]
        while stack:
            i = stack.pop()
            order.append(i)
            stack.extend(reversed(children[i]))
        new_index = {old: new for new, old in enumerate(order)}
        n_bodies = len(order)
        parent = np.array([-1] + [new_index[self._parents[old]] for old in order[1:]], dtype=np.int64)
        subtree_end = np.arange(n_bodies, dtype=np.int64)
        for i in range(n_bodies - 1, 0, -1):
            subtree_end[parent[i]] = max(subtree_end[parent[i]], subtree_end[i])
        depth = np.zeros(n_bodies, dtype=np.int64)
        for i in range(1, n_bodies):
            depth[i] = depth[parent[i]] + 1
        ancestors = np.full((n_bodies, max(1, int(depth.max()))), -1, dtype=np.int64)
        for i in range(1, n_bodies):
            ancestors[i, :depth[i] - 1] = ancestors[parent[i], :depth[i] - 1]
            ancestors[i, depth[i] - 1] = i - 1
        joints = tuple(self._joints[old - 1] for old in order[1:])
        motion_subspaces = np.zeros((n_bodies, 6))
        tree_transforms = np.zeros((n_bodies, 6, 6))
        tree_transforms[0] = np.eye(6)
        for new, old in enumerate(order[1:], start=1):
            motion_subspaces[new] = joints[new - 1].motion_subspace
            tree_transforms[new] = velocity_transform(inverse_transform(self._placements[old]))
        body_names = tuple(self._names[old] for old in order)
        frames = {f: (body_names.index(body), H) for f, (body, H) in self._frames.items()}
        for array in (parent, subtree_end, ancestors, depth, motion_subspaces, tree_transforms):
            array.setflags(write=False)
        inertias = np.array([self._inertias[old] for old in order])
        inertias.setflags(write=False)
        gravity = self._gravity.copy()
        gravity.setflags(write=False)
        model = Model(
            name=self._name,
            floating_base=self._floating,
            joint_names=tuple(j.name for j in joints),
            body_names=body_names,
            parent=parent,
            subtree_end=subtree_end,
            ancestors=ancestors,
            depth=depth,
            joints=joints,
            motion_subspaces=motion_subspaces,
            tree_transforms=tree_transforms,
            inertias=inertias,
            gravity=gravity,
            frames=frames,
        )
        _check_nonsingular(model)
        return model


def _check_name(name, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise ModelError(f"{what}: expected a non-empty string, got {name!r}")


def _check_transform(H, what: str) -> np.ndarray:
    H = real_array(H, what, (4, 4), what="a homogeneous transform", error=ModelError)
    if not is_rotation(H[:3, :3]) or not np.allclose(H[3], [0, 0, 0, 1]):
        raise ModelError(f"{what} is not a finite 4×4 homogeneous transform")
    return H


def _check_inertia_matrix(M, body: str) -> np.ndarray:
    M = real_array(M, f"body '{body}': inertia", (6, 6), what="[lin; ang] blocks at the body frame",
                   error=ModelError)
    if not np.allclose(M, M.T, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(M).max())):
        raise ModelError(f"body '{body}': inertia matrix is not symmetric")
    return 0.5 * (M + M.T)


def _check_nonsingular(model: Model) -> None:
    """Reject trees whose mass matrix is singular, naming the culprit.

    Checked at q = 0 and at four random configurations: a model singular at all
    of them is refused; one singular only at some (a massless link between two
    joints whose axes align at q = 0, as in iCub's neck) loads with a warning,
    and a state where it is singular gets an error from linearize.
    """
    rng = np.random.default_rng(0)
    problems: list[str | None] = []
    configurations = [np.zeros(model.n_joints)] + [rng.uniform(-1.0, 1.0, model.n_joints) for _ in range(4)]
    for positions in configurations:
        X_up = body_transforms(model, positions)
        with np.errstate(divide="ignore", invalid="ignore"):
            I_A, _, D = articulated_inertias(model, X_up)
        joint = singular_pivot(I_A, D)
        if joint >= 0:
            problems.append(
                f"joint '{model.joint_names[joint]}': the bodies it moves have no inertia along its motion "
                f"(pivot {D[joint + 1]:.3g}), so the mass matrix is singular; give link "
                f"'{model.body_names[joint + 1]}' or its descendants a mass/inertia")
            continue
        if model.floating_base:
            s = np.linalg.svd(I_A[0], compute_uv=False)
            if not s[-1] > 1e-10 * s[0]:
                # (the articulated inertia seen at the base, not the mass: a massless base in
                # front of a prismatic joint sees none of the mass behind it along that joint)
                problems.append(
                    f"base '{model.body_names[0]}': the robot as a whole has a singular 6×6 articulated "
                    f"inertia at the base (total mass {model.inertias[:, 0, 0].sum():.3g} kg), so the "
                    "floating-base dynamics are undefined; give the base link a mass and inertia")
                continue
        problems.append(None)
    if all(problems):
        raise ModelError(problems[0])
    if problems[0]:
        logging.getLogger(__name__).warning(
            "model '%s', at q = 0: %s. It is regular at other configurations, so the model is loaded; a state "
            "where the mass matrix is singular gets an error", model.name, problems[0])
