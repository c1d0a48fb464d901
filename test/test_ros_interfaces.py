"""The package's own interfaces without ROS: msg/Linearization.msg and srv/*.srv read by rosbags (the
real definitions, the .msg text itself), one cycle's typed message through CDR against the engine's
arrays, the Linearize/Validate requests and their one-line refusals, and the replay's bags."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

import robot_linearization as rl
from robot_linearization.robots import BUNDLED_FEET, bundled_urdf_path
from robot_linearization.ros.bag import replay, write_simulation_bag
from robot_linearization.ros.interfaces import (LINEARIZATION, MATRICES, LinearizationCdr, interface_file,
                                                linearization_cdr,
                                                linearization_matrices, linearization_message, register_interfaces,
                                                request_options, validation_fields)
from robot_linearization.ros.messages import InputError, RosbagsFactory, joint_state_message, odometry_message
from robot_linearization.ros.pipeline import LinearizationPipeline, Output, PipelineConfig
from robot_linearization.ros.simulation import Simulation
from robot_linearization.spatial import quaternion_rotation, se3_exp

from conftest import example_robot_path

SEC = 1_000_000_000
URDF = open(bundled_urdf_path()).read()
MODEL = rl.load_urdf(URDF)
FEET = ", ".join(BUNDLED_FEET)


@pytest.fixture(scope="module")
def typestore():
    store = get_typestore(Stores.ROS2_HUMBLE)
    register_interfaces(store)
    return store


def wire(store, msg, little_endian=True):
    raw = store.serialize_cdr(msg, msg.__msgtype__, little_endian=little_endian)
    return store.deserialize_cdr(raw, msg.__msgtype__)


def request(store, service, state, torques=None, names=MODEL.joint_names, **fields):
    """A Linearize/Validate request of ``state`` built as a client would (rosbags' classes)."""
    factory = RosbagsFactory(store)
    n = len(names)
    effort = np.zeros(n) if torques is None else torques
    joint_state = joint_state_message(factory, 7 * SEC + 5, names, state.joint_positions[:n].copy(),
                                      state.joint_velocities[:n], effort)
    odometry = odometry_message(factory, 7 * SEC + 5, "odom", "base_link", state.base_pose, state.base_twist)
    defaults = dict(contacts="", dt=0.0, discretization="")
    if service == "Linearize":
        defaults.update(previous_contacts="", restitution=0.0)
    else:
        defaults.update(at_state=True)
    defaults.update(fields)
    return store.types[f"robot_linearization/srv/{service}_Request"](joint_state=joint_state, odometry=odometry,
                                                                     **defaults)


def random_state(rng):
    return rl.State(base_pose=se3_exp(rng.normal(size=6)), joint_positions=rng.uniform(-1, 1, 12),
                    base_twist=rng.normal(size=6), joint_velocities=rng.normal(size=12))


def test_the_interface_files_are_read_and_every_matrix_field_is_described(typestore):
    text = Path(interface_file("msg", "Linearization")).read_text()
    fields = {line.split()[1] for line in text.splitlines() if line.startswith("float64[] ")}
    vectors = {"joint_positions", "joint_velocities", "joint_efforts", "contact_forces", "margins", "impulses"}
    assert fields == set(MATRICES) | vectors  # every matrix has the labels of its rows and columns
    assert "row-major" in text and "data[i*C + j]" in text
    for name in ("Linearize", "Validate"):
        assert f"robot_linearization/srv/{name}_Request" in typestore.types
        assert f"robot_linearization/srv/{name}_Response" in typestore.types
    register_interfaces(typestore)  # twice: nothing changes


@pytest.mark.parametrize("little_endian", [True, False])
def test_a_cycle_with_contacts_a_step_margins_and_a_touchdown_survives_cdr_bit_for_bit(typestore, rng,
                                                                                     little_endian):
    pipeline = LinearizationPipeline(PipelineConfig(contacts=rl.contacts.as_contacts(FEET), discretization_dt=2e-3,
                                                    friction_facets=4))
    assert pipeline.set_description(URDF) is None
    state, torques = random_state(rng), rng.normal(size=12)
    out = pipeline.linearize_request(request(typestore, "Linearize", state, torques, contacts=FEET,
                                             previous_contacts=", ".join(BUNDLED_FEET[:2]), restitution=0.3,
                                             dt=2e-3))
    assert isinstance(out, Output) and out.impact is not None and out.margins is not None
    message = wire(typestore, linearization_message(RosbagsFactory(typestore), out, "base_link"), little_endian)
    assert message.header.stamp.sec == 7 and message.header.stamp.nanosec == 5
    assert message.header.frame_id == "base_link"
    lin = out.linearization
    expected = {"state_matrix": lin.A, "input_matrix": lin.B, "inverse_mass_matrix": lin.M_inv,
                "discrete_state_matrix": lin.A_d, "discrete_input_matrix": lin.B_d,
                "contact_forces_state_jacobian": lin.contact_forces_state_jacobian,
                "contact_forces_input_jacobian": lin.contact_forces_input_jacobian,
                "margins_state_jacobian": out.margins.state_jacobian,
                "margins_input_jacobian": out.margins.input_jacobian,
                "impact_map": out.impact.A}
    matrices = linearization_matrices(message)
    for field, value in expected.items():
        assert matrices[field].shape == value.shape and np.array_equal(matrices[field], value), field
    np.testing.assert_array_equal(message.contact_forces, lin.contact_forces)
    np.testing.assert_array_equal(message.margins, out.margins.margins)
    np.testing.assert_array_equal(message.impulses, out.impact.impulses)
    assert message.touchdown and message.restitution == 0.3 and message.dt == 2e-3
    assert message.discretization == "euler" and message.contacts.count(":point:world_aligned") == 4
    assert list(message.state_labels) == list(MODEL.state_labels)
    assert list(message.input_labels) == [f"tau:{j}" for j in MODEL.joint_names]
    np.testing.assert_array_equal(message.joint_positions, state.joint_positions)
    np.testing.assert_array_equal(message.joint_efforts, torques)
    q = message.base_pose.orientation
    np.testing.assert_allclose(quaternion_rotation(q.w, q.x, q.y, q.z), state.base_pose[:3, :3], atol=1e-15)
    p, v = message.base_pose.position, message.base_twist
    assert (p.x, p.y, p.z) == tuple(state.base_pose[:3, 3])
    assert (v.linear.x, v.angular.z) == (state.base_twist[0], state.base_twist[5])
    assert message.compute_time > 0 and message.floating_base


CYCLE_KINDS = ["touchdown, step, margins", "free", "fixed base", "non-ascii frame"]


def cycle_output(typestore, rng, case, discretization=""):
    """(Output, frame id) of one pipeline cycle of the given kind, at a random state."""
    floating = case != "fixed base"
    contacts = FEET if case == "touchdown, step, margins" else ""
    pipeline = LinearizationPipeline(PipelineConfig(contacts=rl.contacts.as_contacts(contacts), friction_facets=4,
                                                    discretization_dt=2e-3 if contacts else None,
                                                    floating_base=floating))
    assert pipeline.set_description(URDF) is None
    state, torques = random_state(rng), rng.normal(size=12)
    if not floating:
        state = rl.State(base_pose=np.eye(4), joint_positions=state.joint_positions, base_twist=np.zeros(6),
                         joint_velocities=state.joint_velocities)
    options = dict(contacts=FEET, previous_contacts=", ".join(BUNDLED_FEET[:2]), restitution=0.3, dt=2e-3,
                   discretization=discretization) if contacts else {}
    out = pipeline.linearize_request(request(typestore, "Linearize", state, torques, **options))
    return out, "bâse_lînk" if case == "non-ascii frame" else "base"


def rosbags_cdr(typestore, out, frame):
    return bytes(typestore.serialize_cdr(linearization_message(RosbagsFactory(typestore), out, frame),
                                         LINEARIZATION))


@pytest.mark.parametrize("case", CYCLE_KINDS)
def test_the_nodes_own_serialization_is_the_messages_cdr_byte_for_byte(typestore, rng, case):
    """linearization_cdr (what the node publishes, raw) against rosbags' serializer of the message
    linearization_message builds: the same bytes, for every kind of cycle (odd-length strings and
    empty sequences move the alignment)."""
    out, frame = cycle_output(typestore, rng, case)
    expected, ours = rosbags_cdr(typestore, out, frame), linearization_cdr(out, frame)
    assert len(ours) == len(expected) and ours == expected
    assert typestore.deserialize_cdr(ours, LINEARIZATION).header.frame_id == frame


def test_one_writer_follows_every_change_of_layout_and_overwrites_every_number(typestore, rng):
    """The node's writer (one LinearizationCdr for every cycle) over cycles of one layout, each at
    another state, and over changes of robot, frame, contact set, step and touchdown in turn: each
    cycle is rosbags' bytes of its own message (a number left from the cycle before, or a layout
    kept after it changed, differs)."""
    writer = LinearizationCdr()
    kinds = ["free", "free", "touchdown, step, margins", "touchdown, step, margins", "free", "fixed base",
             "fixed base", "non-ascii frame", "touchdown, step, margins"]
    for case in kinds:
        out, frame = cycle_output(typestore, rng, case)
        assert writer(out, frame) == rosbags_cdr(typestore, out, frame), case
    # the same layout with every number-valued field moved, the stamp and the flags included
    out, frame = cycle_output(typestore, rng, "touchdown, step, margins")
    first = writer(out, frame)
    out.stamp_ns += 3 * SEC + 17
    out.compute_time *= 2.0
    out.impact = dataclasses.replace(out.impact, restitution=0.6)
    assert writer(out, frame) == rosbags_cdr(typestore, out, frame) != first
    # a string that changes alone, every size kept: the frame, the discretization
    for frame in ("odom", "base"):
        assert writer(out, frame) == rosbags_cdr(typestore, out, frame), frame
    out, frame = cycle_output(typestore, rng, "touchdown, step, margins", discretization="zoh")
    assert writer(out, frame) == rosbags_cdr(typestore, out, frame)


def test_a_fixed_base_cycle_has_an_identity_pose_and_empty_optional_fields(typestore, rng):
    pipeline = LinearizationPipeline(PipelineConfig(floating_base=False))
    assert pipeline.set_description(URDF) is None
    state = rl.State(joint_positions=rng.uniform(-1, 1, 12), joint_velocities=rng.normal(size=12))
    fixed = rl.State(base_pose=np.eye(4), joint_positions=state.joint_positions, base_twist=np.zeros(6),
                     joint_velocities=state.joint_velocities)
    out = pipeline.linearize_request(request(typestore, "Linearize", fixed))
    message = wire(typestore, linearization_message(RosbagsFactory(typestore), out, "base_link"))
    assert not message.floating_base and message.base_pose.orientation.w == 1.0 and len(message.state_labels) == 24
    matrices = linearization_matrices(message)
    np.testing.assert_array_equal(matrices["state_matrix"], rl.linearize(pipeline.model, state).A)
    assert all(matrices[f] is None for f in MATRICES if f not in ("state_matrix", "input_matrix",
                                                                   "inverse_mass_matrix"))
    assert message.dt == 0.0 and message.discretization == "" and not message.touchdown


def test_a_request_is_linearized_at_its_own_state_whatever_the_stream_does(typestore, rng):
    """The service's answer is rl.linearize at the request's state, contacts and step — computed here
    from the same numbers directly — with the stream's queue, held contacts and settings untouched."""
    pipeline = LinearizationPipeline(PipelineConfig(contacts=rl.contacts.as_contacts(BUNDLED_FEET[0])))
    assert pipeline.set_description(URDF) is None
    state, torques = random_state(rng), rng.normal(size=12)
    out = pipeline.linearize_request(request(typestore, "Linearize", state, torques,
                                             contacts=f"{BUNDLED_FEET[1]}:6d:local", dt=1e-3, discretization="zoh"))
    # the request's base pose went through a quaternion: the same here
    H = rl.State.from_named(MODEL, joint_positions=dict(zip(MODEL.joint_names, state.joint_positions)),
                            base_position=state.base_pose[:3, 3],
                            base_orientation=_quaternion(state.base_pose), base_twist=state.base_twist).base_pose
    expected = rl.linearize(MODEL, rl.State(base_pose=H, joint_positions=state.joint_positions,
                                            base_twist=state.base_twist, joint_velocities=state.joint_velocities),
                            torques, contacts=f"{BUNDLED_FEET[1]}:6d:local", dt=1e-3, discretization="zoh")
    for field in ("A", "B", "M_inv", "A_d", "B_d", "contact_forces"):
        np.testing.assert_allclose(getattr(out.linearization, field), getattr(expected, field), rtol=1e-12,
                                   atol=1e-12 * np.abs(getattr(expected, field)).max(), err_msg=field)
    assert pipeline.held_contacts is None and pipeline.latest is None and pipeline.contacts == (
        rl.Contact(BUNDLED_FEET[0]),)


def _quaternion(H):
    from robot_linearization.spatial import pose_quaternion

    w, x, y, z = pose_quaternion(H)
    return (x, y, z, w)


@pytest.mark.parametrize("change, field", [
    (dict(names=MODEL.joint_names[:-1]), "joint_state: .*lacks joints"),
    (dict(names=MODEL.joint_names[:-1] + ("elbow",)), "joint_state: .*lacks joints"),
    (dict(nan=True), "joint_state: .*NaN"),
    (dict(zero_quaternion=True), "odometry: .*zero quaternion"),
    (dict(contacts="front_left_fot"), "contacts: .*did you mean 'front_left_foot'"),
    (dict(contacts="front_left_foot:plane"), "contacts: "),
    (dict(previous_contacts="paw"), "previous_contacts: "),
    (dict(dt=-1e-3), "dt: expected 0 .* or a step > 0"),
    (dict(dt=float("nan")), "dt: "),
    (dict(discretization="rk4", dt=1e-3), "discretization: expected 'euler' or 'zoh'"),
    (dict(discretization="zoh"), "discretization: 'zoh' needs dt > 0"),
    (dict(restitution=1.5), "restitution: expected a number in \\[0, 1\\]"),
], ids=["missing joint", "unknown joint", "NaN", "zero quaternion", "unknown contact frame", "bad contact kind",
        "bad previous contacts", "negative dt", "NaN dt", "unknown discretization", "zoh without dt",
        "restitution above 1"])
def test_a_bad_request_is_one_line_naming_its_field_and_the_next_one_is_served(typestore, rng, change, field):
    import re

    pipeline = LinearizationPipeline(PipelineConfig())
    assert pipeline.set_description(URDF) is None
    state = random_state(rng)
    names = change.pop("names", MODEL.joint_names)
    nan, zero = change.pop("nan", False), change.pop("zero_quaternion", False)
    bad = request(typestore, "Linearize", state, names=names, **change)
    if nan:
        bad.joint_state.position[3] = math.nan
    if zero:
        q = bad.odometry.pose.pose.orientation
        q.x = q.y = q.z = q.w = 0.0
    answer = pipeline.linearize_request(bad)
    assert isinstance(answer, str) and "\n" not in answer and re.search(field, answer), answer
    assert isinstance(pipeline.linearize_request(request(typestore, "Linearize", state)), Output)


def test_request_options_default_to_no_contacts_and_no_step(typestore, rng):
    options = request_options(MODEL, request(typestore, "Linearize", random_state(rng)))
    assert options == {"contacts": (), "previous_contacts": (), "restitution": 0.0, "step": {}}
    with pytest.raises(InputError, match="dt"):
        request_options(MODEL, request(typestore, "Linearize", random_state(rng), dt=-1.0))


def test_validate_at_a_requested_state_reports_every_block(typestore, rng):
    pipeline = LinearizationPipeline(PipelineConfig())
    assert pipeline.set_description(URDF) is None
    out = pipeline.linearize_request(request(typestore, "Validate", random_state(rng), contacts=BUNDLED_FEET[0]))
    report, summary = pipeline.validate_output(out)
    fields = validation_fields(report, 1e-6)
    assert fields["passed"] and summary.startswith("PASS") and "lambda" in fields["blocks"]
    arrays = {k: np.array(v) if k in ("max_abs", "scales", "max_rel") else v for k, v in fields.items()}
    response = typestore.types["robot_linearization/srv/Validate_Response"](success=True, message=summary, **arrays)
    assert list(wire(typestore, response).blocks) == fields["blocks"]
    assert pipeline.last_validation is None  # (a requested state is not the stream's)


def test_a_service_request_works_on_a_snapshot_and_changes_nothing_of_the_stream(typestore, rng):
    """The services compute on pipeline.snapshot(), taken under the node's lock and used outside it:
    a request whose margins cannot be made (a 6d contact without sole_size), at a touchdown, and a
    validation at a state answer, and the stream's queue, held contacts and diagnostics are as they were;
    the snapshot keeps answering with the model it was taken with after the node swaps robots."""
    pipeline = LinearizationPipeline(PipelineConfig(contacts=rl.contacts.as_contacts(FEET)))
    assert pipeline.set_description(URDF) is None
    state = random_state(rng)
    ask = lambda service, **fields: request(typestore, service, state, **fields)  # noqa: E731
    joint_state, odometry = ask("Linearize").joint_state, ask("Linearize").odometry
    pipeline.receive("odometry", odometry, 7 * SEC + 5)
    pipeline.receive("joint_states", joint_state, 7 * SEC + 5)  # served: the stream holds the four feet
    joint_state.header.stamp.sec += 1
    pipeline.receive("joint_states", joint_state, 8 * SEC)  # queued: its odometry has not come
    before = (pipeline.diagnostics(8 * SEC), pipeline.held_contacts, pipeline.waiting, pipeline.latest)
    snapshot = pipeline.snapshot()
    soles = snapshot.linearize_request(ask("Linearize", contacts="front_left_foot:6d"))
    assert isinstance(soles, Output) and soles.margins is None
    landing = snapshot.linearize_request(ask("Linearize", contacts=FEET, previous_contacts=BUNDLED_FEET[0]))
    assert landing.impact is not None
    report, summary = snapshot.validate_output(snapshot.linearize_request(ask("Validate")))
    assert summary.startswith("PASS")
    assert (pipeline.diagnostics(8 * SEC), pipeline.held_contacts, pipeline.waiting, pipeline.latest) == before
    assert pipeline.set_description(example_robot_path("solo12")) is None  # another robot meanwhile
    assert snapshot.linearize_request(ask("Linearize")).model is snapshot.model is not pipeline.model


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_the_replay_writes_one_typed_message_per_cycle_that_a_plain_reader_opens(tmp_path, storage):
    """The replay's bag carries ~/linearization with its definition: rosbags opens the mcap bag
    with no knowledge of the package (the definition travels in the bag); the sqlite3 one with
    the definitions of msg/Linearization.msg."""
    simulation = Simulation(MODEL, dt=0.01, seed=3)
    steps = write_simulation_bag(tmp_path / "in", simulation, URDF, 0.1, storage=storage)
    summary = replay(tmp_path / "in", tmp_path / "out", progress=False, storage=storage, heatmap_rate_hz=0)
    assert summary.outputs == steps
    store = get_typestore(Stores.ROS2_HUMBLE)
    if storage == "sqlite3":
        register_interfaces(store)
    with AnyReader([tmp_path / "out"], default_typestore=store) as reader:
        topics = set(reader.topics)
        messages = [reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages(
            [c for c in reader.connections if c.topic == "/robot_linearization/linearization"])]
    assert "/robot_linearization/A" not in topics and len(messages) == steps
    assert messages[-1].__msgtype__ == LINEARIZATION
    last = summary.last_output
    np.testing.assert_array_equal(linearization_matrices(messages[-1])["state_matrix"], last.linearization.A)


def test_a_message_whose_matrix_does_not_fit_its_labels_is_one_line_naming_the_field(typestore, rng):
    pipeline = LinearizationPipeline(PipelineConfig())
    assert pipeline.set_description(URDF) is None
    out = pipeline.linearize_request(request(typestore, "Linearize", random_state(rng)))
    message = linearization_message(RosbagsFactory(typestore), out, "base_link")
    message.input_matrix = message.input_matrix[:-1]
    with pytest.raises(InputError, match=r"^Linearization.input_matrix has 431 entries, not 36×12") as caught:
        linearization_matrices(message)
    assert "\n" not in str(caught.value)
