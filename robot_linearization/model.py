"""The kinematic tree and the robot's state (thesis §2.6–2.8).

Bodies are numbered 0..n in depth-first order, so the subtree of body i is the
contiguous range i..subtree_end[i].  Body 0 is the base: the moving base of a
floating-base robot, or the world-fixed root of a fixed-base one.  Joint k
(k = 0..n−1, the order of s, r and τ) moves body k+1.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .arguments import FLOAT64, check_model, did_you_mean, joint_vector, kernel_ready, real_array
from .compiled import TypedCall, kernel
from .joints import Joint
from .spatial import position_quaternion_pose_into, quaternion_rotation



class RobotModel(Protocol):
    """What a state is checked and read against: a :class:`Model`, or a CoupledModel (coupling.py,
    which builds on this module), whose joints are its independent ones."""

    @property
    def name(self) -> str: ...

    @property
    def floating_base(self) -> bool: ...

    @property
    def joint_names(self) -> tuple[str, ...]: ...

    @property
    def n_joints(self) -> int: ...

    @property
    def n_velocities(self) -> int: ...


STANDARD_GRAVITY = (0.0, 0.0, -9.81)


class ModelError(ValueError):
    """A robot description that cannot be turned into a usable model."""


@dataclass(frozen=True, eq=False)
class Model:
    """A rigid-body tree with 1-DoF joints.  Build with :class:`ModelBuilder`
    or :func:`robot_linearization.load_urdf`; do not mutate the arrays.

    Attributes (n = number of joints)::

      floating_base   True: body 0 is free (state on SE(3)×ℝⁿ×ℝ⁶×ℝⁿ).
      joint_names     (n,) order of s, r and τ.
      body_names      (n+1,) link name of each body; body 0 is the base.
      parent          (n+1,) int, parent body of each body, parent[0] = −1.
      subtree_end     (n+1,) int, last body of the subtree of each body.
      ancestors       (n+1, max depth) int, joints on the path base -> body i
                      (ancestors[i, :depth[i]], root first, ending with joint i−1).
      depth           (n+1,) int, number of joints on that path.
      joints          (n,) the Joint moving body k+1.
      motion_subspaces (n+1, 6) Γ of the joint moving each body (row 0 zero).
      tree_transforms (n+1, 6, 6) λ(i)|i_X_λ(i): parent frame -> joint frame.
      inertias        (n+1, 6, 6) body inertia at the body frame, [lin; ang].
      gravity         (3,) gravitational acceleration in the world frame [m/s²].
      frames          name -> (body, body_H_frame) for every link, including
                      links merged into their parent through fixed joints.
    """

    name: str
    floating_base: bool
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    parent: np.ndarray
    subtree_end: np.ndarray
    ancestors: np.ndarray
    depth: np.ndarray
    joints: tuple[Joint, ...]
    motion_subspaces: np.ndarray
    tree_transforms: np.ndarray
    inertias: np.ndarray
    gravity: np.ndarray
    frames: dict[str, tuple[int, np.ndarray]] = field(repr=False)
    thread_local: threading.local = field(default_factory=threading.local, init=False, repr=False)

    def __getstate__(self) -> dict:
        """Pickled (for the generated kernels' build in another process): the model's fields, not its
        per-thread workspaces nor the sizes cached on it."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "thread_local"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, thread_local=threading.local())

    @functools.cached_property  # (the sizes are read several times in every control cycle)
    def n_joints(self) -> int:
        return len(self.joint_names)

    @functools.cached_property
    def n_bodies(self) -> int:
        """Number of bodies including the base (n + 1)."""
        return self.n_joints + 1

    @functools.cached_property
    def n_velocities(self) -> int:
        """Size of the generalised velocity ν: 6 + n (floating) or n (fixed)."""
        return self.n_joints + (6 if self.floating_base else 0)

    def __repr__(self) -> str:
        names = ", ".join(self.joint_names[:4]) + (", …" if self.n_joints > 4 else "")
        return (f"<Model '{self.name}': {'floating' if self.floating_base else 'fixed'} base "
                f"'{self.body_names[0]}', {self.n_joints} joints ({names}), {self.n_bodies} bodies, "
                f"{len(self.frames)} frames, N = {self.n_velocities} velocities, gravity {self.gravity.tolist()} m/s²>")

    def joint_index(self, name: str) -> int:
        """Position of joint ``name`` in s, r and τ."""
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise KeyError(f"model '{self.name}' has no joint '{name}'") from None

    @functools.cached_property
    def state_labels(self) -> tuple[str, ...]:
        """Row/column labels of A in the order [z_H, z_s, z_v, z_r]."""
        return state_labels(self.joint_names, self.floating_base)


def state_labels(joint_names: Sequence[str], floating_base: bool) -> tuple[str, ...]:
    """Labels of the state perturbation [z_H, z_s, z_v, z_r]: H:x … H:rz, s:<joint>,
    v:x … v:rz, r:<joint> (fixed base: s:<joint>, r:<joint>)."""
    joint_pos = [f"s:{j}" for j in joint_names]
    joint_vel = [f"r:{j}" for j in joint_names]
    if not floating_base:
        return tuple(joint_pos + joint_vel)
    axes = ["x", "y", "z", "rx", "ry", "rz"]
    return tuple([f"H:{a}" for a in axes] + joint_pos + [f"v:{a}" for a in axes] + joint_vel)


PIVOT_TOLERANCE = 1e-10
"""An articulated-body pivot D_i below this fraction of the body's articulated inertia
counts as zero: the mass matrix is singular there."""


@dataclass(frozen=True)
class State:
    """A point of the state space (thesis (3.3)), each array float64.

    base_pose (4×4): A_H_0, the base frame in the world (floating base only).
    joint_positions s (n,); base_twist v (6,): ⁰v_A,0 = [linear; angular], the
    base body twist expressed in the base frame (as nav_msgs/Odometry's twist in
    its child frame; floating base only); joint_velocities r (n,).
    """

    joint_positions: NDArray[np.float64]
    joint_velocities: NDArray[np.float64]
    base_pose: NDArray[np.float64] | None = None
    base_twist: NDArray[np.float64] | None = None

    def __init__(self, base_pose: ArrayLike | None = None, joint_positions: ArrayLike = (),
                 base_twist: ArrayLike | None = None, joint_velocities: ArrayLike = ()) -> None:
        # copies (a State does not change when the caller's arrays do); shapes and dtypes
        # checked here, lengths, values and the pose's rigidity against a model where it is
        # used (check_state; every public function does, and the kernels check the values)
        array = lambda value, name, shape: np.array(real_array(value, name, shape, finite=False))  # noqa: E731
        object.__setattr__(self, "joint_positions", array(joint_positions, "joint_positions", (-1,)))
        object.__setattr__(self, "joint_velocities", array(joint_velocities, "joint_velocities", (-1,)))
        object.__setattr__(self, "base_pose", None if base_pose is None else array(base_pose, "base_pose", (4, 4)))
        object.__setattr__(self, "base_twist", None if base_twist is None else array(base_twist, "base_twist", (6,)))

    @classmethod
    def _given(cls, base_pose, joint_positions, base_twist, joint_velocities) -> "State":
        """The State of float64 arrays of the right shapes that the caller made and hands
        over (a result of this package's own): no copies, no checks."""
        self = object.__new__(cls)
        self.__dict__.update(base_pose=base_pose, joint_positions=joint_positions, base_twist=base_twist,
                             joint_velocities=joint_velocities)
        return self

    @classmethod
    def from_named(cls, model: RobotModel, *, joint_positions: dict, joint_velocities: dict | None = None,
                   base_position: ArrayLike = (0.0, 0.0, 0.0), base_orientation: ArrayLike = (0.0, 0.0, 0.0, 1.0),
                   base_twist: ArrayLike = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)) -> "State":
        """A state from what a robot gives: joints **by name** (dicts {joint: value};
        every joint of the model in joint_positions, velocities default to zero), and
        for a floating base its position [m] in the world, its orientation as a
        quaternion in ROS order (x, y, z, w), and its body twist [v; ω] in the base
        frame.  ValueError names a missing or unknown joint, or a bad quaternion.

        Arguments: ``model``; ``joint_positions`` {name: s [rad or m]}; ``joint_velocities`` {name:
        r} (missing: 0); ``base_position`` (3,) [m]; ``base_orientation`` (4,) (x, y, z, w),
        normalised; ``base_twist`` (6,) [v; ω] in the base frame.  The base arguments are ignored
        for a fixed base."""
        for what, values in (("joint_positions", joint_positions), ("joint_velocities", joint_velocities)):
            if values is not None and not isinstance(values, Mapping):
                raise ValueError(f"{what}: expected a dict {{joint name: value}}, got {type(values).__name__} "
                                 "(rl.State(...) takes arrays in model.joint_names order)")
        velocities = joint_velocities or {}
        names = set(model.joint_names)
        for what, values in (("joint_positions", joint_positions), ("joint_velocities", velocities)):
            unknown = sorted(set(values) - names)
            if unknown:
                raise ValueError(f"{what}: model '{model.name}' has no joints {unknown[:5]}"
                                 f"{did_you_mean(unknown[0], model.joint_names)}")
        missing = [j for j in model.joint_names if j not in joint_positions]
        if missing:
            raise ValueError(f"joint_positions lacks joints {missing[:5]}{' …' if len(missing) > 5 else ''}")
        s = real_array([joint_positions[j] for j in model.joint_names], "joint_positions", (-1,))
        r = real_array([velocities.get(j, 0.0) for j in model.joint_names], "joint_velocities", (-1,))
        if not model.floating_base:
            return cls(joint_positions=s, joint_velocities=r)
        x, y, z, w = real_array(base_orientation, "base_orientation", (4,), what="quaternion x, y, z, w")
        norm = float(np.sqrt(x * x + y * y + z * z + w * w))
        if abs(norm - 1.0) > 1e-3:
            raise ValueError(f"base_orientation: expected a unit quaternion (x, y, z, w), got "
                             f"{tuple(float(c) for c in (x, y, z, w))} (norm {norm:.4g})")
        H = np.eye(4)
        H[:3, :3] = quaternion_rotation(w / norm, x / norm, y / norm, z / norm)
        H[:3, 3] = real_array(base_position, "base_position", (3,), what="x, y, z in the world [m]")
        return cls(base_pose=H, joint_positions=s, base_twist=real_array(base_twist, "base_twist", (6,),
                                                                         what="[linear; angular] in the base frame"),
                   joint_velocities=r)

    def check(self, model: RobotModel, name: str = "state") -> "State":
        """Raise ValueError unless this state fits ``model`` and is finite.

        ``name``: the argument's name the error message uses.  Returns the state itself."""
        return check_state(model, self, name)


def floating_base_of(state: State) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(base_pose, base_twist) of a floating-base ``state``; ValueError for a state without them."""
    if state.base_pose is None or state.base_twist is None:
        raise ValueError("state: a floating-base model's state needs base_pose and base_twist (this is a fixed-base "
                         "state)")
    return state.base_pose, state.base_twist


def check_state(model: RobotModel, state: State, name: str = "state") -> "State":
    """``state`` if it is a finite :class:`State` of ``model`` (its base kind and joint
    count); ValueError naming ``name`` otherwise."""
    stack_states(check_model(model), [state], name=name)
    return state


_STATE_PROBLEMS = {
    1: "joint_positions contains NaN or inf",
    2: "joint_velocities contains NaN or inf",
    3: "base_pose contains NaN or inf",
    4: "base_twist contains NaN or inf",
    5: "base_pose is not a homogeneous transform (rotation part not orthonormal with det +1, "
       "or last row not [0, 0, 0, 1])",
    6: "joint_torques contains NaN or inf",
}


def state_problem(k: int, problem: int, K: int, name: str = "state") -> str:
    """The message of :func:`first_invalid_state`'s (k, problem) among K states."""
    if problem == 6:
        return _STATE_PROBLEMS[problem] + (f" (state {k})" if K > 1 else "")
    return (f"states[{k}]" if K > 1 else name) + "." + _STATE_PROBLEMS[problem]


@kernel
def invalid_state(pose: NDArray[np.float64], joint_positions: NDArray[np.float64], base_twist: NDArray[np.float64],
                  joint_velocities: NDArray[np.float64], joint_torques: NDArray[np.float64]) -> int:
    """The problem of one state (pose (4, 4), s (n,), v (6,), r (n,), τ (n,)), 0 if it is valid
    (codes in _STATE_PROBLEMS; tolerance 1e-6 on orthonormality and det)."""
    for x in joint_torques:
        if not np.isfinite(x):
            return 6
    for x in joint_positions:
        if not np.isfinite(x):
            return 1
    for x in joint_velocities:
        if not np.isfinite(x):
            return 2
    for x in pose.ravel():
        if not np.isfinite(x):
            return 3
    for x in base_twist:
        if not np.isfinite(x):
            return 4
    R = pose[:3, :3]
    for i in range(3):
        for j in range(3):
            dot = R[0, i] * R[0, j] + R[1, i] * R[1, j] + R[2, i] * R[2, j]
            if abs(dot - (1.0 if i == j else 0.0)) > 1e-6:
                return 5
    det = R[0, 0] * (R[1, 1] * R[2, 2] - R[1, 2] * R[2, 1]) - R[0, 1] * (R[1, 0] * R[2, 2] - R[1, 2] * R[2, 0]) \
        + R[0, 2] * (R[1, 0] * R[2, 1] - R[1, 1] * R[2, 0])
    if abs(det - 1.0) > 1e-6 or pose[3, 0] != 0.0 or pose[3, 1] != 0.0 or pose[3, 2] != 0.0 or pose[3, 3] != 1.0:
        return 5
    return 0


@kernel
def first_invalid_state(poses: NDArray[np.float64], joint_positions: NDArray[np.float64],
                        base_twists: NDArray[np.float64], joint_velocities: NDArray[np.float64],
                        joint_torques: NDArray[np.float64]) -> tuple[int, int]:
    """(k, problem) of the first invalid state or torque among K stacked ones (:func:`invalid_state`),
    problem 0 if all are valid."""
    for k in range(poses.shape[0]):
        problem = invalid_state(poses[k], joint_positions[k], base_twists[k], joint_velocities[k], joint_torques[k])
        if problem != 0:
            return k, problem
    return 0, 0


_FIXED_BASE_POSE, _FIXED_BASE_TWIST = np.eye(4), np.zeros(6)  # (read by the kernels, never written)


def state_arrays(model: RobotModel, state: State, joint_torques: ArrayLike | None) -> tuple:
    """One state and its torques τ (n,) as the single-state kernels take them: (base pose
    (4, 4), s (n,), base twist (6,), r (n,), τ (n,)), the State's own arrays (a fixed base:
    the identity and zeros), τ as float64 (None: zeros).  Shapes are checked here (ValueError
    naming ``joint_torques`` as arguments.joint_vector, or the state as :func:`stack_states`),
    values by the kernel (:func:`invalid_state`)."""
    n = model.n_joints
    if not (kernel_ready(joint_torques) and joint_torques.shape == (n,)):
        joint_torques = joint_vector(model, joint_torques, "joint_torques", finite=False)
    if isinstance(state, State) and state.joint_positions.shape == state.joint_velocities.shape == (n,):
        pose, twist = state.base_pose, state.base_twist
        if model.floating_base:
            if pose is not None and twist is not None and pose.shape == (4, 4) and twist.shape == (6,):
                return pose, state.joint_positions, twist, state.joint_velocities, joint_torques
        elif pose is None and twist is None:
            return _FIXED_BASE_POSE, state.joint_positions, _FIXED_BASE_TWIST, state.joint_velocities, joint_torques
    return tuple(x[0] for x in stack_states(model, [state], joint_torques[None], check_values=False))


_POSE_OF_POSITION_QUATERNION = TypedCall(position_quaternion_pose_into)  # (always two (7,), (4, 4) float64 arrays)


def given_arrays(model: RobotModel, joint_positions: ArrayLike, joint_velocities: ArrayLike,
                 joint_torques: ArrayLike | None, base_pose: ArrayLike | None, base_twist: ArrayLike | None,
                 pose_buffer: NDArray[np.float64]) -> tuple:
    """One state as the single-state kernels take it, (base pose (4, 4), s (n,), base twist (6,),
    r (n,), τ (n,)), from the arrays a robot's drivers and estimators hand over: s, r and τ (n,)
    in ``model.joint_names`` order (τ None: zeros), and for a floating base its pose in the world
    as H (4, 4) or as (7,) = position [m] then unit quaternion (x, y, z, w) (ROS's and
    Pinocchio's order), written into ``pose_buffer`` (4, 4), and its twist [v; ω] (6,) in the
    base frame (docs/conventions.md); a fixed base takes neither.  Arrays already as the kernels
    take them are passed on as they are.  Shapes and types are checked here (ValueError naming
    the argument), values by the kernel (:func:`invalid_state`)."""
    n = model.n_joints
    s, r, tau = joint_positions, joint_velocities, joint_torques
    if type(s) is type(r) is type(tau) is np.ndarray and s.dtype is r.dtype is tau.dtype is FLOAT64 \
            and s.shape == r.shape == tau.shape == (n,) and s.flags.carray and r.flags.carray and tau.flags.carray:
        # (the control cycle's case, in a fraction of real_array's time: plain ndarrays of numpy's own
        # float64, C-contiguous, aligned and writeable (numpy's CARRAY flag), of the kernels' shapes, the
        # tests written out (a function call per array costs more than they do); the pose as H or as
        # odometry gives it.  Anything else goes to real_array, for the conversion or the message)
        if not model.floating_base:
            if base_pose is base_twist is None:
                return _FIXED_BASE_POSE, s, _FIXED_BASE_TWIST, r, tau
        elif type(base_pose) is type(base_twist) is np.ndarray and base_pose.dtype is base_twist.dtype is FLOAT64 \
                and base_twist.shape == (6,) and base_twist.flags.carray and base_pose.flags.carray:
            shape = base_pose.shape
            if shape == (4, 4):
                return base_pose, s, base_twist, r, tau
            if shape == (7,) and _POSE_OF_POSITION_QUATERNION.call(base_pose, pose_buffer):
                return pose_buffer, s, base_twist, r, tau
    joints = lambda: f"one per joint of model '{model.name}'"  # noqa: E731 (read for an error only)
    s = real_array(joint_positions, "joint_positions", (n,), what=joints, finite=False)
    r = real_array(joint_velocities, "joint_velocities", (n,), what=joints, finite=False)
    tau = np.zeros(n) if joint_torques is None else real_array(joint_torques, "joint_torques", (n,), what=joints,
                                                                finite=False)
    if not model.floating_base:
        if base_pose is not None or base_twist is not None:
            raise ValueError(f"base_pose, base_twist: model '{model.name}' has a fixed base: give neither")
        return _FIXED_BASE_POSE, s, _FIXED_BASE_TWIST, r, tau
    if base_pose is None or base_twist is None:
        raise ValueError(f"base_pose, base_twist: model '{model.name}' has a floating base: both are required")
    pose = real_array(base_pose, "base_pose", (-1,) if np.ndim(base_pose) == 1 else (4, 4), finite=False,
                      what="H (4, 4), or position x, y, z and quaternion x, y, z, w (7,)")
    if pose.shape == (7,):
        x, y, z, w = pose[3:]
        norm = float(np.sqrt(x * x + y * y + z * z + w * w))
        if not abs(norm - 1.0) <= 1e-3:  # (NaN included)
            raise ValueError(f"base_pose: expected a unit quaternion (x, y, z, w) in entries 3:7, got "
                             f"{tuple(float(c) for c in pose[3:])} (norm {norm:.4g})")
        pose_buffer[:3, :3] = quaternion_rotation(w / norm, x / norm, y / norm, z / norm)
        pose_buffer[:3, 3] = pose[:3]
        pose = pose_buffer
    elif pose.shape != (4, 4):
        raise ValueError(f"base_pose: expected H (4, 4), or position x, y, z and quaternion x, y, z, w (7,), "
                         f"got shape {pose.shape}")
    twist = real_array(base_twist, "base_twist", (6,), what="[linear; angular] in the base frame", finite=False)
    return pose, s, twist, r, tau


def stack_states(model: RobotModel, states: Sequence[State], joint_torques: ArrayLike | None = None, *,
                 check_values: bool = True, name: str = "state"
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64],
                            NDArray[np.float64]]:
    """Validate K states (and torques (K, n), default zeros) and stack them into
    contiguous arrays (base_poses (K,4,4), s (K,n), v (K,6), r (K,n), τ (K,n)).

    Fixed-base models get identity poses and zero twists.  Raises ValueError,
    naming the argument (``name``, or states[k] for K > 1), for a non-State, wrong
    shapes, a state of the other base kind, NaN/inf or a non-rigid pose.
    check_values=False checks the shapes only, for a caller whose kernel runs
    :func:`first_invalid_state` itself (one state: :func:`state_arrays`).
    """
    n, K = model.n_joints, len(states)
    joints = f"one per joint of model '{model.name}'"
    for k, state in enumerate(states):
        where = name if K == 1 else f"states[{k}]"
        if not isinstance(state, State):
            raise ValueError(f"{where}: expected a robot_linearization.State (rl.State(...) or "
                             f"rl.State.from_named(model, ...)), got {type(state).__name__}")
        for what, value in (("joint_positions", state.joint_positions), ("joint_velocities", state.joint_velocities)):
            if value.shape != (n,):
                raise ValueError(f"{where}.{what}: expected shape ({n},) ({joints}), got shape {value.shape}")
        if model.floating_base and (state.base_pose is None or state.base_twist is None):
            raise ValueError(f"{where}: model '{model.name}' has a floating base: base_pose and base_twist are "
                             "required (this is a fixed-base state)")
        if not model.floating_base and (state.base_pose is not None or state.base_twist is not None):
            raise ValueError(f"{where}: model '{model.name}' has a fixed base: give joint positions and velocities "
                             "only (this is a floating-base state)")
    if K == 1:  # (the control cycle's case: views, no copies)
        stack = lambda x: np.ascontiguousarray(x, dtype=float)[None]  # noqa: E731
    else:
        stack = lambda x: np.ascontiguousarray(x, dtype=float)  # noqa: E731
    one = states[0] if K == 1 else None
    s = stack(one.joint_positions if one else [state.joint_positions for state in states]).reshape(K, n)
    r = stack(one.joint_velocities if one else [state.joint_velocities for state in states]).reshape(K, n)
    if model.floating_base:
        poses = stack(one.base_pose if one else [state.base_pose for state in states])
        twists = stack(one.base_twist if one else [state.base_twist for state in states])
    else:
        poses, twists = np.broadcast_to(np.eye(4), (K, 4, 4)), np.zeros((K, 6))
    poses = np.ascontiguousarray(poses, dtype=float)
    torques: NDArray[np.float64]
    if joint_torques is None:
        torques = np.zeros((K, n))
    else:
        torques = real_array(joint_torques, "joint_torques", (K, n), what=f"one row per state, {joints}", finite=False)
    if check_values:
        k, problem = first_invalid_state(poses, s, twists, r, torques)
        if problem:
            raise ValueError(state_problem(k, problem, K, name))
    return poses, s, twists, r, torques
