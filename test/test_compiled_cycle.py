"""The node's compiled cycle (ros/compiled_cycle.py) against the usual one: the same messages, fed as
the node's input loop feeds them, give the same ~/linearization bit for bit (but the compute time),
the same rejections, notices and diagnostics, and leave the pipeline in the same state — through
every reason the compiled cycle has to hand a pair to the usual one, and through corrupted bytes."""

import struct

import numpy as np
import pytest
from rosbags.typesys import Stores, get_typestore

import robot_linearization as rl
from robot_linearization.contacts import as_contacts
from robot_linearization.robots import BUNDLED_FEET, bundled_urdf_path
from robot_linearization.ros.compiled_cycle import DECLINED, HELD_ODOMETRIES, CompiledCycle
from robot_linearization.ros.interfaces import LinearizationCdr
from robot_linearization.ros.messages import (CdrInputs, InputError, RosbagsFactory, joint_state_message,
                                              odometry_message)
from robot_linearization.ros.pipeline import LinearizationPipeline, PipelineConfig
from robot_linearization.spatial import se3_exp

TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)
FACTORY = RosbagsFactory(TYPESTORE)
MS = 1_000_000
URDF = open(bundled_urdf_path()).read()
MODEL = rl.load_urdf(URDF)
N = MODEL.n_joints
TYPES = {"odometry": "nav_msgs/msg/Odometry", "joint_states": "sensor_msgs/msg/JointState"}


class Fed:
    """A pipeline fed as the node's input loop feeds it: serialized messages read by CdrInputs, each
    output of the usual cycle written by LinearizationCdr; through CompiledCycle.take and flush
    (which, not ``compiled``, hands every message on at once)."""

    def __init__(self, compiled: bool, **config):
        self.pipeline = LinearizationPipeline(PipelineConfig(kernel="generated", **config))
        assert self.pipeline.set_description(URDF) is None
        self.reader, self.writer = CdrInputs(), LinearizationCdr()
        self.cycle = CompiledCycle(self.pipeline, self.reader, self.writer, enabled=compiled)
        self.published, self.notices, self.problems = [], [], []
        self.pipeline.on_notice, self.pipeline.on_problem = self.notices.append, self.problems.append

    def usual(self, topic: str, raw: bytes, now: int) -> None:
        try:
            fields = (self.reader.odometry if topic == "odometry" else self.reader.joint_state)(raw)
            if fields is None:  # (an encoding CdrInputs does not read: the node's rclpy deserializes it)
                fields = TYPESTORE.deserialize_cdr(raw, TYPES[topic])
        except InputError as e:
            fields = e
        except Exception as e:  # noqa: BLE001 - (what the node's guard logs, the message not handed on)
            self.problems.append(f"unexpected {type(e).__name__}")
            return
        for out in self.pipeline.receive(topic, fields, now):
            self.published.append(self.writer(out, self.pipeline.base_frame))
            self.cycle.note_output(out)

    def feed(self, batch, flush: bool = True) -> None:
        """One batch of what the input loop took: [(topic, serialized message, arrival [ns])]; then
        (``flush``) a wait that brought nothing."""
        for topic, raw, now in batch:
            for action in self.cycle.take(topic, raw, now):
                if type(action) is bytes:
                    self.published.append(action)
                else:
                    self.usual(*action)
        for action in self.cycle.flush() if flush else ():
            self.usual(*action)


def odometry(stamp, H=None, twist=None, child="base_link", little_endian=True):
    H = se3_exp(np.array([0.1, 0.0, 0.3, 0.1, -0.2, 0.3])) if H is None else H
    twist = np.linspace(-0.3, 0.4, 6) if twist is None else twist
    msg = odometry_message(FACTORY, stamp, "odom", child, H, twist)
    return bytes(TYPESTORE.serialize_cdr(msg, TYPES["odometry"], little_endian=little_endian))


def joint_state(stamp, s, r, effort=(), names=MODEL.joint_names, little_endian=True):
    order = [MODEL.joint_names.index(name) for name in names]
    msg = joint_state_message(FACTORY, stamp, list(names), np.asarray(s)[order],
                              np.asarray(r)[order] if len(r) else (), np.asarray(effort)[order] if len(effort) else ())
    return bytes(TYPESTORE.serialize_cdr(msg, TYPES["joint_states"], little_endian=little_endian))


def with_quaternion(raw: bytes, q) -> bytes:
    """The odometry ``raw`` with its orientation (x, y, z, w) replaced (plain little-endian CDR, child
    frame 'base_link')."""
    start = 4 + len(raw[4:]) - 85 * 8  # (the 85 doubles end the message)
    return raw[:start + 24] + struct.pack("<4d", *q) + raw[start + 56:]


def assert_same(usual: Fed, compiled: Fed) -> None:
    assert len(usual.published) == len(compiled.published)
    for a, b in zip(usual.published, compiled.published):
        assert a[:-8] == b[:-8]  # (the message ends with its compute time)
    assert usual.notices == compiled.notices and usual.problems == compiled.problems
    p, q = usual.pipeline, compiled.pipeline
    assert p.last_times == q.last_times and p.settled == q.settled and p.assumed == q.assumed
    assert p.last_problem == q.last_problem and p._received == q._received  # (what the silence watch counts)
    assert [(t, H.tobytes(), v.tobytes()) for t, H, v in p._odometry] == \
        [(t, H.tobytes(), v.tobytes()) for t, H, v in q._odometry]
    diagnostics = [[(level, name, message, {k: v for k, v in values.items() if k != "compute_time_ms"})
                    for level, name, message, values in f.pipeline.diagnostics(10**12)] for f in (usual, compiled)]
    assert diagnostics[0] == diagnostics[1]
    a, b = p.latest, q.latest
    assert (a is None) == (b is None)
    if a is not None:
        assert b is q.latest  # (built once)
        assert a.stamp_ns == b.stamp_ns and a.model is p.model and b.model is q.model
        assert a.impact is b.impact is None and (a.margins is None) == (b.margins is None)
        if a.margins is not None:
            assert a.margins.margins.tobytes() == b.margins.margins.tobytes()
        for x, y in [(a.state.base_pose, b.state.base_pose), (a.state.joint_positions, b.state.joint_positions),
                     (a.state.base_twist, b.state.base_twist), (a.state.joint_velocities, b.state.joint_velocities),
                     (a.joint_torques, b.joint_torques)] + [
                (getattr(a.linearization, k), getattr(b.linearization, k))
                for k in ("A", "B", "M_inv", "base_acceleration", "joint_accelerations", "A_d", "B_d")]:
            assert (x is None) == (y is None) and (x is None or x.tobytes() == y.tobytes())  # (None: a fixed base)
        assert a.linearization.state_labels == b.linearization.state_labels
        steps = [(out.linearization.dt, out.linearization.discretization) for out in (a, b)]
        assert steps[0] == steps[1]


def pair(k, rng, now_offset=100_000, **odometry_options):
    stamp = k * MS
    s, r = 0.3 * rng.normal(size=N), rng.normal(size=N)
    return [("odometry", odometry(stamp, **odometry_options), stamp + now_offset),
            ("joint_states", joint_state(stamp, s, r), stamp + now_offset)]


def both(**config):
    return Fed(False, **config), Fed(True, **config)


def feed_both(feds, batch, flush: bool = True) -> None:
    for fed in feds:
        fed.feed(batch, flush)


@pytest.mark.parametrize("step", [{}, {"discretization_dt": 0.001}], ids=["no step", "Euler step"])
def test_steady_pairs_are_served_compiled_and_equal_the_usual_cycle_bit_for_bit(step, rng):
    feds = both(**step)
    for k in range(1, 60):
        feed_both(feds, pair(k, rng, H=se3_exp(0.3 * rng.normal(size=6)), twist=rng.normal(size=6)))
        assert_same(*feds)
    assert feds[1].cycle.served == 58 and feds[0].cycle.served == 0  # (the first one lays the message out)
    assert (feds[1].pipeline.latest.linearization.A_d is not None) == bool(step)
    assert not feds[1].cycle.declined.any()
    assert feds[1].cycle.diagnostics() == {"compiled_cycle_outputs": 58, "compiled_cycle_declined": "none"}
    assert feds[0].cycle.diagnostics() == {}  # (not enabled: the node's executor path, rate_hz …)


def test_every_reason_to_decline_hands_the_pair_to_the_usual_cycle_which_does_the_same(rng):
    feds = both()
    s, r = 0.3 * rng.normal(size=N), rng.normal(size=N)
    permuted = tuple(np.array(MODEL.joint_names)[rng.permutation(N)])
    js = lambda stamp, s, r: joint_state(stamp, s, r, names=permuted)  # noqa: E731 - (from k = 5 on)
    events = {
        3: [("odometry", odometry(3 * MS, little_endian=False), 3 * MS),
            ("joint_states", joint_state(3 * MS, s, r), 3 * MS)],
        5: [("odometry", odometry(5 * MS), 5 * MS), ("joint_states", js(5 * MS, s, r), 5 * MS)],
        7: [("odometry", odometry(7 * MS), 7 * MS), ("joint_states", js(7 * MS, np.r_[np.nan, s[1:]], r), 7 * MS)],
        9: [("odometry", odometry(9 * MS, twist=np.r_[np.inf, np.zeros(5)]), 9 * MS),
            ("joint_states", js(9 * MS, s, r), 9 * MS)],
        12: [("odometry", with_quaternion(odometry(12 * MS), (0, 0, 0, 0)), 12 * MS),
             ("joint_states", js(12 * MS, s, r), 12 * MS)],
        14: [("odometry", with_quaternion(odometry(14 * MS), (0, 0, 0, 1.04)), 14 * MS),  # normalised: served
             ("joint_states", js(14 * MS, s, r), 14 * MS)],
        16: [("odometry", with_quaternion(odometry(16 * MS), (0, 0, 0, 1.2)), 16 * MS),
             ("joint_states", js(16 * MS, s, r), 16 * MS)],
        18: [("odometry", odometry(18 * MS, child="base_footprint"), 18 * MS),
             ("joint_states", js(18 * MS, s, r), 18 * MS)],
        20: [("odometry", odometry(20 * MS)[:600], 20 * MS), ("joint_states", js(20 * MS, s, r), 20 * MS)],
        22: [("odometry", odometry(22 * MS), 22 * MS), ("joint_states", js(22 * MS, s, r)[:-40], 22 * MS)],
        24: [("odometry", odometry(24 * MS), 24 * MS), ("joint_states", js(24 * MS, s, []), 24 * MS)],
        26: [("odometry", odometry(26 * MS), 26 * MS + 600 * MS),  # stale by the clock ...
             ("joint_states", js(26 * MS, s, r), 26 * MS + 600 * MS)],
        # ... whose next reading went back: a new timeline
        28: [("odometry", odometry(27 * MS), 27 * MS), ("joint_states", js(26 * MS, s, r), 27 * MS)],
        30: [("odometry", odometry(30 * MS + MS // 2), 30 * MS + MS),
             ("joint_states", js(30 * MS, s, r), 30 * MS + MS)],  # (an odometry 0.5 ms later: the nearest)
        32: [("odometry", odometry(31 * MS + MS // 2), 32 * MS), ("odometry", odometry(32 * MS + MS // 5), 32 * MS),
             ("joint_states", js(32 * MS, s, r), 32 * MS)],  # (two odometries: the newer is the nearer)
        34: [("odometry", odometry(35 * MS + MS // 2), 34 * MS),
             ("joint_states", js(34 * MS, s, r), 34 * MS)],  # (the older odometry is the nearer)
        36: [("joint_states", js(36 * MS, s, r), 36 * MS + MS // 10)],  # (its odometry comes after it)
        37: [("odometry", odometry(36 * MS), 36 * MS + MS // 5), ("odometry", odometry(37 * MS), 37 * MS),
             ("joint_states", js(37 * MS, s, r), 37 * MS)],
        39: [("odometry", odometry(39 * MS), 39 * MS), ("joint_states", js(39 * MS, s, 1e200 * r), 39 * MS)],
    }
    for k in range(1, 45):
        names = permuted if k >= 5 else MODEL.joint_names
        batch = events.get(k, [("odometry", odometry(k * MS), k * MS + 100_000),
                               ("joint_states", joint_state(k * MS, s + 0.01 * k, r, names=names), k * MS + 100_000)])
        feed_both(feds, batch)
        assert_same(*feds)
    declined = {DECLINED[i] for i in np.flatnonzero(feds[1].cycle.declined)}
    assert declined == {"odometry encoding", "odometry length", "odometry child frame", "odometry values",
                        "joint_states length", "joint_states names", "joint_states values", "clock went back",
                        "stamps not newer", "stale", "pairing", "kernel status"}
    assert feds[1].cycle.served >= 20
    said = feds[1].cycle.diagnostics()["compiled_cycle_declined"]
    assert "odometry encoding 1" in said and "kernel status 1" in said and said.count(",") == len(declined) - 1
    assert any("time" in notice for notice in feds[0].notices)  # (the jump back in time happened)


def test_a_fixed_bases_joint_states_are_served_alone_and_equal_the_usual_cycle_through_every_reason_to_decline(rng):
    """A fixed base (an arm): each joint state served as it comes, without odometry; an odometry it is
    sent anyway goes to the usual cycle and pairs with nothing."""
    feds = both(floating_base=False, discretization_dt=0.002)  # (and the Euler step of a fixed base)
    assert not feds[0].pipeline.model.floating_base
    s, r = 0.3 * rng.normal(size=N), rng.normal(size=N)
    permuted = tuple(np.array(MODEL.joint_names)[rng.permutation(N)])
    js = lambda stamp, s, r, **options: joint_state(stamp, s, r, names=permuted, **options)  # noqa: E731
    events = {
        3: [("joint_states", joint_state(3 * MS, s, r, little_endian=False), 3 * MS)],
        5: [("joint_states", js(5 * MS, s, r), 5 * MS)],  # (new names: the usual cycle, then served)
        8: [("joint_states", js(8 * MS, np.r_[np.nan, s[1:]], r), 8 * MS)],
        10: [("odometry", odometry(10 * MS), 10 * MS), ("joint_states", js(10 * MS, s, r), 10 * MS)],
        11: [("odometry", odometry(12 * MS), 11 * MS), ("joint_states", js(11 * MS, s, r), 11 * MS)],
        13: [("joint_states", js(13 * MS, s, r)[:-40], 13 * MS)],
        15: [("joint_states", js(15 * MS, s, []), 15 * MS)],
        17: [("joint_states", js(17 * MS, s, r), 17 * MS + 600 * MS)],  # stale by the clock ...
        19: [("joint_states", js(18 * MS, s, r), 18 * MS)],  # ... whose next reading went back: a new timeline
        21: [("joint_states", js(20 * MS, s, r), 21 * MS)],  # (not newer than the one before)
        24: [("joint_states", js(24 * MS, s, 1e200 * r), 24 * MS)],
        40: [("joint_states", js(40 * MS + 10**9, s, r), 40 * MS)],  # (a second ahead of the clock)
    }
    for k in range(1, 42):
        names = permuted if k >= 5 else MODEL.joint_names
        batch = events.get(k, [("joint_states", joint_state(k * MS, s + 0.01 * k, r, names=names), k * MS + 100_000)])
        feed_both(feds, batch)
        assert_same(*feds)
    compiled = feds[1].cycle
    declined = {DECLINED[i] for i in np.flatnonzero(compiled.declined)}
    assert declined == {"joint_states encoding", "joint_states length", "joint_states names", "joint_states values",
                        "clock went back", "stamps not newer", "stale", "kernel status", "ahead of the clock"}
    assert compiled.served == 28 and not compiled._held  # (the odometries at 10 and 11 changed nothing)
    assert compiled.declined[DECLINED.index("stamps not newer")] == 2
    assert any("time" in notice for notice in feds[0].notices)  # (the jump back in time happened)
    assert feds[1].pipeline.latest.state.base_pose is None


def test_a_loops_last_pairs_taken_after_its_clock_went_back_go_to_the_usual_cycle_which_drops_them(rng):
    """A bag looped with its clock whose last pairs cross the next loop's first clock (pipeline._left_behind):
    stamped ahead of the node's clock, the compiled cycle hands them on, singly or held as a backlog."""
    feds = both()
    for k in range(1000, 1010):
        feed_both(feds, pair(k, rng))
    feed_both(feds, pair(10, rng, now_offset=0))  # (the clock went back: a new timeline)
    feed_both(feds, pair(1010, rng, now_offset=-999 * MS))  # (the loop before's last pair, 1 ms later)
    late = backlog([1011, 1012], rng)  # (then two, taken together)
    feed_both(feds, [(topic, raw, 12 * MS + i * 1000) for i, (topic, raw, _) in enumerate(late)])
    for k in range(13, 20):
        feed_both(feds, pair(k, rng))
        assert_same(*feds)
    assert sum("ahead of the node's clock" in problem for problem in feds[0].problems) == 6
    assert sum("jump back in time" in notice for notice in feds[0].notices) == 1
    compiled = feds[1].cycle
    assert compiled.declined[DECLINED.index("ahead of the clock")] == 1
    assert compiled.declined[DECLINED.index("odometry backlog")] == 1 and compiled.served >= 16


def backlog(ks, rng, nows=None, odometries=None):
    """What the input loop takes when the node is late by len(ks) cycles: every odometry (asked first)
    before the joint states, taken 1 µs apart after the last was sent; ``odometries`` replaces some
    ({k: serialized odometry}), ``nows`` their arrivals ({k: [ns]}); stamps k ms (a float k: an
    odometry only, between the cycles)."""
    odometries, nows = odometries or {}, nows or {}
    stamps = {k: int(k * MS) for k in ks}
    taken_at = max(stamps.values()) + 100_000
    taken = [("odometry", odometries.get(k, odometry(stamps[k])), nows.get(k, taken_at + i * 1000))
             for i, k in enumerate(ks)]
    return taken + [("joint_states", joint_state(stamps[k], 0.3 * rng.normal(size=N), rng.normal(size=N)),
                     taken_at + (len(ks) + i) * 1000) for i, k in enumerate(ks) if float(k).is_integer()]


def test_a_node_late_by_a_few_cycles_serves_its_backlog_compiled_as_the_usual_cycle_would(rng):
    feds = both()
    compiled = feds[1].cycle
    batches = [  # (what the loop takes, the joint states of it that the compiled cycle serves)
        (pair(1, rng), 0), (pair(2, rng), 1),
        (backlog([3, 4], rng), 2), (backlog([5, 6, 7], rng), 3),
        (backlog([8, 9], rng)[:-1], 1), (backlog([9], rng)[2:], 0),  # (its odometry went with the batch before)
        (backlog([10, 10.5, 11], rng), 2),  # (an odometry between the cycles: the older one the nearer)
        (backlog([11.6, 12], rng), 1),  # (two odometries of one cycle: the newer the nearer)
        (backlog([12.3, 12.6, 13], rng, odometries={12.3: with_quaternion(odometry(12.3 * MS), (0, 0, 0, 0))}), 0),
        (backlog([13, 14], rng, odometries={14: odometry(14 * MS, twist=np.r_[np.nan, np.zeros(5)])}), 0),
        # (joint state 14 waits for an odometry: 15 goes to the usual cycle, and is nearer to 15 than 16)
        (backlog([15, 16], rng), 0), (backlog([17, 18], rng), 2),
        (backlog([19, 20], rng, odometries={20: odometry(18.5 * MS)}), 0),  # (a stamp that went back)
        (backlog([21, 22], rng), 0), (backlog([23, 24], rng), 2),
        (backlog([25, 26], rng, nows={26: -5 * MS}), 0),  # (the clock went back: a new timeline)
        (backlog([27, 28], rng), 2),
        (backlog([29, 30], rng, nows={30: 60 * MS}), 0),  # (the joint state's clock went back)
        (backlog([31, 32], rng), 0), (backlog(range(33, 33 + HELD_ODOMETRIES), rng), HELD_ODOMETRIES),
        (backlog(range(100, 100 + HELD_ODOMETRIES + 1), rng), 0),  # (more than are held: all to the usual cycle)
        (backlog([200, 201], rng), 2),
    ]
    for batch, served in batches:
        before = compiled.served
        feed_both(feds, batch)
        assert_same(*feds)
        assert compiled.served - before == served, batch
    assert compiled.declined[DECLINED.index("odometry backlog")] == 5
    assert any("time" in notice for notice in feds[0].notices)


def test_an_odometry_taken_last_is_held_for_the_joint_state_the_next_take_brings(rng):
    feds = both()
    compiled = feds[1].cycle
    feed_both(feds, pair(1, rng))
    for k in range(2, 40, 2):  # (each take ends between an odometry and its joint state)
        o, j = pair(k, rng), pair(k + 1, rng)
        feed_both(feds, [o[0]], flush=False)
        feed_both(feds, [o[1], j[0]], flush=False)
        feed_both(feds, [j[1]], flush=k % 6 == 0)
        assert_same(*feds)
    assert compiled.served == 38 and not compiled.declined.any()
    feed_both(feds, [pair(40, rng)[0]], flush=False)
    assert feds[0].pipeline.last_times != feds[1].pipeline.last_times  # (held: taken with the next joint state)
    feed_both(feds, [], flush=True)  # (a wait that brought nothing: the usual cycle has it)
    assert_same(*feds)


def test_efforts_are_served_when_used_and_an_empty_effort_goes_to_the_usual_cycle(rng):
    feds = both(use_effort=True)
    for k in range(1, 20):
        s, r, tau = rng.normal(size=N), rng.normal(size=N), rng.normal(size=N)
        batch = [("odometry", odometry(k * MS), k * MS),
                 ("joint_states", joint_state(k * MS, s, r, tau if k != 10 else ()), k * MS)]
        feed_both(feds, batch)
        assert_same(*feds)
    assert feds[1].cycle.served == 17 and DECLINED[int(np.flatnonzero(feds[1].cycle.declined)[0])] == \
        "joint_states values"
    assert feds[1].pipeline.latest.joint_torques.any()


@pytest.mark.parametrize("floating_base", [True, False])
def test_corrupted_and_truncated_messages_give_what_the_usual_cycle_gives(floating_base, rng):
    feds = both(floating_base=floating_base)
    s, r = 0.3 * rng.normal(size=N), rng.normal(size=N)
    feed_both(feds, pair(1, rng))
    for k in range(2, 300):
        batch = [("odometry", bytearray(odometry(k * MS)), k * MS),
                 ("joint_states", bytearray(joint_state(k * MS, s, r)), k * MS)]
        _, raw, _ = batch[rng.integers(2)]
        if rng.random() < 0.5:
            del raw[rng.integers(len(raw)):]
        else:  # (a byte of the header, a length, the names or the numbers)
            raw[rng.integers(min(len(raw), 120 if rng.random() < 0.7 else len(raw)))] = rng.integers(256)
        feed_both(feds, [(topic, bytes(raw), now) for topic, raw, now in batch])
        assert_same(*feds)
    assert feds[1].cycle.served > 50 and feds[1].cycle.declined.sum() > 100


def test_a_compiled_output_is_not_disturbed_by_a_later_cycle_that_fails(rng):
    feds = both()
    s, r = 0.3 * rng.normal(size=N), rng.normal(size=N)
    for k in range(1, 4):
        feed_both(feds, pair(k, rng))
    feed_both(feds, [("odometry", odometry(4 * MS), 4 * MS),
                     ("joint_states", joint_state(4 * MS, s, 1e200 * r), 4 * MS)])  # (the kernel overflows)
    assert feds[1].cycle.declined[DECLINED.index("kernel status")] == 1
    assert_same(*feds)  # (the latest output, built now, is the one before the failure)


@pytest.mark.parametrize("setting", [{"discretization_dt": 0.001, "discretization": "zoh"},
                                     {"contacts": as_contacts(BUNDLED_FEET)}])
def test_a_zero_order_hold_step_or_contacts_keep_the_usual_cycle(setting, rng):
    feds = both(**setting)
    for k in range(1, 6):
        feed_both(feds, pair(k, rng))
    assert feds[1].cycle.served == 0 and not feds[1].cycle.armed
    assert_same(*feds)


def test_an_error_in_the_compiled_cycle_stops_it_and_the_usual_cycle_serves_on(rng, monkeypatch):
    feds = both()
    said = []
    feds[1].cycle.on_problem = said.append
    for k in range(1, 4):
        feed_both(feds, pair(k, rng))
    monkeypatch.setattr(feds[1].cycle, "serve", lambda *args: 1 / 0)
    for k in range(4, 8):
        feed_both(feds, pair(k, rng))
        assert_same(*feds)
    assert len(said) == 1 and "ZeroDivisionError" in said[0] and not feds[1].cycle.armed
    assert feds[1].cycle.diagnostics() == {"compiled_cycle_outputs": 2, "compiled_cycle_problem": said[0]}
