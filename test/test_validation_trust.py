"""validate fails on each wrong part of a Linearization, and only there.

A correct linearization (built once per robot) passes at 1e-6; a copy with one
part's sign flipped (dataclasses.replace) fails, and the blocks that fail are the
ones that were flipped.  Together with test_demo_variants.py (every demo variant
passes) this pins the validation from both sides: it neither cries wolf nor misses."""

import dataclasses

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.robots import BUNDLED_FEET
from robot_linearization.validation import compare, finite_difference_linearization, flow_kinematic_rows

from conftest import example_robot_path, random_state

TOLERANCE = 1e-6


@pytest.fixture(scope="module")
def standing():
    """The bundled quadruped on its four feet, moving (a non-zero −v× block), with a step."""
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    state = random_state(model, np.random.default_rng(7))
    torques = np.random.default_rng(8).normal(size=model.n_joints)
    lin = rl.linearize(model, state, torques, contacts=list(BUNDLED_FEET), dt=0.002)
    report = rl.validate(model, lin)
    assert report.passed(TOLERANCE), report.summary()
    return model, lin


def flipped(matrix, rows=slice(None)):
    wrong = np.array(matrix, dtype=float)
    wrong[rows] = -wrong[rows]
    return wrong


def failing_blocks(model, lin):
    report = rl.validate(model, lin)
    return report, {b.name for b in report.blocks if not b.max_rel <= TOLERANCE}


def test_the_correct_linearization_passes_every_block_including_lambda_and_the_step(standing):
    model, lin = standing
    names = {b.name for b in rl.validate(model, lin).blocks}
    assert {"A[Hdot,H]", "A[sdot,r]", "A[vdot,s]", "B[rdot]", "M_inv", "lambda", "dlambda/dz[s]",
            "dlambda/dtau", "A_d[H+,v]", "B_d[r+]"} <= names


@pytest.mark.parametrize("part, rows, expected", [
    ("A", "kinematic", {"A[Hdot,H]", "A[Hdot,v]", "A[sdot,r]"}),
    ("A", "dynamics", {"A[vdot,s]", "A[rdot,s]", "A[rdot,v]"}),
    ("B", "all", {"B[vdot]", "B[rdot]"}),
    ("M_inv", "all", {"M_inv"}),
    ("contact_forces", "all", {"lambda"}),
    ("contact_forces_state_jacobian", "all", {"dlambda/dz[H]", "dlambda/dz[s]"}),
    ("contact_forces_input_jacobian", "all", {"dlambda/dtau"}),
    ("A_d", "all", {"A_d[H+,H]", "A_d[v+,v]"}),
    ("B_d", "all", {"B_d[v+]", "B_d[r+]"}),
])
def test_a_sign_flip_in_any_part_fails_validation_in_that_part(standing, part, rows, expected):
    model, lin = standing
    N = model.n_velocities
    selected = {"kinematic": slice(0, N), "dynamics": slice(N, 2 * N), "all": slice(None)}[rows]
    wrong = dataclasses.replace(lin, **{part: flipped(getattr(lin, part), selected)})
    report, failing = failing_blocks(model, wrong)
    assert not report.passed(TOLERANCE) and report.summary().startswith("FAIL")
    assert expected <= failing, report.summary()
    prefix = {"A": "A[", "B": "B[", "M_inv": "M_inv", "contact_forces": "lambda",
              "contact_forces_state_jacobian": "dlambda/dz", "contact_forces_input_jacobian": "dlambda/dtau",
              "A_d": "A_d", "B_d": "B_d"}[part]
    assert all(name.startswith(prefix) for name in failing), report.summary()  # and nowhere else


@pytest.mark.parametrize("row", [0, 4, 6 + 5])  # ż_H's translation and rotation, one ż_s
def test_one_wrong_kinematic_row_fails_validation(standing, row):
    """Were the kinematic rows compared with themselves (the reference replaced by A),
    this would pass."""
    model, lin = standing
    wrong = dataclasses.replace(lin, A=flipped(lin.A, row))
    report, failing = failing_blocks(model, wrong)
    assert failing and all(name.startswith(("A[Hdot", "A[sdot")) for name in failing), report.summary()


def test_compare_measures_the_kinematic_rows_against_the_reference_not_against_A(standing):
    model, lin = standing
    A_ref = np.array(lin.A)
    A_ref[:model.n_velocities] = flow_kinematic_rows(model, lin.state)
    wrong = flipped(lin.A, slice(0, 6))
    report = compare(model, wrong, lin.B, lin.M_inv, A_ref, lin.B, lin.M_inv)
    assert {"A[Hdot,H]", "A[Hdot,v]"} <= {b.name for b in report.blocks if b.max_rel > TOLERANCE}


def test_the_flow_reference_equals_the_thesis_kinematic_rows_at_a_fast_spin():
    """[ż_H; ż_s] = [[−v×, 0, I, 0], [0, 0, 0, I]] z (Proposition 3.1) at a base twist of
    27 rad/s, where the former fixed-step difference (h = 10⁻⁴) missed by 3·10⁻⁵."""
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    state = random_state(model, np.random.default_rng(3), scale=30.0)
    rows = flow_kinematic_rows(model, state)
    v, w = state.base_twist[:3], state.base_twist[3:]

    def hat(x):
        return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])
    N, n = model.n_velocities, model.n_joints
    expected = np.zeros((N, 2 * N))
    expected[:6, :6] = -np.block([[hat(w), hat(v)], [np.zeros((3, 3)), hat(w)]])
    expected[:6, N:N + 6] = np.eye(6)
    expected[6:, N + 6:] = np.eye(n)
    assert np.abs(rows - expected).max() < 1e-9 * np.abs(expected).max()


def test_a_locked_robot_passes_and_still_fails_on_a_wrong_contact_force_jacobian():
    """Fixed base, four point feet: ν̇ ≡ 0, so A's dynamics rows and B are zero by
    structure (noise on both sides, 10⁻⁸ vs 10⁻¹³) — measured against the terms that
    cancel in them, |M⁻¹|·|Jᵀ ∂λ/∂z| ≈ 10⁶, not against themselves.  ∂λ/∂s ≈ 2.5·10⁵ is
    nearly singular (finite differences at a fixed h = 10⁻³ were off by 1 %)."""
    model = rl.load_urdf(rl.robots.bundled_urdf_path(), floating_base=False)
    state = rl.State(joint_positions=np.random.default_rng(1).uniform(-0.5, 0.5, model.n_joints),
                     joint_velocities=np.zeros(model.n_joints))
    lin = rl.linearize(model, state, np.zeros(model.n_joints), contacts=list(BUNDLED_FEET))
    assert np.abs(lin.joint_accelerations).max() < 1e-8
    report = rl.validate(model, lin)
    assert report.passed(TOLERANCE), report.summary()
    wrong = dataclasses.replace(lin, contact_forces_state_jacobian=flipped(lin.contact_forces_state_jacobian, 0))
    assert "dlambda/dz[s]" in failing_blocks(model, wrong)[1]


def test_a_coupled_robot_fails_on_a_flipped_input_matrix():
    """talos_full with its mimic joints coupled (reduced coordinates), two 6d soles: one row of B
    (a dynamics row, one joint) flipped."""
    model = rl.load_urdf(example_robot_path("talos_full"))
    assert isinstance(model, rl.CoupledModel)
    rng = np.random.default_rng(5)
    state = random_state(model, rng, scale=0.3)
    lin = rl.linearize(model, state, rng.normal(size=model.n_joints), contacts="left_sole_link:6d, right_sole_link:6d")
    report = rl.validate(model, lin)
    assert report.passed(TOLERANCE), report.summary()
    assert not rl.validate(model, dataclasses.replace(lin, B=flipped(lin.B, model.n_velocities + 20))).passed(TOLERANCE)


def test_finite_difference_reference_is_accurate_where_a_fixed_step_was_not():
    """The reference itself: on the locked quadruped's nearly singular ∂λ/∂s the
    extrapolated differences agree with the engine to 10⁻⁹ relative."""
    model = rl.load_urdf(rl.robots.bundled_urdf_path(), floating_base=False)
    state = rl.State(joint_positions=np.random.default_rng(1).uniform(-0.5, 0.5, model.n_joints),
                     joint_velocities=np.zeros(model.n_joints))
    feet = list(BUNDLED_FEET)
    lin = rl.linearize(model, state, contacts=feet)
    dz = finite_difference_linearization(model, state, contacts=feet)[2]
    ours = lin.contact_forces_state_jacobian
    assert np.abs(dz - ours).max() < 1e-9 * np.abs(ours).max()


def _refuse(*_, **__):
    raise AssertionError("the reference used the engine's constrained dynamics")


@pytest.mark.parametrize("robot, contacts", [
    ("quadruped", list(BUNDLED_FEET)),
    ("quadruped", [BUNDLED_FEET[0] + ":6d", BUNDLED_FEET[3] + ":point:local"]),
    ("quadruped", [BUNDLED_FEET[1] + ":6d:local"]),
    ("fixed quadruped", [BUNDLED_FEET[2] + ":point:local"]),
    ("coupled quadruped", [BUNDLED_FEET[0], BUNDLED_FEET[1] + ":6d"]),
])
def test_the_lambda_reference_is_a_dense_kkt_solve_that_shares_nothing_with_the_engine(robot, contacts, monkeypatch):
    """validate's λ row: M by the CRBA, h by the inverse dynamics, J and γ by differences of the
    contact frames' poses, a dense KKT solve — with every function of the engine's constrained
    dynamics replaced by one that fails, it still gives the engine's λ and ν̇ (to the differences'
    accuracy), so a mistake in that shared kernel shows in the λ row (a flipped drift sign in
    contact_forces_into gives 0.56 there; the row printed exactly 0 when it compared the kernel with
    itself)."""
    import robot_linearization.algorithms.constrained_dynamics as constrained
    import robot_linearization.validation as validation

    path = rl.robots.bundled_urdf_path()
    if robot == "coupled quadruped":
        with open(path) as f:
            model = rl.load_urdf(f.read().replace(
                '<joint name="front_right_knee" type="revolute">',
                '<joint name="front_right_knee" type="revolute"><mimic joint="front_left_knee" multiplier="-1"/>'))
    else:
        model = rl.load_urdf(path, floating_base=robot != "fixed quadruped")
    rng = np.random.default_rng(3)
    state = random_state(model, rng, scale=0.5)
    torques = rng.normal(size=model.n_joints)
    lin = rl.linearize(model, state, torques, contacts=contacts)
    if robot == "quadruped" and len(contacts) == 1:  # λ 10⁻⁴ off, everything else right: the λ row alone fails
        report = rl.validate(model, dataclasses.replace(lin, contact_forces=lin.contact_forces * (1 + 1e-4)))
        assert {b.name for b in report.blocks if b.max_rel > TOLERANCE} == {"lambda"}, report.summary()
    for name in ("constrained_forward_dynamics", "contact_kinematics", "bias_motion", "contact_forces_into",
                 "contact_kinematics_into", "contact_arrays", "contact_set", "unconstrained_dynamics_into"):
        monkeypatch.setattr(constrained, name, _refuse)
        if hasattr(validation, name):
            monkeypatch.setattr(validation, name, _refuse)
    nu_dot, forces = validation.reference_constrained_dynamics(model, state, torques, contacts)
    ours = lin.joint_accelerations if not model.floating_base else np.concatenate(
        [lin.base_acceleration, lin.joint_accelerations])
    assert np.abs(forces - lin.contact_forces).max() < 1e-6 * np.abs(lin.contact_forces).max()
    assert np.abs(nu_dot - ours).max() < 1e-6 * max(1.0, np.abs(ours).max())


def test_a_zoh_touchdown_passes_and_the_other_composition_order_fails():
    """A zero-order hold through a touchdown is A_d = exp(A⁺ dt)·A_impact (the impact first, then the
    flow at x⁺: docs/impacts.md); validate's reference composes in that order, so the linearization
    passes and the same product taken the other way round fails in A_d's blocks."""
    from robot_linearization.discretization import zero_order_hold

    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    rng = np.random.default_rng(11)
    state = random_state(model, rng, scale=0.5)
    feet = list(BUNDLED_FEET)
    lin = rl.linearize(model, state, rng.normal(size=model.n_joints), contacts=feet, previous_contacts=feet[:2],
                       dt=2e-3, discretization="zoh")
    assert lin.impact is not None
    report = rl.validate(model, lin)
    assert report.passed(TOLERANCE), report.summary()
    flow = zero_order_hold(lin.A, lin.B, lin.dt)[0]
    np.testing.assert_allclose(lin.A_d, flow @ lin.impact.A, rtol=0, atol=1e-12 * np.abs(lin.A_d).max())
    reversed_order = dataclasses.replace(lin, A_d=lin.impact.A @ flow)
    _, failing = failing_blocks(model, reversed_order)
    assert failing and all(name.startswith("A_d[") for name in failing), failing


def test_validate_measures_a_structural_zero_against_the_floor_not_the_whole_matrix(standing):
    """The kinematic block ∂ż_H/∂s is zero by structure: its scale is 10⁻³ of the kinematic rows'
    largest entry (the floor), so an error of 5·10⁻⁷ of that entry — invisible against the matrix,
    10⁻³ against the floor's scale — fails there; a floor 1000× looser would pass it."""
    model, lin = standing
    A = lin.A.copy()
    N = model.n_velocities
    kinematic_peak = np.abs(A[:N]).max()
    A[0, 6] += 5e-7 * kinematic_peak
    report, failing = failing_blocks(model, dataclasses.replace(lin, A=A))
    assert failing == {"A[Hdot,s]"}, report.summary()
    block = next(b for b in report.blocks if b.name == "A[Hdot,s]")
    assert block.scale == pytest.approx(1e-3 * kinematic_peak) and block.max_rel == pytest.approx(5e-4)


def test_validate_fails_a_tenth_of_a_percent_error_in_one_small_block():
    """The quadruped on its feet, moving slowly: ∂ṙ/∂r, quadratic in the velocities, is small beside the
    rest of A's dynamics rows (checked: below 1e-3 of their largest entry).  0.1 % added to it alone
    is an error of 1e-3 of that block, which its scale — the block's own terms, floored at 10⁻³ of the
    matrix's largest term — makes visible at 1e-6, where the matrix's largest term would hide it."""
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    state = random_state(model, np.random.default_rng(7), scale=1e-3)
    lin = rl.linearize(model, state, np.random.default_rng(8).normal(size=model.n_joints),
                       contacts=list(BUNDLED_FEET), dt=0.002)
    assert rl.validate(model, lin).passed(TOLERANCE)
    N = model.n_velocities
    rows = cols = slice(N + 6, 2 * N)  # ṙ, r
    assert 0.0 < np.abs(lin.A[rows, cols]).max() < 1e-3 * np.abs(lin.A[N:]).max()
    A = lin.A.copy()
    A[rows, cols] *= 1.001
    report, failing = failing_blocks(model, dataclasses.replace(lin, A=A))
    assert failing == {"A[rdot,r]"}, report.summary()


def test_a_linearization_of_another_model_with_as_many_states_is_refused(standing):
    """The state labels are compared by name, not by count: the same robot with its joints renamed
    has the same 2N, and its linearization is not one of this model."""
    model, lin = standing
    with open(rl.robots.bundled_urdf_path()) as f:
        other = rl.load_urdf(f.read().replace('"front_left_knee"', '"front_left_elbow"'))
    assert len(other.state_labels) == len(model.state_labels) and other.state_labels != model.state_labels
    other_lin = rl.linearize(other, lin.state, lin.joint_torques)
    with pytest.raises(ValueError, match="not a linearization of model"):
        rl.validate(model, other_lin)
