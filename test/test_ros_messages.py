"""Message conversion with the real ROS 2 definitions (rosbags typestore),
round-tripped through CDR serialization as on the wire."""

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

from robot_linearization.ros.messages import (
    CdrInputs,
    InputError,
    RosbagsFactory,
    diagnostic_array_message,
    image_message,
    joint_state_arrays,
    joint_state_message,
    header_cdr,
    header_message,
    matrix_cdr,
    matrix_from_message,
    matrix_message,
    odometry_base_state,
    odometry_message,
)
from robot_linearization.ros.images import heatmap_rgb
from robot_linearization.spatial import pose_quaternion, se3_exp

TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)
FACTORY = RosbagsFactory(TYPESTORE)


def wire(msg):
    """Serialize to CDR and back, as a subscriber would receive it."""
    raw = TYPESTORE.serialize_cdr(msg, msg.__msgtype__)
    return TYPESTORE.deserialize_cdr(raw, msg.__msgtype__)


def test_matrix_message_has_the_documented_row_major_layout(rng):
    M = rng.normal(size=(3, 5))
    msg = wire(matrix_message(FACTORY, M))
    dims = msg.layout.dim
    assert [(d.label, d.size, d.stride) for d in dims] == [("rows", 3, 15), ("cols", 5, 5)]
    assert msg.layout.data_offset == 0
    # element (i, j) lives at data[i * dim[1].stride + j], as the ROS documentation specifies
    assert msg.data[1 * dims[1].stride + 4] == M[1, 4]
    np.testing.assert_array_equal(matrix_from_message(msg), M)


@pytest.mark.parametrize("shape", [(76, 76), (76, 32), (12, 1), (1, 1), (7, 3), (0, 5), (5, 0)])
def test_serialized_matrix_is_byte_for_byte_what_a_cdr_serializer_writes(rng, shape):
    """The node publishes A, B, M⁻¹ … as CDR bytes it writes itself (matrix_cdr):
    identical to rosbags' serializer of the same message, and read back by it."""
    M = rng.normal(size=shape)
    assert matrix_cdr(M) == TYPESTORE.serialize_cdr(matrix_message(FACTORY, M), "std_msgs/msg/Float64MultiArray")
    received = TYPESTORE.deserialize_cdr(matrix_cdr(M), "std_msgs/msg/Float64MultiArray")
    np.testing.assert_array_equal(matrix_from_message(received), M)
    assert matrix_cdr(np.asfortranarray(M)) == matrix_cdr(M)  # row-major whatever the memory order


@pytest.mark.parametrize("frame_id", ["", "base_link", "odom", "a" * 13])
def test_serialized_stamp_is_byte_for_byte_what_a_cdr_serializer_writes(frame_id):
    ns = 1_795_351_850_510_700_673
    expected = TYPESTORE.serialize_cdr(header_message(FACTORY, ns, frame_id), "std_msgs/msg/Header")
    assert header_cdr(ns, frame_id) == expected


def test_matrix_from_message_rejects_a_wrong_layout(rng):
    msg = matrix_message(FACTORY, rng.normal(size=(2, 2)))
    msg.layout.dim[0].stride = 3
    with pytest.raises(InputError, match="strides"):
        matrix_from_message(msg)


def test_odometry_roundtrip_gives_pose_and_body_twist(rng):
    H, twist = se3_exp(rng.normal(size=6)), rng.normal(size=6)
    msg = wire(odometry_message(FACTORY, 5, "odom", "base_link", H, twist))
    H2, twist2 = odometry_base_state(msg, "base_link")
    np.testing.assert_allclose(H2, H, atol=1e-12)
    np.testing.assert_array_equal(twist2, twist)


def test_quaternion_conversion_is_consistent_at_all_rotations(rng):
    for angle in (0.0, 1.0, np.pi - 1e-9, np.pi):
        for axis in np.eye(3):
            H = se3_exp(np.concatenate([np.zeros(3), angle * axis]))
            msg = odometry_message(FACTORY, 0, "w", "b", H, np.zeros(6))
            np.testing.assert_allclose(odometry_base_state(msg, "b")[0], H, atol=1e-9)
    assert pose_quaternion(np.eye(4))[0] == 1.0


def _odometry_with(q=None, child="base_link", twist=np.zeros(6)):
    msg = odometry_message(FACTORY, 0, "odom", child, np.eye(4), twist)
    if q is not None:
        o = msg.pose.pose.orientation
        o.w, o.x, o.y, o.z = q
    return msg


def test_odometry_bad_input_is_rejected_or_normalised():
    with pytest.raises(InputError, match="zero quaternion"):
        odometry_base_state(_odometry_with(q=(0, 0, 0, 0)), "base_link")
    with pytest.raises(InputError, match="not a unit quaternion"):
        odometry_base_state(_odometry_with(q=(0.5, 0, 0, 0)), "base_link")
    with pytest.raises(InputError, match="NaN"):
        odometry_base_state(_odometry_with(q=(np.nan, 0, 0, 0)), "base_link")
    with pytest.raises(InputError, match="NaN"):
        odometry_base_state(_odometry_with(twist=np.array([0, 0, np.inf, 0, 0, 0])), "base_link")
    with pytest.raises(InputError, match="child_frame_id is 'odom_child'"):
        odometry_base_state(_odometry_with(child="odom_child"), "base_link")
    H, _ = odometry_base_state(_odometry_with(q=(1.01, 0, 0, 0.0)), "base_link")
    np.testing.assert_allclose(H[:3, :3], np.eye(3))  # slightly non-unit: normalised
    # the finite check sums the numbers: a sum that overflows is not mistaken for inf
    _, twist = odometry_base_state(_odometry_with(twist=np.array([1e308, 1e308, 0, 0, 0, 0])), "base_link")
    np.testing.assert_array_equal(twist, [1e308, 1e308, 0, 0, 0, 0])
    with pytest.raises(InputError, match="NaN"):  # inf − inf: NaN in the sum, and an inf in the numbers
        odometry_base_state(_odometry_with(twist=np.array([np.inf, -np.inf, 0, 0, 0, 0])), "base_link")


NAMES = ["a", "b", "c"]


def _joint_state(names, pos, vel, eff=()):
    return wire(joint_state_message(FACTORY, 1, names, pos, vel, eff))


def test_joint_state_is_mapped_by_name_and_extra_joints_ignored():
    msg = _joint_state(["c", "x", "a", "b"], [3, 9, 1, 2], [30, 90, 10, 20], [300, 900, 100, 200])
    s, r, tau, assumed = joint_state_arrays(msg, NAMES, need_effort=True)
    assert assumed == ()
    np.testing.assert_array_equal(s, [1, 2, 3])
    np.testing.assert_array_equal(r, [10, 20, 30])
    np.testing.assert_array_equal(tau, [100, 200, 300])
    assert joint_state_arrays(_joint_state(NAMES, [1, 2, 3], [1, 2, 3]), NAMES, need_effort=False)[2] is None


@pytest.mark.parametrize("names, pos, vel, eff, need_effort, message", [
    (["a", "b"], [1, 2], [1, 2], [], False, r"lacks joints \['c'\]"),
    (["a", "b", "c", "a"], [1, 2, 3, 4], [1, 2, 3, 4], [], False, r"more than once: \['a'\]"),
    (NAMES, [1, 2], [1, 2, 3], [], False, "3 names but 2 position"),
    (NAMES, [1, 2, 3], [1, 2], [], False, "3 names but 2 velocity"),
    (NAMES, [1, 2, 3], [1, 2, 3], [1], True, "3 names but 1 effort"),
    (NAMES, [1, 2, 3], [1, 2, 3], [1], False, "3 names but 1 effort"),
    (NAMES, [], [], [], False, "3 names but 0 position"),
    (NAMES, [1, np.nan, 3], [1, 2, 3], [], False, r"position of \['b'\] is NaN"),
    (NAMES, [1, 2, 3], [1, 2, -np.inf], [], False, r"velocity of \['c'\] is NaN or inf"),
])
def test_bad_joint_state_is_rejected_naming_the_problem(names, pos, vel, eff, need_effort, message):
    with pytest.raises(InputError, match=message):
        joint_state_arrays(_joint_state(names, pos, vel, eff), NAMES, need_effort=need_effort)


def test_joint_state_finite_check_is_not_fooled_by_its_sum():
    """The check sums each array first: an overflowing sum of finite values is accepted,
    opposite infinities (a NaN sum) are named."""
    s, r, _, _ = joint_state_arrays(_joint_state(NAMES, [1e308, 1e308, 1], [1, 2, 3]), NAMES, need_effort=False)
    np.testing.assert_array_equal(s, [1e308, 1e308, 1])
    with pytest.raises(InputError, match=r"velocity of \['a', 'b'\] is NaN or inf"):
        joint_state_arrays(_joint_state(NAMES, [1, 2, 3], [np.inf, -np.inf, 3]), NAMES, need_effort=False)


@pytest.mark.parametrize("use_effort", [False, True])
def test_empty_velocity_and_effort_arrays_mean_not_measured(use_effort):
    """sensor_msgs/JointState allows empty arrays; stock joint_state_publisher sends
    velocity and effort empty: zeros, and the assumption named, not a rejection."""
    msg = _joint_state(["c", "a", "b"], [3, 1, 2], [], [])
    assert len(msg.velocity) == 0 and len(msg.effort) == 0  # as they arrive through CDR
    s, r, tau, assumed = joint_state_arrays(msg, NAMES, need_effort=use_effort)
    np.testing.assert_array_equal(s, [1, 2, 3])
    np.testing.assert_array_equal(r, np.zeros(3))
    assert "no velocities: linearizing at zero joint velocity" in assumed[0]
    if use_effort:
        np.testing.assert_array_equal(tau, np.zeros(3))
        assert len(assumed) == 2 and "no efforts: linearizing at zero joint torques" in assumed[1]
    else:
        assert tau is None and len(assumed) == 1


def test_heatmap_image_and_diagnostics_serialize(rng):
    M = rng.normal(size=(4, 6)) * 10.0 ** rng.integers(-6, 3, size=(4, 6))
    M[0, 0] = 0.0
    rgb = heatmap_rgb(M, row_blocks=(2,), col_blocks=(3,))
    assert rgb.dtype == np.uint8 and rgb.shape[2] == 3 and rgb.shape[1] >= 400
    cell = (rgb.shape[0] - 2) // 4
    grey = (90, 90, 90)
    assert tuple(rgb[0, 0]) == grey and tuple(rgb[-1, 5]) == grey  # a frame: white zeros stay visible
    assert tuple(rgb[cell // 2, cell // 2]) == (255, 255, 255)  # zero is white
    assert tuple(rgb[1 + 2 * cell, cell // 2]) == grey and tuple(rgb[cell // 2, 1 + 3 * cell]) == grey  # blocks
    assert tuple(rgb[2 + 2 * cell, cell // 2]) != grey
    big = np.unravel_index(np.argmax(np.abs(M)), M.shape)
    colour = rgb[2 + big[0] * cell, 2 + big[1] * cell]
    assert (colour[0] == 255 and colour[2] == 0) if M[big] > 0 else (colour[2] == 255 and colour[0] == 0)
    msg = wire(image_message(FACTORY, rgb, 7, "base_link"))
    assert msg.encoding == "rgb8" and msg.step == 3 * msg.width
    np.testing.assert_array_equal(np.asarray(msg.data).reshape(rgb.shape), rgb)
    diag = wire(diagnostic_array_message(FACTORY, [(1, "robot_linearization", "stale", {"age": 3})], 9))
    assert diag.status[0].level == 1 and diag.status[0].values[0].value == "3"


@pytest.mark.parametrize("little_endian", [True, False])
def test_inputs_read_from_cdr_equal_the_deserialized_messages(rng, little_endian):
    """The node takes joint states and odometry serialized and reads them in place
    (CdrInputs): the same arrays, pose and twist as from the messages a CDR
    deserializer (rosbags, the real definitions) builds from the same bytes — for
    either byte order, joint names repeated (decoded once) or changed, empty
    velocity/effort arrays, odd-length frame names (alignment)."""
    reader = CdrInputs()
    joints = ("j1", "joint_two", "c")
    for k, (names, velocities, efforts) in enumerate([
            (joints, rng.normal(size=3), rng.normal(size=3)),
            (joints, rng.normal(size=3), ()),  # names repeated: decoded from the cache
            (("c", "j1", "joint_two", "extra_joint"), (), ()),  # reordered, an extra joint, nothing measured
            (joints, rng.normal(size=3), rng.normal(size=3))]):
        msg = joint_state_message(FACTORY, 1_700_000_000_123_456_789 + k, names, rng.normal(size=len(names)),
                                  velocities, efforts)
        msg.header.frame_id = "odd"
        raw = TYPESTORE.serialize_cdr(msg, "sensor_msgs/msg/JointState", little_endian=little_endian)
        fields = reader.joint_state(raw)
        assert fields.stamp_ns == 1_700_000_000_123_456_789 + k and fields.name == tuple(names)
        for read, sent in zip(fields[2:], (msg.position, msg.velocity, msg.effort)):  # the numbers that were sent
            np.testing.assert_array_equal(read, sent)
        reading = joint_state_arrays(fields, joints, need_effort=True)
        assert all(a.dtype == np.float64 and a.dtype.isnative for a in reading[:3])  # what the kernels get
        np.testing.assert_array_equal(reading.positions, [msg.position[names.index(j)] for j in joints])
        expected = joint_state_arrays(TYPESTORE.deserialize_cdr(raw, "sensor_msgs/msg/JointState"), joints,
                                      need_effort=True)
        for ours, theirs in zip(joint_state_arrays(fields, joints, need_effort=True), expected):
            if isinstance(theirs, np.ndarray):
                np.testing.assert_array_equal(ours, theirs)
            else:
                assert ours == theirs
    H = se3_exp(rng.normal(size=6))
    twist = rng.normal(size=6)
    for child in ("base_link", "b", "trunk"):
        msg = odometry_message(FACTORY, 1_700_000_000_000_000_007, "odom", child, H, twist)
        raw = TYPESTORE.serialize_cdr(msg, "nav_msgs/msg/Odometry", little_endian=little_endian)
        fields = reader.odometry(raw)
        assert fields.stamp_ns == 1_700_000_000_000_000_007 and fields.child_frame_id == child
        H_ours, twist_ours = odometry_base_state(fields, child)
        H_msg, twist_msg = odometry_base_state(TYPESTORE.deserialize_cdr(raw, "nav_msgs/msg/Odometry"), child)
        np.testing.assert_array_equal(H_ours, H_msg)
        np.testing.assert_array_equal(twist_ours, twist_msg)
        np.testing.assert_allclose(H_ours, H, atol=1e-12)


def test_a_joint_state_cut_inside_its_names_does_not_spoil_the_whole_ones_after_it():
    """The reader keeps the names' bytes of the last joint state: a message cut inside its last name
    must not leave a prefix of them behind, which every whole message would match."""
    reader = CdrInputs()
    raw = TYPESTORE.serialize_cdr(joint_state_message(FACTORY, 5, ("hip", "knee"), [0.1, 0.2], [0.3, 0.4]),
                                  "sensor_msgs/msg/JointState")
    end_of_names = bytes(raw).index(b"knee") + 3
    with pytest.raises(InputError, match="truncated or malformed"):
        reader.joint_state(raw[:end_of_names])
    fields = reader.joint_state(raw)
    assert fields.name == ("hip", "knee") and fields.position.tolist() == [0.1, 0.2]


def test_cdr_inputs_refuse_truncated_bytes_and_leave_other_encodings_to_the_deserializer(rng):
    reader = CdrInputs()
    msg = joint_state_message(FACTORY, 5, ("a", "b"), [0.1, 0.2], [0.0, 0.0])
    raw = TYPESTORE.serialize_cdr(msg, "sensor_msgs/msg/JointState")
    with pytest.raises(InputError, match="truncated or malformed"):
        reader.joint_state(raw[:-9])
    odometry = TYPESTORE.serialize_cdr(odometry_message(FACTORY, 5, "odom", "base_link", np.eye(4), np.zeros(6)),
                                       "nav_msgs/msg/Odometry")
    for cut in (200, len(odometry) - 9):  # (also inside the twist's covariance, after every number it reads)
        with pytest.raises(InputError, match="truncated or malformed"):
            reader.odometry(odometry[:cut])
    xcdr2 = b"\x00\x07\x00\x00" + raw[4:]  # (D)CDR2 little endian: not plain CDR
    assert reader.joint_state(xcdr2) is None and reader.odometry(xcdr2) is None
