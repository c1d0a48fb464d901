"""The node's cycle compiled: one odometry and the joint state taken after it (a fixed base: the joint
state alone), from their serialized CDR to the serialized ~/linearization, in one compiled call around
the robot's generated kernel.

The usual cycle (messages.CdrInputs, pipeline.LinearizationPipeline, interfaces.LinearizationCdr)
spends in Python about twice what the generated kernel takes for a humanoid (docs/ros.md).  Its
steady state — a robot without contacts, with no step or the Euler step, the same joint names in
every joint state, each paired with the odometry that came just before it where the base floats — is
what this does in one call: it reads both messages where they lie, makes every check the usual cycle
makes (encoding, lengths, names, NaN/inf, the quaternion, the child frame, the clock and the stamps,
staleness, pairing), calls the generated kernel (and takes the Euler step), and writes A, B, M⁻¹ (A_d,
B_d) and the state into the message.  Where any check would make the usual cycle do something else (a
rejection, a notice, a queued joint state, a new timeline, another pairing), it declines and changes
nothing: the caller hands both messages to the usual cycle.  What it serves is the usual cycle's
message bit for bit (but the compute time), and the pipeline is left as the usual cycle would leave
it; the pipeline's ``latest`` Output is built from it only when something asks for it (the services,
the heatmaps, /diagnostics).

It serves only with the generated kernel (the generic one answers through the usual cycle until
the generated one has taken over).
"""

from __future__ import annotations

import math
import struct
import time
from collections.abc import Callable

import numpy as np

from ..codegen.kernels import generated_linearize_at
from ..compiled import TypedCall, kernel
from ..discretization import NO_STEP, euler_step_into
from ..kernel_choice import current, kernel_argument
from ..linearization import free_result
from ..model import Model, State
from ..spatial import unit_quaternion_pose_into
from .interfaces import LinearizationCdr
from .messages import QUATERNION_TOLERANCE, CdrInputs, InputError, joint_order
from .pipeline import ODOMETRY_BUFFER, LinearizationPipeline, Output

NONE = np.iinfo(np.int64).min
"""An int64 standing for the pipeline's None (no stamp, no clock yet)."""

DECLINED = ("", "odometry encoding", "odometry length", "odometry child frame", "odometry values",
            "joint_states encoding", "joint_states length", "joint_states names", "joint_states values",
            "clock went back", "stamps not newer", "stale", "pairing", "kernel status", "stamp range",
            "ahead of the clock", "odometry backlog")
"""Why :func:`serve_pair_into` declined, by its status (0: served); the last, why several odometries held
for a joint state were handed to the usual cycle (:meth:`CompiledCycle.take`)."""
_BACKLOG = len(DECLINED) - 1

HELD_ODOMETRIES = ODOMETRY_BUFFER
"""The most odometries held for the joint states after them: a node some cycles late takes the odometries
queued (its input subscriptions keep 50) before the joint state of the first (the input loop asks the
odometry first); as many as the pipeline keeps for pairing (pipeline.ODOMETRY_BUFFER)."""

_POSE, _TWIST, _ARRAYS = 0, 7, 13  # where the odometry's pose, twist and the joint state's arrays go in ``values``


@kernel(inline=True)
def _uint32(raw, offset):
    """The little-endian uint32 at ``offset`` of ``raw`` (uint8)."""
    return (np.int64(raw[offset]) | (np.int64(raw[offset + 1]) << 8) | (np.int64(raw[offset + 2]) << 16)
            | (np.int64(raw[offset + 3]) << 24))


@kernel(inline=True)
def _aligned(offset, size):
    """``offset`` rounded up to a multiple of ``size``, counted after the 4-byte encapsulation
    (messages._aligned)."""
    return offset + (-(offset - 4) % size)


@kernel(inline=True)
def _header(raw):
    """(stamp [ns], offset after header.frame_id) of a little-endian CDR message starting with a
    std_msgs/Header; offset −1 for another encoding, −2 when it is too short."""
    if len(raw) < 16 or raw[0] != 0 or raw[1] != 1:
        return 0, -1
    sec = _uint32(raw, 4)
    if sec >= 2147483648:
        sec -= 4294967296
    end = 16 + _uint32(raw, 12)
    if len(raw) < end:
        return 0, -2
    return sec * 1_000_000_000 + _uint32(raw, 8), end


def header_stamp(raw: bytes) -> int | None:
    """The header stamp [ns] of a little-endian CDR message starting with a std_msgs/Header, as
    :func:`_header` reads it; None for another encoding or a message too short."""
    if len(raw) < 16 or raw[0] != 0 or raw[1] != 1:
        return None
    sec, nanosec = struct.unpack_from("<iI", raw, 4)
    return sec * 1_000_000_000 + nanosec


@kernel(inline=True)
def _copy_bytes(raw, start, count, staging, at):
    for k in range(count):
        staging[at + k] = raw[start + k]


@kernel(inline=True)
def _read_odometry(odometry, child_frame, staging, values):
    """(status, stamp [ns], the quaternion's norm) of the serialized nav_msgs/Odometry ``odometry``
    (uint8), its pose and twist read into values[0:13] (a float64 view of ``staging``): status 0, or
    serve_pair_into's reason to decline (1 to 4), the checks of messages.odometry_base_state with the
    base frame ``child_frame`` (UTF-8)."""
    stamp_o, offset = _header(odometry)
    if offset < 0:
        return (1 if offset == -1 else 2), 0, 0.0
    # child_frame_id: the base frame's bytes (its length counts the NUL)
    offset = _aligned(offset, 4)
    if len(odometry) < offset + 4:
        return 2, 0, 0.0
    size = _uint32(odometry, offset)
    offset += 4
    if size - 1 != len(child_frame) or len(odometry) < offset + size:
        return 3, 0, 0.0
    for k in range(size - 1):
        if odometry[offset + k] != child_frame[k]:
            return 3, 0, 0.0
    # pose (7), its covariance (36), twist (6), its covariance (36): 85 doubles
    start = _aligned(offset + size, 8)
    if len(odometry) < start + 85 * 8:
        return 2, 0, 0.0
    _copy_bytes(odometry, start, 56, staging, 8 * _POSE)
    _copy_bytes(odometry, start + 43 * 8, 48, staging, 8 * _TWIST)
    for k in range(13):
        if not np.isfinite(values[k]):
            return 4, 0, 0.0
    x, y, z, w = values[3], values[4], values[5], values[6]
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if norm < 1e-9 or abs(norm - 1.0) > QUATERNION_TOLERANCE:
        return 4, 0, 0.0
    return 0, stamp_o, norm


@kernel(inline=True)
def _base_state_into(values, norm, pose, twist):
    """H (4, 4) and the twist (6,) of the odometry :func:`_read_odometry` read into ``values``, its
    quaternion's norm ``norm`` (messages.odometry_base_state, spatial.quaternion_pose)."""
    x, y, z, w = values[3] / norm, values[4] / norm, values[5] / norm, values[6] / norm
    unit_quaternion_pose_into(w, x, y, z, values[0], values[1], values[2], pose)
    for k in range(6):
        twist[k] = values[_TWIST + k]


@kernel
def read_odometry_into(odometry, child_frame, staging, values, pose, twist):
    """(status, stamp [ns]) of the serialized nav_msgs/Odometry ``odometry`` (uint8) with the base frame
    ``child_frame`` (UTF-8): status 0 and its H (4, 4) and twist (6,) written into ``pose`` and ``twist``,
    bit for bit what the usual cycle makes of it, or serve_pair_into's reason to decline (1 to 4).
    ``staging``, ``values``: as serve_pair_into's."""
    status, stamp, norm = _read_odometry(odometry, child_frame, staging, values)
    if status == 0:
        _base_state_into(values, norm, pose, twist)
    return status, stamp


@kernel(inline=True)
def _read_joint_state(joint_state, names, order, times, staging, values, positions, velocities, torques):
    """(status, stamp [ns]) of the serialized sensor_msgs/JointState ``joint_state`` (uint8): status 0 and its
    positions, velocities and torques (n,) in the model's joint order, or serve_pair_into's reason to
    decline (5 to 8; the arguments as its)."""
    stamp_j, offset = _header(joint_state)
    if offset < 0:
        return (5 if offset == -1 else 6), 0
    offset = _aligned(offset, 4)
    if len(joint_state) < offset + len(names):
        return 7, 0
    for k in range(len(names)):
        if joint_state[offset + k] != names[k]:
            return 7, 0
    offset += len(names)
    count, use_effort = times[8], times[7]
    for field in range(3):  # position, velocity, effort: sequence<double>
        offset = _aligned(offset, 4)
        if len(joint_state) < offset + 4:
            return 6, 0
        length = _uint32(joint_state, offset)
        offset = _aligned(offset + 4, 8) if length else offset + 4
        if len(joint_state) < offset + 8 * length:
            return 6, 0
        # the same length as the names (an effort not used may be empty); else the usual cycle says why
        if length != count and (field < 2 or use_effort or length):
            return 8, 0
        _copy_bytes(joint_state, offset, 8 * length, staging, 8 * (_ARRAYS + field * count))
        offset += 8 * length
    for i in range(len(order)):
        positions[i] = values[_ARRAYS + order[i]]
        velocities[i] = values[_ARRAYS + count + order[i]]
        torques[i] = values[_ARRAYS + 2 * count + order[i]] if use_effort else 0.0
        if not (np.isfinite(positions[i]) and np.isfinite(velocities[i]) and np.isfinite(torques[i])):
            return 8, 0
    return 0, stamp_j


@kernel
def serve_pair_into(odometry, joint_state, names, child_frame, order, times, pairing_tolerance, staging, values,
                    pose, positions, twist, velocities, torques, base_pose, stamp_words, address, scratch, outputs,
                    dt, matrices):
    """One cycle of the node's steady state (the module's docstring): 0 and everything written, or why
    not (a DECLINED index) with nothing of the pipeline's changed.

    odometry, joint_state: the serialized messages (uint8); a fixed base has no odometry (empty: the
    joint state alone, its arrival in times[0] too; ``pose`` the identity and ``twist`` zeros, which
    stay).  names: the CDR bytes of the joint state's name sequence the joint order ``order`` (n,)
    int64 was made for; child_frame: the base frame's UTF-8.  times (int64): in: the odometry's and the
    joint state's arrival on the node's clock, the pipeline's last joint state stamp, last odometry
    stamp, last clock (NONE: none yet), pairing_tolerance and max_input_age [ns], use_effort (0/1), the
    number of names; out: [9] the odometry's stamp, [10] the joint state's.  pairing_tolerance [s] as
    the pipeline compares it.  staging (uint8) and values, a float64 view of it: room for 13 + 3 ×
    names numbers.  Out: pose H (4, 4); positions, twist, velocities, torques, base_pose (x, y, z, qx,
    qy, qz, qw) and stamp_words (sec, nanosec) the message's own numbers (float64 and uint32 views of
    it); the generated kernel at ``address`` (its ``scratch``) writes A, B, M⁻¹, ν̇ at ``outputs`` (4,)
    int64; with ``dt`` > 0, the Euler step's A_d, B_d follow from them (discretization.euler_step_into on
    ``matrices`` (A, B, ν̇, A_d, B_d), the arrays at those addresses and the message's A_d, B_d)."""
    floating = len(odometry) > 0
    status, stamp_o, norm = (_read_odometry(odometry, child_frame, staging, values) if floating
                             else (0, NONE, 1.0))
    if status:
        return status
    status, stamp_j = _read_joint_state(joint_state, names, order, times, staging, values, positions, velocities,
                                        torques)
    if status:
        return status
    if not floating:
        stamp_o = stamp_j  # (the checks below of the odometry's stamp are the joint state's again)

    # the node's clock and the stamps (pipeline.receive of both), staleness, pairing (pipeline._linearize)
    now_o, now_j, last_j, last_o, last_now, tolerance, max_age = (times[0], times[1], times[2], times[3], times[4],
                                                                  times[5], times[6])
    if (last_now != NONE and last_now - now_o > tolerance) or now_o - now_j > tolerance:
        return 9
    if (last_o != NONE and stamp_o <= last_o) or (last_j != NONE and stamp_j <= last_j):
        return 10
    if now_j - stamp_j > max_age:
        return 11
    if stamp_o - now_o > max_age or stamp_j - now_j > max_age:  # (after a jump back, pipeline._left_behind)
        return 15
    gap = abs(stamp_o - stamp_j)
    if floating and ((last_o != NONE and abs(last_o - stamp_j) <= gap) or gap * 1e-9 > pairing_tolerance
                     or not (stamp_o >= stamp_j or now_j - stamp_j > tolerance)):
        return 12
    sec = stamp_j // 1_000_000_000
    if sec < -2147483648 or sec > 2147483647:
        return 14

    # H and the twist of the odometry, the kernel
    if floating:
        _base_state_into(values, norm, pose, twist)
    if generated_linearize_at(address, scratch, (pose, positions, twist, velocities, torques), outputs) != -1:
        return 13
    if dt > 0.0:
        A, B, nu_dot, A_d, B_d = matrices
        euler_step_into(A, B, twist, nu_dot, floating, dt, A_d, B_d)

    # the message's stamp and base pose (interfaces.linearization_values: the quaternion of H by
    # spatial.pose_quaternion; a fixed base's stays the identity's)
    stamp_words[0] = sec + 4294967296 if sec < 0 else sec
    stamp_words[1] = stamp_j - sec * 1_000_000_000
    if floating:
        base_pose[0], base_pose[1], base_pose[2] = pose[0, 3], pose[1, 3], pose[2, 3]
        quaternion_of_pose_into(pose, base_pose)
    times[9], times[10] = stamp_o, stamp_j
    return 0


@kernel(inline=True)
def quaternion_of_pose_into(H, out):
    """spatial.pose_quaternion of H (Shepperd's method, w ≥ 0, the same operations), written as
    (x, y, z, w) into out[3:7]."""
    trace = H[0, 0] + H[1, 1] + H[2, 2]
    q = np.empty(4)
    if trace > 0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q[0], q[1], q[2], q[3] = 0.25 * s, (H[2, 1] - H[1, 2]) / s, (H[0, 2] - H[2, 0]) / s, (H[1, 0] - H[0, 1]) / s
    else:
        i = 0  # the first largest diagonal entry
        if H[1, 1] > H[i, i]:
            i = 1
        if H[2, 2] > H[i, i]:
            i = 2
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + H[i, i] - H[j, j] - H[k, k])
        q[0] = (H[k, j] - H[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (H[j, i] + H[i, j]) / s
        q[1 + k] = (H[k, i] + H[i, k]) / s
    sign = 1.0 if q[0] >= 0 else -1.0
    out[3], out[4], out[5], out[6] = sign * q[1], sign * q[2], sign * q[3], sign * q[0]


def compile_serve_pair() -> None:
    """Compile :func:`serve_pair_into` and :func:`read_odometry_into` for the types :class:`CompiledCycle`
    calls them with (or load them from numba's cache): at installation (precompile.py), so that a node's
    first compiled cycle does not wait for the compiler.  (The calls decline at once: empty messages.)"""
    doubles, integers, data = np.empty(1), np.zeros(11, dtype=np.int64), np.zeros(8, dtype=np.uint8)
    serve_pair_into(b"", b"", data, data, integers[:1], integers, 0.02, data, doubles, np.empty((4, 4)), doubles,
                    doubles, doubles, doubles, doubles, np.zeros(2, dtype=np.uint32), 0, doubles, integers[:4], 0.0,
                    (NO_STEP[0], NO_STEP[0], doubles, *NO_STEP))
    read_odometry_into(b"", data, data, doubles, np.empty((4, 4)), np.empty(6))


class _Buffers:
    """One message of the compiled cycle, laid out by the usual cycle's writer, with its numbers as
    arrays (8-aligned float64 views of it), and the pose and ν̇ the kernel writes beside it.  Two
    alternate: a cycle writes into the one the latest output is not in, so that a cycle that
    declines half-way leaves the latest output intact until it is built."""

    def __init__(self, message: bytes, places: dict, model: Model):
        N, n = model.n_velocities, model.n_joints
        raw = np.empty(len(message) + 8, np.uint8)
        start = (4 - raw.ctypes.data) % 8  # (the CDR's doubles are 8-aligned counted from byte 4)
        self.message = raw[start:start + len(message)]
        self.message[:] = np.frombuffer(message, np.uint8)

        def doubles(name: str, shape: tuple) -> np.ndarray:
            offset, count = places[name]
            return self.message[offset:offset + 8 * count].view(np.float64).reshape(shape)

        self.positions, self.velocities = doubles("joint_positions", (n,)), doubles("joint_velocities", (n,))
        self.torques, self.twist = doubles("joint_efforts", (n,)), doubles("base_twist", (6,))
        self.base_pose, self.compute_time = doubles("base_pose", (7,)), doubles("compute_time", (1,))
        self.A, self.B = doubles("state_matrix", (2 * N, 2 * N)), doubles("input_matrix", (2 * N, n))
        self.M_inv = doubles("inverse_mass_matrix", (N, N))
        self.A_d, self.B_d = NO_STEP  # (the Euler step's, when the message has them)
        if "discrete_state_matrix" in places:
            self.A_d = doubles("discrete_state_matrix", (2 * N, 2 * N))
            self.B_d = doubles("discrete_input_matrix", (2 * N, n))
        stamp = places["header.stamp"][0]
        self.stamp_words = self.message[stamp:stamp + 8].view(np.uint32)
        self.pose, self.nu_dot = np.empty((4, 4)), np.empty(N)
        self.outputs = np.array([a.ctypes.data for a in (self.A, self.B, self.M_inv, self.nu_dot)], dtype=np.int64)
        self.matrices = (self.A, self.B, self.nu_dot, self.A_d, self.B_d)  # (serve_pair_into's, for the step)


class CompiledCycle:
    """The node's compiled cycle (the module's docstring) over its pipeline, its joint-state reader
    (whose names it takes) and its message writer (whose layout it takes).

    The input loop hands it every message it takes, ``take(topic, raw, now)`` ("odometry" or
    "joint_states", serialized, its arrival on the node's clock [ns]), and does what comes back, in
    order: bytes, a ~/linearization to publish; (topic, raw, now), a message for the usual cycle.
    Odometries are held until the next joint state, which is served with the one the usual cycle
    would pair it with when ``serve`` can: as if the loop had taken them just before it.  A fixed
    base's joint states are served alone, as they come (its odometries go to the usual cycle).
    ``flush()`` hands on the held odometries (the loop: when a wait brought nothing; HELD_ODOMETRIES
    bound them).
    ``note_output(out)`` after the usual cycle wrote ``out``'s message: ``armed`` says whether the
    next pairs can be served.  ``served``: outputs made; ``declined``: how many pairs each reason of
    DECLINED sent to the usual cycle.  An error in it stops it for good (``problem``, told to
    ``on_problem``): the usual cycle then serves every input.  The caller holds the node's lock."""

    def __init__(self, pipeline: LinearizationPipeline, reader: CdrInputs, writer: LinearizationCdr,
                 enabled: bool = True):
        self.pipeline, self.reader, self.writer, self.enabled = pipeline, reader, writer, enabled
        self.armed = False
        self.served = 0
        self.declined = np.zeros(len(DECLINED), dtype=np.int64)
        self._key: tuple | None = None
        self._call = TypedCall(serve_pair_into)
        self._read = TypedCall(read_odometry_into)
        self._held: list = []  # [(an odometry's bytes, its arrival, what _backlog read of it)], oldest first
        self._floating = True  # (the model's, once armed: a fixed base's joint states are served alone)
        self.problem: str | None = None  # why it stopped serving, if an error stopped it
        self.on_problem: Callable[[str], None] | None = None  # told of that once (the node's ERROR log)

    def take(self, topic: str, raw: bytes, now_ns: int) -> list:
        if topic == "odometry":
            if self.armed and self._floating and self.pipeline.settled and len(self._held) < HELD_ODOMETRIES:
                self._held.append((raw, now_ns, None))
                return []
            return self.flush() + [(topic, raw, now_ns)]
        data = None
        if self._held or (self.armed and not self._floating):
            try:
                data = self._serve_held(raw, now_ns) if self._held else self.serve(b"", now_ns, raw, now_ns)
            except Exception as error:  # noqa: BLE001 - never the node's inputs: the usual cycle serves them
                self._stop(error)
        return [data] if data is not None else self.flush() + [(topic, raw, now_ns)]

    def _serve_held(self, joint_state: bytes, now_ns: int) -> bytes | None:
        """The joint state served with the held odometry the usual cycle pairs it with, as the usual cycle
        would have received them all before it: the held ones before that odometry are recorded first,
        those after it stay held, arrived (by the node's clock) with the joint state.  None where that is
        not sure (what is not recorded stays held)."""
        if len(self._held) > 1 and self._serves():
            stamp_j, backlog = self._backlog(joint_state, now_ns)
            if backlog is None:
                self.declined[_BACKLOG] += 1
                return None
            nearest = min(range(len(backlog)), key=lambda k: abs(backlog[k][0] - stamp_j))  # (a tie: declined)
            for (stamp, H, twist), (_, now, _) in zip(backlog[:nearest], self._held):
                self.pipeline.record_odometry(stamp, H, twist, now)
            del self._held[:nearest]
        odometry, odometry_now, _ = self._held[0]
        data = self.serve(odometry, odometry_now, joint_state, now_ns)
        if data is not None:
            self._held = [(raw, now_ns, read) for raw, _, read in self._held[1:]]
        return data

    def _backlog(self, joint_state: bytes, now_ns: int) -> tuple:
        """(the joint state's stamp, [(stamp, H, twist)] of the held odometries) when the usual cycle would
        take each of them as it is, with no rejection, notice or new timeline — valid, each stamp newer
        than the one before and not more than max_input_age ahead of its arrival, the node's clock not
        going back by more than pairing_tolerance from one to the next and to the joint state —; else
        (stamp, None).  Each is read once while it is held."""
        _, last_stamp, last_now = self.pipeline.last_times
        tolerance = self._times[5]
        stamp_j = header_stamp(joint_state)
        if stamp_j is None:
            return None, None
        for k, (raw, now, read) in enumerate(self._held):
            if read is None:
                H, twist = np.empty((4, 4)), np.empty(6)
                status, stamp = self._read(raw, self._child, self._staging, self._values, H, twist)
                read = None if status else (stamp, H, twist)
                self._held[k] = (raw, now, read or False)
            if not read or (last_stamp is not None and read[0] <= last_stamp) \
                    or (last_now is not None and last_now - now > tolerance) or read[0] - now > self._times[6]:
                return stamp_j, None
            last_stamp, last_now = read[0], now
        return stamp_j, ([read for _, _, read in self._held] if last_now - now_ns <= tolerance else None)

    def _stop(self, error: Exception) -> None:
        """An error in the compiled cycle: it stops serving, says why once, and the usual cycle serves."""
        self.enabled = self.armed = False
        self.problem = f"the compiled cycle stopped ({error!r}): the usual cycle serves every input"
        if self.on_problem is not None:
            self.on_problem(self.problem)

    def flush(self) -> list:
        held, self._held = self._held, []
        return [("odometry", raw, now) for raw, now, _ in held]

    def diagnostics(self) -> dict:
        """/diagnostics' values of the compiled cycle (none when it is not enabled): its outputs so far,
        and how many pairs it handed to the usual cycle, by reason."""
        if self.problem is not None:
            return {"compiled_cycle_outputs": self.served, "compiled_cycle_problem": self.problem}
        if not self.enabled:
            return {}
        declined = ", ".join(f"{DECLINED[i]} {self.declined[i]}" for i in np.flatnonzero(self.declined))
        return {"compiled_cycle_outputs": self.served, "compiled_cycle_declined": declined or "none"}

    def note_output(self, output: Output) -> None:
        try:
            self.armed = self.enabled and self._arm(output)
        except InputError:  # (names the usual cycle has not accepted yet)
            self.armed = False
        except Exception as error:  # noqa: BLE001 - the usual cycle's output is published all the same
            self._stop(error)

    def _arm(self, output: Output) -> bool:
        pipeline = self.pipeline
        model, config, lin = pipeline.model, pipeline.config, output.linearization
        if not (type(model) is Model and output.model is model and (pipeline.base_frame or not model.floating_base)
                and not pipeline.contacts and output.impact is None and output.margins is None
                and (lin.A_d is None or lin.discretization == "euler") and not lin.contacts):
            return False
        generated = current(model, (), "linearize", kernel_argument(config.kernel))
        if generated is None:
            return False
        section, names = self.reader.names
        key = (model, generated, section, self.writer.layouts, pipeline.base_frame)
        if key == self._key:
            return True
        order = joint_order(names, tuple(model.joint_names))
        message, places = self.writer.layout()
        self._buffers = [_Buffers(message, places, model) for _ in range(2)]
        self._next = 0
        self._staging = np.zeros(8 * (_ARRAYS + 3 * len(names)), np.uint8)
        self._values = self._staging.view(np.float64)
        self._times = np.zeros(11, dtype=np.int64)
        self._times[5:9] = (int(config.pairing_tolerance * 1e9), int(config.max_input_age * 1e9),
                            int(config.use_effort), len(names))
        # (writeable copies: the types compile_serve_pair compiles for)
        self._names, self._order = np.frombuffer(section, np.uint8).copy(), np.array(order, dtype=np.int64)
        self._child = np.frombuffer(pipeline.base_frame.encode(), np.uint8).copy()
        self._scratch, self._address = np.empty(generated.scratch_size), generated.address
        self._dt = lin.dt if lin.A_d is not None and lin.dt is not None else 0.0
        self._model, self._key, self._floating = model, key, model.floating_base
        for buffers in self._buffers:  # (a fixed base's, which the kernel reads and nothing writes)
            buffers.pose[:] = np.eye(4)
        self._held = [(raw, now, None) for raw, now, _ in self._held]  # (read again: for this base frame)
        return True

    def _serves(self) -> bool:
        """Whether the pipeline is still the one :meth:`_arm` laid the compiled cycle out for, settled."""
        pipeline = self.pipeline
        return self.armed and pipeline.model is self._model and pipeline.settled and not pipeline.contacts

    def serve(self, odometry: bytes, odometry_now: int, joint_state: bytes, now_ns: int) -> bytes | None:
        pipeline = self.pipeline
        if not self._serves():
            return None
        buffers, times = self._buffers[self._next], self._times
        times[0], times[1] = odometry_now, now_ns
        times[2], times[3], times[4] = (NONE if t is None else t for t in pipeline.last_times)
        if not self._floating:  # (odometries a fixed base's node may take are no joint state's)
            times[3] = NONE
        start = time.perf_counter()
        status = self._call(odometry, joint_state, self._names, self._child, self._order, times,
                            pipeline.config.pairing_tolerance, self._staging, self._values, buffers.pose,
                            buffers.positions, buffers.twist, buffers.velocities, buffers.torques, buffers.base_pose,
                            buffers.stamp_words, self._address, self._scratch, buffers.outputs, self._dt,
                            buffers.matrices)
        compute_time = time.perf_counter() - start
        if status:
            self.declined[status] += 1
            return None
        buffers.compute_time[0] = compute_time
        self._next ^= 1
        stamp = int(times[10])
        if self._floating:
            H, twist = buffers.pose.copy(), buffers.twist.copy()
            pipeline.record_pair(int(times[9]), H, twist, stamp, now_ns,
                                 lambda: self._output(buffers, stamp, compute_time, H, twist))
        else:
            pipeline.record_joint_state(stamp, now_ns, lambda: self._output(buffers, stamp, compute_time, None, None))
        self.served += 1
        return bytes(buffers.message)

    def _output(self, buffers: _Buffers, stamp: int, compute_time: float, H: np.ndarray | None,
                twist: np.ndarray | None) -> Output:
        """The pipeline's Output of the cycle written into ``buffers`` (copies: they are written again);
        H and twist None for a fixed base."""
        state = State._given(H, buffers.positions.copy(), twist, buffers.velocities.copy())
        torques = buffers.torques.copy()
        step = (buffers.A_d.copy(), buffers.B_d.copy()) if self._dt else None
        lin = free_result(self._model, buffers.A.copy(), buffers.B.copy(), buffers.M_inv.copy(), buffers.nu_dot.copy(),
                          state, torques, self._dt, step)
        return Output(stamp, self._model, state, torques, lin, compute_time)
