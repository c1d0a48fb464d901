"""A, B and M⁻¹ against geometric finite differences, Pinocchio, and the
singularity of Euler angles."""

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.robots import bundled_urdf_path, thesis_test_system
from robot_linearization.spatial import se3_exp, se3_log, skew
from robot_linearization.validation import finite_difference_linearization, validate

from conftest import PinocchioOracle, example_robot_path, load_example, random_state, random_tree

FD_TOLERANCE = 1e-6
PINOCCHIO_TOLERANCE = 1e-9


def _assert_matches_finite_differences(model, rng, n_states=3, **state_options):
    for _ in range(n_states):
        state = random_state(model, rng, **state_options)
        torques = rng.normal(size=model.n_joints)
        lin = rl.linearize(model, state, torques)
        report = validate(model, state, lin, torques)
        assert report.passed(FD_TOLERANCE), f"{model.name}\n{report.summary()}"


def test_thesis_test_system_matches_finite_differences(rng):
    _assert_matches_finite_differences(thesis_test_system(), rng, n_states=5)


@pytest.mark.parametrize("name", ["solo12", "talos", "ur5", "panda"])
def test_example_robots_match_finite_differences(rng, name):
    _assert_matches_finite_differences(load_example(name), rng, n_states=2)


def test_bundled_robot_and_random_trees_match_finite_differences(rng):
    _assert_matches_finite_differences(rl.load_urdf(bundled_urdf_path()), rng)
    _assert_matches_finite_differences(random_tree(rng, 10), rng)
    _assert_matches_finite_differences(random_tree(rng, 7, floating_base=False), rng)


@pytest.mark.parametrize("name", ["solo12", "talos", "talos_full", "ur5", "panda"])
def test_matches_pinocchio_aba_derivatives(rng, name):
    model = load_example(name)
    oracle = PinocchioOracle(example_robot_path(name), model)
    for _ in range(3):
        state = random_state(model, rng, scale=2.0)
        torques = 10 * rng.normal(size=model.n_joints)
        lin = rl.linearize(model, state, torques)
        A_pin, B_pin, M_inv_pin, _ = oracle.linearization(state, torques)
        report = rl.validation.compare(model, lin.A, lin.B, lin.M_inv, A_pin, B_pin, M_inv_pin)
        assert report.passed(PINOCCHIO_TOLERANCE), report.summary()


def test_validation_report_catches_a_sign_error(rng):
    """The check is not vacuous: flipping one block's sign makes it fail."""
    model = load_example("solo12")
    state = random_state(model, rng)
    lin = rl.linearize(model, state)
    A_fd, B_fd = finite_difference_linearization(model, state)
    N, n = model.n_velocities, model.n_joints
    for rows, cols in [(slice(N, N + 6), slice(3, 6)), (slice(N + 6, 2 * N), slice(6, 6 + n)),
                       (slice(N + 6, 2 * N), slice(N, N + 6))]:
        A_bad = lin.A.copy()
        A_bad[rows, cols] *= -1
        report = rl.validation.compare(model, A_bad, lin.B, lin.M_inv, A_fd, B_fd, lin.M_inv)
        assert not report.passed(1e-3)


def test_base_pose_block_is_gravity_rotated_into_the_base_frame(rng):
    """Derived by hand: with the body twist as state, FD_j is independent of H and
    v̇ gains [R^T g; 0], whose left-trivialised derivative w.r.t. the rotation is
    (R^T g)^; translations of the base change nothing."""
    model = thesis_test_system()
    state = random_state(model, rng)
    lin = rl.linearize(model, state, rng.normal(size=model.n_joints))
    N = model.n_velocities
    expected = np.zeros((N, 6))
    expected[:3, 3:] = skew(state.base_pose[:3, :3].T @ model.gravity)
    np.testing.assert_allclose(lin.A[N:, :6], expected, atol=1e-9 * np.abs(lin.A[N:]).max())


def test_kinematic_rows_are_the_left_trivialised_base_kinematics(rng):
    model = load_example("solo12")
    state = random_state(model, rng)
    lin = rl.linearize(model, state)
    N = model.n_velocities
    v = state.base_twist
    np.testing.assert_allclose(lin.A[:3, :3], -skew(v[3:]))
    np.testing.assert_allclose(lin.A[:3, 3:6], -skew(v[:3]))
    np.testing.assert_array_equal(lin.A[:N, N:], np.eye(N))
    assert lin.state_labels[0] == "H:x" and lin.state_labels[N] == "v:x" and len(lin.state_labels) == 2 * N


def _zyx_pose(p, yaw, pitch, roll):
    def rot(axis, angle):
        return se3_exp(np.concatenate([np.zeros(3), angle * np.eye(3)[axis]]))[:3, :3]
    H = np.eye(4)
    H[:3, :3] = rot(2, yaw) @ rot(1, pitch) @ rot(0, roll)
    H[:3, 3] = p
    return H


@pytest.mark.parametrize("pitch", [np.pi / 2, -np.pi / 2])
def test_singularity_free_at_euler_gimbal_lock(rng, pitch):
    """At pitch ±90° the ZYX-Euler parametrisation of the base loses a direction:
    its Jacobian to the tangent space is singular, so an Euler-angle A cannot
    even be formed there.  Ours stays finite and matches finite differences."""
    model = rl.load_urdf(bundled_urdf_path())
    p, yaw, roll = rng.normal(size=3), 0.3, -0.7
    H0 = _zyx_pose(p, yaw, pitch, roll)

    # Jacobian of (x, y, z, yaw, pitch, roll) -> z_H = log(H0⁻¹ H(θ)), numerically.
    theta0, h = np.array([*p, yaw, pitch, roll]), 1e-6
    J = np.empty((6, 6))
    for j in range(6):
        d = np.zeros(6)
        d[j] = h
        plus, minus = theta0 + d, theta0 - d
        J[:, j] = (se3_log(np.linalg.inv(H0) @ _zyx_pose(plus[:3], *plus[3:]))
                   - se3_log(np.linalg.inv(H0) @ _zyx_pose(minus[:3], *minus[3:]))) / (2 * h)
    singular_values = np.linalg.svd(J, compute_uv=False)
    assert singular_values[-1] < 1e-6 * singular_values[0]  # Euler angles: rank deficient

    state = rl.State(base_pose=H0, joint_positions=rng.normal(size=model.n_joints),
                     base_twist=rng.normal(size=6), joint_velocities=rng.normal(size=model.n_joints))
    lin = rl.linearize(model, state)
    assert np.all(np.isfinite(lin.A)) and np.all(np.isfinite(lin.B))
    report = validate(model, state, lin)
    assert report.passed(FD_TOLERANCE), report.summary()


@pytest.mark.parametrize("bad, message", [
    (dict(joint_positions=np.full(12, np.nan)), "NaN"),
    (dict(joint_positions=np.zeros(11)), "shape"),
    (dict(base_twist=np.zeros(5)), "base_twist"),
    (dict(base_pose=np.diag([2.0, 1, 1, 1])), "not a homogeneous transform"),
    (dict(base_pose=None), "floating base"),
])
def test_bad_state_is_rejected_with_a_clear_error(bad, message):
    model = rl.load_urdf(bundled_urdf_path())
    fields = dict(base_pose=np.eye(4), joint_positions=np.zeros(12), base_twist=np.zeros(6),
                  joint_velocities=np.zeros(12))
    fields.update(bad)
    with pytest.raises(ValueError, match=message):
        rl.linearize(model, rl.State(**fields))


def test_bad_torques_are_rejected():
    model = rl.load_urdf(bundled_urdf_path())
    state = rl.State(base_pose=np.eye(4), joint_positions=np.zeros(12), base_twist=np.zeros(6),
                     joint_velocities=np.zeros(12))
    with pytest.raises(ValueError, match="joint_torques"):
        rl.linearize(model, state, np.full(12, np.inf))
    with pytest.raises(ValueError, match="joint_torques"):
        rl.linearize(model, state, np.zeros(3))


def test_fixed_base_state_refuses_a_base_pose():
    model = load_example("ur5")
    with pytest.raises(ValueError, match="fixed base"):
        rl.linearize(model, rl.State(base_pose=np.eye(4), joint_positions=np.zeros(6), joint_velocities=np.zeros(6)))


@pytest.mark.parametrize("urdf", ["hector_description/robots/quadrotor_base.urdf",
                                  "iris_description/robots/iris_simple.urdf"])
def test_robots_without_joints_linearize_and_validate(urdf, rng, capsys, tmp_path):
    """A quadrotor is a single floating body: B is 12×0, and validate and the demo say PASS."""
    import os

    from conftest import ROBOTS_DIR
    from robot_linearization.cli import main

    path = os.path.join(ROBOTS_DIR, urdf)
    model = rl.load_urdf(path)
    state = rl.State(base_pose=se3_exp(rng.normal(size=6)), base_twist=rng.normal(size=6))
    lin = rl.linearize(model, state)
    assert lin.A.shape == (12, 12) and lin.B.shape == (12, 0)
    report = rl.validate(model, state, lin)
    assert report.passed(1e-6)
    assert {b.name for b in report.blocks} == {"A[vdot,H]", "A[vdot,v]", "A[Hdot,H]", "A[Hdot,v]", "M_inv"}
    assert main(["demo", "--urdf", path, "--duration", "0.05", "--samples", "1", "--repeat", "2",
                 "--output-dir", str(tmp_path / "demo")]) == 0
    assert "PASS" in capsys.readouterr().out


def test_a_welded_body_without_joints_has_empty_matrices():
    """N = 0 (a fixed base, no joints): A, B and M⁻¹ are empty, as the state is."""
    model = rl.ModelBuilder("base", np.eye(6), floating_base=False).build()
    lin = rl.linearize(model, rl.State(joint_positions=[], joint_velocities=[]))
    assert lin.A.shape == (0, 0) and lin.B.shape == (0, 0) and lin.M_inv.shape == (0, 0)


def test_validate_uses_the_state_and_torques_the_linearization_remembers(rng):
    """validate(model, lin) needs neither: it checks at the τ used (not τ = 0), and a
    different state, τ or model is refused instead of compared."""
    model = load_example("solo12")
    state, tau = random_state(model, rng), rng.normal(scale=10.0, size=12)
    lin = rl.linearize(model, state, tau)
    assert lin.state is state and np.array_equal(lin.joint_torques, tau)
    report = rl.validate(model, lin)
    assert report.passed(1e-6) and report.summary().startswith("PASS: largest relative error")
    assert rl.validate(model, state, lin).max_rel == report.max_rel  # the older form, same τ remembered
    with pytest.raises(ValueError, match="joint_torques given are not the ones"):
        rl.validate(model, state, lin, np.zeros(12))
    with pytest.raises(ValueError, match="state given is not the one"):
        rl.validate(model, random_state(model, rng), lin)
    talos = load_example("talos")
    with pytest.raises(ValueError, match="not a linearization of model 'talos'"):
        rl.validate(talos, lin)
    import dataclasses

    wrong = dataclasses.replace(lin, A=lin.A * 1.01)
    assert rl.validate(model, wrong).summary().startswith("FAIL")


def test_every_result_is_a_whole_linearization(rng):
    """The results are built by dict assignments (linearization.linearization_of), not by the dataclass's
    __init__: each kind (floating and fixed base, with a step, with contacts, a horizon) has every
    field, dataclasses.replace (which calls __init__ with all of them) rebuilds an equal one, and
    the fields a case does not have are their defaults."""
    import dataclasses

    for floating in (True, False):
        model = rl.load_urdf(bundled_urdf_path(), floating_base=floating)
        state = random_state(model, rng)
        feet = ["front_left_foot", "hind_right_foot"]
        for lin in (rl.linearize(model, state), rl.linearize(model, state, dt=1e-3),
                    rl.linearize(model, state, contacts=feet, dt=1e-3),
                    rl.linearize_trajectory(model, [state, state], dt=1e-3)):
            values = {f.name: getattr(lin, f.name) for f in dataclasses.fields(lin)}
            assert set(vars(lin)) == set(values)
            assert (lin.base_acceleration is None) == (not floating)
            assert (lin.A_d is None) == (lin.dt is None) and lin.impact is None
            assert (lin.contact_forces is None) == (lin.contacts == ())
            copy = dataclasses.replace(lin)
            for name, value in values.items():
                assert np.array_equal(getattr(copy, name), value) if isinstance(value, np.ndarray) \
                    else getattr(copy, name) == value or getattr(copy, name) is value, name


def test_printing_a_model_or_a_linearization_is_a_one_line_summary(rng):
    model = load_example("solo12")
    text = repr(model)
    assert text.startswith("<Model 'solo': floating base 'base_link', 12 joints (FL_HAA, ") and "\n" not in text
    assert "N = 18 velocities" in text and len(text) < 300
    lin = rl.linearize(model, random_state(model, rng), contacts=["FL_FOOT", "HR_FOOT"])
    assert repr(lin) == ("<Linearization: A (36, 36), B (36, 12), M_inv (18, 18) (state [z_H, z_s, z_v, z_r] of 36), "
                         "2 contacts>")
    horizon = rl.linearize_trajectory(model, [random_state(model, rng) for _ in range(3)])
    assert repr(horizon).startswith("<Linearization: 3 states, A (36, 36)") and str(horizon) == repr(horizon)


def test_a_model_singular_only_at_q0_loads_with_a_warning_and_that_state_gets_an_error(rng, caplog):
    """iCub: a massless link (neck_2) between neck_pitch and neck_roll, whose axes align
    at q = 0 — singular there, regular elsewhere."""
    import os

    from conftest import ROBOTS_DIR

    path = os.path.join(ROBOTS_DIR, "icub_description/robots/icub.urdf")
    with caplog.at_level("WARNING", logger="robot_linearization.builder"):
        model = rl.load_urdf(path)
    (record,) = [r for r in caplog.records if r.name == "robot_linearization.builder"]
    assert "at q = 0: joint 'neck_roll'" in record.getMessage()
    n = model.n_joints
    at_zero = rl.State(base_pose=np.eye(4), joint_positions=np.zeros(n), base_twist=np.zeros(6),
                       joint_velocities=np.zeros(n))
    with pytest.raises(ValueError, match="mass matrix is singular at this state: joint 'neck_roll'"):
        rl.linearize(model, at_zero)
    elsewhere = random_state(model, rng)
    with pytest.raises(ValueError, match=r"singular at this state \(state 1\): joint 'neck_roll'"):
        rl.linearize_trajectory(model, [elsewhere, at_zero])
    assert rl.validate(model, rl.linearize(model, elsewhere)).passed(1e-6)


def test_the_first_compile_is_announced_once_and_a_cached_start_is_quiet(tmp_path):
    """A fresh installation compiles for ≈ 30 s: the user is told once, on stderr."""
    import subprocess
    import sys

    code = ("import numpy as np, robot_linearization as rl\n"
            "m = rl.load_urdf(rl.robots.bundled_urdf_path())\n"
            "s = rl.State(base_pose=np.eye(4), joint_positions=np.full(12, 0.1), base_twist=np.zeros(6),"
            " joint_velocities=np.zeros(12))\n"
            "rl.linearize(m, s); rl.linearize(m, s); rl.linearize_trajectory(m, [s, s])\n")
    env = dict(__import__("os").environ, NUMBA_CACHE_DIR=str(tmp_path))
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert cold.returncode == 0, cold.stderr
    assert cold.stderr.count("compiling the numba kernels") == 1 and "once per installation" in cold.stderr
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert warm.returncode == 0 and "compiling" not in warm.stderr


def test_state_from_named_joints_and_a_ros_order_quaternion(rng):
    """Joints by name (any order), orientation (x, y, z, w) as ROS sends it; checked
    against scipy's rotation, which also stores quaternions scalar-last."""
    from scipy.spatial.transform import Rotation

    model = rl.load_urdf(bundled_urdf_path())
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    positions = {name: float(v) for name, v in zip(reversed(model.joint_names), rng.normal(size=12))}
    state = rl.State.from_named(model, joint_positions=positions, joint_velocities={"hind_left_knee": 2.0},
                                base_position=(1.0, 2.0, 3.0), base_orientation=tuple(q), base_twist=np.arange(6.0))
    np.testing.assert_allclose(state.base_pose[:3, :3], Rotation.from_quat(q).as_matrix(), atol=1e-12)
    np.testing.assert_array_equal(state.base_pose[:3, 3], [1.0, 2.0, 3.0])
    assert state.joint_positions[model.joint_index("front_right_knee")] == positions["front_right_knee"]
    assert state.joint_velocities[model.joint_index("hind_left_knee")] == 2.0 and state.joint_velocities.sum() == 2.0
    with pytest.raises(ValueError, match=r"joint_positions lacks joints \['front_left_hip_abduction'\]"):
        rl.State.from_named(model, joint_positions={k: v for k, v in positions.items()
                                                    if k != "front_left_hip_abduction"})
    with pytest.raises(ValueError, match=r"joint_velocities: model 'rl_quadruped' has no joints \['elbow'\]"):
        rl.State.from_named(model, joint_positions=positions, joint_velocities={"elbow": 1.0})
    with pytest.raises(ValueError, match="base_orientation: expected a unit quaternion"):
        rl.State.from_named(model, joint_positions=positions, base_orientation=(0, 0, 0, 0))
    arm = load_example("ur5")
    fixed = rl.State.from_named(arm, joint_positions={j: 0.1 for j in arm.joint_names})
    assert fixed.base_pose is None and fixed.joint_positions.shape == (6,)


def _wheeled_urdf() -> str:
    """A fixed chassis with two steering hinges on tilted axes, front wheels on them and rear wheels
    on the chassis: four axisymmetric wheels (inertia symmetric about their axle, the centre of mass
    on it) on continuous joints about their link's z axis, the links turned onto the axle as URDF
    wheels usually are.  Turning a wheel moves no mass: every column of A in a wheel's position is
    zero by symmetry, and rounding is all there is in it."""
    def inertial(mass, ixx, iyy, izz, xyz):
        return (f'<inertial><origin xyz="{xyz}"/><mass value="{mass}"/><inertia ixx="{ixx}" iyy="{iyy}" '
                f'izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial>')
    links = {"chassis": inertial(20.0, 0.5, 0.8, 1.1, "0.05 0 0.1"),
             "steer_left": inertial(0.8, 0.004, 0.005, 0.003, "0.01 0.02 -0.03"),
             "steer_right": inertial(0.8, 0.004, 0.005, 0.003, "0.01 -0.02 -0.03")}
    links.update({f"{w}_wheel": inertial(1.5, 0.02, 0.02, 0.035, "0 0 0")
                  for w in ("front_left", "front_right", "rear_left", "rear_right")})
    joints = [("steer_left", "revolute", "chassis", "0.4 0.3 0", "0.1 0.05 0", "0.08 -0.12 1"),
              ("steer_right", "revolute", "chassis", "0.4 -0.3 0", "-0.1 0.05 0", "-0.1 0.15 1"),
              ("front_left_wheel", "continuous", "steer_left", "0 0.05 -0.1", "-1.5708 0 0", "0 0 1"),
              ("front_right_wheel", "continuous", "steer_right", "0 -0.05 -0.1", "1.5708 0 0", "0 0 -1"),
              ("rear_left_wheel", "continuous", "chassis", "-0.4 0.35 -0.1", "-1.5708 0 0", "0 0 1"),
              ("rear_right_wheel", "continuous", "chassis", "-0.4 -0.35 -0.1", "-1.5708 0 0", "0 0 1")]
    text = ['<robot name="wheeled">'] + [f'<link name="{n}">{i}</link>' for n, i in links.items()]
    for child, kind, parent, xyz, rpy, axis in joints:
        limit = '<limit lower="-1" upper="1" effort="50" velocity="5"/>' if kind == "revolute" else ""
        text.append(f'<joint name="{child}_joint" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
                    f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{limit}</joint>')
    return "\n".join(text + ["</robot>"])


@pytest.mark.parametrize("speed", [0.0, 1.0, 30.0])
def test_a_wheeled_robots_zero_columns_are_at_pinocchios_rounding(speed, rng, tmp_path):
    """The dynamics rows of A against Pinocchio's ABA derivatives relative to the natural size of
    their terms, |M⁻¹|·|∂τ| (from Pinocchio's own M and derivatives, and |M|·|ν|² for the velocity
    products), at ≤ 1e-12; B likewise against |M⁻¹|; and the wheels' position
    columns, zero by symmetry, within twice Pinocchio's own rounding of them plus 1e-13 of the terms
    (measured: 2e-13 against Pinocchio's 3e-14 at rest with terms ≈ 4, 7e-12 against 2e-12 at
    30 rad/s with terms ≈ 1e4)."""
    path = tmp_path / "wheeled.urdf"
    path.write_text(_wheeled_urdf())
    model = rl.load_urdf(str(path), floating_base=False)
    oracle = PinocchioOracle(str(path), model)
    n = model.n_joints
    wheels = [i for i, name in enumerate(model.joint_names) if "wheel" in name]
    assert len(wheels) == 4
    for _ in range(5):
        state = rl.State(joint_positions=rng.uniform(-3, 3, n), joint_velocities=speed * rng.normal(size=n))
        torques = rng.normal(size=n)
        lin = rl.linearize(model, state, torques)
        A, B, M_inv, _ = oracle.linearization(state, torques)
        M = np.linalg.inv(M_inv)
        # the terms: M⁻¹ times M∂ν̇, and the velocity products' derivatives (|M|·|ν|²), which cancel in
        # the wheels' columns and, by structure here, in all of ∂ν̇/∂r (no gyroscopic torque on a steering axis)
        natural = max((np.abs(M_inv) @ np.abs(M @ A[n:])).max(),
                      np.abs(M_inv).max() * np.abs(M).max() * np.abs(state.joint_velocities).max() ** 2)
        for columns in (slice(0, n), slice(n, 2 * n)):
            error = np.abs(lin.A[n:, columns] - A[n:, columns]).max()
            assert error <= 1e-12 * natural, (speed, columns, error, natural)
        assert np.abs(lin.B[n:] - B[n:]).max() <= 1e-12 * np.abs(M_inv).max()
        ours, theirs = np.abs(lin.A[n:, wheels]).max(), np.abs(A[n:, wheels]).max()
        assert ours <= 2.0 * theirs + 1e-13 * natural, (speed, ours, theirs, natural)
