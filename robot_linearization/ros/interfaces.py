"""The package's own ROS 2 interfaces (msg/Linearization.msg, srv/Linearize.srv, srv/Validate.srv),
rclpy-free: their definitions read from the .msg/.srv text (for rosbags' typestore, so that bags and
tests use the real definitions without a ROS build), one cycle's :class:`Linearization` message
built through any :class:`~robot_linearization.ros.messages.MessageFactory`, read back into
matrices, and a service request turned into the state, torques and options to linearize at.

Layout (documented in the .msg): every matrix flattened row-major, its sizes those of the label
lists naming its rows and columns.
"""

from __future__ import annotations

import functools
import math
import os
import struct
import sys
from typing import Any

import numpy as np

from ..contacts import ContactError, as_contacts, format_contacts, resolve
from ..model import State
from ..spatial import pose_quaternion
from .messages import InputError, header_message, joint_state_arrays, odometry_base_state

PACKAGE = "robot_linearization"
LINEARIZATION = f"{PACKAGE}/msg/Linearization"
SERVICES = ("Linearize", "Validate")


def interface_file(kind: str, name: str) -> str:
    """The path of ``<kind>/<name>.<kind>`` (kind 'msg' or 'srv'): beside the sources in a checkout,
    in the installation's share/robot_linearization (pip's data files, colcon's rosidl install)."""
    package_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    candidates = [os.path.join(os.path.dirname(package_dir), kind),
                  os.path.join(package_dir, *[os.pardir] * 4, "share", PACKAGE, kind),
                  os.path.join(sys.prefix, "share", PACKAGE, kind)]
    for directory in candidates:
        path = os.path.join(directory, f"{name}.{kind}")
        if os.path.isfile(path):
            return os.path.normpath(path)
    raise FileNotFoundError(f"{kind}/{name}.{kind} of {PACKAGE} is not installed (looked in {candidates})")


def interface_definitions() -> dict:
    """{type name: .msg text} of the package's message and of its services' requests and responses
    (robot_linearization/srv/Linearize_Request …), as rosbags' get_types_from_msg reads them."""
    with open(interface_file("msg", "Linearization")) as f:
        definitions = {LINEARIZATION: f.read()}
    for service in SERVICES:
        with open(interface_file("srv", service)) as f:
            request, response = f.read().split("\n---\n")
        definitions[f"{PACKAGE}/srv/{service}_Request"] = request
        definitions[f"{PACKAGE}/srv/{service}_Response"] = response
    return definitions


def register_interfaces(typestore) -> None:
    """Add the package's interfaces to a rosbags typestore (idempotent)."""
    from rosbags.typesys import get_types_from_msg

    types = {}
    for name, text in interface_definitions().items():
        if name not in typestore.types:
            # (rosbags names every type <package>/msg/<Name>: a request is <package>/srv/<Service>_Request)
            types.update({name: definition for definition in get_types_from_msg(text, name).values()})
    if types:
        typestore.register(types)


def typestore_with_interfaces(distribution: str = "humble"):
    """rosbags' typestore of a ROS 2 distribution ('humble', 'jazzy') with this package's interfaces."""
    from rosbags.typesys import Stores, get_typestore

    typestore = get_typestore({"humble": Stores.ROS2_HUMBLE, "jazzy": Stores.ROS2_JAZZY}[distribution])
    register_interfaces(typestore)
    return typestore


# ---- one cycle ------------------------------------------------------------------------------------

def _flat(factory, matrix):
    return factory.float64_array(np.zeros(0) if matrix is None else matrix)


def linearization_values(output, frame_id: str) -> dict:
    """The fields of one cycle's Linearization message as plain values, in the .msg's order: numbers,
    strings, lists of strings, float64 arrays (None: empty), and for header, base_pose and base_twist
    pairs ((sec, nanosec), frame_id), ([x, y, z], (x, y, z, w)), ([vx, vy, vz], [ωx, ωy, ωz]).

    ``output``: one pipeline Output (ros/pipeline.py); ``frame_id``: the header's frame."""
    lin, model, state = output.linearization, output.model, output.state
    floating = model.floating_base
    H = state.base_pose if floating else _IDENTITY
    twist = state.base_twist.tolist() if floating else [0.0] * 6
    w, x, y, z = pose_quaternion(H)
    margins, jump = output.margins, output.impact
    return {
        "header": (divmod(int(output.stamp_ns), 1_000_000_000), frame_id),
        "joint_names": list(model.joint_names), "joint_positions": state.joint_positions,
        "joint_velocities": state.joint_velocities, "joint_efforts": output.joint_torques,
        "floating_base": bool(floating),
        "base_pose": (H[:3, 3].tolist(), (x, y, z, w)), "base_twist": (twist[:3], twist[3:]),
        "state_labels": model.state_labels, "input_labels": _input_labels(model.joint_names),
        "state_matrix": lin.A, "input_matrix": lin.B, "inverse_mass_matrix": lin.M_inv,
        "dt": float(lin.dt or 0.0), "discretization": (lin.discretization or "") if lin.A_d is not None else "",
        "discrete_state_matrix": lin.A_d, "discrete_input_matrix": lin.B_d,
        "contacts": format_contacts(lin.contacts) if lin.contacts else "", "contact_labels": lin.contact_labels,
        "contact_forces": lin.contact_forces, "contact_forces_state_jacobian": lin.contact_forces_state_jacobian,
        "contact_forces_input_jacobian": lin.contact_forces_input_jacobian,
        "margin_labels": margins.labels if margins is not None else (),
        "margins": None if margins is None else margins.margins,
        "margins_state_jacobian": None if margins is None else margins.state_jacobian,
        "margins_input_jacobian": None if margins is None else margins.input_jacobian,
        "touchdown": jump is not None, "restitution": float(jump.restitution) if jump is not None else 0.0,
        "impact_map": None if jump is None else jump.A,
        "impulse_labels": jump.impulse_labels if jump is not None else (),
        "impulses": None if jump is None else jump.impulses,
        "compute_time": float(output.compute_time)}


_IDENTITY = np.eye(4)
_IDENTITY.flags.writeable = False


@functools.lru_cache(maxsize=64)
def _input_labels(joint_names: tuple) -> tuple:
    return tuple(f"tau:{j}" for j in joint_names)


def linearization_message(factory, output, frame_id: str):
    """The robot_linearization/msg/Linearization of one pipeline Output (ros/pipeline.py): the
    linearization point, A, B, M⁻¹, the step's A_d and B_d, λ and its Jacobians, the margins, a
    touchdown's impact map and impulses, the compute time; stamped with the input's stamp.

    ``factory``: makes messages by type name (ros/messages.py: rosbags' or rclpy's types);
    ``output``: the pipeline Output; ``frame_id``: the header's frame."""
    fields = {}
    for name, value in linearization_values(output, frame_id).items():
        if name == "header":
            (sec, nanosec), frame = value
            value = header_message(factory, sec * 1_000_000_000 + nanosec, frame)
        elif name == "base_pose":
            (px, py, pz), (x, y, z, w) = value
            value = factory.make("geometry_msgs/msg/Pose",
                                 position=factory.make("geometry_msgs/msg/Point", x=px, y=py, z=pz),
                                 orientation=factory.make("geometry_msgs/msg/Quaternion", x=x, y=y, z=z, w=w))
        elif name == "base_twist":
            value = factory.make("geometry_msgs/msg/Twist", **{
                part: factory.make("geometry_msgs/msg/Vector3", x=v[0], y=v[1], z=v[2])
                for part, v in zip(("linear", "angular"), value)})
        elif isinstance(value, (tuple, list)):
            value = list(value)
        elif value is None or isinstance(value, np.ndarray):
            value = _flat(factory, value)
        fields[name] = value
    return factory.make(LINEARIZATION, **fields)


class LinearizationCdr:
    """:func:`linearization_message` as its serialized CDR (little-endian) bytes, for rclpy's raw
    publish: the same message on the wire, without building the Python message and having rclpy
    convert it (≈ 0.4 ms of a talos cycle).  A writer keeps the last cycle's bytes and where each
    number sits in them: the next cycle of the same layout (same robot, labels, contact set, sizes)
    only overwrites the numbers; another layout is laid out anew.

    ``writer(output, frame_id) -> bytes``, output as :func:`linearization_values` takes it."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._fields = 0  # how many fields the layout has
        # what decided the layout: [(name, the text, flag or label list)], [(name, the array's size)]
        self._texts: list[tuple[str, Any]] = []
        self._sizes: list[tuple[str, int]] = []
        # where the numbers go: [(name, a float64 view into the buffer)], [(name, offset, struct.Struct)];
        # the header's stamp at offset self._stamp
        self._arrays: list[tuple[str, np.ndarray]] = []
        self._packed: list[tuple[str, int, struct.Struct]] = []
        self._stamp, self._frame = 0, ""
        self._places: dict[str, tuple[int, int]] = {}  # what layout() says
        self.layouts = 0  # how many layouts there have been (a new one: a new value)

    def __call__(self, output, frame_id: str) -> bytes:
        values = linearization_values(output, frame_id)
        if len(values) != self._fields or values["header"][1] != self._frame:
            return self._lay_out(values)
        for name, laid_out in self._texts:
            if values[name] != laid_out:
                return self._lay_out(values)
        for name, size in self._sizes:
            value = values[name]
            if (0 if value is None else value.size) != size:
                return self._lay_out(values)
        buffer = self._buffer
        _STAMP.pack_into(buffer, self._stamp, *values["header"][0])
        for name, view in self._arrays:
            view[:] = values[name].reshape(-1)
        for name, offset, packer in self._packed:
            value = values[name]
            if packer is _DOUBLE:
                packer.pack_into(buffer, offset, value)
            else:  # base_pose, base_twist: two sequences of doubles
                packer.pack_into(buffer, offset, *value[0], *value[1])
        return bytes(buffer)

    def layout(self) -> tuple[bytes, dict]:
        """The last message's bytes, and where its numbers sit in them: {field: (byte offset, how many
        float64)} for every non-empty array and every double (base_pose 7, base_twist 6, dt, restitution,
        compute_time 1); "header.stamp": (its offset, 1), the int32 sec and uint32 nanosec of 8 bytes."""
        return bytes(self._buffer), dict(self._places)

    def _lay_out(self, values: dict) -> bytes:
        """Serialize ``values`` field by field (CDR: each primitive aligned to its size, counted from
        after the 4-byte encapsulation header), noting where each number went and what decided the
        layout (a string's text, a flag, an array's size)."""
        buffer = bytearray(b"\x00\x01\x00\x00")  # CDR_LE
        texts: list[tuple[str, Any]] = []  # (a flag, a text, a label list)
        sizes, arrays, packed = [], [], []

        def write(data: bytes, alignment: int = 1) -> int:
            buffer.extend(bytes(-(len(buffer) - 4) % alignment))
            buffer.extend(data)
            return len(buffer) - len(data)

        for name, value in values.items():
            if name == "header":
                (sec, nanosec), frame = value
                self._stamp, self._frame = write(_STAMP.pack(sec, nanosec), 4), frame
                write(_string_cdr(frame), 4)
            elif name in ("base_pose", "base_twist"):
                packer = _DOUBLES[len(value[0]) + len(value[1])]
                packed.append((name, write(packer.pack(*value[0], *value[1]), 8), packer))
            elif isinstance(value, bool):  # (a flag that goes with sizes: floating base, touchdown)
                write(b"\x01" if value else b"\x00")
                texts.append((name, value))
            elif isinstance(value, float):
                packed.append((name, write(_DOUBLE.pack(value), 8), _DOUBLE))
            elif isinstance(value, str):
                write(_string_cdr(value), 4)
                texts.append((name, value))
            elif isinstance(value, (tuple, list)):
                write(_strings_cdr(tuple(value)), 4)
                texts.append((name, value))
            else:
                data = b"" if value is None else np.ascontiguousarray(value, dtype="<f8").tobytes()
                write(_UINT32.pack(len(data) // 8), 4)
                sizes.append((name, len(data) // 8))
                if data:
                    arrays.append((name, write(data, 8)))
        # the arrays are written through views into the buffer, which keeps its size from now on
        self._arrays = [(name, np.frombuffer(buffer, dtype="<f8", count=size, offset=where))
                        for (name, where), size in zip(arrays, [size for _, size in sizes if size])]
        self._places = {name: (view.ctypes.data - np.frombuffer(buffer, np.uint8).ctypes.data, view.size)
                        for name, view in self._arrays}
        self._places.update({name: (where, packer.size // 8) for name, where, packer in packed})
        self._places["header.stamp"] = (self._stamp, 1)
        self._texts, self._sizes, self._packed, self._buffer = texts, sizes, packed, buffer
        self._fields = len(values)
        self.layouts += 1
        return bytes(buffer)


def linearization_cdr(output, frame_id: str) -> bytes:
    """One message's CDR bytes by a writer of its own (:class:`LinearizationCdr`; the node keeps one).

    ``output``: one pipeline Output; ``frame_id``: the header's frame (the base frame)."""
    return LinearizationCdr()(output, frame_id)


_STAMP, _UINT32, _DOUBLE = struct.Struct("<iI"), struct.Struct("<I"), struct.Struct("<d")
_DOUBLES = {count: struct.Struct(f"<{count}d") for count in (6, 7)}


def _string_cdr(text: str) -> bytes:
    data = text.encode() + b"\x00"
    return _UINT32.pack(len(data)) + data


@functools.lru_cache(maxsize=256)
def _strings_cdr(texts: tuple) -> bytes:
    """A string[] from a 4-aligned offset: its length, then each string 4-aligned (CDR)."""
    out = bytearray(_UINT32.pack(len(texts)))
    for text in texts:
        out += bytes(-len(out) % 4) + _string_cdr(text)
    return bytes(out)


MATRICES = {  # field: (rows' labels, columns' labels)
    "state_matrix": ("state_labels", "state_labels"), "input_matrix": ("state_labels", "input_labels"),
    "inverse_mass_matrix": ("velocity_labels", "velocity_labels"),
    "discrete_state_matrix": ("state_labels", "state_labels"),
    "discrete_input_matrix": ("state_labels", "input_labels"),
    "contact_forces_state_jacobian": ("contact_labels", "state_labels"),
    "contact_forces_input_jacobian": ("contact_labels", "input_labels"),
    "margins_state_jacobian": ("margin_labels", "state_labels"),
    "margins_input_jacobian": ("margin_labels", "input_labels"),
    "impact_map": ("state_labels", "state_labels"),
}
"""Every matrix field of Linearization.msg and the label lists that name its rows and columns."""


def linearization_matrices(msg) -> dict:
    """{field: matrix (R, C)} of a Linearization message (rosbags' or rclpy's), each reshaped by the
    sizes of its labels (:data:`MATRICES`); an absent one is None.  InputError when a field's length
    does not match its labels.

    ``msg``: the message."""
    labels = {name: list(getattr(msg, name)) for name in ("state_labels", "input_labels", "contact_labels",
                                                           "margin_labels")}
    labels["velocity_labels"] = labels["state_labels"][len(labels["state_labels"]) // 2:]
    out: dict[str, np.ndarray | None] = {}
    for field, (rows, cols) in MATRICES.items():
        data = np.asarray(getattr(msg, field), dtype=np.float64)
        R, C = len(labels[rows]), len(labels[cols])
        if data.size == 0 and (field != "state_matrix" or R == 0):
            out[field] = None
            continue
        if data.size != R * C:
            raise InputError(f"Linearization.{field} has {data.size} entries, not {R}×{C} ({rows} × {cols})")
        out[field] = data.reshape(R, C)
    return out


# ---- a service request ----------------------------------------------------------------------------

def request_point(model, joint_state, odometry, base_frame: str):
    """(State, torques τ (n,)) of a Linearize/Validate request: the JointState by name (efforts are
    τ, empty: zeros), for a floating base the Odometry's pose and body twist (its child_frame_id,
    if given, must be the base frame).  InputError naming the request's field.

    ``model``: the node's model; ``joint_state``: sensor_msgs/JointState; ``odometry``:
    nav_msgs/Odometry (ignored for a fixed base); ``base_frame``: the model's base link."""
    try:
        reading = joint_state_arrays(joint_state, model.joint_names, need_effort=True)
    except InputError as e:
        raise InputError(f"joint_state: {e}") from None
    if not model.floating_base:
        return State(joint_positions=reading.positions, joint_velocities=reading.velocities), reading.efforts
    expected = base_frame if odometry.child_frame_id else ""
    try:
        H, twist = odometry_base_state(odometry, expected)
    except InputError as e:
        raise InputError(f"odometry: {e}") from None
    return (State(base_pose=H, joint_positions=reading.positions, base_twist=twist,
                  joint_velocities=reading.velocities), reading.efforts)


def request_options(model, request) -> dict:
    """{contacts, previous_contacts, restitution, step} of a request's text and numbers, checked
    (InputError naming the field): contact sets as the contacts parameter reads them (empty: none),
    restitution in [0, 1], dt ≥ 0 (0: no step), discretization '' (euler), 'euler' or 'zoh'.

    ``model``: the node's model (contact frames are checked against it); ``request``: a Linearize or
    Validate request."""
    options: dict[str, Any] = {}  # (contact sets, a number, a step's arguments)
    for field in ("contacts", "previous_contacts"):
        text = getattr(request, field, "")
        try:
            contacts = as_contacts(text) if text.strip() else ()
            resolve(model, contacts)
        except (ContactError, ValueError) as e:
            raise InputError(f"{field}: {e}") from None
        options[field] = contacts
    restitution = float(getattr(request, "restitution", 0.0))
    if not 0.0 <= restitution <= 1.0:
        raise InputError(f"restitution: expected a number in [0, 1], got {restitution}")
    options["restitution"] = restitution
    dt = float(request.dt)
    if not (math.isfinite(dt) and dt >= 0.0):
        raise InputError(f"dt: expected 0 (no step) or a step > 0 in seconds, got {dt}")
    method = request.discretization or "euler"
    if method not in ("euler", "zoh"):
        raise InputError(f"discretization: expected 'euler' or 'zoh' (or empty), got '{method}'")
    if not dt and request.discretization:
        raise InputError(f"discretization: '{method}' needs dt > 0")
    options["step"] = {"dt": dt, "discretization": method} if dt else {}
    return options


def validation_fields(report, tolerance: float) -> dict:
    """The Validate response's typed report of a validation.ComparisonReport.

    ``report``: the ComparisonReport; ``tolerance``: the relative tolerance it passes or fails
    against."""
    return {"passed": bool(report.passed(tolerance)), "tolerance": float(tolerance),
            "blocks": [b.name for b in report.blocks], "max_abs": [float(b.max_abs) for b in report.blocks],
            "scales": [float(b.scale) for b in report.blocks], "max_rel": [float(b.max_rel) for b in report.blocks]}

