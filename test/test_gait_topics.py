"""The contacts topic as a gait schedule (issue 21, item 4), without ROS: a touchdown's impact
map on ~/impact_map and ~/impulses, the contact margins on ~/contact_margins every cycle with
contacts, a WARN while a foot pulls or slips, their parameters, and the replay doing the same.
Inputs are real ROS 2 messages (rosbags' classes through CDR), as the node receives them; each
expected value is computed here independently (rl.impact, rl.linearize, contact_margins called
directly, finite differences of the impact)."""

import json

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

import robot_linearization as rl
from robot_linearization.cli import main
from robot_linearization.contact_margins import contact_margins
from robot_linearization.contacts import as_contacts
from robot_linearization.impacts import touchdown
from robot_linearization.robots import BUNDLED_FEET, bundled_urdf_path
from robot_linearization.ros.bag import replay
from robot_linearization.ros.interfaces import linearization_matrices, linearization_message, register_interfaces
from robot_linearization.ros.messages import (OUTPUT_TYPES, RosbagsFactory, joint_state_message, matrix_from_message,
                                              odometry_message, output_messages, output_topics)
from robot_linearization.ros.parameters import PARAMETERS, node_settings
from robot_linearization.ros.pipeline import OK, WARN, LinearizationPipeline, PipelineConfig
from robot_linearization.spatial import se3_exp
from robot_linearization.validation import finite_difference_impact

from conftest import example_robot_path, write_bag
from test_bag_replay import read_bag
from test_contact_margins import standing


def replay_with_matrix_topics(*arguments, **options):
    """The replay with the per-matrix topics too (publish_matrix_topics), which these tests read."""
    return replay(*arguments, matrix_topics=True, **options)

TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)
register_interfaces(TYPESTORE)
FACTORY = RosbagsFactory(TYPESTORE)
SEC, MS = 1_000_000_000, 1_000_000
URDF = open(bundled_urdf_path()).read()
MODEL = rl.load_urdf(URDF)
STANCE = ", ".join(BUNDLED_FEET)
SWING = "front_left_foot, hind_right_foot"  # a trot's stance pair: the other two feet swing
POSTURE = np.tile([0.1, 0.8, -1.5], 4)
BASE = se3_exp(np.array([0.3, -0.2, 0.35, 0.0, 0.0, 0.7]))


def wire(msg):
    return TYPESTORE.deserialize_cdr(TYPESTORE.serialize_cdr(msg, msg.__msgtype__), msg.__msgtype__)


def typed(output):
    """An Output as the robot_linearization/msg/Linearization the node publishes, through CDR."""
    return wire(linearization_message(FACTORY, output, "base_link"))


def feed(pipeline, t, joint_velocities=None, base_twist=None, effort=()):
    """One paired joint state and odometry at ``t`` (the quadruped at POSTURE on BASE); the outputs."""
    n = MODEL.n_joints
    r = np.zeros(n) if joint_velocities is None else joint_velocities
    v = np.zeros(6) if base_twist is None else base_twist
    assert pipeline.on_odometry(wire(odometry_message(FACTORY, t, "odom", "base_link", BASE, v)))
    assert pipeline.on_joint_state(wire(joint_state_message(FACTORY, t, MODEL.joint_names, POSTURE, r, effort)))
    return pipeline.step(t)


def new_pipeline(**config):
    p = LinearizationPipeline(PipelineConfig(contacts=as_contacts(STANCE), **config))
    assert p.set_description(URDF) is None
    return p


def landing_velocities(rng):
    """A trot's landing: the body sinking and the swing legs (front right, hind left) moving."""
    r = 0.3 * rng.normal(size=MODEL.n_joints)
    return r, np.array([0.1, 0.0, -0.4, 0.05, -0.1, 0.2])


@pytest.mark.parametrize("restitution", [0.0, 0.5])
def test_a_schedule_stance_swing_touchdown_gives_one_impact_map_at_the_touchdown(rng, restitution):
    """stance → swing (lift-off: no impact) → touchdown: exactly one cycle carries the impact, the
    first joint state at or after the switch; its ~/impact_map is rl.impact's A at that state
    (and the finite differences of the impact), ~/impulses its Λ; A, B and λ of that cycle are
    at the post-impact state; ~/stamp follows them with the joint state's stamp."""
    p = new_pipeline(restitution=restitution)
    r, v = landing_velocities(rng)
    outputs = [*feed(p, 1 * SEC, r, v)]
    assert p.set_contacts(SWING) is None
    outputs += feed(p, 2 * SEC, r, v) + feed(p, 3 * SEC, r, v)
    assert p.set_contacts(STANCE) is None  # touchdown of the swing feet
    outputs += feed(p, 4 * SEC, r, v) + feed(p, 5 * SEC, r, v)
    assert [out.impact is not None for out in outputs] == [False, False, False, True, False]
    names = [list(output_messages(FACTORY, out, "base_link")) for out in outputs]
    assert [("impact_map" in n, "impulses" in n) for n in names] == [(False, False)] * 3 + [(True, True)] + \
        [(False, False)]
    assert names[3][-1] == "stamp" and set(names[3]) <= set(OUTPUT_TYPES)

    touchdown = outputs[3]
    state = touchdown.state  # the joint state and odometry as the pipeline read them (the pre-impact state)
    np.testing.assert_allclose(state.joint_velocities, r)
    expected = rl.impact(MODEL, state, list(BUNDLED_FEET), restitution=restitution)
    messages = {name: wire(message) for name, message in output_messages(FACTORY, touchdown, "base_link").items()}
    impact_map = matrix_from_message(messages["impact_map"])
    impulses = matrix_from_message(messages["impulses"])
    np.testing.assert_allclose(impact_map, expected.A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(impulses[:, 0], expected.impulses, rtol=1e-12, atol=1e-12)
    assert impulses.shape == (12, 1) and touchdown.impact.impulse_labels == rl.contacts.contact_labels(
        as_contacts(STANCE))  # named by ~/contact_labels: the new set's
    assert np.abs(expected.impulses).max() > 0.1  # (N·s: a real landing of the light quadruped, not zero)
    A_fd, impulses_fd = finite_difference_impact(MODEL, state, list(BUNDLED_FEET), restitution)
    scale = np.abs(A_fd).max()
    assert np.abs(impact_map - A_fd).max() < 1e-6 * scale
    assert np.abs(touchdown.impact.impulses_state_jacobian - impulses_fd).max() < 1e-6 * np.abs(impulses_fd).max()
    stamp = messages["stamp"].stamp
    assert stamp.sec * SEC + stamp.nanosec == 4 * SEC == touchdown.stamp_ns
    # A, B, λ of the touchdown cycle at x⁺ (the robot an instant later); the margins of that linearization
    at_post = rl.linearize(MODEL, expected.state, contacts=list(BUNDLED_FEET))
    np.testing.assert_allclose(touchdown.linearization.A, at_post.A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(touchdown.linearization.contact_forces, at_post.contact_forces, rtol=1e-12,
                               atol=1e-9)
    # the diagnostics count it; the service carries it
    assert p.diagnostics(5 * SEC)[0][3]["impacts"] == 1
    feed(p, 6 * SEC, r, v)
    after = typed(p.latest)
    assert not after.touchdown and linearization_matrices(after)["impact_map"] is None and not after.impulses.size
    message = typed(touchdown)  # the typed message of the touchdown's cycle carries its impact
    assert message.touchdown and message.restitution == restitution and len(message.impulse_labels) == 12
    np.testing.assert_allclose(linearization_matrices(message)["impact_map"], expected.A, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(message.impulses, touchdown.impact.impulses)


def test_with_a_step_the_touchdown_cycles_a_d_includes_the_impact_as_rl_linearize_has_it(rng):
    """discretization_dt > 0: the touchdown cycle is rl.linearize(..., dt, previous_contacts=the swing
    set, restitution): A_d = A_d(step at x⁺)·A_impact, A and B at x⁺; the other cycles have no impact."""
    p = new_pipeline(discretization_dt=2e-3, restitution=0.3)
    r, v = landing_velocities(rng)
    assert p.set_contacts(SWING) is None
    (swing,) = feed(p, 1 * SEC, r, v)
    assert p.set_contacts(STANCE) is None
    (touchdown,) = feed(p, 2 * SEC, r, v)
    assert swing.impact is None and touchdown.impact is not None
    expected = rl.linearize(MODEL, touchdown.state, contacts=list(BUNDLED_FEET), dt=2e-3,
                            previous_contacts=SWING, restitution=0.3)
    messages = output_messages(FACTORY, touchdown, "base_link")
    assert list(messages)[-3:] == ["A_d", "B_d", "stamp"]
    for name, value in [("A_d", expected.A_d), ("B_d", expected.B_d), ("A", expected.A),
                        ("impact_map", expected.impact.A)]:
        np.testing.assert_allclose(matrix_from_message(wire(messages[name])), value, rtol=1e-12, atol=1e-12,
                                   err_msg=name)
    plain = rl.linearize(MODEL, touchdown.state, contacts=list(BUNDLED_FEET), dt=2e-3)
    assert np.abs(expected.A_d - plain.A_d).max() > 1e-3  # (the impact is in it)
    report, summary = p.validate_output()  # ~/validate checks it through rl.step across the impact
    assert report.passed(1e-6), summary


def test_a_touchdown_whose_joint_state_is_dropped_waits_for_the_next_one(rng):
    """'The first joint state at or after the switch': a stale joint state after the touchdown
    is dropped, and the impact comes with the next one that is linearized; a set that closes a
    contact and opens it again before any joint state is no touchdown."""
    p = new_pipeline()
    r, v = landing_velocities(rng)
    assert p.set_contacts(SWING) is None
    feed(p, 1 * SEC, r, v)
    assert p.set_contacts(STANCE) is None
    assert p.on_joint_state(wire(joint_state_message(FACTORY, 2 * SEC, MODEL.joint_names, POSTURE, r)))
    assert p.step(3 * SEC) == [] and "stale" in p.last_problem
    (out,) = feed(p, 4 * SEC, r, v)
    assert out.impact is not None and out.stamp_ns == 4 * SEC
    assert p.set_contacts(SWING) is None and p.set_contacts(STANCE) is None and p.set_contacts(SWING) is None
    (out,) = feed(p, 5 * SEC, r, v)
    assert out.impact is None


def test_margins_come_with_every_cycle_that_has_contacts_equal_to_contact_margins_of_its_linearization(rng):
    """friction_coefficient, friction_facets and the ground normal −g/|g| of the gravity parameter
    (tilted here) make the margins: contact_margins of the cycle's own linearization; none in flight."""
    gravity = (1.0, 0.5, -9.7)
    p = LinearizationPipeline(PipelineConfig(contacts=as_contacts(STANCE), gravity=gravity, friction_coefficient=0.4,
                                             friction_facets=8))
    assert p.set_description(URDF) is None
    r, v = landing_velocities(rng)
    (out,) = feed(p, SEC, r, v)
    model = rl.load_urdf(URDF, gravity=gravity)
    lin = rl.linearize(model, out.state, contacts=list(BUNDLED_FEET))
    expected = contact_margins(model, lin, friction=0.4, facets=8, normal=-np.array(gravity))
    messages = {name: wire(m) for name, m in output_messages(FACTORY, out, "base_link").items()}
    assert list(messages)[-1] == "stamp" and out.margins.labels == expected.labels
    assert out.margins.labels[:9] == tuple(f"front_left_foot:friction_{i}" for i in range(8)) + (
        "front_left_foot:unilateral",)
    for name, value in [("contact_margins", expected.margins[:, None]),
                        ("contact_margins_state_jacobian", expected.state_jacobian),
                        ("contact_margins_input_jacobian", expected.input_jacobian)]:
        np.testing.assert_allclose(matrix_from_message(messages[name]), value, rtol=1e-10, atol=1e-9, err_msg=name)
    message = typed(p.latest)
    assert list(message.margin_labels) == list(expected.labels)
    np.testing.assert_allclose(linearization_matrices(message)["margins_state_jacobian"], expected.state_jacobian,
                               rtol=1e-10, atol=1e-9)
    assert p.set_contacts("") is None
    (out,) = feed(p, 2 * SEC, r, v)
    assert out.margins is None and "contact_margins" not in output_messages(FACTORY, out, "base_link")
    margins = linearization_matrices(typed(p.latest))["margins_state_jacobian"]
    assert not typed(p.latest).margin_labels and margins is None


def test_a_knee_torque_that_makes_a_foot_pull_is_a_warning_while_it_lasts():
    """The quadruped held still on its four feet (τ from the least-squares support): OK; −20 N·m
    on the front left knee lifts that foot, which the rigid contact holds down: a WARN naming
    the foot and its unilateral margin, with every cycle it lasts; the torque gone, OK again."""
    p = new_pipeline(use_effort=True)
    state = rl.State(base_pose=BASE, joint_positions=POSTURE, base_twist=np.zeros(6),
                     joint_velocities=np.zeros(MODEL.n_joints))
    tau = standing(MODEL, [rl.Contact(f) for f in BUNDLED_FEET], state)
    kicked = tau.copy()
    kicked[MODEL.joint_names.index("front_left_knee")] -= 20.0
    (out,) = feed(p, SEC, effort=tau)
    level, _, message, values = p.diagnostics(SEC)[0]
    assert level == OK and out.margins.margins.min() > 0.0, message
    for k in (2, 3):
        (out,) = feed(p, k * SEC, effort=kicked)
        lifting = contact_margins(MODEL, rl.linearize(MODEL, out.state, kicked, contacts=list(BUNDLED_FEET)),
                                  friction=0.7)
        unilateral = lifting.margins[lifting.labels.index("front_left_foot:unilateral")]
        assert unilateral < 0.0
        level, _, message, values = p.diagnostics(k * SEC)[0]
        assert level == WARN and message == f"contact forces not possible: front_left_foot pulls (unilateral " \
                                            f"{unilateral:.3g} N)", message
        assert values["outputs_with_negative_margins"] == k - 1
        assert values["min_contact_margin"].endswith("(front_left_foot:friction)")  # μ f_n − ‖f_t‖, f_n < 0
    (out,) = feed(p, 4 * SEC, effort=tau)
    level, _, message, _ = p.diagnostics(4 * SEC)[0]
    assert level == OK and message == "linearizing", message


def test_a_foot_whose_force_leaves_the_friction_cone_slips(rng):
    """Low friction (μ = 0.05) and a sideways push on the body through the hips: every foot
    still pushes but one's tangential force is past μ f_n: '… slips (friction margin …)'."""
    p = new_pipeline(use_effort=True, friction_coefficient=0.05)
    state = rl.State(base_pose=BASE, joint_positions=POSTURE, base_twist=np.zeros(6),
                     joint_velocities=np.zeros(MODEL.n_joints))
    tau = standing(MODEL, [rl.Contact(f) for f in BUNDLED_FEET], state)
    tau[[MODEL.joint_names.index(f"{leg}_hip_abduction") for leg in ("front_left", "front_right")]] += 8.0
    (out,) = feed(p, SEC, effort=tau)
    margins = out.margins
    slipping = [label.split(":")[0] for label in margins.violated()]
    assert slipping and all(margins.margins[margins.labels.index(f"{foot}:unilateral")] > 0 for foot in slipping)
    level, _, message, _ = p.diagnostics(SEC)[0]
    friction = {foot: margins.margins[margins.labels.index(f"{foot}:friction")] for foot in dict.fromkeys(slipping)}
    assert level == WARN and message == "contact forces not possible: " + "; ".join(
        f"{foot} slips (friction margin {value:.3g} N)" for foot, value in friction.items()), message


def test_a_sole_whose_hip_twists_it_beyond_friction_is_said_to_twist():
    """talos standing on two 6d soles, 70 N·m more on its left hip's yaw (its joint state's effort): the
    moment about the left sole's normal is past what friction at its corners gives, '… twists (yaw… margin
    … N·m)', the smallest of those rows; the right sole is not named."""
    soles = [rl.Contact(f, "6d") for f in ("left_sole_link", "right_sole_link")]
    p = LinearizationPipeline(PipelineConfig(contacts=as_contacts(soles), sole_size=(0.2, 0.1), use_effort=True,
                                             friction_coefficient=0.7, friction_facets=4))
    assert p.set_description(example_robot_path("talos")) is None
    model, pose = p.model, se3_exp(np.array([0, 0, 1.0, 0, 0, 0.4]))
    state = rl.State(base_pose=pose, joint_positions=np.zeros(model.n_joints), base_twist=np.zeros(6),
                     joint_velocities=np.zeros(model.n_joints))
    tau = standing(model, soles, state)
    tau[model.joint_names.index("leg_left_1_joint")] += 70.0
    assert p.on_odometry(wire(odometry_message(FACTORY, SEC, "odom", model.body_names[0], pose, np.zeros(6))))
    assert p.on_joint_state(wire(joint_state_message(FACTORY, SEC, model.joint_names, np.zeros(model.n_joints),
                                                     np.zeros(model.n_joints), tau)))
    (out,) = p.step(SEC)
    violated = out.margins.violated()
    assert violated and all(v.startswith("left_sole_link:yaw") for v in violated), violated
    row = min(violated, key=lambda v: out.margins.margins[out.margins.labels.index(v)])
    level, _, message, _ = p.diagnostics(SEC)[0]
    smallest = out.margins.margins[out.margins.labels.index(row)]
    assert level == WARN and message == (f"contact forces not possible: left_sole_link twists ({row.split(':')[1]} "
                                         f"margin {smallest:.3g} N·m)"), message


def test_soles_without_sole_size_have_no_margins_and_a_warning_and_with_it_cop_rows():
    """talos on two 6d soles: without sole_size the cycle still gives its matrices (the margins
    never cost it an output) and /diagnostics names the parameter; with it, the CoP rows."""
    soles = "left_sole_link:6d, right_sole_link:6d"
    for sole_size in ((), (0.2, 0.1)):
        p = LinearizationPipeline(PipelineConfig(contacts=as_contacts(soles), sole_size=sole_size))
        assert p.set_description(example_robot_path("talos")) is None
        n = p.model.n_joints
        assert p.on_odometry(wire(odometry_message(FACTORY, SEC, "odom", p.model.body_names[0],
                                                   se3_exp(np.array([0, 0, 1.0, 0, 0, 0.4])), np.zeros(6))))
        assert p.on_joint_state(wire(joint_state_message(FACTORY, SEC, p.model.joint_names, np.zeros(n),
                                                         np.zeros(n))))
        (out,) = p.step(SEC)
        level, _, message, values = p.diagnostics(SEC)[0]
        if not sole_size:
            assert out.margins is None and "contact_margins" not in output_messages(FACTORY, out, "base_link")
            assert level == WARN and "need the parameter sole_size" in message and "left_sole_link" in message
            assert "margin_problem" in values
        else:
            assert out.margins.labels[-12:] == tuple(f"right_sole_link:cop_{s}" for s in ("x+", "x-", "y+", "y-")) \
                + tuple(f"right_sole_link:yaw{side}_{i}" for side in "-+" for i in range(4))
            assert "margin_problem" not in values


def test_a_coupled_mimic_robot_at_a_touchdown_publishes_its_impact_map():
    """talos_full (mimic-coupled grippers) touching down with its right sole: the touchdown cycle
    carries rl.impact's map in the independent coordinates, bit for bit, and is linearized at the
    post-impact state, as rl.linearize is there; /diagnostics has no complaint about it."""
    p = LinearizationPipeline(PipelineConfig(contacts=as_contacts("left_sole_link:6d"), sole_size=(0.2, 0.1)))
    assert p.set_description(example_robot_path("talos_full")) is None
    n = p.model.n_joints
    velocities = np.linspace(-0.5, 0.5, n)
    for k in (1, 2):
        if k == 2:
            assert p.set_contacts("left_sole_link:6d, right_sole_link:6d") is None
        assert p.on_odometry(wire(odometry_message(FACTORY, k * SEC, "odom", p.model.body_names[0],
                                                   se3_exp(np.array([0, 0, 1.0, 0, 0, 0])), np.full(6, -0.1))))
        assert p.on_joint_state(wire(joint_state_message(FACTORY, k * SEC, p.model.joint_names, np.full(n, 0.1),
                                                         velocities)))
        (out,) = p.step(k * SEC)
        assert (out.impact is None) == (k == 1) and out.margins is not None
    jump = rl.impact(p.model, out.state, p.contacts, p.config.restitution)
    for field in ("A", "impulses", "impulses_state_jacobian"):
        np.testing.assert_array_equal(getattr(out.impact, field), getattr(jump, field))
    assert np.abs(jump.state.joint_velocities - velocities).max() > 1e-3  # the feet stopped: ν jumped
    np.testing.assert_array_equal(
        out.linearization.A, rl.linearize(p.model, jump.state, np.zeros(n), contacts=p.contacts).A)
    level, _, message, values = p.diagnostics(2 * SEC)[0]
    assert level == OK and not any("impact" in key and "problem" in key for key in values), (message, values)


@pytest.mark.parametrize("values, message", [
    ({"restitution": 1.5}, "'restitution' must be in \\[0, 1\\]"),
    ({"restitution": -0.1}, "'restitution' must be in \\[0, 1\\]"),
    ({"restitution": "elastic"}, "'restitution' must be a finite number"),
    ({"friction_coefficient": 0.0}, "'friction_coefficient' must be > 0"),
    ({"friction_coefficient": float("nan")}, "'friction_coefficient' must be a finite number"),
    ({"friction_facets": 3}, "'friction_facets' must be 0 \\(the exact cone\\) or an even integer >= 4"),
    ({"friction_facets": 2}, "'friction_facets'"),
    ({"friction_facets": 4.0}, "'friction_facets'"),
    ({"friction_facets": True}, "'friction_facets'"),
    ({"sole_size": [0.2]}, "'sole_size' must be \\[length, width\\]"),
    ({"sole_size": "0.2 0.1"}, "'sole_size' must be \\[length, width\\]"),
    ({"sole_size": [0.2, -0.1]}, "'sole_size' must be two lengths > 0"),
    ({"sole_size": [0.2, 0.0]}, "'sole_size' must be two lengths > 0"),
    ({"sole_size": [0.2, float("inf")]}, "'sole_size' must be a finite number"),
])
def test_bad_gait_parameters_are_one_line_errors_naming_the_parameter(values, message):
    with pytest.raises(ValueError, match=message) as error:
        node_settings(values)
    assert "\n" not in str(error.value)


def test_gait_parameters_reach_the_pipeline_as_ros_delivers_them():
    import array

    settings = node_settings({"restitution": 1, "friction_coefficient": 1, "friction_facets": 4,
                              "sole_size": array.array("d", [0.2, 0.1])})
    config = settings.pipeline
    assert (config.restitution, config.friction_coefficient, config.friction_facets, config.sole_size) == (
        1.0, 1.0, 4, (0.2, 0.1))
    assert node_settings({"sole_size": [0, 0]}).pipeline.sole_size == ()  # [0, 0]: not given
    defaults = node_settings({}).pipeline
    assert (defaults.restitution, defaults.friction_coefficient, defaults.friction_facets, defaults.sole_size) == (
        0.0, 0.7, 0, ())
    assert PARAMETERS["sole_size"][0] == [0.0, 0.0]
    assert {"impact_map", "impulses", "contact_margins", "contact_margins_state_jacobian",
            "contact_margins_input_jacobian"} <= set(output_topics(False, 0.0, False))  # the node's publishers


def schedule_bag(path, rng, touchdown_at=5):
    """A recorded gait: stance (k = 0), a trot's swing pair (k = 2), touchdown (k = touchdown_at),
    at 100 Hz, the contacts topic 1 ns before the joint state it applies to."""
    r, v = landing_velocities(rng)
    schedule = {0: STANCE, 2: SWING, touchdown_at: STANCE}
    events = []
    for k in range(8):
        t = SEC + k * 10 * MS
        if k in schedule:
            events.append((t - 1, "/contact_schedule", FACTORY.make("std_msgs/msg/String", data=schedule[k])))
        events += [(t, "/odom", odometry_message(FACTORY, t, "odom", "base_link", BASE, v)),
                   (t, "/joint_states", joint_state_message(FACTORY, t, MODEL.joint_names, POSTURE, r))]
    write_bag(path, events)
    return SEC + touchdown_at * 10 * MS


def test_the_replay_writes_the_impact_map_at_the_touchdown_of_a_recorded_schedule(tmp_path, rng):
    touchdown_ns = schedule_bag(tmp_path / "in", rng)
    summary = replay_with_matrix_topics(tmp_path / "in", tmp_path / "out", urdf=bundled_urdf_path(),
                                        progress=False, heatmap_rate_hz=0,
                     health_rate_hz=0, contacts_topic="/contact_schedule", config=PipelineConfig(restitution=0.2))
    assert summary.outputs == 8 and summary.impacts == 1 and not summary.problems
    assert "1 touchdown: impact_map and impulses written" in summary.text()
    outputs = read_bag(tmp_path / "out")
    (t, impact_map), = outputs["/robot_linearization/impact_map"]
    (t_impulses, impulses), = outputs["/robot_linearization/impulses"]
    assert t == t_impulses == touchdown_ns
    stamps = [m.stamp.sec * SEC + m.stamp.nanosec for _, m in outputs["/robot_linearization/stamp"]]
    assert touchdown_ns in stamps
    state = summary.pipeline.latest.state  # (every cycle has the same recorded state)
    expected = rl.impact(MODEL, state, list(BUNDLED_FEET), restitution=0.2)
    np.testing.assert_allclose(matrix_from_message(impact_map), expected.A, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(matrix_from_message(impulses)[:, 0], expected.impulses, rtol=1e-12, atol=1e-12)
    # margins with every cycle (all have contacts here), named by their latched labels once per set
    margins = outputs["/robot_linearization/contact_margins"]
    assert [matrix_from_message(m).shape for _, m in margins] == [(8, 1)] * 2 + [(4, 1)] * 3 + [(8, 1)] * 3
    labels = [json.loads(m.data) for _, m in outputs["/robot_linearization/contact_margin_labels"]]
    assert [len(x) for x in labels] == [8, 4, 8] and labels[1][2] == "hind_right_foot:friction"
    assert len(outputs["/robot_linearization/contact_margins_state_jacobian"]) == 8


def test_cli_replay_gait_options_and_their_errors(tmp_path, rng, capsys):
    schedule_bag(tmp_path / "in", rng)
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "--urdf",
                 bundled_urdf_path(),
                 "--contacts-topic", "/contact_schedule", "--restitution", "0.5", "--friction", "0.3",
                 "--friction-facets", "4", "--no-heatmaps", "--no-health"]) == 0
    assert "1 touchdown" in capsys.readouterr().out
    outputs = read_bag(tmp_path / "out")
    assert json.loads(outputs["/robot_linearization/contact_margin_labels"][0][1].data)[:5] == [
        "front_left_foot:friction_0", "front_left_foot:friction_1", "front_left_foot:friction_2",
        "front_left_foot:friction_3", "front_left_foot:unilateral"]
    for arguments, message in [(["--friction-facets", "3"], "--friction-facets: 3 is neither 0"),
                               (["--restitution", "2"], "--restitution: 2 is outside [0.0, 1.0]"),
                               (["--friction", "0"], "--friction: 0 is outside (0.0, inf]"),
                               (["--sole-size", "0.2", "-1"], "--sole-size: -1 is outside (0.0, inf] m")]:
        with pytest.raises(SystemExit):
            main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "o2"), *arguments])
        assert message in capsys.readouterr().err
        assert not (tmp_path / "o2").exists()


def test_a_swap_between_contact_sets_of_the_same_size_is_a_touchdown(rng):
    """FL+HR → FR+HL directly (a trot's switch with no double support): the new feet close, so the
    cycle carries their impact — in the pipeline, rl.linearize and rl.step alike (a rule comparing
    the sizes of the two sets would call it nothing)."""
    FL, FR, HL, HR = BUNDLED_FEET
    assert touchdown([FL, HR], [FR, HL]) and not touchdown([FL, HR], [HR, FL]) and not touchdown([FL, HR], [FL])
    state = rl.State(base_pose=BASE, joint_positions=POSTURE, base_twist=landing_velocities(rng)[1],
                     joint_velocities=landing_velocities(rng)[0])
    lin = rl.linearize(MODEL, state, contacts=[FR, HL], previous_contacts=[FL, HR], dt=1e-3)
    assert lin.impact is not None and {c.frame for c in lin.impact.contacts} == {FR, HL}
    jump = rl.impact(MODEL, state, [FR, HL])
    stepped = rl.step(MODEL, state, None, 1e-3, contacts=[FR, HL], previous_contacts=[FL, HR])
    assert np.abs(stepped.joint_velocities - rl.step(MODEL, state, None, 1e-3, contacts=[FR, HL]).joint_velocities
                  ).max() > 1e-3  # the impact changed the velocities
    np.testing.assert_allclose(stepped.joint_velocities,
                               rl.step(MODEL, jump.state, None, 1e-3, contacts=[FR, HL]).joint_velocities, atol=1e-12)
    pipeline = LinearizationPipeline(PipelineConfig(contacts=as_contacts(f"{FL}, {HR}")))
    assert pipeline.set_description(URDF) is None
    r, v = landing_velocities(rng)
    (first,) = feed(pipeline, 10 * SEC, r, v)
    assert first.impact is None
    assert pipeline.set_contacts(f"{FR}, {HL}") is None
    (swapped,) = feed(pipeline, 10 * SEC + MS, r, v)
    assert swapped.impact is not None and {c.frame for c in swapped.impact.contacts} == {FR, HL}


def test_a_new_robot_is_not_a_touchdown(rng):
    """The held contact set goes with the robot it was held on: contacts added just before a robot
    swap close on the new robot's first cycle without an impact (set_model resets it)."""
    FL, FR = BUNDLED_FEET[:2]
    pipeline = LinearizationPipeline(PipelineConfig(contacts=as_contacts(FL)))
    assert pipeline.set_description(URDF) is None
    r, v = landing_velocities(rng)
    (first,) = feed(pipeline, 10 * SEC, r, v)
    assert first.impact is None
    assert pipeline.set_contacts(f"{FL}, {FR}") is None
    assert pipeline.set_description(URDF.replace('name="rl_quadruped"', 'name="rl_quadruped_2"')) is None
    (after,) = feed(pipeline, 10 * SEC + MS, r, v)
    assert after.model.name == "rl_quadruped_2" and after.impact is None
    assert pipeline.set_contacts(f"{FL}, {FR}, {BUNDLED_FEET[2]}") is None  # a real touchdown still is one
    (touch,) = feed(pipeline, 10 * SEC + 2 * MS, r, v)
    assert touch.impact is not None
