"""One-degree-of-freedom joints (thesis app. B): revolute, prismatic, helical.

A joint connects parent body λ(i) to child body i.  Its frame λ(i)|i is fixed
to the parent (the URDF joint origin); the child frame i is displaced from it by
exp(s·Γ^), where Γ (6,) is the joint's motion subspace in [linear; angular]
order.  So the child moves *along* +Γ: its velocity relative to the parent,
expressed in frame i, is Γ·ṡ.

Erratum (thesis Table B.1): the printed origins of prismatic and helical joints
displace the child along −Γ, so the printed X(s) and Γ disagree in sign.  We use
the consistent sign, i_X_{λ(i)|i}(s) = Ad(exp(−s Γ^)), as Pinocchio does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .arguments import real_array
from .compiled import kernel
from .spatial import cross_motion


class JointType(enum.Enum):
    REVOLUTE = "revolute"  # also URDF "continuous": no limits, same dynamics
    PRISMATIC = "prismatic"
    HELICAL = "helical"  # not expressible in URDF; programmatic API only


@dataclass(frozen=True)
class Joint:
    """A 1-DoF joint about/along a unit ``axis`` given in the joint frame.

    ``pitch`` (helical only) is the translation per radian [m/rad] along the axis.

    ``name``: the joint's name (the URDF's), unique in a model; ``type``: a :class:`JointType`;
    ``axis`` (3,): normalised when built.
    """

    name: str
    type: JointType
    axis: tuple[float, float, float]
    pitch: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"joint name: expected a non-empty string, got {self.name!r}")
        if not isinstance(self.type, JointType):
            raise ValueError(f"joint '{self.name}': type must be a JointType ({', '.join(t.name for t in JointType)})"
                             f", got {self.type!r}")
        axis = real_array(self.axis, f"joint '{self.name}': axis", (3,), what="a non-zero 3-vector")
        norm = np.linalg.norm(axis)
        if norm < 1e-9:
            raise ValueError(f"joint '{self.name}': axis {self.axis} is not a non-zero 3-vector")
        pitch = real_array(self.pitch, f"joint '{self.name}': pitch", (), what="a finite number [m/rad]")
        object.__setattr__(self, "axis", tuple(axis / norm))
        object.__setattr__(self, "pitch", float(pitch))

    @property
    def motion_subspace(self) -> np.ndarray:
        """Γ_Ji (6,) in the child frame, [linear; angular] (Table B.1)."""
        e = np.asarray(self.axis)
        if self.type is JointType.REVOLUTE:
            return np.concatenate([np.zeros(3), e])
        if self.type is JointType.PRISMATIC:
            return np.concatenate([e, np.zeros(3)])
        return np.concatenate([self.pitch * e, e])


@kernel
def joint_transform_into(motion_subspace: NDArray[np.float64], position: float, out: NDArray[np.float64]) -> None:
    """jcalc (app. B.2): out = i_X_{λ(i)|i}(s) = Ad(exp(−s Γ^)), 6×6.

    For our joints Γ = [h e; e], [0; e] or [e; 0] with |e| = 1, the linear part
    is parallel to the axis, so exp(−sΓ^) is the rotation by −s about e followed
    by the translation −s·Γ_linear: Ad = [[R, p^R], [0, R]].
    """
    theta = -position
    w0, w1, w2 = motion_subspace[3], motion_subspace[4], motion_subspace[5]
    p0, p1, p2 = theta * motion_subspace[0], theta * motion_subspace[1], theta * motion_subspace[2]
    sn, cs = np.sin(theta), 1.0 - np.cos(theta)
    if w0 == 0.0 and w1 == 0.0 and w2 == 0.0:
        sn, cs = 0.0, 0.0
    # Rodrigues: R = I + sin θ e^ + (1 − cos θ) e^ e^, with e^ e^ = e e^T − I
    R = out[3:, 3:]
    R[0, 0] = 1.0 + cs * (w0 * w0 - 1.0)
    R[1, 1] = 1.0 + cs * (w1 * w1 - 1.0)
    R[2, 2] = 1.0 + cs * (w2 * w2 - 1.0)
    R[0, 1] = -sn * w2 + cs * w0 * w1
    R[1, 0] = sn * w2 + cs * w0 * w1
    R[0, 2] = sn * w1 + cs * w0 * w2
    R[2, 0] = -sn * w1 + cs * w0 * w2
    R[1, 2] = -sn * w0 + cs * w1 * w2
    R[2, 1] = sn * w0 + cs * w1 * w2
    for r in range(3):
        for c in range(3):
            out[r, c] = R[r, c]
            out[r + 3, c] = 0.0
    for c in range(3):  # top-right block p^ R
        out[0, 3 + c] = p1 * R[2, c] - p2 * R[1, c]
        out[1, 3 + c] = p2 * R[0, c] - p0 * R[2, c]
        out[2, 3 + c] = p0 * R[1, c] - p1 * R[0, c]


def joint_transform(motion_subspace: np.ndarray, position: float) -> np.ndarray:
    """jcalc as a new 6×6 array (see :func:`joint_transform_into`)."""
    out = np.empty((6, 6))
    value = real_array(position, "position", (), what="the joint position, a number")
    joint_transform_into(real_array(motion_subspace, "motion_subspace", (6,), what="[linear; angular]"),
                         float(value), out)
    return out


def joint_transform_derivative(motion_subspace: np.ndarray, transform: np.ndarray) -> np.ndarray:
    """jcalcderiv (app. B.3): ∂(i_X_{λ(i)|i})/∂s = −(Γ×)·i_X_{λ(i)|i}.

    Holds for every joint whose Γ is constant in the child frame (all of ours);
    ``transform`` may be i_X_{λ(i)|i} or the full i_X_{λ(i)}, since the constant
    placement multiplies from the right.
    """
    return -cross_motion(motion_subspace) @ transform
