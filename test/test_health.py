"""The health vector (~/health, robot_linearization/ros/health.py): every entry against an
independent computation at known states — numpy's eigenvalues and condition numbers,
closed forms of a pendulum and of two sliders, and Newton's law for a robot held at
rest on its feet (the contact forces on the robot carry its weight)."""

import dataclasses
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

import robot_linearization as rl
from robot_linearization.joints import Joint, JointType
from robot_linearization.robots import BUNDLED_FEET, bundled_urdf_path
from robot_linearization.ros.health import COND_CAP, contact_force_components, health, health_labels
from robot_linearization.ros.messages import (RosbagsFactory, health_labels_message, health_message,
                                              joint_state_message, odometry_message, output_topics)
from robot_linearization.ros.pipeline import LinearizationPipeline, Output, PipelineConfig
from robot_linearization.spatial import se3_exp, so3_exp, spatial_inertia

from conftest import example_robot_path, load_example, random_state

TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)
FACTORY = RosbagsFactory(TYPESTORE)
QUADRUPED = rl.load_urdf(bundled_urdf_path())
STANCE = np.tile([0.0, 0.8, -1.5], 4)  # the bundled quadruped on its four feet, knees bent


def output(model, state, torques=None, contacts=(), dt=None, compute_time=2.5e-4):
    torques = np.zeros(model.n_joints) if torques is None else torques
    lin = rl.linearize(model, state, torques, contacts=contacts, **({"dt": dt} if dt else {}))
    return Output(7, model, state, torques, lin, compute_time)


def entries(out):
    labels, values = health(out)
    assert len(labels) == values.shape[0] and values.ndim == 1 and np.isfinite(values).all()
    return dict(zip(labels, values))


def urdf_mass(path) -> float:
    """Total mass of a URDF: the sum of its links' <mass value>, read from the XML."""
    return sum(float(mass.get("value")) for mass in ET.parse(path).getroot().iter("mass"))


def at_rest(model, base_pose=np.eye(4), positions=STANCE):
    return rl.State(base_pose=base_pose, joint_positions=positions, base_twist=np.zeros(6),
                    joint_velocities=np.zeros(model.n_joints))


def holding_torques(model, state, contacts):
    """Torques that keep ``state`` (at rest) at rest on ``contacts``: ν̇ is affine in τ with
    slope B's dynamics rows, solved for ν̇ = 0 and checked by the forward dynamics."""
    N = model.n_velocities
    free = rl.linearize(model, state, contacts=contacts)
    nu_dot = np.concatenate([free.base_acceleration, free.joint_accelerations])
    torques = np.linalg.lstsq(free.B[N:], -nu_dot, rcond=None)[0]
    held = rl.linearize(model, state, torques, contacts=contacts)
    assert np.abs(np.concatenate([held.base_acceleration, held.joint_accelerations])).max() < 1e-9
    return torques


# ---- A, M, A_d against numpy ------------------------------------------------------

@pytest.mark.parametrize("robot", ["quadruped", "quadruped fixed", "talos", "talos_full"])
def test_spectral_abscissa_cond_and_spectral_radius_match_numpy_at_random_states(robot, rng):
    if robot.startswith("quadruped"):
        model = rl.load_urdf(bundled_urdf_path(), floating_base=robot == "quadruped")
    else:
        model = load_example(robot)
    for dt in (None, 1e-3):
        state = random_state(model, rng)
        out = output(model, state, rng.normal(size=model.n_joints), dt=dt, compute_time=1.25e-3)
        values = entries(out)
        lin = out.linearization
        assert values["compute_time_ms"] == 1.25
        np.testing.assert_allclose(values["spectral_abscissa_A"], np.max(np.linalg.eigvals(lin.A).real),
                                   rtol=1e-9, atol=1e-9)
        M = rl.mass_matrix(model, state.joint_positions)  # CRBA: shares nothing with the IMMA's M⁻¹
        np.testing.assert_allclose(values["cond_M"], np.linalg.cond(M), rtol=1e-8)
        if dt is None:
            assert "spectral_radius_A_d" not in values
        else:
            np.testing.assert_allclose(values["spectral_radius_A_d"], np.max(np.abs(np.linalg.eigvals(lin.A_d))),
                                       rtol=1e-9)


def pendulum(gravity=(0.0, 0.0, -9.81), mass=2.0, length=0.5, inertia=1e-4):
    """A point-like bob on a rod about the world's y axis, upright at s = 0."""
    builder = rl.ModelBuilder("world", spatial_inertia(1.0, np.zeros(3), np.eye(3)), floating_base=False,
                              gravity=gravity, name="pendulum")
    builder.add_body("bob", parent="world", joint=Joint("hinge", JointType.REVOLUTE, (0.0, 1.0, 0.0)),
                     placement=np.eye(4), inertia=spatial_inertia(mass, np.array([0.0, 0.0, length]),
                                                                  inertia * np.eye(3)))
    return builder.build(), mass * 9.81 * length / (inertia + mass * length ** 2)


@pytest.mark.parametrize("upright", [True, False])
def test_a_pendulum_upright_grows_at_sqrt_g_over_l_and_hanging_does_not(upright):
    """ṡ = r, ṙ = k sin s (upright at s = 0): A = [[0, 1], [±k, 0]], eigenvalues ±√k upright, ±i√k
    hanging; one semi-implicit Euler step (r⁺ = r + dt ṙ, s⁺ = s + dt r⁺) has A_d =
    [[1 + dt²a, dt], [dt a, 1]] with a = ±k, det 1, spectral radius 1 + dt²k/2 + √(dt²k + dt⁴k²/4)
    upright and 1 hanging (symplectic)."""
    model, k = pendulum()
    state = rl.State(joint_positions=[0.0 if upright else np.pi], joint_velocities=[0.0])
    dt = 0.01
    values = entries(output(model, state, dt=dt))
    if upright:
        assert values["spectral_abscissa_A"] == pytest.approx(np.sqrt(k), rel=1e-12)
        radius = 1 + dt ** 2 * k / 2 + np.sqrt(dt ** 2 * k + dt ** 4 * k ** 2 / 4)
        assert values["spectral_radius_A_d"] == pytest.approx(radius, rel=1e-12)
    else:
        assert abs(values["spectral_abscissa_A"]) < 1e-12
        assert values["spectral_radius_A_d"] == pytest.approx(1.0, rel=1e-12)
    assert values["cond_M"] == pytest.approx(1.0, rel=1e-12)  # one joint


def test_cond_of_two_orthogonal_sliders_is_their_mass_ratio():
    """Body 1 slides along x carrying body 2, which slides along y: M = diag(m₁ + m₂, m₂)."""
    builder = rl.ModelBuilder("world", spatial_inertia(1.0, np.zeros(3), np.eye(3)), floating_base=False)
    for name, parent, axis, mass in (("cart", "world", (1.0, 0.0, 0.0), 9.0), ("slider", "cart", (0.0, 1.0, 0.0),
                                                                                   0.5)):
        builder.add_body(name, parent=parent, joint=Joint(f"{name}_joint", JointType.PRISMATIC, axis),
                         placement=np.eye(4), inertia=spatial_inertia(mass, np.zeros(3), 0.01 * np.eye(3)))
    model = builder.build()
    values = entries(output(model, rl.State(joint_positions=[0.3, -0.2], joint_velocities=[1.0, 2.0])))
    assert values["cond_M"] == pytest.approx(9.5 / 0.5, rel=1e-12)


# ---- contact forces: Newton's law ----------------------------------------------

@pytest.mark.parametrize("reference", ["world_aligned", "local"])
def test_a_quadruped_held_at_rest_carries_its_weight_on_its_feet(reference, rng):
    """At rest (ν = 0) with torques that keep it there (ν̇ = 0), the ground's forces on the
    robot sum to −m g: Σ f_n = m |g| over the feet, with m the URDF's total mass.  Forces on
    the ground instead of on the robot would give −m |g|, a forgotten rotation of the
    local feet (turned by the knees) another sum."""
    yaw = se3_exp(np.array([0.3, -0.2, 0.35, 0.0, 0.0, rng.uniform(-np.pi, np.pi)]))
    state = at_rest(QUADRUPED, yaw)
    feet = [rl.Contact(foot, "point", reference) for foot in BUNDLED_FEET]
    out = output(QUADRUPED, state, holding_torques(QUADRUPED, state, feet), contacts=feet)
    f_n, f_t = contact_force_components(QUADRUPED, state, out.linearization)
    assert f_n.sum() == pytest.approx(urdf_mass(bundled_urdf_path()) * 9.81, rel=1e-9)
    values = entries(out)
    assert values["min_normal_force"] == f_n.min() > 0
    assert values["max_tangential_ratio"] == pytest.approx((f_t / f_n).max(), rel=1e-12)
    if reference == "world_aligned":  # ground normal +z: f_n = fz, ‖f_t‖ = hypot(fx, fy), straight from λ
        forces = out.linearization.contact_forces.reshape(4, 3)
        np.testing.assert_allclose(f_n, forces[:, 2], rtol=1e-12)
        np.testing.assert_allclose(values["max_tangential_ratio"], np.max(np.hypot(forces[:, 0], forces[:, 1])
                                                                          / forces[:, 2]), rtol=1e-12)


@pytest.mark.parametrize("reference", ["world_aligned", "local"])
def test_talos_held_at_rest_carries_its_weight_on_its_6d_soles(reference, rng):
    """As above with two 6d soles: the force part (first 3 entries) of each wrench [force; moment]."""
    model = load_example("talos")
    state = random_state(model, rng, scale=0.0)
    state = rl.State(base_pose=state.base_pose, joint_positions=0.3 * state.joint_positions,
                     base_twist=np.zeros(6), joint_velocities=np.zeros(model.n_joints))
    soles = [rl.Contact(sole, "6d", reference) for sole in ("left_sole_link", "right_sole_link")]
    out = output(model, state, holding_torques(model, state, soles), contacts=soles)
    f_n, f_t = contact_force_components(model, state, out.linearization)
    assert f_n.sum() == pytest.approx(urdf_mass(example_robot_path("talos")) * 9.81, rel=1e-8)
    values = entries(out)
    assert values["min_normal_force"] == f_n.min()
    positive = f_n > 0
    assert values["max_tangential_ratio"] == pytest.approx((f_t[positive] / f_n[positive]).max(), rel=1e-12)


def test_local_and_world_aligned_axes_of_one_contact_set_give_the_same_entries(rng):
    """The same physical contacts in two axes (λ differs: the feet turn with the knees):
    the normal forces and friction ratios agree, at a random state and torques."""
    state = rl.State(base_pose=se3_exp(rng.normal(size=6) * 0.3), joint_positions=STANCE + 0.2 * rng.normal(size=12),
                     base_twist=rng.normal(size=6), joint_velocities=rng.normal(size=12))
    torques = rng.normal(size=12)
    world = output(QUADRUPED, state, torques, contacts=[rl.Contact(f, "point", "world_aligned") for f in BUNDLED_FEET])
    local = output(QUADRUPED, state, torques, contacts=[rl.Contact(f, "point", "local") for f in BUNDLED_FEET])
    assert np.abs(world.linearization.contact_forces - local.linearization.contact_forces).max() > 1.0
    for a, b in zip(contact_force_components(QUADRUPED, state, world.linearization),
                    contact_force_components(QUADRUPED, state, local.linearization)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(health(world)[1], health(local)[1], rtol=1e-9)


def test_the_ground_normal_follows_the_models_gravity(rng):
    """A whole scene turned by R (gravity R g, base R H): every entry is the same, so the normal
    is −g/|g| of the model's gravity, not the world's z."""
    R = so3_exp(np.array([0.7, -0.4, 0.2]))
    turned_model = rl.load_urdf(bundled_urdf_path(), gravity=R @ np.array([0.0, 0.0, -9.81]))
    H = se3_exp(np.array([0.0, 0.0, 0.35, 0.0, 0.0, 0.4]))
    turned_H = np.eye(4)
    turned_H[:3, :3], turned_H[:3, 3] = R @ H[:3, :3], R @ H[:3, 3]
    torques = rng.normal(size=12)
    for reference in ("world_aligned", "local"):
        feet = [rl.Contact(f, "point", reference) for f in BUNDLED_FEET]
        upright = entries(output(QUADRUPED, at_rest(QUADRUPED, H), torques, contacts=feet))
        turned = entries(output(turned_model, at_rest(turned_model, turned_H), torques, contacts=feet))
        assert list(upright) == list(turned)
        for name in upright:
            assert turned[name] == pytest.approx(upright[name], rel=1e-7, abs=1e-7), name


def test_feet_that_all_pull_report_a_negative_normal_force_and_a_zero_ratio():
    """No contact with f_n > 0: max_tangential_ratio is 0 (README), min_normal_force < 0 says why."""
    feet = list(BUNDLED_FEET)
    out = output(QUADRUPED, at_rest(QUADRUPED), contacts=feet)
    pushing = entries(out)
    pulling = dataclasses.replace(out, linearization=dataclasses.replace(
        out.linearization, contact_forces=-out.linearization.contact_forces))
    values = entries(pulling)
    assert values["max_tangential_ratio"] == 0.0
    assert values["min_normal_force"] == pytest.approx(-out.linearization.contact_forces.reshape(4, 3)[:, 2].max())
    assert pushing["min_normal_force"] > 0 and pushing["max_tangential_ratio"] > 0


def test_no_entry_is_ever_inf_or_nan():
    """A foot about to lift (f_n = 1e-320, subnormal: ‖f_t‖/f_n overflows) and no gravity at all
    (no ground normal: world +z) still give finite entries."""
    out = output(QUADRUPED, at_rest(QUADRUPED), contacts=list(BUNDLED_FEET))
    forces = np.tile([1.0, 0.0, 1e-320], 4)
    values = entries(dataclasses.replace(out, linearization=dataclasses.replace(out.linearization,
                                                                                contact_forces=forces)))
    assert values["max_tangential_ratio"] == np.finfo(float).max
    weightless = rl.load_urdf(bundled_urdf_path(), gravity=(0.0, 0.0, 0.0))
    values = entries(output(weightless, at_rest(weightless), contacts=list(BUNDLED_FEET)))
    assert values["min_normal_force"] == pytest.approx(0.0, abs=1e-9)
    singular = dataclasses.replace(out.linearization, M_inv=np.diag([1.0] + [0.0] * 17))
    assert entries(dataclasses.replace(out, linearization=singular))["cond_M"] == COND_CAP


# ---- labels and the layout -----------------------------------------------------

@pytest.mark.parametrize("dt", [0.0, 2e-3])
@pytest.mark.parametrize("contacts", ["", "front_left_foot, hind_right_foot:point:local"])
def test_labels_follow_the_pipelines_outputs_and_absent_entries_are_absent(dt, contacts, rng):
    """Through the pipeline as the node runs it: the first three entries always, spectral_radius_A_d
    only with discretization_dt, the contact entries only with contacts; no NaN placeholders."""
    p = LinearizationPipeline(PipelineConfig(discretization_dt=dt, contacts=rl.contacts.as_contacts(contacts)))
    assert p.set_description(bundled_urdf_path()) is None
    state = random_state(QUADRUPED, rng)
    p.on_odometry(odometry_message(FACTORY, 10**9, "odom", "base_link", state.base_pose, state.base_twist))
    p.on_joint_state(joint_state_message(FACTORY, 10**9, QUADRUPED.joint_names, state.joint_positions,
                                         state.joint_velocities))
    (out,) = p.step(10**9)
    labels, values = health(out)
    expected = ["compute_time_ms", "spectral_abscissa_A", "cond_M"] + (["spectral_radius_A_d"] if dt else []) \
        + (["min_normal_force", "max_tangential_ratio"] if contacts else [])
    assert list(labels) == expected == list(health_labels(bool(dt), bool(contacts)))
    assert values.shape == (len(labels),) and np.isfinite(values).all()
    assert values[0] == pytest.approx(out.compute_time * 1e3, rel=1e-12) and 0 < values[0] < 1e4


def test_health_messages_survive_cdr_with_the_real_ros2_definitions(rng):
    """~/health: Float64MultiArray, dim = [('entries', k, k)], data_offset 0; ~/health_labels: JSON."""
    out = output(QUADRUPED, random_state(QUADRUPED, rng), contacts=list(BUNDLED_FEET), dt=1e-3)
    labels, values = health(out)
    raw = TYPESTORE.serialize_cdr(health_message(FACTORY, values), "std_msgs/msg/Float64MultiArray")
    msg = TYPESTORE.deserialize_cdr(raw, "std_msgs/msg/Float64MultiArray")
    assert [(d.label, d.size, d.stride) for d in msg.layout.dim] == [("entries", 6, 6)]
    assert msg.layout.data_offset == 0
    np.testing.assert_array_equal(np.asarray(msg.data), values)
    raw = TYPESTORE.serialize_cdr(health_labels_message(FACTORY, labels), "std_msgs/msg/String")
    assert json.loads(TYPESTORE.deserialize_cdr(raw, "std_msgs/msg/String").data) == list(labels)
    assert output_topics(False, 0.0)["health"] == "std_msgs/msg/Float64MultiArray"  # the node's publisher
    assert "health" not in output_topics(True, 0.0, publish_health=False)
