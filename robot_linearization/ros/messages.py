"""ROS 2 messages <-> states and matrices, for any message implementation.

Messages are *read* by attribute (rclpy and rosbags classes look alike) and
*built* through a :class:`MessageFactory`, which knows how its implementation
wants arrays and bytes.  :class:`RosbagsFactory` builds rosbags' typestore
classes (real ROS 2 definitions, CDR-serialisable); the node supplies the
rclpy equivalent.  Matrix layout (documented in README): row-major,
layout.dim = [('rows', R, R·C), ('cols', C, C)], data_offset = 0.
"""

from __future__ import annotations

import functools
import json
import math
import struct
import sys
from typing import NamedTuple

import numpy as np

from ..spatial import pose_quaternion, quaternion_pose
from .images import heatmap_rgb, state_block_boundaries



class InputError(ValueError):
    """A message that cannot be used; the text names what is wrong."""


class MessageFactory:
    """Builds messages of one implementation: ``make(type_name, **fields)``."""

    def __init__(self):
        self._layouts = {}

    def make(self, type_name: str, **fields):
        raise NotImplementedError

    def matrix_layout(self, rows: int, cols: int):
        """std_msgs/MultiArrayLayout of a row-major rows×cols matrix (:func:`matrix_message`),
        made once per shape: a message is serialised when published, so one layout serves all."""
        layout = self._layouts.get((rows, cols))
        if layout is None:
            dims = [self.make("std_msgs/msg/MultiArrayDimension", label="rows", size=rows, stride=rows * cols),
                    self.make("std_msgs/msg/MultiArrayDimension", label="cols", size=cols, stride=cols)]
            layout = self._layouts[rows, cols] = self.make("std_msgs/msg/MultiArrayLayout", dim=dims, data_offset=0)
        return layout

    def vector_layout(self, size: int):
        """std_msgs/MultiArrayLayout of a vector of ``size`` entries: dim = [('entries', k, k)],
        data_offset = 0 (:func:`health_message`); made once per size, as :meth:`matrix_layout`."""
        layout = self._layouts.get(size)
        if layout is None:
            dims = [self.make("std_msgs/msg/MultiArrayDimension", label="entries", size=size, stride=size)]
            layout = self._layouts[size] = self.make("std_msgs/msg/MultiArrayLayout", dim=dims, data_offset=0)
        return layout

    def float64_array(self, values: np.ndarray):
        return np.ascontiguousarray(values, dtype=np.float64).ravel()

    def uint8_array(self, values: np.ndarray):
        return np.ascontiguousarray(values, dtype=np.uint8).ravel()

    def byte(self, value: int):
        return int(value)


class RosbagsFactory(MessageFactory):
    """rosbags typestore classes (ROS 2 Humble definitions by default)."""

    def __init__(self, typestore=None):
        super().__init__()
        if typestore is None:
            from rosbags.typesys import Stores, get_typestore

            typestore = get_typestore(Stores.ROS2_HUMBLE)
        self.typestore = typestore

    def make(self, type_name: str, **fields):
        return self.typestore.types[type_name](**fields)


# ---- time -------------------------------------------------------------------

def stamp_to_ns(stamp) -> int:
    """builtin_interfaces/Time -> integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def time_message(factory: MessageFactory, ns: int):
    return factory.make("builtin_interfaces/msg/Time", sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))


def header_message(factory: MessageFactory, ns: int, frame_id: str):
    return factory.make("std_msgs/msg/Header", stamp=time_message(factory, ns), frame_id=frame_id)


# ---- inputs -----------------------------------------------------------------

class JointStateReading(NamedTuple):
    """A sensor_msgs/JointState in the model's joint order."""

    positions: np.ndarray  # (n,) [rad or m]
    velocities: np.ndarray  # (n,) [rad/s or m/s]; zeros when the message carries none
    efforts: np.ndarray | None  # (n,) [N m or N]; None when not asked for; zeros when asked for but absent
    assumed: tuple  # what was assumed for empty arrays, one sentence each (empty when nothing was)


def joint_state_arrays(msg, joint_names, *, need_effort: bool) -> JointStateReading:
    """sensor_msgs/JointState -> positions, velocities and efforts in the model's
    joint order.

    As the message definition allows, ``velocity`` and ``effort`` may be empty
    (stock joint_state_publisher sends both empty): that means "not measured",
    and zeros are used and named in ``assumed``.  ``position`` is always needed.
    Extra joints are ignored; missing or duplicated names, a non-empty array whose
    length differs from ``name``, and NaN/inf raise InputError.
    """
    names = tuple(msg.name)  # (a tuple already: itself)
    count = len(names)
    arrays = [np.asarray(msg.position, dtype=float), np.asarray(msg.velocity, dtype=float),
              np.asarray(msg.effort, dtype=float)]
    for field, values in zip(_FIELDS, arrays):
        if len(values) != count and (field == "position" or len(values) or not count):
            raise InputError(f"joint_states has {count} names but {len(values)} {field} values")
    order = joint_order(names, tuple(joint_names))
    out: list = []
    assumed = []
    for field, values in zip(_FIELDS, arrays if need_effort else arrays[:2]):
        if count and not len(values):  # (velocity or effort, not measured)
            out.append(np.zeros(len(joint_names)))
            assumed.append(_ASSUMED[field])
            continue
        values = values[order]
        # (a finite sum: all finite, NaN and inf propagate; a sum that overflows: each is checked)
        if not (math.isfinite(values.sum()) or np.isfinite(values).all()):
            bad = [joint_names[i] for i in np.flatnonzero(~np.isfinite(values))][:5]
            raise InputError(f"joint_states {field} of {bad} is NaN or inf")
        out.append(values)
    return JointStateReading(out[0], out[1], out[2] if need_effort else None, tuple(assumed))


_FIELDS = ("position", "velocity", "effort")
_ASSUMED = {"velocity": "joint_states carries no velocities: linearizing at zero joint velocity",
            "effort": "joint_states carries no efforts: linearizing at zero joint torques (use_effort)"}


@functools.lru_cache(maxsize=16)
def joint_order(names: tuple, joint_names: tuple) -> np.ndarray:
    """Indices of ``joint_names`` in a message's ``names`` (a robot sends the same names
    every cycle: computed once); InputError for duplicated or missing names."""
    if len(set(names)) != len(names):
        duplicated = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"joint_states names joints more than once: {duplicated}")
    index = {n: i for i, n in enumerate(names)}
    missing = [j for j in joint_names if j not in index]
    if missing:
        raise InputError(f"joint_states lacks joints {missing[:10]}" + (" …" if len(missing) > 10 else ""))
    order = np.array([index[j] for j in joint_names], dtype=int)
    order.flags.writeable = False  # (shared by every message with these names)
    return order


def effort_order(joints: tuple, joint_names: tuple) -> tuple[tuple, np.ndarray]:
    """(the effort commands' joint order: ``joints``, or ``joint_names`` where it is empty; the index in
    ``joint_names`` of each of its entries (k,)); ValueError in one line, naming parameter 'joints', unless it
    names each of ``joint_names`` once."""
    joints = tuple(joints) or tuple(joint_names)
    unknown = [j for j in joints if j not in joint_names]
    if unknown or len(set(joints)) != len(joints) or len(joints) != len(joint_names):
        missing = [j for j in joint_names if j not in joints]
        raise ValueError(f"parameter 'joints' must name each of the {len(joint_names)} joints once"
                         + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                         + (f"; missing: {', '.join(missing)}" if missing else ""))
    return joints, np.array([joint_names.index(j) for j in joints])


QUATERNION_TOLERANCE = 0.05
"""|q| may differ from 1 by this much and is normalised; beyond it the message is rejected."""


class OdometryFields(NamedTuple):
    """What :func:`odometry_base_state` reads of a nav_msgs/Odometry, as plain numbers."""

    stamp_ns: int
    child_frame_id: str
    position: tuple  # (x, y, z) of the base in header.frame_id [m]
    orientation: tuple  # (x, y, z, w), ROS order
    twist: tuple  # [v; ω] (6,) in child_frame_id


def odometry_fields(msg) -> OdometryFields:
    """The :class:`OdometryFields` of a nav_msgs/Odometry message object."""
    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    t_lin, t_ang = msg.twist.twist.linear, msg.twist.twist.angular
    return OdometryFields(stamp_to_ns(msg.header.stamp), msg.child_frame_id, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w),
                          (t_lin.x, t_lin.y, t_lin.z, t_ang.x, t_ang.y, t_ang.z))


def odometry_base_state(msg, expected_child_frame: str):
    """nav_msgs/Odometry (or its :class:`OdometryFields`) -> (A_H_0 (4×4), body twist
    [v; ω] (6,) in the base frame).

    The pose is the base in header.frame_id (the world); the twist is in
    child_frame_id, which must be ``expected_child_frame`` (when given).
    """
    fields = msg if isinstance(msg, OdometryFields) else odometry_fields(msg)
    if expected_child_frame and fields.child_frame_id != expected_child_frame:
        raise InputError(f"odometry child_frame_id is '{fields.child_frame_id}', expected the base frame "
                         f"'{expected_child_frame}' (its twist must be expressed in the base frame)")
    # plain floats: for 3- and 4-vectors, numpy's per-call overhead is most of the cost (1 kHz)
    x, y, z, w = fields.orientation
    if not _all_finite((*fields.position, x, y, z, w, *fields.twist)):
        raise InputError("odometry contains NaN or inf")
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if norm < 1e-9:
        raise InputError("odometry orientation is the zero quaternion")
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        raise InputError(f"odometry orientation is not a unit quaternion (|q| = {norm:.3g})")
    return quaternion_pose(w / norm, x / norm, y / norm, z / norm, fields.position), np.array(fields.twist, dtype=float)


def _all_finite(values) -> bool:
    """No NaN or inf among a few numbers: their sum is finite (NaN and inf propagate), or, where
    the sum overflows, each is."""
    return math.isfinite(sum(values)) or all(math.isfinite(value) for value in values)


# ---- inputs as serialized CDR (what the node takes, without rclpy building messages) ----

class JointStateFields(NamedTuple):
    """What :func:`joint_state_arrays` reads of a sensor_msgs/JointState."""

    stamp_ns: int
    name: tuple
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


def _cdr_order(raw) -> str | None:
    """'<' or '>' for a plain CDR payload (encapsulation CDR_LE / CDR_BE), None for any
    other encoding (XCDR2 …), which the caller then hands to the usual deserializer."""
    return None if len(raw) < 4 or raw[0] != 0 or raw[1] > 1 else "<>"[raw[1] == 0]


def _structs(layout: str) -> dict:
    """{byte order: struct.Struct(order + layout)} for both orders: made once, not per message."""
    return {order: struct.Struct(order + layout) for order in "<>"}


_UINT32, _STAMP = _structs("I"), _structs("iI")
_POSE_DOUBLES, _TWIST_DOUBLES = _structs("7d"), _structs("6d")


def _aligned(offset: int, size: int) -> int:
    """``offset`` rounded up to a multiple of ``size``, counted after the 4-byte encapsulation."""
    return offset + (-(offset - 4) % size)


def _string_at(raw, offset: int, order: str):
    """(text, offset after it) of the CDR string at ``offset``; ValueError for one that runs past the end."""
    offset = _aligned(offset, 4)
    (size,) = _UINT32[order].unpack_from(raw, offset)
    offset += 4
    if offset + size > len(raw):
        raise ValueError(f"a string of {size} bytes at byte {offset} runs past the end ({len(raw)} bytes)")
    return bytes(raw[offset:offset + max(size - 1, 0)]).decode(), offset + size


def _header_at_start(raw):
    """(byte order, header stamp [ns], offset after header.frame_id) of a plain-CDR message
    that starts with a std_msgs/Header; None for another encoding."""
    order = _cdr_order(raw)
    if order is None:
        return None
    sec, nanosec = _STAMP[order].unpack_from(raw, 4)
    (size,) = _UINT32[order].unpack_from(raw, 12)  # header.frame_id, not needed: skipped
    if len(raw) < 16 + size:
        raise ValueError("header.frame_id runs past the end")
    return order, sec * 1_000_000_000 + nanosec, 16 + size


def _doubles_at(raw, offset: int, order: str):
    """(float64 array viewing ``raw``, offset after it) of the CDR sequence<double> at ``offset``."""
    offset = _aligned(offset, 4)
    (count,) = _UINT32[order].unpack_from(raw, offset)
    offset = _aligned(offset + 4, 8) if count else offset + 4
    return np.frombuffer(raw, dtype=order + "f8", count=count, offset=offset), offset + 8 * count


class CdrInputs:
    """sensor_msgs/JointState and nav_msgs/Odometry read from their serialized CDR, as
    :class:`JointStateFields` and :class:`OdometryFields`.  What rclpy would do is build
    the Python message (≈ 15 and 40 µs for talos' joint states and an odometry); here
    the numbers are read in place, and the joint names, which a robot repeats in every
    message, are decoded only when their bytes change (the same tuple is then handed on,
    so that its joint order is looked up once).  None for an encoding this does not read;
    InputError for a truncated message."""

    def __init__(self):
        self._names = (b"", ())  # (the names section's bytes, the names) of the last joint state

    @property
    def names(self) -> tuple[bytes, tuple]:
        """(the CDR bytes of the last joint state's ``name`` sequence, those names)."""
        return self._names

    def joint_state(self, raw) -> JointStateFields | None:
        try:
            header = _header_at_start(raw)
            if header is None:
                return None
            order, stamp, offset = header
            start = _aligned(offset, 4)
            section, names = self._names
            if section and raw[start:start + len(section)] == section:
                offset = start + len(section)
            else:
                (count,) = _UINT32[order].unpack_from(raw, start)
                offset, decoded = start + 4, []
                for _ in range(count):
                    text, offset = _string_at(raw, offset, order)
                    decoded.append(text)
                names = tuple(decoded)
                self._names = (bytes(raw[start:offset]), names)
            position, offset = _doubles_at(raw, offset, order)
            velocity, offset = _doubles_at(raw, offset, order)
            effort, _ = _doubles_at(raw, offset, order)
        except (struct.error, ValueError, UnicodeDecodeError) as e:
            raise InputError(f"joint_states message is truncated or malformed ({e})") from None
        return JointStateFields(stamp, names, position, velocity, effort)

    def odometry(self, raw) -> OdometryFields | None:
        try:
            header = _header_at_start(raw)
            if header is None:
                return None
            order, stamp, offset = header
            child_frame_id, offset = _string_at(raw, offset, order)
            # pose (7), its covariance (36), twist (6), its covariance (36): 85 doubles, no gaps
            start = _aligned(offset, 8)
            if len(raw) < start + 85 * 8:
                raise ValueError(f"{len(raw)} bytes, the odometry's numbers end at byte {start + 85 * 8}")
            pose = _POSE_DOUBLES[order].unpack_from(raw, start)
            twist = _TWIST_DOUBLES[order].unpack_from(raw, start + 43 * 8)
        except (struct.error, ValueError, UnicodeDecodeError) as e:
            raise InputError(f"odometry message is truncated or malformed ({e})") from None
        return OdometryFields(stamp, child_frame_id, pose[:3], pose[3:], twist)


def joint_state_message(factory: MessageFactory, ns: int, names, positions, velocities, efforts=()):
    """sensor_msgs/JointState (what a robot driver or the simulator publishes)."""
    return factory.make("sensor_msgs/msg/JointState", header=header_message(factory, ns, ""), name=list(names),
                        position=factory.float64_array(positions), velocity=factory.float64_array(velocities),
                        effort=factory.float64_array(efforts))


def pose_message(factory: MessageFactory, H: np.ndarray):
    """geometry_msgs/Pose of the pose H (4, 4)."""
    w, x, y, z = pose_quaternion(H)
    return factory.make("geometry_msgs/msg/Pose",
                        position=factory.make("geometry_msgs/msg/Point", x=float(H[0, 3]), y=float(H[1, 3]),
                                              z=float(H[2, 3])),
                        orientation=factory.make("geometry_msgs/msg/Quaternion", x=x, y=y, z=z, w=w))


def odometry_message(factory: MessageFactory, ns: int, frame_id: str, child_frame_id: str, H: np.ndarray,
                     twist: np.ndarray):
    """nav_msgs/Odometry: pose A_H_0 in frame_id, body twist [v; ω] in child_frame_id."""
    vec = lambda v: factory.make("geometry_msgs/msg/Vector3", x=float(v[0]), y=float(v[1]), z=float(v[2]))  # noqa: E731
    pose = pose_message(factory, H)
    twist_msg = factory.make("geometry_msgs/msg/Twist", linear=vec(twist[:3]), angular=vec(twist[3:]))
    zeros = factory.float64_array(np.zeros(36))
    return factory.make("nav_msgs/msg/Odometry", header=header_message(factory, ns, frame_id),
                        child_frame_id=child_frame_id,
                        pose=factory.make("geometry_msgs/msg/PoseWithCovariance", pose=pose, covariance=zeros),
                        twist=factory.make("geometry_msgs/msg/TwistWithCovariance", twist=twist_msg,
                                           covariance=zeros))


# ---- outputs ----------------------------------------------------------------

def matrix_message(factory: MessageFactory, matrix: np.ndarray):
    """std_msgs/Float64MultiArray, row-major: dim = [('rows', R, R·C), ('cols', C, C)]."""
    return factory.make("std_msgs/msg/Float64MultiArray", layout=factory.matrix_layout(*matrix.shape),
                        data=factory.float64_array(matrix))


_CDR_HEADER = b"\x00\x01\x00\x00" if sys.byteorder == "little" else b"\x00\x00\x00\x00"  # CDR_LE / CDR_BE


@functools.lru_cache(maxsize=64)
def _matrix_cdr_prefix(rows: int, cols: int) -> bytes:
    """The CDR encoding of :func:`matrix_message` up to its first double: encapsulation
    (native byte order), the layout, data_offset, the data's length and the padding
    that aligns the doubles to 8 (offsets count from the end of the encapsulation)."""
    order = "<" if sys.byteorder == "little" else ">"
    body = bytearray(struct.pack(order + "I", 2))
    for label, size, stride in (("rows", rows, rows * cols), ("cols", cols, cols)):
        text = label.encode() + b"\x00"
        body += struct.pack(order + "I", len(text)) + text
        body += bytes(-len(body) % 4)
        body += struct.pack(order + "II", size, stride)
    body += struct.pack(order + "II", 0, rows * cols)  # data_offset, len(data)
    if rows * cols:
        body += bytes(-len(body) % 8)
    return _CDR_HEADER + bytes(body)


def matrix_cdr(matrix: np.ndarray) -> bytes:
    """:func:`matrix_message` as its serialized CDR bytes, for rclpy's raw publish: the
    same message on the wire, without building the Python message and having rclpy
    convert it (≈ 0.07 ms of a talos cycle's three matrices, bench/node_load.py)."""
    return _matrix_cdr_prefix(*matrix.shape) + np.ascontiguousarray(matrix, dtype=np.float64).tobytes()


def header_cdr(ns: int, frame_id: str) -> bytes:
    """:func:`header_message` as its serialized CDR bytes (as :func:`matrix_cdr`)."""
    order = "<" if sys.byteorder == "little" else ">"
    text = frame_id.encode() + b"\x00"
    return _CDR_HEADER + struct.pack(order + "iII", ns // 1_000_000_000, ns % 1_000_000_000, len(text)) + text


def matrix_from_message(msg) -> np.ndarray:
    """Inverse of :func:`matrix_message`; checks the documented layout."""
    dims = list(msg.layout.dim)
    if len(dims) != 2 or dims[0].label != "rows" or dims[1].label != "cols" or msg.layout.data_offset != 0:
        raise InputError("Float64MultiArray is not a row-major matrix with dims ('rows', 'cols')")
    rows, cols = int(dims[0].size), int(dims[1].size)
    data = np.asarray(msg.data, dtype=float)
    if dims[0].stride != rows * cols or dims[1].stride != cols or data.size != rows * cols:
        raise InputError("Float64MultiArray strides or data size do not match its dims")
    return data.reshape(rows, cols)


def image_message(factory: MessageFactory, rgb: np.ndarray, ns: int, frame_id: str):
    """sensor_msgs/Image, encoding rgb8."""
    height, width, _ = rgb.shape
    return factory.make("sensor_msgs/msg/Image", header=header_message(factory, ns, frame_id), height=height,
                        width=width, encoding="rgb8", is_bigendian=0, step=3 * width,
                        data=factory.uint8_array(rgb))


def diagnostic_array_message(factory: MessageFactory, statuses, ns: int):
    """diagnostic_msgs/DiagnosticArray from [(level, name, message, {key: value})]."""
    status_msgs = [
        factory.make("diagnostic_msgs/msg/DiagnosticStatus", level=factory.byte(level), name=name, message=message,
                     hardware_id="", values=[factory.make("diagnostic_msgs/msg/KeyValue", key=k, value=str(v))
                                             for k, v in values.items()])
        for level, name, message, values in statuses]
    return factory.make("diagnostic_msgs/msg/DiagnosticArray", header=header_message(factory, ns, ""),
                        status=status_msgs)


def string_message(factory: MessageFactory, text: str):
    return factory.make("std_msgs/msg/String", data=text)


def state_labels_message(factory: MessageFactory, model):
    """~/state_labels: std_msgs/String holding the JSON list that names A's rows and columns."""
    return string_message(factory, json.dumps(list(model.state_labels)))


def contact_labels_message(factory: MessageFactory, contacts):
    """~/contact_labels: std_msgs/String holding the JSON list that names λ's entries."""
    from ..contacts import contact_labels

    return string_message(factory, json.dumps(list(contact_labels(contacts))))


def contact_margin_labels_message(factory: MessageFactory, labels):
    """~/contact_margin_labels: std_msgs/String holding the JSON list that names ~/contact_margins' rows."""
    return string_message(factory, json.dumps(list(labels)))


def health_message(factory: MessageFactory, values: np.ndarray):
    """~/health: std_msgs/Float64MultiArray of the health vector (health.py), one dimension:
    layout.dim = [('entries', k, k)], data_offset = 0; entry i is data[i], named by ~/health_labels."""
    values = np.asarray(values, dtype=float)
    return factory.make("std_msgs/msg/Float64MultiArray", layout=factory.vector_layout(values.size),
                        data=factory.float64_array(values))


def health_labels_message(factory: MessageFactory, labels):
    """~/health_labels: std_msgs/String holding the JSON list that names ~/health's entries."""
    return string_message(factory, json.dumps(list(labels)))


# ---- one cycle's output, as the node publishes it and the replay records it ----

OUTPUT_TYPES = {
    "A": "std_msgs/msg/Float64MultiArray",
    "B": "std_msgs/msg/Float64MultiArray",
    "M_inv": "std_msgs/msg/Float64MultiArray",
    "stamp": "std_msgs/msg/Header",
    "A_heatmap": "sensor_msgs/msg/Image",
    "B_heatmap": "sensor_msgs/msg/Image",
    "contact_forces": "std_msgs/msg/Float64MultiArray",
    "contact_forces_state_jacobian": "std_msgs/msg/Float64MultiArray",
    "contact_forces_input_jacobian": "std_msgs/msg/Float64MultiArray",
    "contact_margins": "std_msgs/msg/Float64MultiArray",
    "contact_margins_state_jacobian": "std_msgs/msg/Float64MultiArray",
    "contact_margins_input_jacobian": "std_msgs/msg/Float64MultiArray",
    "impact_map": "std_msgs/msg/Float64MultiArray",
    "impulses": "std_msgs/msg/Float64MultiArray",
    "A_d": "std_msgs/msg/Float64MultiArray",
    "B_d": "std_msgs/msg/Float64MultiArray",
    "health": "std_msgs/msg/Float64MultiArray",
}
"""Output topics, relative to the node (~/A …).  ~/stamp carries the input stamp
of the A, B, M_inv published just before it; ~/state_labels (latched String,
JSON list) names the rows/columns of A.  The contact topics (λ as an m×1 matrix,
∂λ/∂z, ∂λ/∂τ) come with every cycle that has contacts, before ~/stamp;
~/contact_labels (latched String, JSON list) names λ's rows.  The contact margins
(p×1, ∂/∂z p×2N, ∂/∂τ p×n: contact_margins.py) come with every cycle that has them,
named by ~/contact_margin_labels (latched String, JSON list); ~/impact_map (the
2N×2N A_impact) and ~/impulses (Λ, m×1, rows named by ~/contact_labels) only with
the cycle of a touchdown (impacts.py), all before ~/stamp.  ~/A_d, ~/B_d (the
one-step Jacobians, same layout as A and B) come with every cycle when
discretization_dt > 0, before ~/stamp.  ~/health (a vector, :func:`health_message`)
comes with the heatmaps, at their rate and never in the cycle; ~/health_labels
(latched String, JSON list) names its entries, republished when they change."""


def output_topics(publish_heatmaps: bool, discretization_dt: float, publish_health: bool = True,
                  matrix_topics: bool = True) -> dict:
    """The OUTPUT_TYPES a node with these settings publishes (matrix_topics: the per-matrix topics
    and ~/stamp, the node's publish_matrix_topics)."""
    return {name: kind for name, kind in OUTPUT_TYPES.items()
            if (publish_heatmaps or "heatmap" not in name) and (discretization_dt > 0 or name not in ("A_d", "B_d"))
            and (publish_health or name != "health")
            and (matrix_topics or "heatmap" in name or name == "health")}


def output_messages(factory: MessageFactory, output, frame_id: str, *, serialized: bool = False) -> dict:
    """{topic suffix: message} for one pipeline Output, in publishing order (the
    heatmaps, which are for eyes and come at their own rate: :func:`heatmap_messages`).
    serialized=True: every message as its CDR bytes (:func:`matrix_cdr`, :func:`header_cdr`)."""
    lin = output.linearization
    matrix = matrix_cdr if serialized else lambda values: matrix_message(factory, values)  # noqa: E731
    messages = {"A": matrix(lin.A), "B": matrix(lin.B), "M_inv": matrix(lin.M_inv)}
    if lin.contacts:
        messages["contact_forces"] = matrix(lin.contact_forces[:, None])
        messages["contact_forces_state_jacobian"] = matrix(lin.contact_forces_state_jacobian)
        messages["contact_forces_input_jacobian"] = matrix(lin.contact_forces_input_jacobian)
    margins = output.margins
    if margins is not None:
        messages["contact_margins"] = matrix(margins.margins[:, None])
        messages["contact_margins_state_jacobian"] = matrix(margins.state_jacobian)
        messages["contact_margins_input_jacobian"] = matrix(margins.input_jacobian)
    impact = output.impact
    if impact is not None:
        messages["impact_map"] = matrix(impact.A)
        messages["impulses"] = matrix(impact.impulses[:, None])
    if lin.A_d is not None:
        messages["A_d"] = matrix(lin.A_d)
        messages["B_d"] = matrix(lin.B_d)
    messages["stamp"] = (header_cdr(output.stamp_ns, frame_id) if serialized
                         else header_message(factory, output.stamp_ns, frame_id))
    return messages


def heatmap_messages(factory: MessageFactory, output, frame_id: str, model) -> dict:
    """~/A_heatmap, ~/B_heatmap (sensor_msgs/Image rgb8) of one Output, with grey lines
    between the state blocks [z_H | z_s | z_v | z_r]; stamped with the input stamp."""
    lin, blocks = output.linearization, state_block_boundaries(model)
    return {"A_heatmap": image_message(factory, heatmap_rgb(lin.A, row_blocks=blocks, col_blocks=blocks),
                                       output.stamp_ns, frame_id),
            "B_heatmap": image_message(factory, heatmap_rgb(lin.B, row_blocks=blocks), output.stamp_ns, frame_id)}


class RateLimit:
    """True at most ``rate_hz`` times per second of the caller's clock (ns); 0: never."""

    def __init__(self, rate_hz: float):
        self.period_ns = int(1e9 / rate_hz) if rate_hz > 0 else None
        self._next: int | None = None

    def due(self, now_ns: int) -> bool:
        if self.period_ns is None or (self._next is not None and now_ns < self._next):
            return False
        self._next = now_ns + self.period_ns
        return True
