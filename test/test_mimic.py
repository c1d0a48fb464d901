"""Mimic joints in reduced coordinates (coupling.py): the mimic joint moves and
carries inertia but is not a state or input.  Checked against oracles that share
nothing with the constrained solver: Pinocchio's own mimic model (CRBA + RNEA,
forward dynamics by solving, differenced), and the reduced dynamics
Ĝᵀ M Ĝ ν̇ = Ĝᵀ (E τ − h) built from our CRBA and RNEA, differenced."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import robot_linearization as rl
from robot_linearization.validation import perturb

from conftest import example_robot_path, random_state


def reduced_forward_dynamics(model, state, torques):
    """ν̇ of the independent coordinates from the tree's CRBA and RNEA: (Ĝᵀ M Ĝ)⁻¹ Ĝᵀ (E τ − h)."""
    tree, G = model.tree, model.velocity_map
    full = model.tree_state(state)
    M = rl.mass_matrix(tree, full.joint_positions)
    zeros = np.zeros(tree.n_joints)
    if tree.floating_base:
        h = np.concatenate(rl.extended_inverse_dynamics(tree, full, np.zeros(6), zeros))
        generalized = np.concatenate([np.zeros(6), model.tree_torques(torques)])
    else:
        h = rl.inverse_dynamics(tree, full, zeros)[0]
        generalized = model.tree_torques(torques)
    return np.linalg.solve(G.T @ M @ G, G.T @ (generalized - h))


def differenced(model, state, torques, dynamics, h=1e-5):
    """The dynamics rows of A and B by central differences along g·exp(±h e_j) and τ ± e_j."""
    N, n = model.n_velocities, model.n_joints
    A = np.empty((N, 2 * N))
    for j in range(2 * N):
        z = np.zeros(2 * N)
        z[j] = h
        A[:, j] = (dynamics(perturb(model, state, z), torques) - dynamics(perturb(model, state, -z), torques)) / (2 * h)
    B = np.empty((N, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1.0
        B[:, j] = (dynamics(state, torques + e) - dynamics(state, torques - e)) / 2
    return A, B


def relative(ours, reference):
    return np.abs(ours - reference).max() / np.abs(reference).max()


def test_panda_fingers_agree_with_pinocchios_mimic_model(rng):
    import pinocchio as pin

    path = example_robot_path("panda")
    model = rl.load_urdf(path, floating_base=False)
    assert model.n_joints == 8 and "panda_finger_joint2" not in model.joint_names
    pmodel = pin.buildModelFromUrdf(path, mimic=True)
    data = pmodel.createData()
    index = [pmodel.joints[pmodel.getJointId(j)].idx_v for j in model.joint_names]
    assert sorted(index) == list(range(pmodel.nv))

    def pinocchio_dynamics(state, torques):
        q, v, tau = np.zeros(pmodel.nq), np.zeros(pmodel.nv), np.zeros(pmodel.nv)
        for k, jid in enumerate(pmodel.getJointId(j) for j in model.joint_names):
            q[pmodel.joints[jid].idx_q] = state.joint_positions[k]
        v[index], tau[index] = state.joint_velocities, torques
        M = pin.crba(pmodel, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        return np.linalg.solve(M, tau - pin.nonLinearEffects(pmodel, data, q, v))[index], M[np.ix_(index, index)]

    for _ in range(3):
        state, tau = random_state(model, rng), rng.normal(size=8)
        lin = rl.linearize(model, state, tau)
        nu_dot, M = pinocchio_dynamics(state, tau)
        assert relative(lin.joint_accelerations, nu_dot) < 1e-9
        assert relative(lin.M_inv, np.linalg.inv(M)) < 1e-9
        A, B = differenced(model, state, tau, lambda s, t: pinocchio_dynamics(s, t)[0])
        assert relative(lin.A[8:], A) < 1e-6 and relative(lin.B[8:], B) < 1e-6


@pytest.mark.parametrize("contacts", [None, [rl.Contact("left_sole_link", "6d"), rl.Contact("right_sole_link", "6d")]])
def test_talos_full_grippers_against_the_reduced_crba_rnea_dynamics(rng, contacts):
    model = rl.load_urdf(example_robot_path("talos_full"))
    assert isinstance(model, rl.CoupledModel) and len(model.mimics) > 0
    assert model.n_joints == model.tree.n_joints - len(model.mimics)
    state, tau = random_state(model, rng), rng.normal(size=model.n_joints)
    lin = rl.linearize(model, state, tau, contacts=contacts)
    report = rl.validate(model, lin)  # our constrained FD differenced, M⁻¹ against inv(Ĝᵀ M Ĝ)
    assert report.passed(1e-6), report.summary()
    if contacts is None:
        N = model.n_velocities
        nu_dot = np.concatenate([lin.base_acceleration, lin.joint_accelerations])
        assert relative(nu_dot, reduced_forward_dynamics(model, state, tau)) < 1e-9
        A, B = differenced(model, state, tau, lambda s, t: reduced_forward_dynamics(model, s, t))
        assert relative(lin.A[N:], A) < 1e-6 and relative(lin.B[N:], B) < 1e-6


def test_the_coupled_model_in_the_node_pipeline_and_horizon(rng):
    from robot_linearization.ros.pipeline import LinearizationPipeline, PipelineConfig

    path = example_robot_path("panda")
    model = rl.load_urdf(path, floating_base=False)
    pipeline = LinearizationPipeline(PipelineConfig(floating_base=False))
    assert pipeline.set_description(path) is None and pipeline.model.joint_names == model.joint_names
    states = [random_state(model, rng) for _ in range(3)]
    horizon = rl.linearize_trajectory(model, states, np.zeros((3, 8)))
    assert horizon.A.shape == (3, 16, 16) and horizon.contact_forces is None
    for k in range(3):
        np.testing.assert_array_equal(horizon.A[k], rl.linearize(model, states[k], np.zeros(8)).A)


# ---- a mimic joint with a non-zero offset: s_m = multiplier·s_j + offset --------------------------------------
MIMIC_MULTIPLIER, MIMIC_OFFSET = -0.8, 0.4
"""front_right_knee follows front_left_knee in a copy of the bundled quadruped: the offset bends
the right knee by 0.4 rad more than the multiplier alone, a large change of the leg's inertia."""


@pytest.fixture(scope="module")
def offset_mimic_urdf(tmp_path_factory):
    text = open(rl.robots.bundled_urdf_path()).read()
    start = text.index('<joint name="front_right_knee" type="revolute">')
    end = text.index("</joint>", start)
    text = (text[:end] + f'  <mimic joint="front_left_knee" multiplier="{MIMIC_MULTIPLIER}" '
            f'offset="{MIMIC_OFFSET}"/>\n  ' + text[end:])
    path = tmp_path_factory.mktemp("mimic") / "quadruped_offset_mimic.urdf"
    path.write_text(text)
    return str(path)


def pinocchio_floating_dynamics(path, model):
    """ν̇ (N,) and M (N, N) of Pinocchio's own mimic model of the URDF (free flyer), in our order."""
    import pinocchio as pin

    pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer(), mimic=True)
    mimic = pmodel.joints[pmodel.getJointId("front_right_knee")].extract()
    assert (mimic.scaling, mimic.offset) == (MIMIC_MULTIPLIER, MIMIC_OFFSET)  # Pinocchio read the offset
    data = pmodel.createData()
    index = [pmodel.joints[pmodel.getJointId(j)].idx_v for j in model.joint_names]
    order = list(range(6)) + index
    assert pmodel.nv == model.n_velocities and sorted(order) == list(range(pmodel.nv))

    def dynamics(state, torques):
        q, v, tau = np.zeros(pmodel.nq), np.zeros(pmodel.nv), np.zeros(pmodel.nv)
        q[:3], q[3:7] = state.base_pose[:3, 3], pin.Quaternion(state.base_pose[:3, :3]).coeffs()
        for k, jid in enumerate(pmodel.getJointId(j) for j in model.joint_names):
            q[pmodel.joints[jid].idx_q] = state.joint_positions[k]
        v[:6], v[index], tau[index] = state.base_twist, state.joint_velocities, torques
        M = pin.crba(pmodel, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        return np.linalg.solve(M, tau - pin.nonLinearEffects(pmodel, data, q, v))[order], M[np.ix_(order, order)]
    return dynamics


def test_a_mimic_offset_is_in_the_tree_configuration(offset_mimic_urdf, rng):
    model = rl.load_urdf(offset_mimic_urdf)
    assert isinstance(model, rl.CoupledModel) and model.mimics == (("front_right_knee", "front_left_knee",
                                                                      MIMIC_MULTIPLIER, MIMIC_OFFSET),)
    state = random_state(model, rng)
    tree_positions = dict(zip(model.tree.joint_names, model.tree_state(state).joint_positions))
    source = state.joint_positions[model.joint_names.index("front_left_knee")]
    assert tree_positions["front_right_knee"] == pytest.approx(MIMIC_MULTIPLIER * source + MIMIC_OFFSET, abs=1e-15)


def test_a_mimic_offset_agrees_with_pinocchios_mimic_model_linearize_and_step(offset_mimic_urdf, rng):
    """linearize's ν̇, M⁻¹, A's dynamics rows, B, and rl.step's next velocities against
    Pinocchio's mimic model (CRBA + nonLinearEffects, differenced), with the offset; and
    validate passes.  Dropping the offset moves the right knee by 0.4 rad: every one fails."""
    model = rl.load_urdf(offset_mimic_urdf)
    dynamics = pinocchio_floating_dynamics(offset_mimic_urdf, model)
    N, dt = model.n_velocities, 1e-3
    for _ in range(2):
        state, tau = random_state(model, rng), rng.normal(size=model.n_joints)
        lin = rl.linearize(model, state, tau)
        nu_dot, M = dynamics(state, tau)
        assert relative(np.concatenate([lin.base_acceleration, lin.joint_accelerations]), nu_dot) < 1e-9
        assert relative(lin.M_inv, np.linalg.inv(M)) < 1e-9
        A, B = differenced(model, state, tau, lambda s, t: dynamics(s, t)[0])
        assert relative(lin.A[N:], A) < 1e-6 and relative(lin.B[N:], B) < 1e-6
        after = rl.step(model, state, tau, dt)  # semi-implicit Euler: ν⁺ = ν + dt ν̇
        nu = np.concatenate([state.base_twist, state.joint_velocities])
        assert relative(np.concatenate([after.base_twist, after.joint_velocities]), nu + dt * nu_dot) < 1e-12
        report = rl.validate(model, lin)
        assert report.passed(1e-6), report.summary()


def test_a_mimic_offset_with_contacts_validates(offset_mimic_urdf, rng):
    """Standing on its four feet, with a step: validate passes (λ, ∂λ, A_d, B_d included).
    Its contact geometry is checked against forward kinematics that apply the offset by
    hand in test_contact_geometry.py."""
    model = rl.load_urdf(offset_mimic_urdf)
    state, tau = random_state(model, rng, scale=0.5), rng.normal(size=model.n_joints)
    lin = rl.linearize(model, state, tau, contacts=list(rl.robots.BUNDLED_FEET), dt=2e-3)
    report = rl.validate(model, lin)
    assert report.passed(1e-6), report.summary()


def pinocchio_mimic_impact(path, model, feet, restitution):
    """ν⁺ (N,) and Λ (m,) of a rigid impact on the point contacts ``feet`` (frame names, world-aligned
    axes) from Pinocchio's own mimic model of the URDF: its M (CRBA) and its frame Jacobians
    (LOCAL_WORLD_ALIGNED: the feet's velocity in world axes) in its reduced coordinates, and the
    impact's equations solved densely, Λ = −(1+e)(J M⁻¹ Jᵀ)⁻¹ J ν⁻, ν⁺ = ν⁻ + M⁻¹ Jᵀ Λ; in our order."""
    import pinocchio as pin

    pmodel = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer(), mimic=True)
    data = pmodel.createData()
    index = [pmodel.joints[pmodel.getJointId(j)].idx_v for j in model.joint_names]
    order = list(range(6)) + index
    frames = [pmodel.getFrameId(foot) for foot in feet]
    assert pmodel.nv == model.n_velocities and all(f < len(pmodel.frames) for f in frames)

    def jump(state):
        q = np.zeros(pmodel.nq)
        q[:3], q[3:7] = state.base_pose[:3, 3], pin.Quaternion(state.base_pose[:3, :3]).coeffs()
        for k, jid in enumerate(pmodel.getJointId(j) for j in model.joint_names):
            q[pmodel.joints[jid].idx_q] = state.joint_positions[k]
        M = pin.crba(pmodel, data, q)
        M = (np.triu(M) + np.triu(M, 1).T)[np.ix_(order, order)]
        pin.computeJointJacobians(pmodel, data, q)
        pin.updateFramePlacements(pmodel, data)
        J = np.vstack([pin.getFrameJacobian(pmodel, data, f, pin.LOCAL_WORLD_ALIGNED)[:3] for f in frames])[:, order]
        nu = np.concatenate([state.base_twist, state.joint_velocities])
        M_inv_Jt = np.linalg.solve(M, J.T)
        impulses = -(1.0 + restitution) * np.linalg.solve(J @ M_inv_Jt, J @ nu)
        return nu + M_inv_Jt @ impulses, impulses
    return jump


@pytest.mark.parametrize("restitution", [0.0, 0.5])
def test_a_mimic_offset_impact_agrees_with_pinocchios_mimic_model(offset_mimic_urdf, restitution, rng):
    """rl.impact of the coupled quadruped landing on its four feet (the right knee, which follows
    the left one, carries a foot): ν⁺, Λ and their Jacobians (A's velocity rows, ∂Λ/∂z) against
    Pinocchio's mimic model's impact, differenced along g·exp(±h e_j); H and s do not jump, and
    the held rl.ImpactMap gives the same bits."""
    model = rl.load_urdf(offset_mimic_urdf)
    feet = list(rl.robots.BUNDLED_FEET)
    oracle = pinocchio_mimic_impact(offset_mimic_urdf, model, feet, restitution)
    N, h = model.n_velocities, 1e-5
    held = rl.ImpactMap(model, feet, restitution)
    assert held.kernel == "generic"
    for _ in range(2):
        state = random_state(model, rng, scale=0.5)
        jump = rl.impact(model, state, feet, restitution)
        nu_plus, impulses = oracle(state)
        assert relative(np.concatenate([jump.state.base_twist, jump.state.joint_velocities]), nu_plus) < 1e-9
        assert relative(jump.impulses, impulses) < 1e-9 and jump.impulses.shape == (3 * len(feet),)
        assert jump.impulse_labels == tuple(f"{foot}:{axis}" for foot in feet for axis in ("fx", "fy", "fz"))
        d_nu, d_impulses = np.empty((N, 2 * N)), np.empty((3 * len(feet), 2 * N))
        for j in range(2 * N):
            z = np.zeros(2 * N)
            z[j] = h
            (nu_a, impulses_a), (nu_b, impulses_b) = oracle(perturb(model, state, z)), oracle(perturb(model, state, -z))
            d_nu[:, j], d_impulses[:, j] = (nu_a - nu_b) / (2 * h), (impulses_a - impulses_b) / (2 * h)
        np.testing.assert_array_equal(jump.A[:N], np.eye(N, 2 * N))  # H and s do not jump
        assert relative(jump.A[N:], d_nu) < 1e-6 and relative(jump.impulses_state_jacobian, d_impulses) < 1e-6
        np.testing.assert_array_equal(jump.state.joint_positions, state.joint_positions)
        held.impact(state)
        for ours, reference in ((held.A, jump.A), (held.impulses, jump.impulses),
                                (held.impulses_state_jacobian, jump.impulses_state_jacobian),
                                (held.base_twist, jump.state.base_twist),
                                (held.joint_velocities, jump.state.joint_velocities)):
            np.testing.assert_array_equal(ours, reference)


def test_talos_full_lands_on_its_soles_with_coupled_grippers(rng):
    """talos_full (12 gripper joints follow 2) landing on two 6d soles: rl.impact's Jacobians
    against geometric finite differences of the impact, and a step through the touchdown
    (A_d = A_d(x⁺)·A_impact) against differences of rl.step across it (rl.validate)."""
    from robot_linearization.validation import finite_difference_impact

    model = rl.load_urdf(example_robot_path("talos_full"))
    soles = [rl.Contact("left_sole_link", "6d"), rl.Contact("right_sole_link", "6d")]
    state = random_state(model, rng, scale=0.5)
    jump = rl.impact(model, state, soles, 0.2)
    A_fd, d_impulses_fd = finite_difference_impact(model, state, soles, 0.2)
    assert relative(jump.A, A_fd) < 1e-6 and relative(jump.impulses_state_jacobian, d_impulses_fd) < 1e-6
    lin = rl.linearize(model, state, rng.normal(size=model.n_joints), contacts=soles, dt=2e-3,
                       previous_contacts=soles[:1], restitution=0.2)
    assert np.array_equal(lin.impact.A, jump.A) and np.array_equal(lin.impact.impulses, jump.impulses)
    report = rl.validate(model, lin)
    assert report.passed(1e-6), report.summary()


def test_a_coupled_impact_refuses_bad_states_in_one_line_without_warnings(offset_mimic_urdf):
    """rl.impact and rl.ImpactMap of a CoupledModel: NaN or inf in s or r, a wrong length, a pose that
    is no transform, a zero quaternion: a ValueError naming the field, in one line, and no numpy
    warning on the way (the couplings map inf to NaN); float32, big-endian and strided arrays are taken."""
    import warnings

    model = rl.load_urdf(offset_mimic_urdf)
    feet, n = list(rl.robots.BUNDLED_FEET), model.n_joints
    H = rl.spatial.se3_exp(np.array([0.0, 0.0, 0.3, 0.1, 0.2, 0.0]))
    held = rl.ImpactMap(model, feet)

    def state(s=np.zeros(n), r=np.zeros(n), pose=H):
        return rl.State(base_pose=pose, joint_positions=s, base_twist=np.zeros(6), joint_velocities=r)

    bad = [(state(s=np.full(n, np.nan)), "joint_positions contains NaN"),
           (state(r=np.full(n, np.inf)), "joint_velocities contains NaN or inf"),
           (state(s=np.zeros(n - 1)), r"joint_positions: expected shape \(11,\)"),
           (state(pose=2 * H), "base_pose is not a homogeneous transform")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for wrong, message in bad:
            for call in (lambda x: rl.impact(model, x, feet), held.impact):
                with pytest.raises(ValueError, match=message) as error:
                    call(wrong)
                assert "\n" not in str(error.value) and held.state is None
        with pytest.raises(ValueError, match="expected a unit quaternion"):
            held.impact_arrays(np.zeros(n), np.zeros(n), base_pose=np.zeros(7), base_twist=np.zeros(6))
    reference = rl.impact(model, state(r=np.ones(n)), feet)
    pose = np.r_[H[:3, 3], Rotation.from_matrix(H[:3, :3]).as_quat()]
    for s in (np.zeros(n, dtype=np.float32), np.zeros(n).astype(">f8"), np.zeros(2 * n)[::2]):
        held.impact_arrays(s, np.ones(n), base_pose=pose, base_twist=np.zeros(6))
        assert relative(held.A, reference.A) < 1e-12 and relative(held.impulses, reference.impulses) < 1e-12
