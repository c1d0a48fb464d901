"""MuJoCo as the plant (walking/mujoco_plant.py): MuJoCo's model of each walker, written from the Model the
URDF loader made, has the Model's dynamics — its mass matrix (through MuJoCo's free-joint velocity frames)
and its accelerations under torques equal the project's (CRBA, ABA) at random states — a state crosses to
MuJoCo and back unchanged, and a user's own MJCF is matched by joint name and checked when the plant is
made."""

import numpy as np
import pytest

from robot_linearization.gait import Gait
from robot_linearization.model import State
from robot_linearization.spatial import se3_exp
from robot_linearization.walking.ground import standing_state
from robot_linearization.walking.robots import WALKERS, walker

mujoco = pytest.importorskip("mujoco", reason="MuJoCo is not installed (pip install .[mujoco])")
from robot_linearization.walking import mujoco_plant  # noqa: E402


@pytest.fixture(scope="module", params=WALKERS)
def robot(request):
    found = walker(request.param)
    text = mujoco_plant.mujoco_description(found.model, found.feet, found.effort_limits, sole_size=found.sole_size)
    mj_model = mujoco.MjModel.from_xml_string(text)
    return found, text, mj_model, mujoco_plant.Layout(found.model, mj_model)


def random_state(model, rng, height=10.0):
    H = se3_exp(np.r_[rng.normal(size=3), rng.uniform(-np.pi, np.pi, 3)])
    H[2, 3] += height  # (above the floor: no contact)
    n = model.n_joints
    return State(base_pose=H, joint_positions=rng.uniform(-1.5, 1.5, n), base_twist=rng.normal(size=6),
                 joint_velocities=rng.normal(size=n))


def test_mujocos_mass_matrix_and_accelerations_are_the_models(robot, rng):
    found, _, mj_model, layout = robot
    data = mujoco.MjData(mj_model)
    for _ in range(10):
        state = random_state(found.model, rng)
        mass, accelerations = mujoco_plant.dynamics_mismatch(found.model, mj_model, layout, state,
                                                             10 * rng.normal(size=found.model.n_joints), data)
        assert mass <= 1e-12 and accelerations <= 1e-10, (mass, accelerations)


def test_the_comparison_sees_a_wrong_inertia_a_wrong_frame_and_a_wrong_placement(robot, rng):
    """The check is not blind: one body's mass 1 % off, the free joint's linear velocity taken in the base
    frame (not the world's), or one joint's axis flipped, each fail it by far."""
    found, text, _, _ = robot
    state = random_state(found.model, rng)
    torques = rng.normal(size=found.model.n_joints)
    body = found.model.body_names[2]
    mass = mujoco_plant._inertia(found.model.inertias[2])[0]
    heavier = text.replace(f'mass="{mass!r}"', f'mass="{1.01 * mass!r}"', 1)
    assert heavier != text
    model = mujoco.MjModel.from_xml_string(heavier)
    assert max(mujoco_plant.dynamics_mismatch(found.model, model, mujoco_plant.Layout(found.model, model),
                                              state, torques)) > 1e-4, body
    joint = found.model.joints[3]
    axis = mujoco_plant._numbers(joint.axis)
    flipped = text.replace(f'name="{joint.name}" type="hinge" axis="{axis}"',
                           f'name="{joint.name}" type="hinge" axis="{mujoco_plant._numbers(-np.array(joint.axis))}"')
    assert flipped != text
    model = mujoco.MjModel.from_xml_string(flipped)
    assert max(mujoco_plant.dynamics_mismatch(found.model, model, mujoco_plant.Layout(found.model, model),
                                              state, torques)) > 1e-4
    model = mujoco.MjModel.from_xml_string(text)
    layout = mujoco_plant.Layout(found.model, model)
    original = mujoco_plant.velocity_map

    def in_the_base_frame(layout, state):
        T = original(layout, state)
        T[layout.free_qvel:layout.free_qvel + 3, :3] = np.eye(3)
        return T

    try:
        mujoco_plant.velocity_map = in_the_base_frame
        assert mujoco_plant.dynamics_mismatch(found.model, model, layout, state, torques)[0] > 1e-4
    finally:
        mujoco_plant.velocity_map = original


def test_a_state_crosses_to_mujoco_and_back_unchanged(robot, rng):
    found, _, mj_model, layout = robot
    qpos, qvel = np.zeros(mj_model.nq), np.zeros(mj_model.nv)
    for _ in range(20):
        state = random_state(found.model, rng)
        mujoco_plant.to_mujoco(layout, state, qpos, qvel)
        back = mujoco_plant.from_mujoco(layout, qpos, qvel)
        for a, b in [(state.base_pose, back.base_pose), (state.base_twist, back.base_twist)]:
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-15 * max(1.0, np.abs(a).max()))
        assert back.joint_positions.tolist() == state.joint_positions.tolist()
        assert back.joint_velocities.tolist() == state.joint_velocities.tolist()
        again_qpos, again_qvel = np.zeros_like(qpos), np.zeros_like(qvel)
        mujoco_plant.to_mujoco(layout, back, again_qpos, again_qvel)
        np.testing.assert_allclose(again_qpos, qpos, rtol=0, atol=2e-15 * np.abs(qpos).max())
        np.testing.assert_allclose(again_qvel, qvel, rtol=0, atol=2e-15 * np.abs(qvel).max())


def test_the_plant_stands_the_robot_on_its_feet_which_touch_the_floor(robot):
    found, _, _, _ = robot
    gait = Gait.stand(found.feet, found.posture, contact=found.gait.contact)
    state, height = standing_state(found.model, gait, found.feet)
    plant = mujoco_plant.MuJoCoPlant(found.model, gait, state, feet=found.feet, effort_limits=found.effort_limits,
                                     sole_size=found.sole_size)
    assert set(plant.contacts_now()) == set(found.feet)
    for _ in range(20):  # (no torque: it sinks a little onto its feet, which touch the floor)
        plant.step(np.zeros(found.model.n_joints))
    assert set(plant.held) == set(found.feet)
    assert 0.0 < plant.penetration < 0.01
    assert sum(plant.forces.values())[2] > 0  # (the floor pushes the feet up)
    assert plant.time == pytest.approx(20 * plant.dt)


def test_a_mujoco_that_cannot_be_imported_here_is_said_in_one_line(monkeypatch):
    """$MUJOCO_GL=osmesa where libOSMesa is missing makes ``import mujoco`` itself fail, in PyOpenGL, with an
    AttributeError: the plant says so in one ImportError line naming $MUJOCO_GL (the failure raised here by
    an import hook, as that PyOpenGL raises it)."""
    import importlib.abc
    import sys

    class Failing(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "mujoco":
                raise AttributeError("'NoneType' object has no attribute 'glGetError'")
            return None

    found = walker("bundled")
    state, _ = standing_state(found.model, found.gait, found.feet)
    monkeypatch.delitem(sys.modules, "mujoco")
    monkeypatch.setattr(sys, "meta_path", [Failing(), *sys.meta_path])
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    with pytest.raises(ImportError) as raised:
        mujoco_plant.MuJoCoPlant(found.model, found.gait, state, feet=found.feet, effort_limits=found.effort_limits)
    said = str(raised.value)
    assert said == ("mujoco cannot be imported here (AttributeError: 'NoneType' object has no attribute 'glGetError'): "
                    "MUJOCO_GL=osmesa needs its library (egl: libEGL, osmesa: libOSMesa); without it, unset MUJOCO_GL")


def test_a_users_mjcf_is_matched_by_name_and_checked(robot):
    """A user's MJCF with its joints in another order is the same plant; one whose joint is missing, or
    whose dynamics differ, is refused in one line."""
    found, text, _, _ = robot
    state, _ = standing_state(found.model, found.gait, found.feet)
    plant = mujoco_plant.MuJoCoPlant(found.model, found.gait, state, feet=found.feet,
                                     effort_limits=found.effort_limits, sole_size=found.sole_size, mjcf=text)
    np.testing.assert_array_equal(plant.state.joint_positions, state.joint_positions)
    joint = found.model.joint_names[0]
    with pytest.raises(ValueError, match=rf"^the MuJoCo model has no joint '{joint}' \(a joint of model"):
        mujoco_plant.MuJoCoPlant(found.model, found.gait, state, feet=found.feet, effort_limits=found.effort_limits,
                                 sole_size=found.sole_size,
                                 mjcf=text.replace(f'<joint name="{joint}"', '<joint name="other"').replace(
                                     f'joint="{joint}"', 'joint="other"'))
    mass = mujoco_plant._inertia(found.model.inertias[0])[0]
    with pytest.raises(ValueError, match=r"^the MuJoCo model's dynamics differ from model .*: mass matrix [0-9.e-]+,"):
        mujoco_plant.MuJoCoPlant(found.model, found.gait, state, feet=found.feet, effort_limits=found.effort_limits,
                                 sole_size=found.sole_size, mjcf=text.replace(f'mass="{mass!r}"',
                                                                               f'mass="{1.1 * mass!r}"', 1))


@pytest.mark.parametrize("name", ["bundled", "solo12"])
def test_a_quadruped_trots_on_mujoco_as_the_mpc_commands(name):
    """3 s of the trot forward (ramped to 0.3 m/s over 1 s) on MuJoCo, the MPC unchanged: it stays up, the
    MPC plans every cycle (no slack, no fallback), it follows the command, its stance feet slip a median of
    at most 1 mm (the plan lands and lifts them without sliding: 2-3 mm without) and sink a few millimetres
    (MuJoCo's soft contacts)."""
    from robot_linearization.walking.scenario import Segment, walk

    found = walker(name)
    log = walk(found.model, found.feet, found.gait, found.effort_limits, 3.0, (Segment(0.0, (0.3, 0.0, 0.0)),), (),
               settings=found.settings, plant="mujoco")
    assert log.error is None and not log.fallbacks and max(log.slack) == 0.0, (log.error, log.fallbacks[:1])
    time, velocity = np.array(log.time), np.array(log.velocity)
    cruising = (time > 1.5) & (time < 3.0)
    assert abs(velocity[cruising, 0].mean() - 0.3) < 0.05
    assert any(len(held) == 2 for held in log.held) and any(len(held) == 4 for held in log.held)  # it trots
    slips = np.array([slip for _, _, slip in log.slips])
    assert len(slips) > 10 and np.median(slips) <= 0.001 and 0.0 < log.penetration < 0.01, \
        (np.median(slips), log.penetration)


def test_the_bundled_quadruped_plans_every_cycle_on_mujoco_every_5_ms():
    """Planning every 5 ms on MuJoCo (its steps of 1 ms), 1 s of the trot forward: every cycle has its plan.
    (The QPs after the first touchdowns, whose cost's gradient reached 10⁷, were not solved to an absolute
    tolerance below their rounding floor: from 0.36 s the previous plan took over and the robot fell at
    0.66 s; test_mpc has the QPs' own test.)"""
    from robot_linearization.walking.scenario import Segment, walk

    found = walker("bundled")
    log = walk(found.model, found.feet, found.gait, found.effort_limits, 1.0, (Segment(0.0, (0.3, 0.0, 0.0)),), (),
               settings=found.settings, plant="mujoco", control_period=0.005, dt=0.001)
    assert log.error is None and not log.fallbacks and max(log.slack) == 0.0, (log.error, log.fallbacks[:1])
    assert len(log.time) == 200


def test_the_friction_asked_for_is_the_contacts(robot):
    """MuJoCo takes the larger of two geoms' frictions: the feet must carry the floor's, or μ = 0.3 asked
    for would be MuJoCo's default 1 at every contact."""
    found, _, _, _ = robot
    state, _ = standing_state(found.model, found.gait, found.feet)
    plant = mujoco_plant.MuJoCoPlant(found.model, found.gait, state, feet=found.feet, effort_limits=found.effort_limits,
                                     sole_size=found.sole_size, options=mujoco_plant.ContactOptions(friction=0.3))
    plant.step(np.zeros(found.model.n_joints))
    assert plant.data.ncon > 0
    assert {float(plant.data.contact[k].friction[0]) for k in range(plant.data.ncon)} == {0.3}


def test_talos_walks_turns_and_takes_a_push_on_mujoco_on_its_soles():
    """Talos on MuJoCo, the MPC unchanged (its sway over the soles, the soles' yaw moments bounded): a step
    in place, a lateral push of 0.1 m/s while stepping, then forward at 0.1 m/s and turning at 0.25 rad/s
    (test_walking_robots.TALOS_WALK), 4 s.  It stays up, the MPC plans every cycle, it follows the command,
    the centre of pressure of a sole standing alone stays well inside it, the soles land flat, a stance
    slips a median of at most 1 mm."""
    from robot_linearization.walking.scenario import Push, walk

    from test_walking_robots import TALOS_WALK

    found = walker("talos")
    log = walk(found.model, found.feet, found.gait, found.effort_limits, 4.0, TALOS_WALK,
               (Push(0.4, (0.0, 0.1, 0.0)),), settings=found.settings, plant="mujoco")
    assert log.error is None and not log.fallbacks and max(log.slack) == 0.0, (log.error, log.fallbacks[:1])
    time, velocity, heading = np.array(log.time), np.array(log.velocity), np.array(log.yaw)
    forward = velocity[:, 0] * np.cos(heading) + velocity[:, 1] * np.sin(heading)
    walking, turning = (time >= 1.6) & (time < 2.4), (time >= 3.2) & (time < 4.0)
    assert abs(forward[walking].mean() - 0.1) < 0.05 and abs(forward[turning].mean() - 0.1) < 0.05
    assert abs(np.mean(np.array(log.yaw_rate)[turning]) - 0.25) < 0.05
    alone = np.array([margin for t, _, margin in log.pressure_margins if len(found.gait.phase_at(t)[0].stance) == 1])
    assert np.median(alone) > 0.03 and np.percentile(alone, 5) > 0.005 and alone.min() > -0.001, \
        (np.median(alone), np.percentile(alone, 5), alone.min())
    assert len(log.landing_tilts) >= 4 and max(tilt for *_, tilt in log.landing_tilts) < np.radians(3.0)
    slips = np.array([slip for _, _, slip in log.slips])
    assert np.median(slips) <= 0.001 and 0.0 < log.penetration < 0.01, (np.median(slips), log.penetration)


def test_images_are_asked_of_mujoco_only_and_every_frame_period():
    """walk's frame_period: a positive number of seconds, with plant='mujoco' only; one line otherwise.  (The
    images themselves: test_examples, where MuJoCo renders offscreen.)"""
    from robot_linearization.walking.scenario import walk

    found = walker("bundled")
    for period, plant, message in ((0.1, "ground", "frame_period: the images are MuJoCo's: give plant='mujoco'"),
                                   (0.0, "mujoco", "frame_period: expected a positive number"),
                                   (float("nan"), "mujoco", "frame_period: expected a positive number")):
        with pytest.raises(ValueError, match=f"^{message}") as caught:
            walk(found.model, found.feet, found.gait, found.effort_limits, 0.1, (), (), plant=plant,
                 frame_period=period)
        assert "\n" not in str(caught.value)
