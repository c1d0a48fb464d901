"""The MPC's ground (walking/ground.py): it pushes and does not pull, with Coulomb friction.

ground_dynamics is checked against Pinocchio (independent): its ν̇ and forces satisfy the
equations of motion (RNEA), each sticking foot's acceleration is zero and each sliding foot's
normal one, every force lies in its cone, a sliding foot is pushed on the cone's edge against the
way it slides, and feet let go exactly where Pinocchio's rigid contacts would pull, reported with
that pull.
"""

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.gait import TROT
from robot_linearization.robots import BUNDLED_FEET, bundled_urdf_path
from robot_linearization.walking.ground import ground_dynamics, standing_state

from conftest import PinocchioOracle

pin = pytest.importorskip("pinocchio")
PATH = bundled_urdf_path()
MODEL = rl.load_urdf(PATH)
FRICTION = 0.7


def _cases():
    """Standing on the four feet, at rest or moving, with random torques that make feet let go or slide."""
    rng = np.random.default_rng(0)
    state = standing_state(MODEL, TROT, BUNDLED_FEET)[0]
    cases = []
    for scale in (2.0, 5.0):
        for _ in range(6):
            moving = rl.State(base_pose=state.base_pose, joint_positions=state.joint_positions,
                              base_twist=0.2 * rng.normal(size=6), joint_velocities=rng.normal(size=12))
            cases.append((moving if len(cases) % 2 else state, scale * rng.normal(size=12)))
    return cases


@pytest.fixture(scope="module")
def oracle():
    return PinocchioOracle(PATH, MODEL)


def _pinocchio(oracle, state, nu_dot):
    """(RNEA's generalized force (N,), {foot: (J (3, N) world-aligned, classical acceleration (3,))})
    in our velocity order."""
    P, pmodel, data = oracle.perm, oracle.pmodel, oracle.data
    q = oracle.configuration(state)
    v, a = np.zeros(pmodel.nv), np.zeros(pmodel.nv)
    v[P] = np.concatenate([state.base_twist, state.joint_velocities])
    a[P] = nu_dot
    generalized = pin.rnea(pmodel, data, q, v, a)[P]
    pin.forwardKinematics(pmodel, data, q, v, a)
    pin.computeJointJacobians(pmodel, data, q)
    pin.updateFramePlacements(pmodel, data)
    feet = {}
    for foot in BUNDLED_FEET:
        frame = pmodel.getFrameId(foot)
        J = pin.getFrameJacobian(pmodel, data, frame, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3][:, P]
        acceleration = pin.getFrameClassicalAcceleration(pmodel, data, frame,
                                                         pin.ReferenceFrame.LOCAL_WORLD_ALIGNED).linear
        feet[foot] = (J, np.array(acceleration))
    return generalized, feet


@pytest.mark.parametrize("case", range(12))
def test_ground_dynamics_obeys_the_equations_of_motion_and_keeps_every_force_in_its_cone(oracle, case):
    state, torques = _cases()[case]
    nu_dot, forces, modes, excess = ground_dynamics(MODEL, state, torques, BUNDLED_FEET, FRICTION)
    generalized, feet = _pinocchio(oracle, state, nu_dot)
    scale = 1.0 + np.abs(generalized).max()
    pushed = np.concatenate([np.zeros(6), torques]) + sum(feet[f][0].T @ force for f, force in forces.items())
    assert np.abs(generalized - pushed).max() < 1e-9 * scale  # M ν̇ + h = Sτ + Σ Jᵀ f
    assert set(forces) == {f for f in BUNDLED_FEET if modes[f] != "lets go"}
    for foot, force in forces.items():
        normal, tangential = force[2], np.hypot(*force[:2])
        assert normal >= 0.0 and tangential <= FRICTION * normal * (1 + 1e-12) + 1e-12, (foot, force)
        acceleration = feet[foot][1]
        if modes[foot] == "sticks":
            assert np.abs(acceleration).max() < 1e-8 * scale, (foot, acceleration)
        else:  # slides: on the ground, pushed on the cone's edge against the way it goes
            assert abs(acceleration[2]) < 1e-8 * scale and tangential == pytest.approx(FRICTION * normal)
            assert force[:2] @ acceleration[:2] < 0.0, (foot, force, acceleration)
    assert all(modes[f] == "sticks" or excess[f] >= 0 for f in BUNDLED_FEET)


@pytest.mark.parametrize("case", range(12))
def test_feet_let_go_where_rigid_contacts_would_pull_and_say_by_how_much(oracle, case):
    """Pinocchio's constraintDynamics with the four feet rigid: where it pulls on a foot, some foot
    lets go, and each foot let go is reported with the pull Pinocchio's rigid contact gives it."""
    from robot_linearization.pinocchio_reference import rigid_constraint_models

    state, torques = _cases()[case]
    _, _, modes, excess = ground_dynamics(MODEL, state, torques, BUNDLED_FEET, FRICTION)
    P, pmodel, data = oracle.perm, oracle.pmodel, oracle.data
    models, datas = rigid_constraint_models(pin, pmodel, [rl.Contact(f) for f in BUNDLED_FEET])
    v, tau = np.zeros(pmodel.nv), np.zeros(pmodel.nv)
    v[P] = np.concatenate([state.base_twist, state.joint_velocities])
    tau[P[6:]] = torques
    pin.initConstraintDynamics(pmodel, data, models, datas)
    pin.constraintDynamics(pmodel, data, oracle.configuration(state), v, tau, models, datas)
    normals = np.array(data.lambda_c).reshape(-1, 3)[:, 2]
    assert ("lets go" in modes.values()) == bool((normals < 0).any())
    for i, foot in enumerate(BUNDLED_FEET):
        if modes[foot] == "lets go":
            assert excess[foot] == pytest.approx(max(-normals[i], 0.0), rel=1e-9, abs=1e-9)


def test_the_cases_let_feet_go_and_slide():
    """(So that the tests above cover both ways of leaving a rigid contact.)"""
    modes = [ground_dynamics(MODEL, state, torques, BUNDLED_FEET, FRICTION)[2] for state, torques in _cases()]
    assert sum("lets go" in m.values() for m in modes) >= 6 and sum("slides" in m.values() for m in modes) >= 4


def test_bad_arguments_are_one_line_errors_naming_them():
    state, torques = _cases()[0]
    bad = {"feet": (dict(feet=["front_left_fot"]), r"^feet: 'front_left_fot' is not a frame of model 'rl_quadruped' "
                                                   r"\(did you mean 'front_left_foot'"),
           "a foot that is no name": (dict(feet=[3]), r"^feet: 3 is not a frame"),
           "friction zero": (dict(friction=0.0), "^friction: "), "friction NaN": (dict(friction=float("nan")),
                                                                               "^friction: "),
           "NaN torques": (dict(torques=np.full(12, np.nan)), "^torques: contains NaN"),
           "short torques": (dict(torques=np.zeros(11)), r"^torques: expected shape \(12,\)")}
    for name, (change, message) in bad.items():
        arguments = dict(model=MODEL, state=state, torques=torques, feet=BUNDLED_FEET, friction=FRICTION) | change
        with pytest.raises(ValueError, match=message):
            ground_dynamics(**arguments)
    feet = BUNDLED_FEET[:2]
    zeroed = rl.integrator.contact_velocities_zeroed(MODEL, state, feet, rows=[2, 5])
    assert zeroed.joint_velocities.shape == (12,)
    for rows in ([6], [-1], [2, 2], [0.5], ["2"], [True], [[2]]):
        with pytest.raises(ValueError, match="^rows: expected") as caught:
            rl.integrator.contact_velocities_zeroed(MODEL, state, feet, rows=rows)
        assert "\n" not in str(caught.value)


def test_a_sole_twisted_past_its_corners_friction_is_reported_by_how_much():
    """talos standing on two soles; ±80 N·m more on its left hip's yaw asks a sole for a moment about its
    normal beyond what friction μ at its corners gives: reported as it "twists", by the most any of
    Crocoddyl's wrench-cone yaw rows (WrenchCone, outer μ) is exceeded, the two signs on the two sides of
    the bound; standing still, nothing."""
    import crocoddyl

    from robot_linearization.algorithms.kinematics import frame_poses
    from robot_linearization.spatial import se3_exp
    from robot_linearization.walking.ground import sole_dynamics

    from conftest import load_example
    from test_contact_margins import standing

    model, soles, size = load_example("talos"), ("left_sole_link", "right_sole_link"), (0.2, 0.1)
    state = rl.State(base_pose=se3_exp(np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.4])),
                     joint_positions=np.zeros(model.n_joints), base_twist=np.zeros(6),
                     joint_velocities=np.zeros(model.n_joints))
    standing_torques = standing(model, [rl.Contact(f, "6d") for f in soles], state)
    assert sole_dynamics(model, state, standing_torques, soles, FRICTION, size)[2] == []
    rotations = dict(zip(soles, frame_poses(model, state, list(soles))[:, :3, :3]))
    yaw_rows = -crocoddyl.WrenchCone(np.eye(3), FRICTION, np.array(size), 4, False).A[-8:]  # m_z ≥ …, then ≤ …
    sides = set()
    for extra in (80.0, -80.0):
        tau = standing_torques.copy()
        tau[model.joint_names.index("leg_left_1_joint")] += extra
        _, wrenches, issues, _ = sole_dynamics(model, state, tau, soles, FRICTION, size)
        twisting = [(sole, amount) for sole, what, amount in issues if what == "twists"]
        assert twisting and all(what == "twists" for _, what, _ in issues), issues
        for sole, amount in twisting:
            R = rotations[sole]
            rows = yaw_rows @ np.r_[R.T @ wrenches[sole][:3], R.T @ wrenches[sole][3:]]
            assert amount == pytest.approx(-rows.min(), rel=1e-12) and amount > 1.0, (extra, sole, amount, rows)
            sides.add(int(np.argmin(rows)) // 4)
    assert sides == {0, 1}, sides
