"""The node's compiled cycle against the usual cycle on generated streams: odometries and joint states whose
stamps, arrivals on the node's clock, frames, names and numbers are drawn around every boundary the checks
have (equal stamps, a joint state exactly halfway between two odometries, ages and gaps at max_input_age and
pairing_tolerance ± 1 ns, clock steps back of every size, a child frame or a joint name one character off at
any position, NaN/inf in any field, the other byte order, truncated bytes, backlogs).

Every message, every pipeline state and every diagnostic must be the usual cycle's bit for bit
(test_compiled_cycle.assert_same).  Where an event probes one boundary of a pipeline that was serving, the
reason the compiled cycle gives is also predicted here, from the stream alone (served, or which check
declines): a check that declines under another reason miscounts /diagnostics even where the output is the
same.  A failure names the seed and the events that led to it."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from robot_linearization.ros.compiled_cycle import DECLINED
from robot_linearization.ros.messages import joint_state_message
from robot_linearization.spatial import se3_exp
from test_compiled_cycle import FACTORY, MODEL, MS, N, TYPES, TYPESTORE, Fed, assert_same, joint_state, odometry

DOUBLES = 85  # (pose 7, its covariance 36, twist 6, its covariance 36: the doubles that end an odometry)
READ = [*range(7), *range(43, 49)]  # (the ones the node reads: position, orientation, linear, angular)


def patched(raw: bytes, index: int, value: float) -> bytes:
    """The little-endian odometry ``raw`` with its ``index``-th of the last 85 doubles set to ``value``."""
    at = len(raw) - 8 * (DOUBLES - index)
    return raw[:at] + struct.pack("<d", value) + raw[at + 8:]


def one_character_off(text: str, rng) -> str:
    """``text`` with one character replaced, removed or added, at any position."""
    how, at = rng.integers(3), int(rng.integers(len(text)))
    other = chr(ord(text[at]) + 1 if text[at] != "z" else ord("a"))
    return [text[:at] + other + text[at + 1:], text[:at] + text[at + 1:], text[:at] + other + text[at:]][how]


class Stream:
    """A seeded stream of batches [(topic, serialized message, arrival [ns])] as the node's input loop takes
    them, one joint state each (a few: only an odometry, or none); each batch labelled with what it probes
    and the compiled cycle's outcome predicted for it ("served", a DECLINED reason, or None where the
    stream alone does not say)."""

    KINDS = ["clean", "equal odometry stamp", "equal joint stamp", "halfway", "child frame", "joint name",
             "new joint order", "non-finite odometry", "non-finite joint state", "quaternion", "big-endian",
             "truncated", "clock back before", "clock back between", "stale", "ahead", "pairing gap",
             "backlog", "odometry alone", "joint state alone"]
    ODOMETRY_KINDS = {"equal odometry stamp", "halfway", "child frame", "non-finite odometry", "quaternion",
                      "pairing gap", "odometry alone", "backlog"}

    def __init__(self, seed: int, floating: bool, tolerance: float, max_age: float, use_effort: bool):
        self.rng = np.random.default_rng(seed)
        self.floating, self.use_effort = floating, use_effort
        self.tolerance, self.max_age = int(tolerance * 1e9), int(max_age * 1e9)  # (as the pipeline counts them)
        self.stamp, self.now = 1000 * MS, 1000 * MS  # the last stamps' time and the node's clock
        self.names = tuple(MODEL.joint_names)

    def _odometry(self, stamp: int, **options) -> bytes:
        rng = self.rng
        return odometry(stamp, H=se3_exp(0.5 * rng.normal(size=6)), twist=rng.normal(size=6), **options)

    def _joint_state(self, stamp: int, s=None, r=None, effort=None, **options) -> bytes:
        rng = self.rng
        s = 0.5 * rng.normal(size=N) if s is None else s
        r = rng.normal(size=N) if r is None else r
        effort = rng.normal(size=N) if effort is None else effort
        names = options.pop("names", self.names)
        if set(names) <= set(MODEL.joint_names):
            return joint_state(stamp, s, r, effort, names=names, **options)
        message = joint_state_message(FACTORY, stamp, list(names), s, r, effort)  # (a name the model lacks)
        return bytes(TYPESTORE.serialize_cdr(message, TYPES["joint_states"], **options))

    def batch(self, kind: str, last_times: tuple) -> tuple[list, str | None]:
        """The next batch of ``kind`` and its predicted outcome; ``last_times``: the usual pipeline's
        (last joint state stamp, last odometry stamp, last clock), where the boundaries lie."""
        rng, tolerance, max_age, floating = self.rng, self.tolerance, self.max_age, self.floating
        last_j, last_o, _ = last_times
        if (not floating and kind in self.ODOMETRY_KINDS) or (kind != "clean" and self.now - self.stamp > MS):
            kind = "clean"  # (a fixed base reads no odometry; a clock ahead of the stamps: they catch up first)
        spacing = int(rng.choice([1, 2, 5, 10, 50])) * MS
        delay = int(rng.choice([0, 1, 100_000, MS]))
        t = max(self.stamp + spacing, self.now + 1 - delay)
        stamp_o = stamp_j = t
        now_o = now_j = max(t + delay, self.now)
        odometry_raw = joint_raw = None
        expected: str | None = "served"

        if kind == "equal odometry stamp":
            if last_o is None:
                return self.batch("clean", last_times)
            stamp_o, expected = last_o, "stamps not newer"
        elif kind == "equal joint stamp":
            if last_j is None:
                return self.batch("clean", last_times)
            stamp_j, expected = last_j, "stamps not newer"
        elif kind == "halfway":  # (the older of two equally near odometries is the usual cycle's)
            if last_o is None or (last_j is not None and last_j >= last_o):
                return self.batch("clean", last_times)
            half = int(rng.integers(1, 30)) * MS // 2
            stamp_j, stamp_o = last_o + half, last_o + 2 * half
            now_o = now_j = max(stamp_o + delay, self.now)
            expected = "pairing" if stamp_j > (last_j or 0) else None
        elif kind == "child frame":
            odometry_raw, expected = self._odometry(stamp_o, child=one_character_off("base_link", rng)), \
                "odometry child frame"
        elif kind == "joint name":
            names = list(self.names)
            k = int(rng.integers(N))
            names[k] = one_character_off(names[k], rng)
            if len(set(names)) == N:
                joint_raw, expected = self._joint_state(stamp_j, names=tuple(names)), "joint_states names"
        elif kind == "new joint order":
            self.names = tuple(np.array(MODEL.joint_names)[rng.permutation(N)])
            expected = "joint_states names"
        elif kind == "non-finite odometry":
            index, value = int(rng.integers(DOUBLES)), float(rng.choice([np.nan, np.inf, -np.inf]))
            odometry_raw = patched(self._odometry(stamp_o), index, value)
            expected = "odometry values" if index in READ else None
        elif kind == "non-finite joint state":
            arrays = [0.5 * rng.normal(size=N), rng.normal(size=N), rng.normal(size=N)]
            field = int(rng.integers(3))
            arrays[field][rng.integers(N)] = rng.choice([np.nan, np.inf, -np.inf])
            joint_raw = self._joint_state(stamp_j, *arrays)
            expected = "joint_states values" if field < 2 or self.use_effort else None
        elif kind == "quaternion":  # (norms on both sides of 1 ± QUATERNION_TOLERANCE, and near zero)
            norm = float(rng.choice([0.0, 1e-10, 0.9499999, 0.95, 0.9500001, 1.0499999, 1.05, 1.0500001, 1.2]))
            q = rng.normal(size=4)
            odometry_raw = self._odometry(stamp_o)
            for i, value in enumerate(norm * q / np.linalg.norm(q)):
                odometry_raw = patched(odometry_raw, 3 + i, value)
            expected = None
        elif kind == "big-endian":
            if floating and rng.random() < 0.5:
                odometry_raw, expected = self._odometry(stamp_o, little_endian=False), "odometry encoding"
            else:
                joint_raw, expected = self._joint_state(stamp_j, little_endian=False), "joint_states encoding"
        elif kind == "truncated":
            if floating and rng.random() < 0.5:
                raw = self._odometry(stamp_o)
                odometry_raw = raw[:int(rng.integers(len(raw)))]
            else:
                raw = self._joint_state(stamp_j)
                joint_raw = raw[:int(rng.integers(len(raw)))]
            expected = None
        elif kind in ("clock back before", "clock back between"):
            back = int(rng.choice([tolerance - 1, tolerance, tolerance + 1, 50 * MS, 100 * MS, 250 * MS,
                                   max_age - 1, max_age, max_age + 1, 2000 * MS]))
            if kind == "clock back before":
                now_o = now_j = self.now - back
            else:
                now_j = now_o - back
            stamp_o = stamp_j = now_j - delay  # (a new timeline's stamps go back with its clock)
            went_back = self.now - now_o > tolerance or (now_o - now_j > tolerance if floating
                                                         else self.now - now_j > tolerance)
            expected = "clock went back" if went_back else None
        elif kind == "stale":  # (the joint state's age at max_input_age ± 1 ns, its odometry nearer or not)
            age = max_age + int(rng.choice([-1, 0, 1, -50 * MS, 50 * MS]))
            gap = int(rng.choice([0, 1, -1, tolerance // 2, -tolerance // 2, tolerance, tolerance + 1]))
            stamp_j = self.stamp + 2 * abs(gap) + spacing
            stamp_o = stamp_j + gap
            now_o = now_j = stamp_j + age
            expected = "stale" if age > max_age else (
                "pairing" if floating and (abs(gap) > tolerance or (gap < 0 and age <= tolerance)) else None)
        elif kind == "ahead":  # (stamps max_input_age ± 1 ns ahead of the node's clock)
            ahead = max_age + int(rng.choice([-1, 0, 1]))
            now_o = now_j = self.now + delay
            stamp_o = stamp_j = now_j + ahead
            expected = "ahead of the clock" if ahead > max_age else "served"
            if floating and rng.random() < 0.5:  # (the odometry ahead, the joint state a nanosecond around it)
                stamp_o, stamp_j = now_o + ahead, now_o + ahead + int(rng.choice([-1, 1]))
                expected = "ahead of the clock" if max(stamp_o, stamp_j) - now_j > max_age else None
        elif kind == "pairing gap":  # (odometry and joint state pairing_tolerance ± 1 ns apart)
            gap = int(rng.choice([tolerance - 1, tolerance + 1, -tolerance + 1, -tolerance - 1, tolerance]))
            stamp_j = self.stamp + 2 * abs(gap) + spacing
            stamp_o = stamp_j + gap
            now_o = now_j = stamp_j + delay
            expected = "pairing" if abs(gap) > tolerance or gap < 0 else None if abs(gap) == tolerance else "served"
        elif kind == "backlog":  # (odometries of cycles before, some between them; then one joint state)
            stamps = sorted(set(self.stamp + int(k) * MS // 2 for k in rng.integers(1, 40, int(rng.integers(2, 6)))))
            stamp_j = max(stamps[-1] + int(rng.choice([-MS // 2, 0, MS // 2])), self.stamp + 1)
            now = max(stamps[-1] + delay, self.now)
            batch = [("odometry", self._odometry(stamp), now + i * 1000) for i, stamp in enumerate(stamps)]
            batch.append(("joint_states", self._joint_state(stamp_j), now + len(stamps) * 1000))
            self.stamp, self.now = max(stamps[-1], stamp_j), now + len(stamps) * 1000
            return batch, None
        elif kind == "odometry alone":
            self.stamp, self.now = t, now_o
            return [("odometry", self._odometry(t), now_o)], None
        elif kind == "joint state alone":
            self.stamp, self.now = t, now_j
            return [("joint_states", self._joint_state(t), now_j)], None

        odometry_raw = odometry_raw if odometry_raw is not None else self._odometry(stamp_o)
        joint_raw = joint_raw if joint_raw is not None else self._joint_state(stamp_j)
        batch = [("joint_states", joint_raw, now_j)]
        if floating or rng.random() < 0.1:  # (a fixed base's node may be sent an odometry too)
            batch.insert(0, ("odometry", odometry_raw, now_o))
            expected = expected if floating else None
        self.stamp = max(stamp_o, stamp_j) if kind.startswith("clock") else max(self.stamp, stamp_o, stamp_j)
        self.now = now_j
        return batch, expected


VARIANTS = {  # base, pairing_tolerance, max_input_age, the Euler step, efforts
    "floating": (True, 0.02, 0.5, 0.0, False),
    "floating, wide pairing, Euler step": (True, 0.2, 0.5, 0.001, False),
    "floating, wide pairing, effort": (True, 0.2, 0.3, 0.0, True),
    "fixed": (False, 0.02, 0.5, 0.0, False),
    "fixed, Euler step, effort": (False, 0.02, 0.5, 0.002, True),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_generated_streams_give_the_usual_cycles_messages_states_and_reasons(variant):
    floating, tolerance, max_age, dt, use_effort = VARIANTS[variant]
    config = dict(floating_base=floating, pairing_tolerance=tolerance, max_input_age=max_age,
                  discretization_dt=dt, use_effort=use_effort)
    seed = 20261202 + list(VARIANTS).index(variant)
    stream = Stream(seed, floating, tolerance, max_age, use_effort)
    usual, compiled = Fed(False, **config), Fed(True, **config)
    cycle = compiled.cycle
    weights = np.array([len(Stream.KINDS) if kind == "clean" else 1 for kind in Stream.KINDS], float)  # (half clean)
    history: list = []
    serving = False
    checked: dict = {}
    for event in range(1500):
        kind = str(stream.rng.choice(Stream.KINDS, p=weights / weights.sum())) if event > 2 else "clean"
        batch, expected = stream.batch(kind, usual.pipeline.last_times)
        # (predicted where the batch before was served compiled, one odometry and its joint state, the clock
        # and the stamps where the stream put them)
        predicted = expected is not None and serving and cycle._serves() and not cycle._held
        served, declined = cycle.served, cycle.declined.copy()
        for fed in (usual, compiled):
            fed.feed(batch)
        history.append((event, kind, expected, [(topic, now) for topic, _, now in batch]))
        where = f"seed {seed}, the last events: {history[-4:]}"
        try:
            assert_same(usual, compiled)
        except AssertionError as e:
            raise AssertionError(where) from e
        reasons = {DECLINED[i]: int(k) for i, k in enumerate(cycle.declined - declined) if k}
        serving = cycle.served - served == 1 and kind == "clean"
        if predicted:
            outcome = {"served": 1} if cycle.served - served == 1 and not reasons else reasons
            assert outcome == {expected: 1}, where
            checked[expected] = checked.get(expected, 0) + 1
    # the stream reached every boundary it predicts (else a change of the generator made the test weak)
    reached = {"served", "stamps not newer", "joint_states names", "joint_states values", "joint_states encoding",
               "clock went back", "ahead of the clock"}
    if floating:
        reached |= {"odometry child frame", "odometry values", "odometry encoding", "pairing", "stale"}
    assert reached <= set(checked), (sorted(checked.items()), seed)
    assert cycle.served > 150
