"""Joints: jcalc and its derivative, and the sign of prismatic/helical motion."""

import numpy as np
import pytest

from robot_linearization.joints import Joint, JointType, joint_transform, joint_transform_derivative
from robot_linearization.spatial import se3_exp, velocity_transform


@pytest.mark.parametrize("joint_type", list(JointType))
def test_jcalc_derivative_matches_finite_differences(rng, joint_type):
    joint = Joint("j", joint_type, tuple(rng.normal(size=3)), pitch=0.3)
    S = joint.motion_subspace
    s, h = rng.normal(), 1e-6
    numeric = (joint_transform(S, s + h) - joint_transform(S, s - h)) / (2 * h)
    np.testing.assert_allclose(joint_transform_derivative(S, joint_transform(S, s)), numeric, atol=1e-8)


@pytest.mark.parametrize("joint_type", list(JointType))
def test_child_moves_along_plus_motion_subspace(rng, joint_type):
    """Table B.1 erratum: the printed prismatic/helical origin moves the child along −Γ.

    The child frame must move with twist +Γ ṡ: d/ds of parent_H_child(s) = H Γ^.
    With the printed sign this velocity would be −Γ ṡ and the test fails.
    """
    joint = Joint("j", joint_type, tuple(rng.normal(size=3)), pitch=0.4)
    S, s, h = joint.motion_subspace, 0.7, 1e-6
    # i_X_{λ|i} = Ad(child_H_joint): recover the child's pose from it and differentiate.
    child_X_joint = joint_transform(S, s)
    joint_X_child = np.linalg.inv(child_X_joint)
    expected = velocity_transform(se3_exp(s * S))
    np.testing.assert_allclose(joint_X_child, expected, atol=1e-12)

    def position(q):
        return se3_exp(q * S)[:3, 3]

    if joint_type is JointType.PRISMATIC:
        np.testing.assert_allclose((position(s + h) - position(s - h)) / (2 * h), np.asarray(joint.axis), atol=1e-8)
    if joint_type is JointType.HELICAL:
        along_axis = position(s) @ np.asarray(joint.axis)
        assert np.isclose(along_axis, 0.4 * s)  # advances +pitch per radian


def test_joint_rejects_zero_axis():
    with pytest.raises(ValueError, match="joint 'bad'"):
        Joint("bad", JointType.REVOLUTE, (0.0, 0.0, 0.0))
