"""Rigid contacts: the constrained linearization against geometric finite
differences of the constrained forward dynamics, against Pinocchio's
constrained-dynamics derivatives, a standing quadruped in static equilibrium,
and the documented errors for degenerate contact sets."""

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.algorithms.constrained_dynamics import bias_motion, contact_kinematics
from robot_linearization.algorithms.kinematics import body_transforms
from robot_linearization.spatial import se3_exp

from conftest import (PinocchioOracle, example_robot_path, load_example, pinocchio_constrained_linearization,
                      random_state, random_tree)

SOLO_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
TALOS_SOLES = ("left_sole_link", "right_sole_link")

CASES = {  # name: (robot, contacts)
    "solo12 4 point world_aligned": ("solo12", [rl.Contact(f) for f in SOLO_FEET]),
    "solo12 4 point local": ("solo12", [rl.Contact(f, reference="local") for f in SOLO_FEET]),
    "talos 2×6d world_aligned": ("talos", [rl.Contact(f, "6d") for f in TALOS_SOLES]),
    "talos 2×6d local": ("talos", [rl.Contact(f, "6d", "local") for f in TALOS_SOLES]),
    "talos mixed 6d + point": ("talos", [rl.Contact("left_sole_link", "6d", "local"),
                                         rl.Contact("right_sole_link", "point")]),
    "solo12 mixed references": ("solo12", [rl.Contact("FL_FOOT"), rl.Contact("HR_FOOT", reference="local"),
                                           rl.Contact("FR_FOOT", "point", "local")]),
    "ur5 (fixed) tool in point contact": ("ur5", [rl.Contact("tool0")]),
    "ur5 (fixed) tool in local point contact": ("ur5", [rl.Contact("tool0", reference="local")]),
}


def _case(name, rng):
    robot, contacts = CASES[name]
    model = load_example(robot)
    return model, contacts, random_state(model, rng), rng.normal(scale=5.0, size=model.n_joints)


@pytest.mark.parametrize("name", list(CASES))
def test_constrained_linearization_matches_finite_differences_per_block(name, rng):
    model, contacts, state, tau = _case(name, rng)
    lin = rl.linearize(model, state, tau, contacts=contacts)
    m = sum(c.dimension for c in contacts)
    N = model.n_velocities
    assert lin.contact_forces.shape == (m,) and lin.contact_forces_state_jacobian.shape == (m, 2 * N)
    assert lin.contact_forces_input_jacobian.shape == (m, model.n_joints) and len(lin.contact_labels) == m
    report = rl.validate(model, state, lin, tau)
    names = [b.name for b in report.blocks]
    assert "dlambda/dz[s]" in names and "dlambda/dtau" in names
    assert report.passed(1e-6), report.summary()


@pytest.mark.parametrize("name", list(CASES))
def test_constrained_linearization_matches_pinocchio(name, rng):
    model, contacts, state, tau = _case(name, rng)
    robot = CASES[name][0]
    lin = rl.linearize(model, state, tau, contacts=contacts)
    A_dyn, B_dyn, nu_dot, forces, d_forces, d_forces_dtau = pinocchio_constrained_linearization(
        PinocchioOracle(example_robot_path(robot), model), state, tau, contacts)
    N = model.n_velocities
    ours_nu_dot = lin.joint_accelerations if lin.base_acceleration is None else np.concatenate(
        [lin.base_acceleration, lin.joint_accelerations])
    for ours, theirs, what in [(lin.A[N:], A_dyn, "A"), (lin.B[N:], B_dyn, "B"), (ours_nu_dot, nu_dot, "ν̇"),
                               (lin.contact_forces, forces, "λ"),
                               (lin.contact_forces_state_jacobian, d_forces, "∂λ/∂z"),
                               (lin.contact_forces_input_jacobian, d_forces_dtau, "∂λ/∂τ")]:
        error = np.abs(ours - theirs).max() / np.abs(theirs).max()
        assert error < 1e-9, f"{what}: relative error {error:.2e}"


@pytest.mark.parametrize("floating_base", [True, False])
def test_constrained_linearization_on_random_branched_trees(floating_base, rng):
    checked = 0
    for attempt in range(30):
        model, contacts = _tree_in_contact(rng, floating_base)
        state = random_state(model, rng, scale=0.5)
        tau = rng.normal(size=model.n_joints)
        try:
            lin = rl.linearize(model, state, tau, contacts=contacts)
        except rl.ContactError:  # leaves sharing too few joints for these constraints: another tree
            continue
        report = rl.validate(model, state, lin, tau)
        assert report.passed(1e-6), f"attempt {attempt}\n" + report.summary()
        checked += 1
        if checked == 3:
            break
    assert checked == 3


def _tree_in_contact(rng, floating_base):
    """(model, contacts): a random tree (:func:`_tree_with_contact_frames`) with a 6d and two point
    contacts (floating base) or two point contacts (fixed), alternately local and world-aligned."""
    model = _tree_with_contact_frames(rng, floating_base)
    frames = [f for f in model.frames if f.startswith("tip")]
    kinds = ["6d", "point", "point"] if floating_base else ["point", "point"]
    return model, [rl.Contact(f, kind, ("local", "world_aligned")[k % 2])
                   for k, (f, kind) in enumerate(zip(frames, kinds))]


def _tree_with_contact_frames(rng, floating_base):
    """A random 12-joint tree with a contact frame offset from each of three distinct leaves."""
    base = random_tree(rng, 12, floating_base)
    builder = rl.ModelBuilder(base.body_names[0], base.inertias[0], floating_base=floating_base, name="tree")
    for i in range(1, base.n_bodies):
        placement = _placement_from(base.tree_transforms[i])
        builder.add_body(base.body_names[i], parent=base.body_names[base.parent[i]], joint=base.joints[i - 1],
                         placement=placement, inertia=base.inertias[i])
    leaves = [i for i in range(1, base.n_bodies) if base.subtree_end[i] == i]
    for k, leaf in enumerate(leaves[:3]):
        builder.add_frame(f"tip{k}", body=base.body_names[leaf],
                          placement=se3_exp(np.concatenate([rng.normal(scale=0.2, size=3), rng.normal(size=3)])))
    return builder.build()


def _placement_from(X):
    """parent_H_joint from the velocity transform joint_X_parent = Ad(joint_H_parent)."""
    R = X[:3, :3]  # joint_R_parent
    p_hat = X[:3, 3:] @ R.T  # (joint_p_parent)^
    p = np.array([p_hat[2, 1], p_hat[0, 2], p_hat[1, 0]])
    H = np.eye(4)
    H[:3, :3], H[:3, 3] = R.T, -R.T @ p
    return H


def test_standing_quadruped_in_static_equilibrium_carries_its_weight():
    """τ from the gravity torques minus the feet's share: ν̇ = 0 and Σλ = the weight."""
    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    feet = [rl.Contact(f) for f in ("front_left_foot", "front_right_foot", "hind_left_foot", "hind_right_foot")]
    yaw = se3_exp(np.array([0.3, -0.2, 0.35, 0.0, 0.0, 0.7]))
    state = rl.State(base_pose=yaw, joint_positions=np.tile([0.1, 0.8, -1.5], 4), base_twist=np.zeros(6),
                     joint_velocities=np.zeros(12))
    base_wrench, joint_torques = rl.extended_inverse_dynamics(model, state, np.zeros(6), np.zeros(12))
    X_up = body_transforms(model, state.joint_positions)
    J, _ = contact_kinematics(model, state, feet, X_up, *bias_motion(model, state, X_up))
    support = np.linalg.lstsq(J[:, :6].T, base_wrench, rcond=None)[0]  # forces that hold the base
    tau = joint_torques - J[:, 6:].T @ support
    lin = rl.linearize(model, state, tau, contacts=feet)
    assert np.abs(lin.base_acceleration).max() < 1e-10 and np.abs(lin.joint_accelerations).max() < 1e-10
    weight = model.inertias[:, 0, 0].sum() * 9.81
    total = lin.contact_forces.reshape(4, 3).sum(axis=0)  # world-aligned: summable
    np.testing.assert_allclose(total, [0.0, 0.0, weight], atol=1e-9 * weight)
    np.testing.assert_allclose(lin.contact_forces, support, atol=1e-9 * weight)


def test_degenerate_contact_sets_get_a_clear_error(rng):
    solo = load_example("solo12")
    state = random_state(solo, rng)
    with pytest.raises(rl.ContactError, match=r"constrains 24 directions of which only 18 are independent"):
        rl.linearize(solo, state, contacts=[rl.Contact(f, "6d") for f in SOLO_FEET])
    talos = load_example("talos")
    same_body = [rl.Contact("left_sole_link", "6d"), rl.Contact("leg_left_6_link", "point")]
    with pytest.raises(rl.ContactError, match="only 6 are independent"):
        rl.linearize(talos, random_state(talos, rng), contacts=same_body)
    ur5 = load_example("ur5")
    with pytest.raises(rl.ContactError, match=r"\['base_link'\] are on links that cannot move"):
        rl.linearize(ur5, random_state(ur5, rng), contacts=["base_link"])
    with pytest.raises(rl.ContactError, match="'left_foot' is not a link of model"):
        rl.linearize(talos, random_state(talos, rng), contacts=["left_foot"])
    with pytest.raises(rl.ContactError, match=r"more than once: \['FL_FOOT'\]"):
        rl.linearize(solo, state, contacts=["FL_FOOT", rl.Contact("FL_FOOT", "6d")])
    with pytest.raises(rl.ContactError, match="kind must be one of"):
        rl.Contact("FL_FOOT", kind="plane")
    with pytest.raises(rl.ContactError, match="reference must be one of"):
        rl.Contact("FL_FOOT", reference="world")


def test_without_contacts_the_linearization_is_bit_for_bit_unchanged(rng):
    model = load_example("solo12")
    state, tau = random_state(model, rng), rng.normal(size=12)
    free = rl.linearize(model, state, tau)
    for none in (None, [], ()):
        other = rl.linearize(model, state, tau, contacts=none)
        for name in ("A", "B", "M_inv", "base_acceleration", "joint_accelerations"):
            assert np.array_equal(getattr(free, name), getattr(other, name))
        assert other.contact_forces is None and other.contacts == ()


def test_trajectory_with_one_contact_set_or_a_gait(rng):
    model = load_example("solo12")
    states = [random_state(model, rng) for _ in range(4)]
    torques = rng.normal(size=(4, 12))
    stance = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
    horizon = rl.linearize_trajectory(model, states, torques, contacts=stance, workers=2)
    assert horizon.A.shape == (4, 36, 36) and horizon.contact_forces.shape == (4, 12)
    assert horizon.contact_forces_state_jacobian.shape == (4, 12, 36)
    gait = [stance, ["FL_FOOT", "HR_FOOT"], [], ["FR_FOOT", "HL_FOOT"]]
    trot = rl.linearize_trajectory(model, states, torques, contacts=gait)
    for k in range(4):
        single = rl.linearize(model, states[k], torques[k], contacts=gait[k])
        np.testing.assert_array_equal(trot.A[k], single.A)
        for name in ("contact_forces", "contact_forces_state_jacobian", "contact_forces_input_jacobian"):
            expected = getattr(single, name)
            if expected is None:
                assert getattr(trot, name)[k] is None
            else:
                np.testing.assert_array_equal(getattr(trot, name)[k], expected)
        np.testing.assert_array_equal(horizon.contact_forces[k],
                                      rl.linearize(model, states[k], torques[k], contacts=stance).contact_forces)
    assert trot.contact_labels[2] == () and len(trot.contact_labels[0]) == 12


def test_validation_notices_a_wrong_contact_force_derivative(rng):
    """The constrained validation is not vacuous: a sign flip in ∂λ/∂z fails it."""
    model = load_example("solo12")
    state, tau = random_state(model, rng), rng.normal(size=12)
    lin = rl.linearize(model, state, tau, contacts=list(SOLO_FEET))
    import dataclasses

    wrong = dataclasses.replace(lin, contact_forces_state_jacobian=-lin.contact_forces_state_jacobian)
    assert rl.validate(model, state, lin, tau).passed(1e-6)
    assert not rl.validate(model, state, wrong, tau).passed(1e-3)


def test_the_simulated_robot_standing_on_its_feet_keeps_them_still():
    """The demo's simulation holds the feet (contact velocity projected to zero after each
    explicit step, so no drift builds up): along 2 s the feet do not move and the
    contact forces stay of the order of the weight (without the projection the drift
    grew them past 3000 N on this 120 N robot within seconds)."""
    from robot_linearization.robots import BUNDLED_FEET
    from robot_linearization.ros.simulation import Simulation

    model = rl.load_urdf(rl.robots.bundled_urdf_path())
    simulation = Simulation(model, dt=0.002, seed=0, contacts=BUNDLED_FEET)
    weight = model.inertias[:, 0, 0].sum() * 9.81
    vertical = []
    for k in range(1000):
        state, tau = simulation.step()
        X_up = body_transforms(model, state.joint_positions)
        J, _ = contact_kinematics(model, state, BUNDLED_FEET, X_up, *bias_motion(model, state, X_up))
        nu = np.concatenate([state.base_twist, state.joint_velocities])
        assert np.abs(J @ nu).max() < 1e-9, k  # the feet are still
        if k % 50 == 0:
            forces = rl.linearize(model, state, tau, contacts=BUNDLED_FEET).contact_forces.reshape(4, 3)
            vertical.append(forces[:, 2].sum())
    assert max(np.abs(vertical)) < 3 * weight, (vertical, weight)
