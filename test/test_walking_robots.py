"""The whole-body MPC (walking/mpc.py) walks robots other than the bundled one with its default
settings (walking/scale.py gives them the robot's units): solo12 (2.5 kg) and ANYmal C (52 kg),
from example-robot-data, trot forward at 0.3 m/s, reject a lateral push of 0.3 m/s and turn in
place at 0.5 rad/s; their held feet stay within 0.5 mm of where they are held (the ground's
projection, walking/ground.py) and every force they receive lies in its cone.  Talos, on its two
soles (6d contacts, its walk and settings from walking/robots.py), stands and takes a push, and
steps, walks forward at 0.1 m/s and turns at 0.25 rad/s: on time, its soles landing flat (the
projection turns none by 1 mrad), every wrench it receives pushing, in its cone, its centre of
pressure inside the sole.  A gait or a setting that does not fit is refused in one line."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import robot_linearization

from robot_linearization.algorithms.kinematics import frame_poses
from robot_linearization.gait import Gait, Phase
from robot_linearization.walking import pendulum
from robot_linearization.walking.ground import GroundSimulation, standing_state
from robot_linearization.validation import perturb
from robot_linearization.walking.horizon_states import stacked
from robot_linearization.walking.mpc import MPCSettings, WholeBodyMPC
from robot_linearization.walking.robots import walker
from robot_linearization.walking.scale import RobotScale
from robot_linearization.walking.scenario import Push, Segment, walk

SCENARIO = (Segment(0.0, (0.3, 0.0, 0.0)), Segment(2.5, (0.0, 0.0, 0.5)))
"""Forward at 0.3 m/s (ramped over 1 s), then a turn in place at 0.5 rad/s from 2.5 s (ramped over 1 s)."""
PUSH = (Push(1.5, (0.0, 0.3, 0.0)),)
FRICTION = 0.7
DRIFT = 0.5e-3  # m


@pytest.fixture(scope="module", autouse=True)
def errors_only_logged():
    """The package's log at ERROR while this module's tests run (ANYmal's and Talos's URDFs: a few odd
    inertias), and as it was after them: the level belongs to the process, where other modules' tests run next."""
    logger = logging.getLogger("robot_linearization")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@pytest.fixture(scope="module", params=["solo12", "anymal"])
def walked(request):
    """4.5 s of the scenario, pushed sideways at 1.5 s: the robot and its log."""
    robot = walker(request.param)
    log = walk(robot.model, robot.feet, Gait.trot(robot.feet, robot.posture), robot.effort_limits, 4.5, SCENARIO,
               PUSH, friction=FRICTION)
    return robot, log


def test_it_trots_forward_rejects_the_push_and_turns(walked):
    robot, log = walked
    assert log.error is None, log.error
    time, velocity, yaw_rate = np.array(log.time), np.array(log.velocity), np.array(log.yaw_rate)
    cruising = (time > 1.0) & (time < 1.5)
    assert abs(velocity[cruising, 0].mean() - 0.3) < 0.05, velocity[cruising, 0].mean()
    pushed = (time >= 1.5) & (time < 1.55)
    assert velocity[pushed, 1].max() > 0.25  # the push arrived
    back = (time > 2.3) & (time < 2.5)  # within 0.8 s
    assert np.abs(velocity[back, 1]).max() < 0.1, np.abs(velocity[back, 1]).max()
    turning = time > 3.7
    assert abs(yaw_rate[turning].mean() - 0.5) < 0.05, yaw_rate[turning].mean()
    assert any(len(held) == 2 for held in log.held) and any(len(held) == 4 for held in log.held)  # it trots


def test_its_held_feet_stay_on_the_ground(walked):
    """After every step, each held foot is within 0.5 mm of where it is held, on the ground; the
    projection corrected the step's drift, which a touchdown within the ground's 1 mm tolerance
    makes up to 1 mm."""
    robot, log = walked
    assert max(log.drift) < DRIFT, max(log.drift)
    assert not [v for v in log.violations if v.what == "off the ground"]
    heights = np.array(log.foot_heights)  # per cycle, the feet held over the previous one
    for k in range(1, len(log.time)):
        held = [robot.feet.index(foot) for foot in log.held[k - 1]]
        assert np.abs(heights[k, held]).max() < DRIFT, (log.time[k], heights[k, held])


def test_the_forces_it_receives_stay_in_their_cones(walked):
    _, log = walked
    assert log.forces
    for time, foot, force in log.forces:
        assert force[2] >= 0.0 and np.hypot(force[0], force[1]) <= FRICTION * force[2] * (1 + 1e-12) + 1e-12, \
            (time, foot, force)


@pytest.fixture(scope="module")
def solo():
    return walker("solo12")


def test_a_foot_that_is_not_a_frame_is_refused_in_one_line(solo):
    gait = Gait.trot(("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOT"), solo.posture)
    with pytest.raises(ValueError, match=r"^gait 'trot': foot 'HR_FOT' is not a frame of model 'solo' "
                                         r"\(did you mean 'HR_FOOT'") as error:
        WholeBodyMPC(solo.model, gait, gait.feet, solo.effort_limits)
    assert "\n" not in str(error.value)


def test_a_phase_without_support_is_refused_in_one_line(solo):
    gait = Gait(name="bound", phases=(Phase(0.1, solo.feet), Phase(0.2, ("FL_FOOT",))), posture=solo.posture)
    with pytest.raises(ValueError, match=r"^gait 'bound': phase 2 \(0\.2 s\) lifts every foot") as error:
        WholeBodyMPC(solo.model, gait, ("HL_FOOT", "HR_FOOT"), solo.effort_limits)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("arguments, message", [
    ((("FL_FOOT", "FR_FOOT", "HL_FOOT"),), r"^feet: a trot needs 4 feet \(front left, front right, hind left, "
                                           r"hind right\), got 3$"),
    ((("FL_FOOT", "FL_FOOT", "HL_FOOT", "HR_FOOT"),), r"^feet: .* names a foot twice$"),
    ((("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"), {"FL_KFE": "bent"}), r"^posture: joint 'FL_KFE': expected a "
                                                                         r"number"),
])
def test_a_gait_that_cannot_be_made_is_refused_in_one_line(arguments, message):
    with pytest.raises(ValueError, match=message) as error:
        Gait.trot(*arguments)
    assert "\n" not in str(error.value)


def test_a_support_that_leaves_no_swing_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^support: 0\.4 s on every foot leaves no time to swing") as error:
        Gait.trot(("a", "b", "c", "d"), support=0.4, period=0.7)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("field, value, message", [
    ("mass", 0.0, r"^mass: expected a positive number of kg, got float 0\.0$"),
    ("mass", -2.5, r"^mass: expected a positive number of kg, got float -2\.5$"),
    ("leg_length", float("nan"), r"^leg_length: expected a positive number of m"),
    ("inertia", (0.03, -0.05, 0.07), r"^inertia: expected three positive moments of inertia"),
])
def test_a_scale_that_is_not_positive_is_refused_in_one_line(field, value, message):
    arguments = dict(mass=2.5, leg_length=0.22, inertia=(0.03, 0.05, 0.07))
    arguments[field] = value
    with pytest.raises(ValueError, match=message) as error:
        RobotScale(**arguments)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("settings, message", [
    (MPCSettings(min_normal_load=-0.1), r"^min_normal_load: expected a non-negative number"),
    (MPCSettings(swing_lift=0.0), r"^swing_lift: expected a positive number"),
    (MPCSettings(knot_dt=-0.015), r"^knot_dt: expected a positive number of s"),
    (MPCSettings(weights={**MPCSettings().weights, "torque": -1.0}), r"^weights\['torque'\]: expected a "
                                                                     r"non-negative number"),
    (MPCSettings(weights={"torque": 1.0}), r"^weights: no 'base_xy': expected base_xy, "),
    (MPCSettings(sole_margin=-0.001), r"^sole_margin: expected a non-negative number"),
])
def test_settings_that_cannot_work_are_refused_in_one_line(solo, settings, message):
    gait = Gait.trot(solo.feet, solo.posture)
    with pytest.raises(ValueError, match=message) as error:
        WholeBodyMPC(solo.model, gait, solo.feet, solo.effort_limits, settings)
    assert "\n" not in str(error.value)


def test_effort_limits_a_urdf_does_not_give_are_asked_for_in_one_line(solo):
    limits = solo.effort_limits.copy()
    limits[4] = np.inf
    with pytest.raises(ValueError, match=r"^effort_limits: joint 'FR_HFE' has no finite limit") as error:
        WholeBodyMPC(solo.model, Gait.trot(solo.feet, solo.posture), solo.feet, limits)
    assert "\n" not in str(error.value)


def test_the_scale_is_the_robots():
    """solo12's mass and the height of its base above its feet, standing, as Pinocchio gives them."""
    pin = pytest.importorskip("pinocchio")
    example_robot_data = pytest.importorskip("example_robot_data")
    robot, reference = walker("solo12"), example_robot_data.load("solo12")
    gait = Gait.trot(robot.feet, robot.posture)
    scale = RobotScale.of(robot.model, gait.joint_posture(robot.model.joint_names), robot.feet)
    assert scale.mass == pytest.approx(pin.computeTotalMass(reference.model), rel=1e-12)
    state, height = standing_state(robot.model, gait, robot.feet)
    assert scale.leg_length == pytest.approx(height, rel=1e-12)
    data = reference.model.createData()
    q = reference.q0.copy()
    q[2] = 0.0
    pin.framesForwardKinematics(reference.model, data, q)
    feet_z = [data.oMf[reference.model.getFrameId(f)].translation[2] for f in robot.feet]
    assert scale.leg_length == pytest.approx(-np.mean(feet_z), abs=1e-9)
    pin.ccrba(reference.model, data, q, np.zeros(reference.model.nv))
    # the rotational inertia about the centre of mass, in the world axes (the base is level)
    inertia = data.Ig.inertia
    np.testing.assert_allclose(scale.inertia, np.diag(inertia), rtol=1e-9)


@pytest.mark.parametrize("gravity", [(0.0, 0.0, -3.721), (0.0, 0.0, -1.62), (1.0, -2.0, -9.0)])
def test_the_scale_takes_the_models_gravity(gravity):
    """A robot loaded with another gravity (Mars, the Moon, a slope's) is scaled for it: g is |gravity|,
    the weight m·|g|, the pendulum's time √(l/|g|), the rest as on Earth."""
    import robot_linearization as rl

    urdf = rl.robots.bundled_urdf_path()
    earth, there = rl.load_urdf(urdf), rl.load_urdf(urdf, gravity=gravity)
    posture = Gait.trot(rl.robots.BUNDLED_FEET).joint_posture(earth.joint_names)
    a, b = (RobotScale.of(model, posture, rl.robots.BUNDLED_FEET) for model in (earth, there))
    g = float(np.sqrt(np.sum(np.square(gravity))))
    assert a.gravity == pytest.approx(9.81, rel=1e-15) and b.gravity == pytest.approx(g, rel=1e-15)
    assert b.weight == pytest.approx(b.mass * g, rel=1e-15)
    assert b.time == pytest.approx(a.time * np.sqrt(9.81 / g), rel=1e-12)
    assert (a.mass, a.leg_length, a.inertia) == (b.mass, b.leg_length, b.inertia)


def test_a_stand_holds_every_foot_and_the_simulation_starts_on_them(solo):
    gait = Gait.stand(solo.feet, solo.posture)
    assert gait.phases == (Phase(1.0, solo.feet),)
    state, _ = standing_state(solo.model, gait, solo.feet)
    simulation = GroundSimulation(solo.model, gait, state, feet=solo.feet)
    assert simulation.held == solo.feet and set(simulation.anchors) == set(solo.feet)


def test_the_example_walks_the_robot_it_is_given_and_refuses_another_in_one_line(tmp_path):
    example = Path(__file__).resolve().parent.parent / "examples" / "mpc_trot.py"
    environment = {**os.environ, "PYTHONPATH": str(Path(robot_linearization.__file__).resolve().parent.parent)}
    figure = tmp_path / "solo12.png"
    done = subprocess.run([sys.executable, str(example), str(figure), "--robot", "solo12", "--seconds", "1.0"],
                          capture_output=True, text=True, timeout=600, env=environment)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "walked 1.00 s" in done.stdout and "held feet: at most" in done.stdout
    assert figure.stat().st_size > 10_000
    wrong = subprocess.run([sys.executable, str(example), "--robot", "atlas"], capture_output=True, text=True,
                           timeout=600, env=environment)
    assert wrong.returncode == 2 and "argument --robot: invalid choice: 'atlas'" in wrong.stderr
    assert wrong.stderr.strip().splitlines()[-1].count("error") == 1


@pytest.fixture(scope="module")
def talos_standing():
    """Talos on its two soles (6d contacts, their centres of pressure kept in 0.2 m × 0.1 m), standing
    2.5 s, pushed sideways by 0.2 m/s at 1 s."""
    robot = walker("talos")
    gait = Gait.stand(robot.feet, robot.posture, contact="6d")
    log = walk(robot.model, robot.feet, gait, robot.effort_limits, 2.5, (Segment(0.0, (0.0, 0.0, 0.0)),),
               (Push(1.0, (0.0, 0.2, 0.0)),), settings=MPCSettings(sole_size=robot.sole_size), friction=FRICTION)
    return robot, log


def test_talos_stands_on_its_soles_and_rejects_a_push(talos_standing):
    robot, log = talos_standing
    assert log.error is None, log.error
    time, velocity, heights = np.array(log.time), np.array(log.velocity), np.array(log.position)[:, 2]
    assert np.abs(heights - heights[0]).max() < 0.01
    assert velocity[(time >= 1.0) & (time < 1.05), 1].max() > 0.15  # the push arrived
    assert np.abs(velocity[time > 2.0, :2]).max() < 0.05
    assert max(log.drift) < DRIFT
    # the ground held each sole with a wrench it can give: pushing, in the cone, its centre of pressure on
    # the sole (to 0.1 mm: between knots the held torque moves it by that much)
    assert not [v for v in log.violations if v.what in ("pulls", "slides", "off the ground")]
    assert max([v.amount for v in log.violations if v.what == "tips"], default=0.0) < 1e-4
    for time_, sole, wrench in log.forces:
        assert wrench[2] > 0 and np.hypot(*wrench[:2]) <= FRICTION * wrench[2], (time_, sole, wrench)


def test_soles_without_their_size_are_refused_in_one_line():
    robot = walker("talos")
    with pytest.raises(ValueError, match=r"^sole_size: required for the 6d contacts") as error:
        WholeBodyMPC(robot.model, Gait.stand(robot.feet, robot.posture, contact="6d"), robot.feet,
                     robot.effort_limits)
    assert "\n" not in str(error.value)


def test_a_sole_margin_that_leaves_no_room_is_refused_in_one_line():
    robot = walker("talos")
    with pytest.raises(ValueError, match=r"^sole_margin: 0\.05 m leaves no room for the centre of pressure in a "
                                         r"sole of \(0\.2, 0\.1\) m$") as error:
        WholeBodyMPC(robot.model, robot.gait, robot.feet, robot.effort_limits,
                     MPCSettings(sole_size=robot.sole_size, sole_margin=0.05))
    assert "\n" not in str(error.value)


def test_a_swinging_soles_tilt_and_heading_rows_are_their_derivatives():
    """The MPC's rows of a swinging sole (its tilt, the horizontal components of R e_z, and its heading
    less the base reference's) and their Jacobian in z_q: the geometric finite differences of the
    residuals along z_q (validation.perturb), at a tilted state, while the left sole swings."""
    robot = walker("talos")
    gait = Gait.walk(robot.feet, robot.posture, contact="6d", period=1.6, support=0.3)
    mpc = WholeBodyMPC(robot.model, gait, robot.feet, robot.effort_limits, MPCSettings(sole_size=robot.sole_size))
    standing, _ = standing_state(robot.model, gait, robot.feet)
    N = robot.model.n_velocities
    rng = np.random.default_rng(3)
    state = perturb(robot.model, standing, np.r_[0.1 * rng.normal(size=N), np.zeros(N)])
    time = 0.5  # (the right sole stands from 0.3 s to 0.8 s: the left one swings)
    ref = mpc.references(time, state)
    k = 1
    assert [i for i, _, _ in ref.feet[k]] == [0]

    def rows(s):
        knots, residuals, J = mpc._sole_rows(ref, mpc._foot_kinematics(stacked([s] * (mpc.settings.knots + 1)))[1])
        return residuals[knots == k], J[knots == k]

    residuals, J = rows(state)
    assert residuals.shape == (3,) and J.shape == (3, N) and np.abs(residuals).max() > 1e-3
    epsilon = 1e-6
    for column in range(0, N, 3):
        z = np.zeros(2 * N)
        z[column] = epsilon
        ahead, behind = rows(perturb(robot.model, state, z))[0], rows(perturb(robot.model, state, -z))[0]
        derivative = (ahead - behind) / (2 * epsilon)
        np.testing.assert_allclose(J[:, column], derivative, atol=1e-7)


def test_the_knots_sole_margins_read_the_horizons_kinematics_as_their_own():
    """The margins of each knot's soles, their frames taken from the horizon's kinematics in one call (the
    cycle's), equal those the evaluator computes at that knot's state, knot by knot (each knot at a state
    of its own, while the left sole swings and after it lands), to 1e-12 of their size."""
    robot = walker("talos")
    mpc = WholeBodyMPC(robot.model, robot.gait, robot.feet, robot.effort_limits, robot.settings)
    standing, _ = standing_state(robot.model, robot.gait, robot.feet)
    N, n, K = robot.model.n_velocities, robot.model.n_joints, mpc.settings.knots
    rng = np.random.default_rng(5)
    x = stacked([perturb(robot.model, standing, np.r_[0.02 * rng.normal(size=N), 0.1 * rng.normal(size=N)])
                  for _ in range(K + 1)])
    time = robot.gait.phases[0].duration - 0.1  # (knots on both sides of a change of stance)
    knots = mpc._knot_contacts(time, robot.feet, robot.feet)[:K]
    assert len({contacts for contacts, _ in knots}) > 1
    torques = 10.0 * rng.normal(size=(K, n))
    given = mpc._steps(tuple(a[:K] for a in x), torques, knots, mpc._foot_kinematics(x)[1])[2]
    computed = mpc._steps(tuple(a[:K] for a in x), torques, knots)[2]
    _assert_same_margin_rows(given, computed)


def _assert_same_margin_rows(given, computed):
    """Two of WholeBodyMPC._steps' margin rows equal: the same knots and labels, the margins, their Jacobians
    and lower bounds to 1e-12 of their size."""
    assert given[4] == computed[4]
    np.testing.assert_array_equal(given[0], computed[0])
    for name, got, value in zip(("F", "T", "bounds", "margins"), given[1:4] + given[5:], computed[1:4] + computed[5:]):
        np.testing.assert_allclose(got, value, rtol=0, atol=1e-12 * np.abs(value).max(), err_msg=name)


def test_the_soles_margins_in_the_knots_compiled_call_are_those_of_each_knots_own_kinematics():
    """On both soles with the generated kernel, the knots' compiled call (walking/knots.py) reads each sole's
    frame from the horizon's kinematics: its margin rows, and the steps, are those of the generic kernels knot
    by knot, each knot computing its soles' frames at its own state (random states, both soles held)."""
    robot = walker("talos")
    mpc = WholeBodyMPC(robot.model, robot.gait, robot.feet, robot.effort_limits, robot.settings)
    standing, _ = standing_state(robot.model, robot.gait, robot.feet)
    N, n, K = robot.model.n_velocities, robot.model.n_joints, 6
    rng = np.random.default_rng(3)
    x = stacked([perturb(robot.model, standing, np.r_[0.02 * rng.normal(size=N), 0.1 * rng.normal(size=N)])
                  for _ in range(K + 1)])
    torques, both = 10.0 * rng.normal(size=(K, n)), tuple(robot.feet)
    knots = ((both, both),) * K
    computed = mpc._steps(tuple(a[:K] for a in x), torques, knots)
    held = mpc._held(both)
    held.linearizer = robot_linearization.Linearizer(robot.model, contacts=list(held.contacts),
                                                     dt=mpc.settings.knot_dt, kernel="generated")
    assert held.linearizer.kernel == "generated"
    mpc._linearize = None  # (never knot by knot)
    given = mpc._steps(tuple(a[:K] for a in x), torques, knots, mpc._foot_kinematics(x)[1])
    _assert_same_margin_rows(given[2], computed[2])
    for got, value in zip(given[:2] + given[3], computed[:2] + computed[3]):
        np.testing.assert_allclose(got, value, rtol=0, atol=1e-12 * np.abs(value).max())


@pytest.mark.parametrize("time", [0.1234, 0.4567, 0.9512, 1.2061])
def test_the_base_sways_over_the_centre_of_pressure_planned_phase_by_phase(time):
    """On soles the base's reference (MPC.references) is the pendulum's sway over the centre of pressure
    planned at each time, worked out here time by time from the gait's phases (Gait.phase_at): in the middle of
    the one sole that stands, moved across a double support from the sole it leaves to the one that stands next;
    a sole held now where it is measured until it has swung, else at its standing offset beside the others.
    At times in each phase of Talos's walk, from a state moved sideways off its soles' middle, its legs moved."""
    robot = walker("talos")
    mpc = WholeBodyMPC(robot.model, robot.gait, robot.feet, robot.effort_limits, robot.settings)
    standing, _ = standing_state(robot.model, robot.gait, robot.feet)
    N, n = robot.model.n_velocities, robot.model.n_joints
    # (sideways and turned, its legs moved: its soles apart from where they stand)
    joints = 0.1 * np.random.default_rng(5).normal(size=n)
    state = perturb(robot.model, standing, np.r_[0.0, 0.03, 0.0, 0.0, 0.0, 0.2, joints, np.zeros(N)])
    gait, h, K = robot.gait, mpc.settings.knot_dt, mpc.settings.knots
    held = set(gait.phase_at(time + 1e-9)[0].stance)
    ref = mpc.references(time, state)
    side = ref.base_poses[0, :2, 1]
    measured = {foot: float(p[:2, 3] @ side) for foot, p in
                zip(robot.feet, frame_poses(robot.model, state, list(robot.feet)))}
    offset = {foot: float(o[1]) for foot, o in zip(robot.feet, mpc.foot_offsets)}
    middle = np.mean([measured[f] - offset[f] for f in held])
    times = time + np.r_[np.arange(K + 1) * h, K * h + 4 * h * np.arange(1, int(gait.period / (4 * h)) + 1)]
    pressure, standing_still = [], set(held)
    for t in times:
        phase, fraction = gait.phase_at(t + 1e-9)
        standing_still &= set(phase.stance)  # (a sole that has swung since stands beside the others)

        def middle_of(stance, t=t):
            return np.mean([measured[f] if f in standing_still else middle + offset[f] for f in stance])

        if len(phase.stance) == 1:
            pressure.append(middle_of(phase.stance))
        else:
            start = t + 1e-9 - fraction * phase.duration
            leaving = middle_of(gait.phase_at(start - 1e-6)[0].stance)
            coming = middle_of(gait.phase_at(start + phase.duration + 1e-6)[0].stance)
            pressure.append(leaving + fraction * (coming - leaving))
    x, velocity = pendulum.sway(float(ref.base_poses[0, :2, 3] @ side), np.array(pressure),
                                np.diff(times, append=times[-1] + 4 * h),
                                pendulum.frequency(mpc.base_height, mpc.scale.gravity))
    np.testing.assert_allclose(ref.base_poses[:, :2, 3] @ side, x[:K + 1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ref.twists[:, 1], velocity[:K + 1], rtol=0, atol=1e-10)
    assert np.ptp(x[:K + 1]) > 1e-3  # (it sways)


TALOS_WALK = (Segment(0.0, (0.0, 0.0, 0.0)), Segment(0.8, (0.1, 0.0, 0.0), 0.8),
              Segment(2.4, (0.1, 0.0, 0.25), 0.4))
"""Talos: a step in place, then forward at 0.1 m/s (ramped from 0.8 s to 1.6 s), turning at 0.25 rad/s as
it walks from 2.4 s (ramped over 0.4 s)."""


@pytest.fixture(scope="module")
def talos_walking():
    """Talos walking 4 s on its soles (walking/robots.py: its walk and sole_settings) through TALOS_WALK."""
    robot = walker("talos")
    log = walk(robot.model, robot.feet, robot.gait, robot.effort_limits, 4.0, TALOS_WALK, (),
               settings=robot.settings, friction=FRICTION)
    return robot, log


def test_talos_steps_walks_forward_and_turns(talos_walking):
    """Within 0.05 m/s and 0.05 rad/s of the command over a whole step (0.8 s) once each is reached; its
    soles take turns: a touchdown every 0.8 s, each within 10 ms of the schedule."""
    robot, log = talos_walking
    assert log.error is None, log.error
    time, velocity, heading = np.array(log.time), np.array(log.velocity), np.array(log.yaw)
    forward = velocity[:, 0] * np.cos(heading) + velocity[:, 1] * np.sin(heading)
    walking = (time >= 1.6) & (time < 2.4)
    assert abs(forward[walking].mean() - 0.1) < 0.05, forward[walking].mean()
    turning = (time >= 3.2) & (time < 4.0)
    assert abs(np.mean(np.array(log.yaw_rate)[turning]) - 0.25) < 0.05, np.mean(np.array(log.yaw_rate)[turning])
    assert abs(forward[turning].mean() - 0.1) < 0.05, forward[turning].mean()
    assert np.abs(np.array(log.position)[:, 2] - log.position[0][2]).max() < 0.03  # it does not sink
    landed = [(t, feet) for t, feet in log.touchdowns if t > 0.0]
    assert [feet for _, feet in landed] == [(robot.feet[0],), (robot.feet[1],), (robot.feet[0],), (robot.feet[1],)]
    assert all(abs(t - 0.8 * (i + 1)) < 0.01 for i, (t, _) in enumerate(landed)), landed


def test_talos_soles_land_flat_and_stay_where_they_landed(talos_walking):
    """After every step each held sole is within 0.5 mm and 0.5 mrad of where it is held; the
    projection laid each landing sole flat by turning it less than 4 mrad (the landing is
    physical: its soles arrive flat; the cost on a landing sole's sliding trades about 3 mrad of
    tilt, 1 without it, for a landing that does not slide); no swinging sole went below the ground."""
    _, log = talos_walking
    assert max(log.drift) < DRIFT, max(log.drift)
    assert max(log.turns) < 4e-3, max(log.turns)
    # (the ground's tolerance at a touchdown, 1 mm, and the tilt [rad] a landing sole is laid flat from)
    assert max(log.corrections) < 4e-3, max(log.corrections)
    assert not [v for v in log.violations if v.what in ("off the ground", "below the ground")]


def test_talos_keeps_room_to_spare_on_the_sole_it_stands_on(talos_walking):
    """Standing on one sole, the centre of pressure keeps well inside it, not on its 5 mm margin (as when
    the base's reference did not sway: a median 5.1 mm); over double support it moves across."""
    robot, log = talos_walking
    margins = np.array([(len(robot.gait.phase_at(t)[0].stance), margin) for t, _, margin in log.pressure_margins])
    alone, both = margins[margins[:, 0] == 1, 1], margins[margins[:, 0] == 2, 1]
    assert len(alone) > 1000 and np.median(alone) > 0.03 and np.percentile(alone, 5) > 0.015, \
        (np.median(alone), np.percentile(alone, 5))
    assert np.median(both) > 0.02, np.median(both)


def test_talos_receives_wrenches_its_soles_can_give(talos_walking):
    """Every wrench the ground gave a sole pushes, lies in the friction cone and has its centre of
    pressure inside the sole (its margin ≥ 0)."""
    _, log = talos_walking
    assert not log.violations, log.violations[:3]
    assert log.pressure_margins and len(log.pressure_margins) == len(log.forces)
    for time_, sole, margin in log.pressure_margins:
        assert margin >= 0.0, (time_, sole, margin)
    for time_, sole, wrench in log.forces:
        assert wrench[2] > 0 and np.hypot(*wrench[:2]) <= FRICTION * wrench[2], (time_, sole, wrench)
