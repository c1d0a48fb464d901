"""The exact Jacobians of one semi-implicit Euler step on the state's Lie group,
against central geometric finite differences of rl.step (left-trivialised on both sides)."""

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.discretization import se3_right_jacobian
from robot_linearization.spatial import se3_exp, se3_log
from robot_linearization.validation import perturb

from conftest import load_example, random_state


def difference(model, a: rl.State, b: rl.State) -> np.ndarray:
    """z with b = a·exp(z) (left-trivialised), in the state order [z_H, z_s, z_v, z_r]."""
    parts = [b.joint_positions - a.joint_positions]
    if model.floating_base:
        parts = [se3_log(np.linalg.inv(a.base_pose) @ b.base_pose)] + parts + [b.base_twist - a.base_twist]
    return np.concatenate(parts + [b.joint_velocities - a.joint_velocities])


def differenced_step(model, state, tau, dt, contacts=(), h=1e-6):
    nominal = rl.step(model, state, tau, dt, contacts)
    M = 2 * model.n_velocities
    A = np.empty((M, M))
    for j in range(M):
        z = np.zeros(M)
        z[j] = h
        plus = difference(model, nominal, rl.step(model, perturb(model, state, z), tau, dt, contacts))
        minus = difference(model, nominal, rl.step(model, perturb(model, state, -z), tau, dt, contacts))
        A[:, j] = (plus - minus) / (2 * h)
    B = np.empty((M, model.n_joints))
    for j in range(model.n_joints):
        e = np.zeros(model.n_joints)
        e[j] = 1.0
        B[:, j] = (difference(model, nominal, rl.step(model, state, tau + e, dt, contacts))
                   - difference(model, nominal, rl.step(model, state, tau - e, dt, contacts))) / 2
    return A, B


def relative(ours, reference):
    return np.abs(ours - reference).max() / np.abs(reference).max()


def test_se3_right_jacobian_by_finite_differences(rng):
    for scale in (1e-3, 0.5, 2.5):
        xi = scale * rng.normal(size=6)
        J = se3_right_jacobian(xi)
        h = 1e-6
        numeric = np.column_stack([(se3_log(np.linalg.inv(se3_exp(xi)) @ se3_exp(xi + h * e))
                                    - se3_log(np.linalg.inv(se3_exp(xi)) @ se3_exp(xi - h * e))) / (2 * h)
                                   for e in np.eye(6)])
        np.testing.assert_allclose(J, numeric, atol=1e-8)


@pytest.mark.parametrize("robot", ["solo12", "talos", "ur5"])
@pytest.mark.parametrize("dt", [1e-4, 1e-3, 1e-2])
def test_step_jacobians_match_finite_differences_of_the_step(robot, dt, rng):
    model = load_example(robot)
    state, tau = random_state(model, rng, scale=2.0), rng.normal(size=model.n_joints)
    if model.floating_base:  # a fast-spinning base, where I + A·dt is visibly wrong
        state = rl.State(base_pose=state.base_pose, joint_positions=state.joint_positions,
                         base_twist=np.r_[state.base_twist[:3], 20.0, -15.0, 10.0],
                         joint_velocities=state.joint_velocities)
    lin = rl.linearize(model, state, tau)
    A_d, B_d = rl.discretize(model, lin, dt)
    A_fd, B_fd = differenced_step(model, state, tau, dt)
    assert relative(A_d, A_fd) < 1e-6 and relative(B_d, B_fd) < 1e-6
    if model.floating_base and dt == 1e-2:
        naive = np.eye(len(A_d)) + dt * lin.A
        assert relative(naive, A_fd) > 1e-3  # the first-order discretisation is not the step's Jacobian


def test_step_jacobians_with_contacts(rng):
    model = load_example("solo12")
    feet = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
    state, tau = random_state(model, rng), rng.normal(size=12)
    lin = rl.linearize(model, state, tau, contacts=feet)
    A_d, B_d = rl.discretize(model, lin, 2e-3)
    A_fd, B_fd = differenced_step(model, state, tau, 2e-3, feet)
    assert relative(A_d, A_fd) < 1e-6 and relative(B_d, B_fd) < 1e-6


def test_as_dt_goes_to_zero_the_step_jacobians_become_a_and_b(rng):
    model = load_example("solo12")
    state, tau = random_state(model, rng), rng.normal(size=12)
    lin = rl.linearize(model, state, tau)
    for dt, tolerance in ((1e-4, 5e-3), (1e-6, 5e-5)):
        A_d, B_d = rl.discretize(model, lin, dt)
        assert relative((A_d - np.eye(36)) / dt, lin.A) < tolerance
        assert relative(B_d / dt, lin.B) < tolerance
    for bad in (0.0, -1e-3, float("nan")):
        with pytest.raises(ValueError, match="dt must be a positive number"):
            rl.discretize(model, lin, bad)
        with pytest.raises(ValueError, match="dt must be a positive number"):
            rl.step(model, state, tau, bad)
    horizon = rl.linearize_trajectory(model, [state, state])
    with pytest.raises(ValueError, match="Linearization of one state"):
        rl.discretize(model, horizon, 1e-3)
