"""A horizon's states as stacked arrays (walking/horizon_states.py): their differences and perturbations on
SE(3) × ℝⁿ × ℝ⁶ × ℝⁿ against Pinocchio's exp6 and log6, state by state, and against validation's perturb and
state_difference of one state."""

import numpy as np
import pinocchio as pin
import pytest

import robot_linearization as rl
from robot_linearization.robots import bundled_urdf_path
from robot_linearization.validation import perturb, state_difference
from robot_linearization.walking.horizon_states import differences, perturbed, pose_logs_into, stacked, unstacked

MODEL = rl.load_urdf(bundled_urdf_path(), floating_base=True)
N, n = MODEL.n_velocities, MODEL.n_joints


def _horizon(rng, K: int, angles) -> tuple:
    """K random states, their base rotated by the given angles [rad] about random axes."""
    states = []
    for angle in angles[:K]:
        axis = rng.normal(size=3)
        twist = np.r_[rng.normal(size=3), angle * axis / np.linalg.norm(axis)]
        states.append(rl.State(base_pose=pin.exp6(pin.Motion(twist)).homogeneous, joint_positions=rng.normal(size=n),
                               base_twist=rng.normal(size=6), joint_velocities=rng.normal(size=n)))
    return stacked(states)


# (angles of the relative rotations: none, tiny, ordinary, near and at π)
ANGLES = [0.0, 1e-9, 3e-5, 0.4, 1.7, np.pi - 1e-4, np.pi - 1e-2, 3.0]


def test_differences_are_pinocchios_log_of_the_relative_pose_and_the_rest_subtracted():
    rng = np.random.default_rng(4)
    a = _horizon(rng, len(ANGLES), [1.0] * len(ANGLES))
    # b_k = a_k·exp(twist_k) with rotations of the angles above
    twists = np.array([np.r_[rng.normal(size=3), angle * axis / np.linalg.norm(axis)]
                       for angle, axis in zip(ANGLES, rng.normal(size=(len(ANGLES), 3)))])
    b = (np.array([H @ pin.exp6(pin.Motion(t)).homogeneous for H, t in zip(a[0], twists)]),) + tuple(
        x + rng.normal(size=x.shape) for x in a[1:])
    z = differences(a, b)
    assert z.shape == (len(ANGLES), 2 * N)
    for k in range(len(ANGLES)):
        expected = np.r_[pin.log6(pin.SE3(np.linalg.inv(a[0][k]) @ b[0][k])).vector, b[1][k] - a[1][k],
                         b[2][k] - a[2][k], b[3][k] - a[3][k]]
        np.testing.assert_allclose(z[k], expected, rtol=0, atol=1e-9)
        np.testing.assert_allclose(z[k, :6], twists[k], rtol=0, atol=1e-9)
        np.testing.assert_allclose(z[k], state_difference(MODEL, unstacked(*a)[k], unstacked(*b)[k]), rtol=0,
                                   atol=1e-9)
    poses = np.empty((len(ANGLES), 6))
    pose_logs_into(a[0], b[0], poses)
    np.testing.assert_array_equal(poses, z[:, :6])


def test_perturbed_is_pinocchios_exp_on_the_right_and_the_rest_added():
    rng = np.random.default_rng(5)
    a = _horizon(rng, len(ANGLES), ANGLES)
    z = rng.normal(size=(len(ANGLES), 2 * N))
    z[:, 3:6] *= (np.array(ANGLES) / np.linalg.norm(z[:, 3:6], axis=1))[:, None]  # (rotations of these angles)
    b = perturbed(a, z)
    for k in range(len(ANGLES)):
        np.testing.assert_allclose(b[0][k], a[0][k] @ pin.exp6(pin.Motion(z[k, :6])).homogeneous, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(b[0][k, 3], [0.0, 0.0, 0.0, 1.0])
        one = perturb(MODEL, unstacked(*a)[k], z[k])
        for got, value in zip((x[k] for x in b), (one.base_pose, one.joint_positions, one.base_twist,
                                                  one.joint_velocities)):
            np.testing.assert_allclose(got, value, rtol=0, atol=1e-12)
    # back again, and into the states' own arrays
    np.testing.assert_allclose(differences(a, b), z, rtol=0, atol=1e-9)
    copies = tuple(x.copy() for x in a)
    assert all(x is y for x, y in zip(perturbed(copies, z, copies), copies))
    for got, value in zip(copies, b):
        np.testing.assert_array_equal(got, value)


@pytest.mark.parametrize("K", [1, 3])
def test_perturbed_writes_into_the_rows_it_is_given(K):
    """Into rows 1 … K of a larger horizon's arrays (the MPC's shifted plan), leaving row 0 as it is."""
    rng = np.random.default_rng(K)
    a, z = _horizon(rng, K, ANGLES), rng.normal(size=(K, 2 * N))
    larger = tuple(np.full((K + 1,) + x.shape[1:], 7.0) for x in a)
    perturbed(a, z, tuple(x[1:] for x in larger))
    for got, value in zip(larger, perturbed(a, z)):
        np.testing.assert_array_equal(got[0], 7.0)
        np.testing.assert_array_equal(got[1:], value)


def test_any_layout_of_float_arrays_gives_what_their_float64_copies_give():
    """float32, Fortran-ordered, strided, read-only and big-endian arrays: the results of C-ordered float64
    copies (float32 to its rounding)."""
    rng = np.random.default_rng(9)
    a, b = _horizon(rng, 3, ANGLES), _horizon(rng, 3, ANGLES[3:])
    z = rng.normal(size=(3, 2 * N))
    expected_z, expected = differences(a, b), perturbed(a, z)
    frozen = tuple(x.copy() for x in a)
    for x in frozen:
        x.flags.writeable = False
    for layout in (tuple(np.asfortranarray(x) for x in a), tuple(x.astype(">f8") for x in a), frozen,
                   tuple(np.repeat(x, 2, axis=0)[::2] for x in a)):
        np.testing.assert_array_equal(differences(layout, b), expected_z)
        for got, value in zip(perturbed(layout, np.asfortranarray(z)), expected):
            np.testing.assert_array_equal(got, value)
    np.testing.assert_allclose(differences(tuple(x.astype(np.float32) for x in a), b), expected_z, rtol=0,
                               atol=1e-5)


@pytest.mark.parametrize("call, message", [
    (lambda a, z: differences(a[:3], a), "a: expected a horizon's four stacked arrays (H, s, v, r), got tuple of 3"),
    (lambda a, z: differences(a, (a[0][:2],) + a[1:]), "b[0]: expected shape (3, 4, 4) (base poses"),
    (lambda a, z: differences(a, a[:1] + (a[1][:, :5],) + a[2:]), "b[1]: expected shape (3, 12) (joint positions"),
    (lambda a, z: differences((a[0][:, :3],) + a[1:], a), "a[0]: expected shape (any, 4, 4) (base poses"),
    (lambda a, z: perturbed(a, z[:, :-1]), "z: expected shape (3, 36) (a perturbation per state"),
    (lambda a, z: perturbed(a, z, a[:3]), "out: expected four float64, C-ordered, writeable arrays"),
    (lambda a, z: perturbed(a, z, (np.asfortranarray(a[0]),) + a[1:]), "out: expected four float64"),
    (lambda a, z: differences(a, ("no",) + a[1:]), "b[0]: expected"),
])
def test_arrays_that_are_not_a_horizons_are_refused_in_one_line(call, message):
    rng = np.random.default_rng(10)
    a, z = _horizon(rng, 3, ANGLES), rng.normal(size=(3, 2 * N))
    with pytest.raises(ValueError) as raised:
        call(a, z)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value), str(raised.value)
