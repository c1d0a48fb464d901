"""The node's behaviour without rclpy: inputs as real ROS 2 messages (rosbags
classes through CDR), bad input of every kind, pairing, services, diagnostics."""

import tracemalloc

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

import robot_linearization as rl
from robot_linearization.robots import bundled_urdf_path
from robot_linearization.ros.interfaces import (linearization_matrices, linearization_message, register_interfaces,
                                                validation_fields)
from robot_linearization.ros.messages import CdrInputs, RosbagsFactory, joint_state_message, odometry_message
from robot_linearization.ros.pipeline import ERROR, OK, WARN, LinearizationPipeline, PipelineConfig
from robot_linearization.spatial import se3_exp

from conftest import example_robot_path

TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)
register_interfaces(TYPESTORE)
FACTORY = RosbagsFactory(TYPESTORE)
SEC = 1_000_000_000
URDF = open(bundled_urdf_path()).read()
MODEL = rl.load_urdf(URDF)


def wire(msg):
    return TYPESTORE.deserialize_cdr(TYPESTORE.serialize_cdr(msg, msg.__msgtype__), msg.__msgtype__)


def typed(pipeline):
    """The latest output as the robot_linearization/msg/Linearization the node publishes, through CDR."""
    return wire(linearization_message(FACTORY, pipeline.latest, pipeline.base_frame))


def joint_state(t, s, r, names=MODEL.joint_names, effort=()):
    return wire(joint_state_message(FACTORY, t, names, s, r, effort))


def odometry(t, H, v, child="base_link"):
    return wire(odometry_message(FACTORY, t, "odom", child, H, v))


@pytest.fixture
def pipeline():
    p = LinearizationPipeline(PipelineConfig())
    assert p.set_description(URDF) is None
    return p


def _state(rng):
    return se3_exp(rng.normal(size=6)), rng.normal(size=6), rng.normal(size=12), rng.normal(size=12)


def test_paired_inputs_give_the_linearization_of_that_state(pipeline, rng):
    H, v, s, r = _state(rng)
    assert pipeline.on_odometry(odometry(10 * SEC, H, v))
    assert pipeline.on_joint_state(joint_state(10 * SEC + 5_000_000, s, r))
    (out,) = pipeline.step(10 * SEC + 6_000_000 + 20_000_000)  # the tolerance has passed: no better odometry
    assert out.stamp_ns == 10 * SEC + 5_000_000
    expected = rl.linearize(MODEL, rl.State(base_pose=H, joint_positions=s, base_twist=v, joint_velocities=r))
    np.testing.assert_allclose(out.linearization.A, expected.A, rtol=1e-12, atol=1e-12)
    assert pipeline.step(10 * SEC + 7_000_000) == []  # nothing new: no duplicate output
    level, _, message, values = pipeline.diagnostics(10 * SEC + 8_000_000)[0]
    assert level == OK and values["outputs"] == 1 and "compute_time_ms" in values


def test_effort_parameter_feeds_the_torques(rng):
    p = LinearizationPipeline(PipelineConfig(use_effort=True))
    p.set_description(URDF)
    H, v, s, r = _state(rng)
    tau = rng.normal(size=12)
    p.on_odometry(odometry(SEC, H, v))
    p.on_joint_state(joint_state(SEC, s, r, effort=tau))
    (out,) = p.step(SEC)
    expected = rl.linearize(MODEL, out.state, tau)
    np.testing.assert_array_equal(out.joint_torques, tau)
    np.testing.assert_allclose(out.linearization.joint_accelerations, expected.joint_accelerations)


def test_a_joint_state_waits_for_the_odometry_of_its_own_stamp(pipeline, rng):
    """A robot publishes joint_states and odometry with the same stamp, one just
    after the other: the older odometry (within tolerance) must not be taken."""
    (H0, v0, s, r), (H1, v1, _, _) = _state(rng), _state(rng)
    pipeline.on_odometry(odometry(SEC, H0, v0))
    pipeline.on_joint_state(joint_state(SEC + 10_000_000, s, r))
    assert pipeline.step(SEC + 10_100_000) == []  # 10 ms old odometry: wait for a closer one
    pipeline.on_odometry(odometry(SEC + 10_000_000, H1, v1))
    (out,) = pipeline.step(SEC + 10_200_000)
    np.testing.assert_array_equal(out.state.base_pose, odometry_roundtrip(H1, v1)[0])
    assert pipeline.diagnostics(SEC + 10_200_000)[0][0] == OK


def test_a_newer_joint_state_completes_the_waiting_one_with_the_best_odometry(pipeline, rng):
    """Odometry slower than joint states: each joint state is linearized (one joint
    state late) with the nearest odometry within tolerance, none is skipped."""
    H, v, s, r = _state(rng)
    pipeline.on_odometry(odometry(SEC, H, v))
    pipeline.on_joint_state(joint_state(SEC + 2_000_000, s, r))
    assert pipeline.step(SEC + 2_100_000) == []
    pipeline.on_joint_state(joint_state(SEC + 4_000_000, s, r))
    (out,) = pipeline.step(SEC + 4_100_000)
    assert out.stamp_ns == SEC + 2_000_000
    np.testing.assert_array_equal(out.state.base_pose, odometry_roundtrip(H, v)[0])
    pipeline.on_odometry(odometry(SEC + 20_000_000, H, v))
    assert [o.stamp_ns for o in pipeline.step(SEC + 20_100_000)] == [SEC + 4_000_000]


def test_no_odometry_within_tolerance_means_no_output_and_a_warning(pipeline, rng):
    H, v, s, r = _state(rng)
    pipeline.on_odometry(odometry(SEC, H, v))
    pipeline.on_joint_state(joint_state(SEC + 100_000_000, s, r))  # 0.1 s later, tolerance 0.02 s
    assert pipeline.step(SEC + 100_000_000) == []  # waits: a closer odometry may still come
    assert pipeline.step(SEC + 130_000_000) == []  # it did not
    level, _, message, _ = pipeline.diagnostics(SEC + 100_000_000)[0]
    assert level == WARN and "no odometry within 0.02 s" in message


def test_stale_input_gives_no_output(pipeline, rng):
    H, v, s, r = _state(rng)
    pipeline.on_odometry(odometry(SEC, H, v))
    pipeline.on_joint_state(joint_state(SEC, s, r))
    assert pipeline.step(SEC + 2 * SEC) == []
    assert "stale" in pipeline.last_problem


def test_out_of_order_messages_are_dropped_never_paired(pipeline, rng):
    H, v, s, r = _state(rng)
    assert pipeline.on_joint_state(joint_state(5 * SEC, s, r))
    assert not pipeline.on_joint_state(joint_state(4 * SEC, s + 1, r))
    assert "not newer" in pipeline.last_problem
    assert pipeline.on_odometry(odometry(5 * SEC, H, v))
    assert not pipeline.on_odometry(odometry(3 * SEC, se3_exp(np.ones(6)), v))
    (out,) = pipeline.step(5 * SEC)
    np.testing.assert_array_equal(out.state.joint_positions, s)
    np.testing.assert_array_equal(out.state.base_pose, odometry_roundtrip(H, v)[0])


def odometry_roundtrip(H, v):
    from robot_linearization.ros.messages import odometry_base_state
    return odometry_base_state(odometry(0, H, v), "base_link")


@pytest.mark.parametrize("make_msg, message", [
    (lambda s, r: joint_state(SEC, s[:11], r[:11], names=MODEL.joint_names[:11]), "lacks joints"),
    (lambda s, r: joint_state(SEC, np.r_[s, 0.0], np.r_[r, 0.0], names=MODEL.joint_names + (MODEL.joint_names[0],)),
     "more than once"),
    (lambda s, r: joint_state(SEC, np.r_[s[:11], np.nan], r), "NaN"),
    (lambda s, r: joint_state(SEC, s, np.r_[r[:11], np.inf]), "NaN or inf"),
    (lambda s, r: wire(FACTORY.make("sensor_msgs/msg/JointState", header=joint_state(SEC, s, r).header,
                                    name=list(MODEL.joint_names), position=s, velocity=r[:5],
                                    effort=np.zeros(0))), "12 names but 5 velocity"),
])
def test_bad_joint_states_produce_a_diagnostic_and_no_matrix(pipeline, rng, make_msg, message):
    H, v, s, r = _state(rng)
    pipeline.on_odometry(odometry(SEC, H, v))
    assert not pipeline.on_joint_state(make_msg(s, r))
    assert pipeline.step(SEC) == []
    level, _, text, values = pipeline.diagnostics(SEC)[0]
    assert level == WARN and message in text and values["outputs"] == 0


@pytest.mark.parametrize("q, child, message", [
    ((0.0, 0.0, 0.0, 0.0), "base_link", "zero quaternion"),
    ((np.nan, 0.0, 0.0, 0.0), "base_link", "NaN"),
    ((1.0, 0.0, 0.0, 0.0), "odom", "child_frame_id is 'odom'"),
])
def test_bad_odometry_is_rejected(pipeline, rng, q, child, message):
    msg = odometry(SEC, np.eye(4), np.zeros(6), child=child)
    o = msg.pose.pose.orientation
    o.w, o.x, o.y, o.z = q
    assert not pipeline.on_odometry(msg)
    assert message in pipeline.last_problem


def test_slightly_non_unit_quaternion_is_normalised(pipeline, rng):
    msg = odometry(SEC, np.eye(4), np.zeros(6))
    msg.pose.pose.orientation.w = 1.003
    assert pipeline.on_odometry(msg)
    pipeline.on_joint_state(joint_state(SEC, np.zeros(12), np.zeros(12)))
    (out,) = pipeline.step(SEC)
    np.testing.assert_allclose(out.state.base_pose, np.eye(4))


def test_configured_base_frame_is_checked():
    p = LinearizationPipeline(PipelineConfig(base_frame="trunk"))
    p.set_description(URDF)
    assert not p.on_odometry(odometry(SEC, np.eye(4), np.zeros(6), child="base_link"))
    assert p.on_odometry(odometry(SEC, np.eye(4), np.zeros(6), child="trunk"))


def test_burst_of_ten_thousand_messages_keeps_memory_flat(pipeline, rng):
    H, v, s, r = _state(rng)
    msgs = [(odometry(k * 1_000_000, H, v), joint_state(k * 1_000_000, s, r)) for k in range(1, 10_001)]
    tracemalloc.start()
    for k, (odo, js) in enumerate(msgs):
        if k == 2_000:  # after the buffers and CPython's free lists (≤ 2000 tuples per size) have filled
            base, _ = tracemalloc.get_traced_memory()
        pipeline.on_odometry(odo)
        pipeline.on_joint_state(js)
    grown, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert grown - base < 50_000  # bytes, over 8000 messages: the buffers are bounded (8 joint states, 64 odometry)
    (out,) = pipeline.step(10_000 * 1_000_000, newest_only=True)
    assert out.stamp_ns == 10_000 * 1_000_000  # the newest one is used


def test_services_before_any_state_answer_cleanly(pipeline):
    level, _, message, _ = pipeline.diagnostics(SEC)[0]
    assert level == WARN and "waiting for joint_states and odometry" in message
    report, summary = pipeline.validate_output()
    assert report is None and "no linearization yet" in summary


def test_validate_service_and_the_typed_message_of_a_cycle(pipeline, rng):
    H, v, s, r = _state(rng)
    pipeline.on_odometry(odometry(SEC, H, v))
    pipeline.on_joint_state(joint_state(SEC, s, r))
    (out,) = pipeline.step(SEC)
    report, summary = pipeline.validate_output()
    fields = validation_fields(report, pipeline.config.validation_tolerance)
    assert fields["passed"] and max(fields["max_rel"]) < 1e-6 and "A[rdot,s]" in fields["blocks"]
    assert summary.startswith("PASS") and len(fields["scales"]) == len(fields["blocks"])
    message = typed(pipeline)
    assert message.header.stamp.sec == 1 and len(message.state_labels) == 36
    matrices = linearization_matrices(message)
    np.testing.assert_array_equal(matrices["state_matrix"], out.linearization.A)
    np.testing.assert_array_equal(matrices["inverse_mass_matrix"], out.linearization.M_inv)
    assert message.state_labels[0] == "H:x" and message.joint_names[0] == MODEL.joint_names[0]
    assert "last_validation" in pipeline.diagnostics(SEC)[0][3]


def test_failed_validation_is_an_error_diagnostic(pipeline, rng):
    p = LinearizationPipeline(PipelineConfig(validation_tolerance=1e-30))
    p.set_description(URDF)
    H, v, s, r = _state(rng)
    p.on_odometry(odometry(SEC, H, v))
    p.on_joint_state(joint_state(SEC, s, r))
    p.step(SEC)
    report, _ = p.validate_output()
    assert not report.passed(1e-30) and p.diagnostics(SEC)[0][0] == ERROR


def test_invalid_description_keeps_the_previous_model(pipeline):
    error = pipeline.set_description("<robot name='x'><link name='a'>")
    assert "not well-formed" in error and pipeline.model.name == "rl_quadruped"
    assert "keeping model 'rl_quadruped'" in pipeline.last_problem


@pytest.mark.parametrize("description, message", [
    ("<robot name='x'><link name='a'>", "not well-formed"),
    ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
     '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><robot name="&c;"/>', "DOCTYPE/ENTITY"),
    ("<robot name='x'>" + "<!-- padding -->" * 2_000_000 + "</robot>", "more than the"),
    ("<html><body/></html>", "not a URDF"),
])
def test_hostile_or_invalid_description_fails_fast_without_a_model(description, message):
    import time
    p = LinearizationPipeline(PipelineConfig())
    start = time.perf_counter()
    error = p.set_description(description)
    assert time.perf_counter() - start < 1.0
    assert message in error and p.model is None
    assert not p.on_joint_state(joint_state(SEC, np.zeros(12), np.zeros(12)))
    level, _, text, _ = p.diagnostics(SEC)[0]
    assert level == ERROR and message in text


def test_fixed_base_robot_needs_no_odometry(rng):
    p = LinearizationPipeline(PipelineConfig(floating_base=False))
    assert p.set_description(example_robot_path("ur5")) is None
    names = p.model.joint_names
    p.on_joint_state(joint_state(SEC, rng.normal(size=6), rng.normal(size=6), names=names))
    (out,) = p.step(SEC)
    assert out.linearization.A.shape == (12, 12) and out.state.base_pose is None


def test_a_singular_state_never_publishes_nan():
    """A model whose mass matrix is singular away from the checked configurations:
    two coaxial revolute joints with a massless link between would do; here we
    force it through a torque that is not finite, which must be refused."""
    p = LinearizationPipeline(PipelineConfig(use_effort=True))
    p.set_description(URDF)
    p.on_odometry(odometry(SEC, np.eye(4), np.zeros(6)))
    assert not p.on_joint_state(joint_state(SEC, np.zeros(12), np.zeros(12), effort=np.full(12, np.nan)))
    assert p.step(SEC) == [] and p.latest is None


@pytest.mark.parametrize("use_effort", [False, True])
def test_stock_joint_state_publisher_messages_are_linearized_at_zero_velocity(rng, use_effort):
    """joint_state_publisher (stock ROS 2 robot stack) publishes velocity and effort
    empty: a fixed-base ur5 is linearized at zero joint velocity (and zero torque),
    the assumption is told once and shown in the diagnostics, nothing is rejected."""
    p = LinearizationPipeline(PipelineConfig(floating_base=False, use_effort=use_effort))
    assert p.set_description(example_robot_path("ur5")) is None
    notices = []
    p.on_notice = notices.append
    names = list(p.model.joint_names)
    for k in range(3):
        s = rng.uniform(-1, 1, len(names))
        # in another order, with a joint the model does not have, as a driver may send
        assert p.on_joint_state(joint_state((k + 1) * SEC, np.r_[s[::-1], 9.0], [], names=names[::-1] + ["extra"]))
        (out,) = p.step((k + 1) * SEC)
        expected = rl.linearize(p.model, rl.State(joint_positions=s,
                                                  joint_velocities=np.zeros(len(names))))
        np.testing.assert_array_equal(out.state.joint_velocities, np.zeros(len(names)))
        np.testing.assert_array_equal(out.joint_torques, np.zeros(len(names)))
        np.testing.assert_allclose(out.linearization.A, expected.A, rtol=1e-12, atol=1e-12)
    assert len(notices) == (2 if use_effort else 1) and "zero joint velocity" in notices[0]
    level, _, message, values = p.diagnostics(3 * SEC)[0]
    assert level == OK and "zero joint velocity" in message and "zero joint velocity" in values["assumed"]
    assert values["outputs"] == 3 and not any(k.startswith("rejected") for k in values)
    # a robot that does send velocities: used, and the assumption is no longer shown
    r = rng.normal(size=len(names))
    assert p.on_joint_state(joint_state(4 * SEC, np.zeros(len(names)), r, names=names,
                                        effort=np.zeros(len(names))))
    (out,) = p.step(4 * SEC)
    np.testing.assert_array_equal(out.state.joint_velocities, r)
    assert "assumed" not in p.diagnostics(4 * SEC)[0][3]
    # a non-empty array of the wrong length is still rejected
    assert not p.on_joint_state(joint_state(5 * SEC, np.zeros(len(names)), [1.0], names=names))
    assert "6 names but 1 velocity" in p.last_problem


FEET = ("front_left_foot", "front_right_foot", "hind_left_foot", "hind_right_foot")


def one_output(config, rng):
    """(pipeline, its output, the state) for one paired joint state and odometry at a random state."""
    p = LinearizationPipeline(config)
    assert p.set_description(URDF) is None
    H, v, s, r = _state(rng)
    p.on_odometry(odometry(SEC, H, v))
    p.on_joint_state(joint_state(SEC, s, r))
    (out,) = p.step(SEC)
    return p, out, rl.State(base_pose=H, joint_positions=s, base_twist=v, joint_velocities=r)


def test_contacts_parameter_and_runtime_changes_of_the_contact_set(rng):
    """A standing quadruped: the constrained linearization and λ with every output;
    a new set (a gait's swing phase) applies from the next joint state; a bad set is
    refused with a diagnostic and the previous one kept."""
    from robot_linearization.ros.messages import OUTPUT_TYPES, output_messages

    p, out, state = one_output(PipelineConfig(contacts=rl.contacts.as_contacts(", ".join(FEET))), rng)
    H, v, s, r = state.base_pose, state.base_twist, state.joint_positions, state.joint_velocities
    expected = rl.linearize(MODEL, state, contacts=list(FEET))
    np.testing.assert_allclose(out.linearization.A, expected.A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.linearization.contact_forces, expected.contact_forces, rtol=1e-12, atol=1e-12)
    messages = output_messages(FACTORY, out, "base_link")
    assert list(messages)[-1] == "stamp" and set(messages) <= set(OUTPUT_TYPES)
    forces = wire(messages["contact_forces"])
    np.testing.assert_array_equal(np.asarray(forces.data), out.linearization.contact_forces)
    assert wire(messages["contact_forces_state_jacobian"]).layout.dim[1].size == 36
    message = typed(p)
    assert message.contact_labels[0] == "front_left_foot:fx" and len(message.contact_forces) == 12
    report, _ = p.validate_output()
    blocks = validation_fields(report, 1e-6)["blocks"]
    assert report.passed(1e-6) and "dlambda/dz[s]" in blocks and "lambda" in blocks
    assert {"A[Hdot,H]", "A[Hdot,v]", "A[sdot,r]"} <= set(blocks)  # the kinematic rows too
    assert "front_left_foot:point:world_aligned" in p.diagnostics(SEC)[0][3]["contacts"]

    assert p.set_contacts("front_left_foot, hind_right_foot:point:local") is None  # a trot's stance pair
    p.on_odometry(odometry(2 * SEC, H, v))
    p.on_joint_state(joint_state(2 * SEC, s, r))
    (out,) = p.step(2 * SEC)
    assert out.linearization.contact_labels[3] == "hind_right_foot:fx" and len(out.linearization.contact_labels) == 6
    for bad, reason in [("front_left_foot:plane", "kind must be one of"), ("left_sole", "not a link of model"),
                        ("a:b:c:d", "is not frame")]:
        assert p.set_contacts(bad) is not None
        assert reason in p.last_problem and "keeping [front_left_foot:point:world_aligned" in p.last_problem
    assert p.set_contacts("") is None and p.contacts == ()  # flight: free-floating
    p.on_odometry(odometry(3 * SEC, H, v))
    p.on_joint_state(joint_state(3 * SEC, s, r))
    (out,) = p.step(3 * SEC)
    assert out.linearization.contact_forces is None
    assert "contact_forces" not in output_messages(FACTORY, out, "base_link")


def test_a_degenerate_contact_set_gives_a_diagnostic_and_no_output(rng):
    p = LinearizationPipeline(PipelineConfig())
    p.set_description(URDF)
    assert p.set_contacts(", ".join(f + ":6d" for f in FEET)) is None  # the frames exist ...
    H, v, s, r = _state(rng)
    p.on_odometry(odometry(SEC, H, v))
    p.on_joint_state(joint_state(SEC, s, r))
    assert p.step(SEC) == []  # ... but 24 constraints on 18 velocities are redundant
    level, _, message, values = p.diagnostics(SEC)[0]
    assert level == WARN and "only 18 are independent" in message and values["rejected_contacts"] == 1


def test_a_state_where_the_mass_matrix_is_singular_gets_a_diagnostic_and_no_output(rng):
    import os

    from conftest import ROBOTS_DIR

    p = LinearizationPipeline(PipelineConfig())
    assert p.set_description(os.path.join(ROBOTS_DIR, "icub_description/robots/icub.urdf")) is None
    names, n = p.model.joint_names, p.model.n_joints
    p.on_odometry(odometry(SEC, np.eye(4), np.zeros(6), child=p.model.body_names[0]))
    p.on_joint_state(joint_state(SEC, np.zeros(n), np.zeros(n), names=names))
    assert p.step(SEC) == []
    level, _, message, values = p.diagnostics(SEC)[0]
    assert level == WARN and "mass matrix is singular at this state: joint 'neck_roll'" in message
    p.on_odometry(odometry(2 * SEC, np.eye(4), np.zeros(6), child=p.model.body_names[0]))
    p.on_joint_state(joint_state(2 * SEC, rng.uniform(-1, 1, n), np.zeros(n), names=names))
    (out,) = p.step(2 * SEC)
    assert np.isfinite(out.linearization.A).all()


def test_a_joint_state_is_paired_with_the_nearest_odometry_not_the_newest(rng):
    """A state estimator at 1 kHz and joint states slower: the odometry of 0 ms (x = 0)
    is nearest to a joint state of 2 ms, not the newer one of 15 ms (x = 1)."""
    p = LinearizationPipeline(PipelineConfig())
    p.set_description(URDF)
    _, v, s, r = _state(rng)
    at = lambda x: se3_exp(np.array([x, 0.0, 0.0, 0.0, 0.0, 0.0]))  # noqa: E731
    assert p.on_odometry(odometry(10 * SEC, at(0.0), v))
    assert p.on_odometry(odometry(10 * SEC + 15_000_000, at(1.0), v))
    assert p.on_joint_state(joint_state(10 * SEC + 2_000_000, s, r))
    (out,) = p.step(10 * SEC + 16_000_000)
    assert out.state.base_pose[0, 3] == 0.0


@pytest.mark.parametrize("gap_ns, paired", [(20_000_000, True), (20_000_001, False)])
def test_pairing_tolerance_boundary_is_inclusive(rng, gap_ns, paired):
    """README: a joint state is paired with odometry within pairing_tolerance (0.02 s):
    exactly 20 ms apart is paired, 1 ns more is not."""
    p = LinearizationPipeline(PipelineConfig(pairing_tolerance=0.02))
    p.set_description(URDF)
    H, v, s, r = _state(rng)
    assert p.on_odometry(odometry(10 * SEC, H, v))
    assert p.on_joint_state(joint_state(10 * SEC + gap_ns, s, r))
    outputs = p.step(10 * SEC + gap_ns + 30_000_000)  # the tolerance has passed: decide now
    assert bool(outputs) == paired
    if not paired:
        assert "no odometry within 0.02 s" in p.last_problem


def test_discretization_dt_adds_the_step_jacobians_to_every_output(rng):
    """discretization_dt > 0: A_d, B_d of that step with every output (and in the services),
    equal to rl.linearize(..., dt=); the node's publishers follow output_topics."""
    from robot_linearization.ros.messages import matrix_from_message, output_messages, output_topics

    p, out, state = one_output(PipelineConfig(discretization_dt=2e-3,
                                              contacts=rl.contacts.as_contacts(", ".join(FEET[:2]))), rng)
    expected = rl.linearize(MODEL, state, contacts=list(FEET[:2]), dt=2e-3)
    messages = output_messages(FACTORY, out, "base_link")
    assert list(messages)[-3:] == ["A_d", "B_d", "stamp"]
    np.testing.assert_allclose(matrix_from_message(wire(messages["A_d"])), expected.A_d, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(matrix_from_message(wire(messages["B_d"])), expected.B_d, rtol=1e-12, atol=1e-12)
    message = typed(p)  # (H through the odometry message's quaternion: equal to 1e-16)
    assert message.dt == 2e-3 and message.discretization == "euler"
    np.testing.assert_allclose(linearization_matrices(message)["discrete_state_matrix"], expected.A_d, rtol=1e-12,
                               atol=1e-12)
    report, _ = p.validate_output()
    assert report.passed(1e-6) and "A_d[H+,v]" in validation_fields(report, 1e-6)["blocks"]
    assert {"A_d", "B_d"} <= set(output_topics(True, 2e-3)) and not {"A_d", "B_d"} & set(output_topics(True, 0.0))
    assert "A_heatmap" not in output_topics(False, 0.0)

    plain, out, _ = one_output(PipelineConfig(), rng)
    assert "A_d" not in output_messages(FACTORY, out, "base_link")
    assert linearization_matrices(typed(plain))["discrete_state_matrix"] is None and typed(plain).dt == 0.0


def test_a_joint_state_that_cannot_be_read_is_a_diagnostic(pipeline, rng):
    """What the node does with serialized input CdrInputs cannot read (truncated bytes):
    a warning diagnostic counted under the topic, no matrix, and the next good pair works."""
    from robot_linearization.ros.messages import CdrInputs, InputError

    H, v, s, r = _state(rng)
    raw = TYPESTORE.serialize_cdr(joint_state_message(FACTORY, SEC, MODEL.joint_names, s, r),
                                  "sensor_msgs/msg/JointState")
    with pytest.raises(InputError) as error:
        CdrInputs().joint_state(raw[:-20])
    assert not pipeline.reject_input(str(error.value), "joint_states")
    level, _, text, values = pipeline.diagnostics(SEC)[0]
    assert level == WARN and "truncated or malformed" in text and values["rejected_joint_states"] == 1
    assert pipeline.step(SEC + 50_000_000) == []
    assert pipeline.on_odometry(odometry(2 * SEC, H, v))
    assert pipeline.on_joint_state(CdrInputs().joint_state(TYPESTORE.serialize_cdr(
        joint_state_message(FACTORY, 2 * SEC, MODEL.joint_names, s, r), "sensor_msgs/msg/JointState")))
    (out,) = pipeline.step(2 * SEC)
    np.testing.assert_array_equal(out.state.joint_positions, s)


@pytest.mark.parametrize("dt", [0.0, 0.002])
def test_loading_a_model_warms_up_the_linearization_it_will_run(monkeypatch, dt):
    """The warm-up (which compiles the kernels before the first cycle) must not fail on
    its own arguments: it swallows ValueError (a singular warm-up state), so an argument
    error there went unnoticed and the first control cycle paid the compile."""
    import robot_linearization.ros.pipeline as pipeline_module

    outcomes = []

    def recording(*args, **kwargs):
        try:
            result = rl.linearize(*args, **kwargs)
        except ValueError as e:
            outcomes.append(str(e))
            raise
        outcomes.append("ok")
        return result

    monkeypatch.setattr(pipeline_module, "linearize", recording)
    p = LinearizationPipeline(PipelineConfig(discretization_dt=dt))
    assert p.set_description(rl.robots.bundled_urdf_path()) is None
    assert outcomes == ["ok"]


def test_an_input_topic_with_publishers_that_delivers_nothing_is_a_warning_within_a_second(pipeline, rng):
    """The node's input path failing silently (rclpy's private API returning nothing) must
    not look like an idle robot: a topic with publishers and no message for 0.5 s is a WARN
    naming it and the input path, reported as it appears; it clears when messages flow."""
    pipeline.input_path = "wait_set"
    second = 1_000_000_000
    assert not pipeline.watch_inputs(0, {"joint_states": 1, "odometry": 1})
    pipeline.note_received("odometry")
    assert not pipeline.watch_inputs(second // 4, {"joint_states": 1, "odometry": 1})
    pipeline.note_received("odometry")
    assert pipeline.watch_inputs(second // 2, {"joint_states": 1, "odometry": 1})  # appears: True once
    pipeline.note_received("odometry")
    assert not pipeline.watch_inputs(3 * second // 4, {"joint_states": 1, "odometry": 1})
    (level, _, message, values), = pipeline.diagnostics(3 * second // 4)
    assert level == WARN and message.startswith("joint_states has 1 publisher but nothing arrived for 0.8 s")
    assert "odometry" not in message and "(input path: wait_set)" in message and values["input_path"] == "wait_set"
    pipeline.note_received("joint_states")
    assert not pipeline.watch_inputs(second, {"joint_states": 1, "odometry": 1})
    assert pipeline.input_problem is None
    # no publishers: silence is expected, not a problem
    assert not pipeline.watch_inputs(10 * second, {"joint_states": 0, "odometry": 0})
    assert pipeline.input_problem is None


def test_a_clock_that_jumps_between_two_looks_is_not_a_silence():
    """Sim time is 0 until the first /clock, which then jumps to the bag's time (`ros2 bag play --clock`):
    a jump between two looks starts the count again; a silence after it is still one."""
    pipeline = LinearizationPipeline(PipelineConfig())
    second, both = 1_000_000_000, {"joint_states": 1, "odometry": 1}
    for _ in range(3):  # (no /clock yet: looks every 0.1 s of the steady clock, all at sim time 0)
        assert not pipeline.watch_inputs(0, both)
    assert not pipeline.watch_inputs(100 * second, both) and pipeline.input_problem is None
    for k in range(1, 5):
        assert not pipeline.watch_inputs(100 * second + k * second // 10, both)
    assert pipeline.watch_inputs(100 * second + second // 2, both)
    assert pipeline.input_problem.startswith("joint_states has 1 publisher but nothing arrived for 0.5 s; odometry")
    pipeline.note_received("joint_states")
    pipeline.note_received("odometry")
    assert not pipeline.watch_inputs(3 * second, both) and pipeline.input_problem is None  # (a jump back)


def test_a_clock_that_jumps_back_restarts_the_pairing_and_serves_again(rng):
    """A bag played with --loop --clock: the node's clock and the stamps go back to the start at
    every loop.  Each jump is said once (on_notice, the node's WARN), the queued inputs and newest
    stamps are dropped, and every loop is served — not only the first."""
    pipeline = LinearizationPipeline(PipelineConfig())
    assert pipeline.set_description(URDF) is None
    warnings = []
    pipeline.on_notice = warnings.append
    H, v, s, r = _state(rng)
    served = []
    for loop in range(3):
        for k in range(5):
            t = 100 * SEC + k * 10_000_000
            assert pipeline.on_odometry(odometry(t, H, v)), (loop, k, pipeline.last_problem)
            assert pipeline.on_joint_state(joint_state(t, s, r)), (loop, k, pipeline.last_problem)
            served += [(loop, out.stamp_ns) for out in pipeline.step(t + 1_000_000)]
    assert [loop for loop, _ in served] == [0] * 5 + [1] * 5 + [2] * 5, served
    jumps = [w for w in warnings if "jump back in time" in w]
    assert len(jumps) == 2 and "1 of" not in jumps[0], warnings
    assert pipeline.diagnostics(100 * SEC + 50_000_000)[0][3]["time_jumps_back"] == 2


def test_a_bag_looped_with_its_clock_is_served_in_every_loop_from_its_first_input(rng):
    """`ros2 bag play --loop --clock` of 3 s (longer than max_input_age) at 100 Hz, three loops, driven as
    node.py drives the pipeline: each serialized input read by CdrInputs and handed to pipeline.receive at
    the node's clock, which is the latest /clock — published at 40 Hz, so that at each loop's start the
    first two pairs of inputs come before the loop's first clock.  Every joint state of every loop is
    served, and each jump back is said once, at the loop's first clock."""
    pipeline = LinearizationPipeline(PipelineConfig())
    assert pipeline.set_description(URDF) is None
    warnings = []
    pipeline.on_notice = lambda text: warnings.append((clock, text))
    H, v, s, r = _state(rng)
    period, clock_period, first_clock = 10_000_000, 25_000_000, 20_000_000  # [ns] after the loop's start
    inputs = [(k * period, [(topic, TYPESTORE.serialize_cdr(message, message.__msgtype__)) for topic, message in
                            (("odometry", odometry(100 * SEC + k * period, H, v)),
                             ("joint_states", joint_state(100 * SEC + k * period, s, r)))]) for k in range(300)]
    reader = CdrInputs()
    read = {"odometry": reader.odometry, "joint_states": reader.joint_state}
    clock, served = 0, [set(), set(), set()]  # (sim time is 0 until the first /clock)
    for loop in range(3):
        next_clock = first_clock
        for offset, messages in inputs:
            while next_clock <= offset:  # the /clock messages that came before this input
                clock, next_clock = 100 * SEC + next_clock, next_clock + clock_period
            for topic, raw in messages:
                for out in pipeline.receive(topic, read[topic](raw), clock, step=True):
                    served[loop].add(out.stamp_ns)
                    assert out.state.base_pose is not None
    assert [len(stamps) for stamps in served] == [300, 300, 300]
    jumps = [(at, text) for at, text in warnings if "jump back in time" in text]
    assert [at for at, _ in jumps] == [100 * SEC + first_clock] * 2, warnings  # at the loops' first clocks
    values = pipeline.diagnostics(clock)[0][3]
    assert values["time_jumps_back"] == 2 and values["outputs"] == 900 and values.get("rejected_out_of_order") is None


def test_a_loops_last_messages_taken_after_its_next_clock_are_dropped_not_taken_for_a_second_jump(rng):
    """`ros2 bag play --loop --clock`: the loop's last messages can cross the next loop's first /clock, so
    the node takes them after its clock went back.  Stamped ahead of the clock by more than max_input_age,
    they belong to the timeline the clock left: dropped (out of order, with the reason), and the next
    loop's inputs are served without a second jump back (each jump is said once)."""
    pipeline = LinearizationPipeline(PipelineConfig())
    assert pipeline.set_description(URDF) is None
    warnings = []
    pipeline.on_notice = warnings.append
    H, v, s, r = _state(rng)
    period, served = 10_000_000, []
    for loop in range(3):
        for k in range(300):
            t = 100 * SEC + k * period
            served += pipeline.receive("odometry", odometry(t, H, v), t)
            served += pipeline.receive("joint_states", joint_state(t, s, r), t)
        # the next loop's first clock comes before this loop's last pair
        last = 100 * SEC + 300 * period
        pipeline.observe_clock(100 * SEC)
        assert not pipeline.receive("odometry", odometry(last, H, v), 100 * SEC + 1_000_000)
        assert pipeline.last_problem == (f"odometry stamp {last * 1e-9:.9f} s is ahead of the node's clock "
                                         "(100.001 s), which went back from 102.990 s: a message of the timeline "
                                         "it left, dropped")
        assert not pipeline.receive("joint_states", joint_state(last, s, r), 100 * SEC + 1_000_000)
    assert len({out.stamp_ns for out in served}) == 300 and len(served) == 900
    jumps = [text for text in warnings if "jump back in time" in text]
    assert jumps == ["detected jump back in time: the node's clock went from 102.990 s to 100.000 s; dropped the "
                     "queued inputs, serving again from the next paired input"] * 3, warnings
    values = pipeline.diagnostics(100 * SEC)[0][3]
    assert values["time_jumps_back"] == 3 and values["rejected_out_of_order"] == 6
    # once the clock is back where it went back from, a message stamped ahead of it is no longer taken for one
    # of the timeline left (max_input_age says how old an input may be, not how new)
    pipeline.observe_clock(103 * SEC)
    assert pipeline.on_odometry(odometry(104 * SEC, H, v))


def test_the_clock_alone_jumping_back_drops_the_queue_and_a_late_message_is_not_a_new_timeline(rng):
    pipeline = LinearizationPipeline(PipelineConfig())
    assert pipeline.set_description(URDF) is None
    H, v, s, r = _state(rng)
    assert pipeline.on_odometry(odometry(50 * SEC, H, v)) and pipeline.on_joint_state(joint_state(50 * SEC, s, r))
    assert len(pipeline.step(50 * SEC + 1_000_000)) == 1
    # a message 1 s late by a clock that did not go back: held until the clock next moves (it could be a
    # new timeline's first, its clock still on the way), then, the clock gone on, out of order: dropped,
    # nothing reset
    assert not pipeline.on_joint_state(joint_state(49 * SEC, s, r))
    pipeline.observe_clock(50 * SEC + 2_000_000)
    assert "49.000000000 s went back in time and the node's clock did not: dropped" in pipeline.last_problem
    values = pipeline.diagnostics(50 * SEC)[0][3]
    assert values.get("time_jumps_back") is None and values["rejected_out_of_order"] == 1
    # the clock restarts (sim time): the next inputs, stamped by it, are served
    pipeline.step(1 * SEC)
    assert pipeline.on_odometry(odometry(1 * SEC + 5_000_000, H, v))
    assert pipeline.on_joint_state(joint_state(1 * SEC + 5_000_000, s, r))
    (out,) = pipeline.step(1 * SEC + 6_000_000)
    assert out.stamp_ns == 1 * SEC + 5_000_000


def test_inputs_dropped_as_stale_or_late_are_said_on_the_console_at_once_then_throttled(pipeline, rng, monkeypatch):
    """A bag played without --clock: every joint state stamped 10 s behind the node's clock is dropped as
    stale.  The node's WARN log (on_dropped) hears of the first at once, then of how many more at most
    once each DROPPED_WARNING_PERIOD s of steady time; other rejections are /diagnostics' only."""
    from robot_linearization.ros import pipeline as module

    said, steady = [], [1000.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: steady[0])
    pipeline.on_dropped = said.append
    H, v, s, r = _state(rng)
    for k in range(200):  # (100 Hz for 2 s, the clock 10 s ahead of the stamps)
        stamp = 100 * SEC + k * 10_000_000
        steady[0] += 0.01
        pipeline.receive("odometry", odometry(stamp, H, v), stamp + 10 * SEC)
        pipeline.receive("joint_states", joint_state(stamp, s, r), stamp + 10 * SEC)
    assert pipeline.latest is None and len(said) == 1
    assert said[0].startswith("1 input dropped, the latest: joint_states is stale: 10.000 s old (max_input_age "
                              "0.5 s). Their stamps are behind the node's clock or go back (a bag played without "
                              "--clock")
    steady[0] += 3.1  # (5 s since the first)
    pipeline.receive("joint_states", joint_state(103 * SEC, s, r), 113 * SEC)
    assert len(said) == 2 and said[1].startswith("200 inputs dropped in the last 5 s, the latest: joint_states is "
                                                 "stale: 10.000 s old")
    pipeline.receive("joint_states", joint_state(104 * SEC, s, r[:3]), 114 * SEC)  # (another reason: not said)
    steady[0] += 60
    pipeline.receive("odometry", odometry(90 * SEC, H, v), 114 * SEC)  # (a stamp that went back: held ...)
    assert len(said) == 2
    pipeline.step(114 * SEC + 1)  # (... until the clock moves on without jumping: then dropped, and said)
    assert len(said) == 3 and "1 input dropped in the last 60 s, the latest: odometry stamp 90.000000000 s" in said[2]
