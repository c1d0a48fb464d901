"""The exact Jacobians of one semi-implicit Euler step on the state's Lie group,
against central geometric finite differences of rl.step (left-trivialised on both sides)
and against Crocoddyl's IntegratedActionModelEuler; the zero-order hold against scipy."""

import numpy as np
import pytest
from scipy.linalg import expm
from scipy.signal import cont2discrete

import robot_linearization as rl
from robot_linearization.discretization import se3_right_jacobian
from robot_linearization.spatial import se3_exp, se3_log
from robot_linearization.validation import finite_difference_step

from robot_linearization.spatial import cross_motion

from conftest import PinocchioOracle, example_robot_path, load_example, random_state


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


def test_se3_right_jacobian_closed_form_equals_its_series_at_every_angle(rng):
    """J_r = ∫₀¹ exp(−s ad_ξ) ds, the top-right block of exp([[−ad_ξ, I], [0, 0]]) (scipy's expm),
    to machine precision from 0 through the series/closed-form switch (|φ| = 0.1) to beyond π."""
    for angle in (0.0, 1e-9, 1e-5, 1e-3, 0.0999, 0.1001, 0.5, 3.0, 7.0):
        for _ in range(3):
            xi = np.r_[rng.normal(size=3), angle * rng.normal(size=3) / np.sqrt(3)]
            block = np.zeros((12, 12))
            block[:6, :6], block[:6, 6:] = -cross_motion(xi), np.eye(6)
            np.testing.assert_allclose(se3_right_jacobian(xi), expm(block)[:6, 6:], rtol=0, atol=1e-14)


@pytest.mark.parametrize("robot", ["solo12", "talos", "ur5"])
@pytest.mark.parametrize("dt", [1e-4, 1e-3, 1e-2])
def test_step_jacobians_match_finite_differences_of_the_step(robot, dt, rng):
    model = load_example(robot)
    state, tau = random_state(model, rng, scale=2.0), rng.normal(size=model.n_joints)
    if model.floating_base:  # a fast-spinning base, where I + A·dt is visibly wrong
        state = rl.State(base_pose=state.base_pose, joint_positions=state.joint_positions,
                         base_twist=np.r_[state.base_twist[:3], 20.0, -15.0, 10.0],
                         joint_velocities=state.joint_velocities)
    lin = rl.linearize(model, state, tau, dt=dt)
    A_d, B_d = lin.A_d, lin.B_d
    A_fd, B_fd = finite_difference_step(model, state, tau, dt)
    assert relative(A_d, A_fd) < 1e-6 and relative(B_d, B_fd) < 1e-6
    if model.floating_base:  # the first-order discretisation I + A·dt fails this very test
        naive = np.eye(len(A_d)) + dt * lin.A
        assert relative(naive, A_fd) > {1e-4: 1e-5, 1e-3: 1e-4, 1e-2: 1e-3}[dt]


def test_step_jacobians_with_contacts(rng):
    model = load_example("solo12")
    feet = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
    state, tau = random_state(model, rng), rng.normal(size=12)
    lin = rl.linearize(model, state, tau, contacts=feet)
    A_d, B_d = rl.discretize(model, lin, 2e-3)
    A_fd, B_fd = finite_difference_step(model, state, tau, 2e-3, feet)
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
        with pytest.raises(ValueError, match="dt: expected a positive number of seconds"):
            rl.discretize(model, lin, bad)
        with pytest.raises(ValueError, match="dt: expected a positive number of seconds"):
            rl.step(model, state, tau, bad)
        with pytest.raises(ValueError, match="dt: expected a positive number of seconds"):
            rl.linearize(model, state, tau, dt=bad)
    with pytest.raises(ValueError, match="discretization: expected one of"):
        rl.linearize(model, state, tau, dt=1e-3, discretization="rk4")
    with pytest.raises(ValueError, match="method: expected one of"):
        rl.discretize(model, lin, 1e-3, method="rk4")
    assert lin.A_d is None and lin.B_d is None and lin.dt is None


def test_a_horizon_discretizes_each_state_as_a_single_linearization_does(rng):
    model = load_example("talos")
    states = [random_state(model, rng, scale=2.0) for _ in range(5)]
    torques = rng.normal(size=(5, model.n_joints))
    horizon = rl.linearize_trajectory(model, states, torques, dt=2e-3, workers=2)
    assert horizon.A_d.shape == (5,) + horizon.A.shape[1:] and horizon.B_d.shape == (5,) + horizon.B.shape[1:]
    for k in range(5):
        single = rl.linearize(model, states[k], torques[k], dt=2e-3)
        np.testing.assert_array_equal(horizon.A_d[k], single.A_d)
        np.testing.assert_array_equal(horizon.B_d[k], single.B_d)
    assert "A_d and B_d of a euler step of 0.002 s" in repr(horizon)


def test_a_gait_horizon_discretizes_each_phase_with_its_own_contacts(rng):
    """A stance, a flight and a two-foot phase: each A_d is the Jacobian of the step with
    that phase's contacts (finite differences of rl.step), the last one's touchdown with its
    impact (docs/impacts.md)."""
    model = load_example("solo12")
    phases = [["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"], [], ["FL_FOOT", "HR_FOOT"]]
    states = [random_state(model, rng) for _ in phases]
    torques = rng.normal(size=(3, 12))
    horizon = rl.linearize_trajectory(model, states, torques, contacts=phases, dt=1e-3)
    assert [x is not None for x in horizon.impact] == [False, False, True]
    for k, feet in enumerate(phases):
        A_fd, B_fd = finite_difference_step(model, states[k], torques[k], 1e-3, feet,
                                            previous_contacts=phases[k - 1] if k else None)
        assert relative(horizon.A_d[k], A_fd) < 1e-6 and relative(horizon.B_d[k], B_fd) < 1e-6


def test_step_jacobians_of_a_robot_with_coupled_mimic_joints(rng):
    model = rl.load_urdf(example_robot_path("panda"), floating_base=False)  # mimic joints coupled
    assert isinstance(model, rl.CoupledModel)
    state, tau = random_state(model, rng), rng.normal(size=model.n_joints)
    lin = rl.linearize(model, state, tau, dt=5e-3)
    A_fd, B_fd = finite_difference_step(model, state, tau, 5e-3)
    assert relative(lin.A_d, A_fd) < 1e-6 and relative(lin.B_d, B_fd) < 1e-6


@pytest.mark.parametrize("robot", ["solo12", "ur5"])
def test_zero_order_hold_is_scipys(robot, rng):
    """method "zoh": scipy.signal.cont2discrete's zero-order hold of the continuous (A, B),
    for one state and along a horizon; it differs from the Euler step's Jacobians at O(dt²)."""
    model = load_example(robot)
    states = [random_state(model, rng) for _ in range(2)]
    torques = rng.normal(size=(2, model.n_joints))
    horizon = rl.linearize_trajectory(model, states, torques, dt=5e-3, discretization="zoh")
    for k in range(2):
        A, B = horizon.A[k], horizon.B[k]
        A_ref, B_ref, *_ = cont2discrete((A, B, np.eye(len(A)), np.zeros_like(B)), 5e-3, method="zoh")
        np.testing.assert_allclose(horizon.A_d[k], A_ref, rtol=0, atol=1e-12 * np.abs(A_ref).max())
        np.testing.assert_allclose(horizon.B_d[k], B_ref, rtol=0, atol=1e-12 * np.abs(B_ref).max())
        euler = rl.linearize(model, states[k], torques[k], dt=5e-3)
        gap = relative(euler.A_d, horizon.A_d[k])
        assert 1e-9 < gap < 1e-1


@pytest.mark.parametrize("robot", ["solo12", "talos", "ur5"])
@pytest.mark.parametrize("dt", [1e-3, 1e-2])
def test_step_jacobians_equal_crocoddyls_integrated_euler_model(robot, dt, rng):
    """Crocoddyl's IntegratedActionModelEuler(DifferentialActionModelFreeFwdDynamics): the same
    semi-implicit step q⁺ = q ⊕ dt·(v + dt·v̇) on Pinocchio's free-flyer (H·exp(δ), our z_H),
    its analytic F_x, F_u reordered to our joints by name."""
    import crocoddyl

    model = load_example(robot)
    oracle = PinocchioOracle(example_robot_path(robot), model)
    state, tau = random_state(model, rng, scale=2.0), rng.normal(size=model.n_joints)
    if model.floating_base:
        state = rl.State(base_pose=state.base_pose, joint_positions=state.joint_positions,
                         base_twist=np.r_[state.base_twist[:3], 20.0, -15.0, 10.0],
                         joint_velocities=state.joint_velocities)
    multibody = crocoddyl.StateMultibody(oracle.pmodel)
    actuation = (crocoddyl.ActuationModelFloatingBase(multibody) if model.floating_base
                 else crocoddyl.ActuationModelFull(multibody))
    dynamics = crocoddyl.DifferentialActionModelFreeFwdDynamics(
        multibody, actuation, crocoddyl.CostModelSum(multibody, actuation.nu))
    euler = crocoddyl.IntegratedActionModelEuler(dynamics, dt)
    data = euler.createData()
    off, nv, P = (6 if model.floating_base else 0), oracle.pmodel.nv, oracle.perm
    v = np.zeros(nv)
    v[P] = np.r_[state.base_twist if model.floating_base else [], state.joint_velocities]
    u = np.zeros(actuation.nu)
    u[P[off:] - off] = tau
    x = np.r_[oracle.configuration(state), v]
    euler.calc(data, x, u)
    euler.calcDiff(data, x, u)
    rows = np.r_[P, nv + P]
    F_x, F_u = data.Fx[np.ix_(rows, rows)], data.Fu[np.ix_(rows, P[off:] - off)]

    lin = rl.linearize(model, state, tau, dt=dt)
    assert relative(lin.A_d, F_x) < 1e-9 and relative(lin.B_d, F_u) < 1e-9
    np.testing.assert_allclose(rl.step(model, state, tau, dt).joint_velocities, data.xnext[oracle.pmodel.nq:][P[off:]],
                               rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("discretization", ["euler", "zoh"])
def test_validate_checks_the_step_jacobians_and_catches_a_wrong_one(discretization, rng):
    import dataclasses

    model = load_example("solo12")
    feet = ["FL_FOOT", "FR_FOOT"]
    state, tau = random_state(model, rng), rng.normal(size=12)
    lin = rl.linearize(model, state, tau, contacts=feet, dt=4e-3, discretization=discretization)
    report = rl.validate(model, lin)
    names = [b.name for b in report.blocks]
    assert "A_d[H+,v]" in names and "B_d[r+]" in names and report.passed(1e-6), report.summary()
    wrong = lin.A_d.copy()
    wrong[:6, :6] = np.eye(6)  # forgetting Ad(exp(−dt v⁺)) on z_H
    assert not rl.validate(model, dataclasses.replace(lin, A_d=wrong)).passed(1e-6)
