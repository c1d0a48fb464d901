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

from .spatial import cross_motion, velocity_transform, se3_exp


class JointType(enum.Enum):
    REVOLUTE = "revolute"  # also URDF "continuous": no limits, same dynamics
    PRISMATIC = "prismatic"
    HELICAL = "helical"  # not expressible in URDF; programmatic API only


@dataclass(frozen=True)
class Joint:
    """A 1-DoF joint about/along a unit ``axis`` given in the joint frame.

    ``pitch`` (helical only) is the translation per radian [m/rad] along the axis.
    """

    name: str
    type: JointType
    axis: tuple[float, float, float]
    pitch: float = 0.0

    def __post_init__(self) -> None:
        axis = np.asarray(self.axis, dtype=float)
        norm = np.linalg.norm(axis)
        if axis.shape != (3,) or not np.all(np.isfinite(axis)) or norm < 1e-9:
            raise ValueError(f"joint '{self.name}': axis {self.axis} is not a non-zero 3-vector")
        if not np.isfinite(self.pitch):
            raise ValueError(f"joint '{self.name}': pitch {self.pitch} is not finite")
        object.__setattr__(self, "axis", tuple(axis / norm))

    @property
    def motion_subspace(self) -> np.ndarray:
        """Γ_Ji (6,) in the child frame, [linear; angular] (Table B.1)."""
        e = np.asarray(self.axis)
        if self.type is JointType.REVOLUTE:
            return np.concatenate([np.zeros(3), e])
        if self.type is JointType.PRISMATIC:
            return np.concatenate([e, np.zeros(3)])
        return np.concatenate([self.pitch * e, e])


def joint_transform(motion_subspace: np.ndarray, position: float) -> np.ndarray:
    """jcalc (app. B.2): i_X_{λ(i)|i}(s) = Ad(exp(−s Γ^)), 6×6."""
    return velocity_transform(se3_exp(-position * motion_subspace))


def joint_transform_derivative(motion_subspace: np.ndarray, transform: np.ndarray) -> np.ndarray:
    """jcalcderiv (app. B.3): ∂(i_X_{λ(i)|i})/∂s = −(Γ×)·i_X_{λ(i)|i}.

    Holds for every joint whose Γ is constant in the child frame (all of ours);
    ``transform`` may be i_X_{λ(i)|i} or the full i_X_{λ(i)}, since the constant
    placement multiplies from the right.
    """
    return -cross_motion(motion_subspace) @ transform
