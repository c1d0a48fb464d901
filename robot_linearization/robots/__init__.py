"""Robots that ship with the package: the bundled quadruped URDF and the
thesis's 9-joint test system (built programmatically: it has helical joints)."""

from __future__ import annotations

from importlib import resources

import numpy as np
from numpy.typing import ArrayLike

from ..joints import Joint, JointType
from ..builder import ModelBuilder
from ..model import Model
from ..spatial import inverse_transform, so3_exp

BUNDLED_ROBOT = "rl_quadruped"
BUNDLED_FEET = ("front_left_foot", "front_right_foot", "hind_left_foot", "hind_right_foot")
"""The bundled quadruped's foot links (merged into the shanks by fixed joints): its stance contacts."""


def bundled_urdf_path() -> str:
    """Path of the bundled 12-joint quadruped URDF (``rl_quadruped.urdf``)."""
    return str(resources.files(__package__).joinpath(f"{BUNDLED_ROBOT}.urdf"))


def _passive_rotation(axis: int, angle: float) -> np.ndarray:
    """R^x, R^y, R^z of (B.2)–(B.4): the transposes of the usual rotations."""
    return so3_exp(-angle * np.eye(3)[axis])


# Appendix D.1: (type, axis, pitch), Table D.1.
_TEST_SYSTEM_JOINTS = [
    (JointType.PRISMATIC, 0, 0.0), (JointType.REVOLUTE, 1, 0.0), (JointType.HELICAL, 2, 4.0),
    (JointType.HELICAL, 0, 5.0), (JointType.REVOLUTE, 2, 0.0), (JointType.PRISMATIC, 1, 0.0),
    (JointType.REVOLUTE, 0, 0.0), (JointType.PRISMATIC, 2, 0.0), (JointType.HELICAL, 1, 3.0),
]
# Table D.2: λ(i)|i_R_λ(i) as (axis, angle) and λ(i)|i_o_λ(i).
_TEST_SYSTEM_PLACEMENTS = [
    (0, 1.0, (2, 1, 7)), (2, 4.0, (1, 7, 6)), (1, 7.0, (8, 9, 3)), (0, 8.0, (7, 0, 7)), (1, 5.0, (6, 5, 8)),
    (0, 1.0, (3, 8, 0)), (0, 0.0, (4, 3, 2)), (2, 6.0, (7, 5, 1)), (1, 4.0, (3, 2, 2)),
]
# The topology of the lost Figure 5.1: λ(1..9).
_TEST_SYSTEM_PARENTS = [0, 1, 2, 0, 4, 4, 0, 7, 8]
# Table D.3, as printed (fed unchanged to the thesis's linear-first code).
_TEST_SYSTEM_INERTIAS = [
    [[120, -23, -68, 0, -14, 6], [-23, 153, -39, 14, 0, -10], [-68, -39, 76, -6, 10, 0],
     [0, 14, -6, 2, 0, 0], [-14, 0, 10, 0, 2, 0], [6, -10, 0, 0, 0, 2]],
    [[129, -71, -138, 0, -24, 12], [-71, 314, -43, 24, 0, -36], [-138, -43, 241, -12, 36, 0],
     [0, 24, -12, 6, 0, 0], [-24, 0, 36, 0, 6, 0], [12, -36, 0, 0, 0, 6]],
    [[238, -74, -403, 0, -45, 9], [-74, 959, -42, 45, 0, -81], [-403, -42, 746, -9, 81, 0],
     [0, 45, -9, 9, 0, 0], [-45, 0, 81, 0, 9, 0], [9, -81, 0, 0, 0, 9]],
    [[852, -113, -214, 0, -72, 40], [-113, 725, -357, 72, 0, -24], [-214, -357, 280, -40, 24, 0],
     [0, 72, -40, 8, 0, 0], [-72, 0, 24, 0, 8, 0], [40, -24, 0, 0, 0, 8]],
    [[45, -41, -36, 0, -6, 6], [-41, 118, -13, 6, 0, -14], [-36, -13, 117, -6, 14, 0],
     [0, 6, -6, 2, 0, 0], [-6, 0, 14, 0, 2, 0], [6, -14, 0, 0, 0, 2]],
    [[122, -34, -34, 0, -8, 7], [-34, 91, -51, 8, 0, -5], [-34, -51, 75, -7, 5, 0],
     [0, 8, -7, 1, 0, 0], [-8, 0, 5, 0, 1, 0], [7, -5, 0, 0, 0, 1]],
    [[94, -83, -88, 0, -15, 15], [-83, 230, -42, 15, 0, -30], [-88, -42, 233, -15, 30, 0],
     [0, 15, -15, 5, 0, 0], [-15, 0, 30, 0, 5, 0], [15, -30, 0, 0, 0, 5]],
    [[168, -121, -158, 0, -20, 16], [-121, 361, -77, 20, 0, -32], [-158, -77, 328, -16, 32, 0],
     [0, 20, -16, 4, 0, 0], [-20, 0, 32, 0, 4, 0], [16, -32, 0, 0, 0, 4]],
    [[569, -503, -246, 0, -28, 56], [-503, 681, -219, 28, 0, -63], [-246, -219, 1016, -56, 63, 0],
     [0, 28, -56, 7, 0, 0], [-28, 0, 63, 0, 7, 0], [56, -63, 0, 0, 0, 7]],
    [[184, -11, -4, 0, -6, 18], [-11, 25, -51, 6, 0, -2], [-4, -51, 172, -18, 2, 0],
     [0, 6, -18, 2, 0, 0], [-6, 0, 2, 0, 2, 0], [18, -2, 0, 0, 0, 2]],
]


def thesis_test_system(gravity: ArrayLike = (0.0, 0.0, -9.81)) -> Model:
    """The 9-joint floating-base test system of thesis §5.1 / app. D.

    Revolute, prismatic and helical joints about x, y and z, a branch at the
    base and one further out.  Its inertias are Table D.3's raw matrices: not
    physical (body 0's has a negative eigenvalue) but the mathematics holds.

    ``gravity`` (3,): in the world frame [m/s²].
    """
    builder = ModelBuilder("body0", np.array(_TEST_SYSTEM_INERTIAS[0], dtype=float), floating_base=True,
                           gravity=gravity, name="thesis_test_system")
    for i in range(1, 10):
        joint_type, axis, pitch = _TEST_SYSTEM_JOINTS[i - 1]
        rot_axis, angle, origin = _TEST_SYSTEM_PLACEMENTS[i - 1]
        R = _passive_rotation(rot_axis, angle)
        joint_H_parent = np.eye(4)  # λ(i)|i_H_λ(i) = [[R, R o], [0, 1]], from (D.1)
        joint_H_parent[:3, :3] = R
        joint_H_parent[:3, 3] = R @ np.asarray(origin, dtype=float)
        builder.add_body(f"body{i}", parent=f"body{_TEST_SYSTEM_PARENTS[i - 1]}",
                         joint=Joint(f"joint{i}", joint_type, tuple(np.eye(3)[axis]), pitch),
                         placement=inverse_transform(joint_H_parent),
                         inertia=np.array(_TEST_SYSTEM_INERTIAS[i], dtype=float))
    return builder.build()
