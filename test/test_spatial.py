"""Spatial algebra: identities that any sign or ordering slip would break."""

import numpy as np
import pytest

from robot_linearization.spatial import (
    cross_force,
    cross_force_operand,
    cross_motion,
    hat,
    inverse_transform,
    se3_exp,
    se3_exp_many,
    se3_log,
    se3_log_many,
    so3_exp,
    so3_log,
    spatial_inertia,
    vee,
    velocity_transform,
    wrench_transform,
)
from scipy.linalg import expm, logm


def test_se3_exp_matches_matrix_exponential_of_hat(rng):
    for _ in range(20):
        xi = rng.normal(size=6) * rng.choice([1e-9, 1e-3, 1.0, 3.0])
        np.testing.assert_allclose(se3_exp(xi), expm(hat(xi)), atol=1e-12)


@pytest.mark.parametrize("angle", [0.0, 1e-12, 1e-6, 1e-3, 0.5, 2.0, np.pi - 1e-3, np.pi - 1e-7, np.pi])
def test_se3_log_inverts_exp_near_zero_and_pi(rng, angle):
    for _ in range(5):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        xi = np.concatenate([rng.normal(size=3), angle * axis])
        H = se3_exp(xi)
        np.testing.assert_allclose(se3_exp(se3_log(H)), H, atol=1e-10)
        if angle < np.pi - 1e-6:  # at π the axis sign is ambiguous
            np.testing.assert_allclose(se3_log(H), xi, atol=1e-8)


def test_the_stacked_exp_and_log_match_the_matrix_exponential_and_the_single_ones(rng):
    """se3_exp_many against scipy's expm of each hat (independent) and se3_exp to the last bits;
    se3_log_many inverts it at every angle class (zero, tiny, ordinary, near and at π), equals
    se3_log, and takes the top rows (K, 3, 4) as well."""
    angles = [0.0, 1e-12, 1e-6, 1e-3, 0.5, 2.0, np.pi - 1e-2, np.pi - 1e-4, np.pi - 1e-7, np.pi]
    axes = rng.normal(size=(len(angles), 3))
    axes /= np.linalg.norm(axes, axis=1)[:, None]
    twists = np.concatenate([rng.normal(size=(len(angles), 3)), np.array(angles)[:, None] * axes], axis=1)
    # each also about the opposite axis: near π the axis comes from R + Rᵀ, and only its sign tells the two apart
    twists, angles = np.concatenate([twists, -twists]), angles + angles
    H = se3_exp_many(twists)
    for k, xi in enumerate(twists):
        np.testing.assert_allclose(H[k], expm(hat(xi)), atol=1e-12)
        np.testing.assert_allclose(H[k], se3_exp(xi), rtol=0, atol=2e-15)
    logs = se3_log_many(H)
    np.testing.assert_allclose(se3_exp_many(logs), H, atol=1e-10)
    for k, angle in enumerate(angles):
        np.testing.assert_allclose(logs[k], se3_log(H[k]), rtol=0, atol=1e-12)
        if angle < np.pi - 1e-6:  # (at π the axis sign is ambiguous)
            np.testing.assert_allclose(logs[k], twists[k], atol=1e-8)
    np.testing.assert_array_equal(se3_log_many(H[:, :3]), logs)
    # any layout, byte order and float width a user may hold them in: the same results
    for given in (H.astype(">f8"), np.asfortranarray(H), H[::-1][::-1], H.astype(np.float32).astype(np.float64)):
        np.testing.assert_array_equal(se3_log_many(given), se3_log_many(np.array(given, dtype=float)))
    np.testing.assert_array_equal(se3_exp_many(twists.astype(">f8")), H)
    np.testing.assert_array_equal(se3_exp_many(np.asfortranarray(twists)), H)
    with pytest.raises(ValueError, match=r"^H: expected K transforms"):
        se3_log_many(H[:, :2])


def test_so3_log_agrees_with_matrix_logarithm(rng):
    for _ in range(10):
        w = rng.normal(size=3)
        w *= rng.uniform(0.1, 3.0) / np.linalg.norm(w)
        W = np.real(logm(so3_exp(w)))
        np.testing.assert_allclose(so3_log(so3_exp(w)), [W[2, 1], W[0, 2], W[1, 0]], atol=1e-10)


def test_hat_vee_roundtrip_and_twist_order_is_linear_first(rng):
    xi = rng.normal(size=6)
    np.testing.assert_array_equal(vee(hat(xi)), xi)
    # the translation of exp of a pure linear twist is the linear part
    np.testing.assert_allclose(se3_exp(np.array([1.0, 2.0, 3.0, 0, 0, 0]))[:3, 3], [1, 2, 3])


def test_velocity_transform_is_the_adjoint(rng):
    H = se3_exp(rng.normal(size=6))
    xi = rng.normal(size=6)
    # Ad_H xi = vee(H xi^ H^-1) (2.34)-(2.35)
    np.testing.assert_allclose(velocity_transform(H) @ xi, vee(H @ hat(xi) @ inverse_transform(H)), atol=1e-12)
    H2 = se3_exp(rng.normal(size=6))
    np.testing.assert_allclose(velocity_transform(H @ H2), velocity_transform(H) @ velocity_transform(H2), atol=1e-12)


def test_cross_products_are_the_lie_bracket_and_its_dual(rng):
    v1, v2, f = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    np.testing.assert_allclose(cross_motion(v1) @ v2, vee(hat(v1) @ hat(v2) - hat(v2) @ hat(v1)), atol=1e-12)
    np.testing.assert_allclose(cross_force(v1), -cross_motion(v1).T)
    np.testing.assert_allclose(cross_force_operand(f) @ v1, cross_force(v1) @ f, atol=1e-12)


def test_wrench_transform_preserves_power(rng):
    H = se3_exp(rng.normal(size=6))
    v_b, f_b = rng.normal(size=6), rng.normal(size=6)
    assert np.isclose((velocity_transform(H) @ v_b) @ (wrench_transform(H) @ f_b), v_b @ f_b)


def test_spatial_inertia_gives_kinetic_energy_of_a_shifted_body(rng):
    mass, com = 2.5, rng.normal(size=3)
    I_c = np.diag([0.1, 0.2, 0.25])
    M = spatial_inertia(mass, com, I_c)
    v = rng.normal(size=6)
    v_com = v[:3] + np.cross(v[3:], com)
    energy = 0.5 * mass * v_com @ v_com + 0.5 * v[3:] @ I_c @ v[3:]
    assert np.isclose(0.5 * v @ M @ v, energy)
    assert np.all(np.linalg.eigvalsh(M) > 0)
