"""Everything the linearization node does, without rclpy: model (re)loading,
input checks, time pairing, the linearization, validation, diagnostics and
the JSON the service returns.  node.py and the bag replay drive it.

The contact set (set_contacts: the node's 'contacts' topic) is a gait schedule:
a set that closes a contact the last linearized joint state did not hold is a
touchdown, and the next linearized joint state carries the impact of that
instant (impacts.py; A, B, λ then at the post-impact state, as rl.linearize with
previous_contacts has them).  Every output with contacts carries the contact
margins (contact_margins.py); a negative one is a WARN while it lasts.

Times are integer nanoseconds: message stamps, and ``now`` from the caller's
clock (the node's clock, or the bag's log time in replay).
"""

from __future__ import annotations

import collections
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..linearization import Linearization
from ..linearizer import linearize
from ..arguments import Settings, did_you_mean
from ..contact_margins import ContactMargins, contact_margins
from ..contacts import ContactError, as_contacts, format_contacts, resolve
from ..coupling import AnyModel
from ..impacts import Impact, impact, touchdown
from ..model import ModelError, State
from ..urdf import load_urdf
from ..validation import validate
from .health import ground_normal
from .interfaces import request_options, request_point
from .messages import (InputError, JointStateFields, OdometryFields, joint_state_arrays, odometry_base_state,
                       stamp_to_ns)

OK, WARN, ERROR = 0, 1, 2  # diagnostic_msgs/DiagnosticStatus levels
ODOMETRY_BUFFER = 64  # recent odometry messages kept for pairing (bounded: no growth under bursts)
JOINT_STATE_QUEUE = 8  # joint states waiting for their odometry (bounded likewise)
HELD_INPUTS = JOINT_STATE_QUEUE + ODOMETRY_BUFFER  # inputs that went back in time, until the clock says why
INPUT_SILENCE_NS = 500_000_000
"""An input topic that has publishers but delivers nothing for this long is reported (0.5 s)."""
FREE_FLOATING_UNTIL_FIT = "linearizing free-floating until a robot description or contact set that fits arrives"


@dataclass
class PipelineConfig(Settings):
    """Parameters of the node (defaults as in config/linearization.yaml)."""

    floating_base: bool = True
    base_frame: str = ""  # odometry child_frame_id to expect; "" = the URDF root link
    gravity: tuple = (0.0, 0.0, -9.81)
    use_effort: bool = False  # τ from JointState.effort, else zeros
    pairing_tolerance: float = 0.02  # s between a joint state and the odometry it is paired with
    max_input_age: float = 0.5  # s; older inputs are stale and produce nothing
    validation_tolerance: float = 1e-6
    mimic_joints: str = "coupled"
    contacts: tuple = ()  # Contacts held at start-up (empty: free-floating); changed by set_contacts
    discretization_dt: float = 0.0  # s; > 0: also A_d, B_d of one step of this length (docs/discretization.md)
    discretization: str = "euler"  # the step: "euler" (rl.step's Jacobians) or "zoh" (zero-order hold of A, B)
    restitution: float = 0.0  # e ∈ [0, 1] of the impact at a touchdown (docs/impacts.md)
    friction_coefficient: float = 0.7  # μ of the contact margins (docs/contact_margins.md)
    friction_facets: int = 0  # 0: the exact friction cone; an even k ≥ 4: the k-facet inner pyramid
    sole_size: tuple = ()  # (length along x, width along y) [m] of 6d contacts' soles; (): not given
    kernel: str | None = None  # rl.linearize's "auto", "generic", "generated"; None: $ROBOT_LINEARIZATION_KERNEL

    def step(self) -> dict:
        """linearize's dt and discretization: none without a step."""
        if not self.discretization_dt:
            return {}
        return {"dt": self.discretization_dt, "discretization": self.discretization}


@dataclass
class Output:
    """One cycle's result: the linearization at the input stamp."""

    stamp_ns: int
    model: AnyModel
    state: State
    joint_torques: np.ndarray
    linearization: Linearization
    compute_time: float  # s: the cycle's computation (linearize, and the impact and margins when there are)
    margins: ContactMargins | None = None  # with contacts: contact_margins of linearization (None if they failed)
    impact: Impact | None = None  # at a touchdown: the impact of state on the new contact set


@dataclass
class _Counters:
    outputs: int = 0
    rejected: collections.Counter = field(default_factory=collections.Counter)
    impacts: int = 0  # touchdowns whose impact map was computed
    time_jumps: int = 0  # times the clock or the input stamps went back (a looped bag, a restarted simulation)
    negative_margins: int = 0  # outputs with a contact margin < 0


DROPPED_WARNING_PERIOD = 5.0
"""s (steady time) between two warnings of inputs dropped as stale or going back in time (on_dropped)."""


class LinearizationPipeline:
    def __init__(self, config: PipelineConfig | None = None):
        self.config = config or PipelineConfig()
        self.model: AnyModel | None = None
        self.model_error = "no robot description received yet"
        # joint states not linearized yet: (stamp_ns, positions, velocities, efforts), oldest first
        self._joint_states: collections.deque = collections.deque(maxlen=JOINT_STATE_QUEUE)
        self._odometry: collections.deque = collections.deque(maxlen=ODOMETRY_BUFFER)  # (stamp_ns, H, v)
        self._last_joint_stamp: int | None = None
        self._last_odometry_stamp: int | None = None
        # optional callable(reason): told of every rejected input (bag replay's summary)
        self.on_problem: Callable[[str], None] | None = None
        # optional callable(text), the node's WARN log: told once of each assumption made for an input, and of
        # each jump back in time
        self.on_notice: Callable[[str], None] | None = None
        # optional callable(text), the node's WARN log: told, at most once each DROPPED_WARNING_PERIOD s, of the
        # inputs dropped as stale or as going back in time (e.g. a bag played without --clock drops them all)
        self.on_dropped: Callable[[str], None] | None = None
        self._dropped = 0  # inputs dropped since the last warning
        self._dropped_warned: float | None = None  # time.monotonic() of the last warning
        self._last_now: int | None = None  # the node's clock at the last input or step
        # inputs whose stamps went back while the clock did not (yet): (handler, message, stamp), and the clock then
        self._held: collections.deque = collections.deque()
        self._held_clock: int | None = None
        # the clock before its last jump back, until it gets there again: inputs stamped more than max_input_age
        # ahead of the clock meanwhile are late messages of the timeline it left
        self._clock_left: int | None = None
        self.assumed: tuple = ()  # assumptions made for the latest joint state (empty velocity/effort arrays)
        self._noticed: set = set()
        self._latest: Output | None = None
        self._latest_of: Callable[[], Output] | None = None  # builds latest, after a compiled cycle (record_pair)
        self.last_problem: str | None = None
        self.last_validation: dict | None = None
        self.requested_contacts = tuple(self.config.contacts)  # the parameter's set, or the latest accepted one
        self.contacts = self.requested_contacts  # the active set: the requested one, () while the model lacks it
        self.contact_problem: str | None = None  # why the requested set is not active, while it is not
        # the set held at the last linearized joint state (None before the first, as rl.linearize_trajectory's
        # knot 0): a set that closes a contact it did not hold is a touchdown, whose impact the next linearized
        # joint state carries
        self.held_contacts: tuple | None = None
        self.margin_problem: str | None = None  # why the last output with contacts has no margins
        self._counters = _Counters()
        self._output_times: collections.deque = collections.deque(maxlen=50)
        self.input_path = "none"  # how the node takes its inputs (node.py says), shown in diagnostics
        self.input_problem: str | None = None  # an input topic with publishers that delivers nothing
        self._received: collections.Counter = collections.Counter()  # messages per input topic
        self._heard: dict = {}  # input topic -> (messages received, ns since which that count stands)
        self._last_look: int | None = None  # the clock at the last watch_inputs

    # ---- model -----------------------------------------------------------
    def set_description(self, description: str) -> str | None:
        """Build the model from URDF XML (or a file path).  On failure keep the
        previous model and return the error text; None on success."""
        model = self.load_model(description)
        if isinstance(model, str):
            return self.reject_description(model)
        self.set_model(model)
        return None

    def load_model(self, description: str):
        """The Model of a URDF, its kernels compiled (or loaded from the cache) and
        warmed up, or the error text.  Slow the first time after an install, and it
        touches nothing of the pipeline: the node runs it beside its other work."""
        try:
            model = load_urdf(description, floating_base=self.config.floating_base, gravity=self.config.gravity,
                              mimic_joints=self.config.mimic_joints)
        except (ModelError, ValueError) as e:
            return f"robot description rejected: {e}"
        # Compile now, not in the first control cycle; away from q = 0, where some robots' mass
        # matrix is singular (iCub's neck).
        n = model.n_joints
        warm = State(base_pose=np.eye(4) if model.floating_base else None, joint_positions=np.full(n, 0.1),
                     base_twist=np.zeros(6) if model.floating_base else None, joint_velocities=np.zeros(n))
        for contacts in ((), self.contacts) if self.contacts else ((),):  # the contact kernels too, if in use
            try:
                lin = linearize(model, warm, contacts=contacts, kernel=self.config.kernel, **self.config.step())
                if contacts:  # (and what a cycle with contacts adds: the margins, a touchdown's impact)
                    contact_margins(model, lin, friction=1.0, sole_size=(0.1, 0.1))
                    impact(model, warm, contacts, kernel=self.config.kernel)
            except ValueError:
                pass  # (singular at this state: compiled all the same; or contacts this model lacks)
        return model

    def reject_description(self, error: str) -> str:
        """Report a description that could not be loaded; the previous model stays."""
        if self.model is None:
            self.model_error = error
        self._reject(error + (f"; keeping model '{self.model.name}'" if self.model else ""), "description")
        return error

    def set_contacts(self, spec) -> str | None:
        """Change the active contact set (text as :func:`as_contacts` reads it, or
        Contacts); it applies to the joint states linearized from now on.  On an
        error keep the previous set and return the reason; None on success."""
        try:
            contacts = as_contacts(spec)
            if self.model is not None:
                resolve(self.model, contacts)
        except ContactError as e:
            reason = f"contact set rejected: {e}; keeping [{format_contacts(self.contacts)}]"
            self._reject(reason, "contacts")
            return reason
        self.requested_contacts = self.contacts = contacts
        self.contact_problem = None
        return None

    def set_model(self, model: AnyModel) -> None:
        """Use ``model`` (from :meth:`load_model`) from now on; the inputs queued for the previous one go.

        The requested contact set is active when ``model`` has all its frames.  Otherwise
        (a robot swapped for one without them) the robot is linearized free-floating —
        not with part of the set, a different physical problem nobody asked for — and
        contact_problem, shown in the diagnostics, names the missing frames until a
        description that has them (the set comes back by itself) or a new set arrives."""
        self.contacts, self.contact_problem = self.requested_contacts, None
        missing = [c.frame for c in self.requested_contacts if c.frame not in model.frames]
        if missing:
            self.contacts = ()
            frames = ", ".join(f"'{frame}'{did_you_mean(frame, list(model.frames))}" for frame in missing)
            self.contact_problem = (f"contact frames {frames} are not links of model '{model.name}'" if len(missing) > 1
                                    else f"contact frame {frames} is not a link of model '{model.name}'")
            self._reject(f"{self.contact_problem}: {FREE_FLOATING_UNTIL_FIT}", "contacts")
        self.model, self.model_error = model, ""
        self.held_contacts = None  # (a new robot is not a touchdown)
        self.margin_problem = None
        self.latest = None
        self._joint_states.clear()
        self._odometry.clear()
        self._held.clear()

    @property
    def latest(self) -> Output | None:
        """The newest output (None before the first): built when asked for after a compiled cycle
        (:meth:`record_pair`), which keeps what it needs until its next output."""
        if self._latest_of is not None:
            self._latest, self._latest_of = self._latest_of(), None
        return self._latest

    @latest.setter
    def latest(self, output: Output | None) -> None:
        self._latest, self._latest_of = output, None

    @property
    def base_frame(self) -> str:
        return self.config.base_frame or (self.model.body_names[0] if self.model else "")

    # ---- inputs ----------------------------------------------------------
    def _reject(self, reason: str, kind: str) -> bool:
        self.last_problem = reason
        self._counters.rejected[kind] += 1
        if self.on_problem is not None:
            self.on_problem(reason)
        if kind in ("stale", "out_of_order") and self.on_dropped is not None:
            self._say_dropped(reason)
        return False

    def _say_dropped(self, reason: str) -> None:
        """Tell on_dropped of the inputs dropped as stale or going back in time: the first at once, then
        how many more, at most once each DROPPED_WARNING_PERIOD s (steady time), with the latest reason."""
        self._dropped += 1
        now = time.monotonic()
        if self._dropped_warned is not None and now - self._dropped_warned < DROPPED_WARNING_PERIOD:
            return
        since = "" if self._dropped_warned is None else f" in the last {now - self._dropped_warned:.0f} s"
        assert self.on_dropped is not None  # (the caller's check)
        self.on_dropped(f"{self._dropped} input{'s' * (self._dropped > 1)} dropped{since}, the latest: {reason}. "
                        "Their stamps are behind the node's clock or go back (a bag played without --clock, a "
                        "clock not synchronised with the robot's?); /diagnostics counts them")
        self._dropped, self._dropped_warned = 0, now

    def reject_input(self, reason: str, topic: str) -> bool:
        """Report an input that could not even be read (a malformed serialized message,
        messages.CdrInputs): a diagnostic, counted under ``topic``; returns False."""
        return self._reject(reason, topic)

    def on_joint_state(self, msg) -> bool:
        """Check and keep the latest sensor_msgs/JointState (or its JointStateFields);
        False (and a diagnostic) if it cannot be used."""
        if self.model is None:
            return self._reject(self.model_error, "no_model")
        stamp = msg.stamp_ns if isinstance(msg, JointStateFields) else stamp_to_ns(msg.header.stamp)
        if self._left_behind("joint_states", stamp):
            return False
        self._check_time(stamp, self._last_joint_stamp, "joint_states stamp")
        if self._last_joint_stamp is not None and stamp <= self._last_joint_stamp:
            if self._hold_for_new_timeline("joint_states", msg, stamp, self._last_joint_stamp):
                return False
            return self._reject(f"joint_states stamp {stamp * 1e-9:.9f} s is not newer than the previous one "
                                f"({self._last_joint_stamp * 1e-9:.9f} s): dropped", "out_of_order")
        try:
            reading = joint_state_arrays(msg, self.model.joint_names, need_effort=self.config.use_effort)
        except InputError as e:
            return self._reject(str(e), "joint_states")
        self._last_joint_stamp = stamp
        self.assumed = reading.assumed
        for note in reading.assumed:
            if note in self._noticed:
                continue
            self._noticed.add(note)
            if self.on_notice is not None:
                self.on_notice(note)
        # full: the oldest goes (rate_hz)
        self._joint_states.append((stamp, reading.positions, reading.velocities, reading.efforts))
        return True

    def on_odometry(self, msg) -> bool:
        """Check and buffer a nav_msgs/Odometry (or its OdometryFields; bounded buffer)."""
        if self.model is None:
            return self._reject(self.model_error, "no_model")
        stamp = msg.stamp_ns if isinstance(msg, OdometryFields) else stamp_to_ns(msg.header.stamp)
        if self._left_behind("odometry", stamp):
            return False
        self._check_time(stamp, self._last_odometry_stamp, "odometry stamp")
        if self._last_odometry_stamp is not None and stamp <= self._last_odometry_stamp:
            if self._hold_for_new_timeline("odometry", msg, stamp, self._last_odometry_stamp):
                return False
            return self._reject(f"odometry stamp {stamp * 1e-9:.9f} s is not newer than the previous one: dropped",
                                "out_of_order")
        try:
            H, twist = odometry_base_state(msg, self.base_frame)
        except InputError as e:
            return self._reject(str(e), "odometry")
        self._last_odometry_stamp = stamp
        self._odometry.append((stamp, H, twist))
        return True

    def receive(self, topic: str, message, now_ns: int, *, step: bool = True) -> list[Output]:
        """One input as the node takes it: ``message`` of ``topic`` ("joint_states" or "odometry": a
        message, its fields, or the InputError its reading raised) arriving at ``now_ns`` (the node's
        clock).  The clock is looked at first, so that a jump back in time is noticed at the first
        input after it, whatever is queued; then the input is checked and kept; with ``step`` (no
        rate_hz timer) what it made ready is linearized.  The outputs made, oldest first."""
        self.note_received(topic)
        self.observe_clock(now_ns)
        if isinstance(message, InputError):
            self.reject_input(str(message), topic)
        elif topic == "odometry":
            self.on_odometry(message)
        else:
            self.on_joint_state(message)
        return self.step(now_ns) if step and self.waiting else []

    def observe_clock(self, now_ns: int) -> None:
        """The node's clock now [ns] (every input and every step): a jump back by more than
        pairing_tolerance starts a new timeline (:meth:`_check_time`), and the inputs held for
        one (:meth:`_hold_for_new_timeline`) are served in it — or, when the clock moved on
        without jumping, dropped as the late messages they then are."""
        jumped = self._check_time(now_ns, self._last_now, "the node's clock", clock=True)
        self._last_now = now_ns
        if self._clock_left is not None and now_ns >= self._clock_left:
            self._clock_left = None
        if self._held and (jumped or now_ns != self._held_clock):
            held, self._held = list(self._held), collections.deque()
            for topic, message, stamp in held:
                if jumped:
                    self.on_odometry(message) if topic == "odometry" else self.on_joint_state(message)
                else:
                    self._reject_late(topic, stamp)

    def _hold_for_new_timeline(self, topic: str, message, stamp: int, before: int) -> bool:
        """An input whose stamp went back by more than pairing_tolerance while the node's clock has
        not (yet): a late message, or the first of a new timeline whose clock is still on its way
        (``ros2 bag play --loop --clock`` publishes /clock at its own rate, 40 Hz by default, so the
        loop's first messages can come before its first clock).  Held (at most HELD_INPUTS) until
        the clock next changes: :meth:`observe_clock` decides.  False (not held) when the clock is
        not known or the stamp went back by less."""
        if self._last_now is None or before - stamp <= int(self.config.pairing_tolerance * 1e9):
            return False
        if not self._held:
            self._held_clock = self._last_now
        elif len(self._held) == HELD_INPUTS:  # (a clock that never moves: the oldest is decided now)
            oldest_topic, _, oldest_stamp = self._held.popleft()
            self._reject_late(oldest_topic, oldest_stamp)
        self._held.append((topic, message, stamp))
        return True

    def _left_behind(self, topic: str, stamp: int) -> bool:
        """An input stamped more than max_input_age ahead of the node's clock since the clock went back
        (and before it got where it was): a message of the timeline the clock left, taken after the jump
        (``ros2 bag play --loop --clock``: the loop's last messages and its next clock cross).  Rejected
        (True), so that it is not taken for the new timeline and its successors for a second jump."""
        if self._clock_left is None or self._last_now is None \
                or stamp - self._last_now <= int(self.config.max_input_age * 1e9):
            return False
        self._reject(f"{topic} stamp {stamp * 1e-9:.9f} s is ahead of the node's clock "
                     f"({self._last_now * 1e-9:.3f} s), which went back from {self._clock_left * 1e-9:.3f} s: "
                     "a message of the timeline it left, dropped", "out_of_order")
        return True

    def _reject_late(self, topic: str, stamp: int) -> None:
        self._reject(f"{topic} stamp {stamp * 1e-9:.9f} s went back in time and the node's clock did not: dropped",
                     "out_of_order")

    def _check_time(self, now: int, before: int | None, what: str, *, clock: bool = False) -> bool:
        """Time that goes back by more than pairing_tolerance — the node's clock, or an input's stamp
        that is still fresh by that clock (a bag played with --loop --clock, a simulation restarted) —
        is not a late message but a new timeline: the queued inputs and the newest stamps are dropped
        (tf2's buffer does the same on a jump back), the node warns once per jump, and the first inputs
        of the new timeline are served; True then.  Less than that, or a stamp stale by the clock, is
        out of order (or held until the clock tells: :meth:`_hold_for_new_timeline`).  clock: ``now``
        is the node's clock (else an input's stamp)."""
        if before is None or before - now <= int(self.config.pairing_tolerance * 1e9):
            return False
        if not clock and (self._last_now is None or self._last_now - now > int(self.config.max_input_age * 1e9)):
            return False  # a late message by the node's clock (which has not gone back): not a new timeline
        self._joint_states.clear()
        self._odometry.clear()
        self._last_joint_stamp = self._last_odometry_stamp = self._last_now = None
        self._clock_left = before if clock else None
        self._counters.time_jumps += 1
        if self.on_notice is not None:
            self.on_notice(f"detected jump back in time: {what} went from {before * 1e-9:.3f} s to {now * 1e-9:.3f} s; "
                           "dropped the queued inputs, serving again from the next paired input")
        return True

    def note_received(self, topic: str) -> None:
        """Count a message that arrived on an input topic, readable or not (:meth:`watch_inputs`)."""
        self._received[topic] += 1

    def watch_inputs(self, now_ns: int, publishers: dict) -> bool:
        """Notice an input path that has gone quiet: {topic: its publisher count} now.
        A topic with publishers whose count of received messages has not moved for
        INPUT_SILENCE_NS becomes ``input_problem`` (a WARN in the diagnostics); True when
        such a problem appears, so that the caller can publish the diagnostics at once.  The silence is
        counted on the node's clock over looks at most INPUT_SILENCE_NS apart (the caller looks every
        0.1 s): a clock that jumps between two looks — sim time's first /clock, from 0 to the bag's
        time, or a jump back — starts the count again instead of making a silence of the jump."""
        problems = []
        jumped = self._last_look is not None and not 0 <= now_ns - self._last_look <= INPUT_SILENCE_NS
        self._last_look = now_ns
        for topic, count in publishers.items():
            received = self._received[topic]
            heard = self._heard.get(topic)
            if count == 0 or heard is None or heard[0] != received or jumped:
                self._heard[topic] = (received, now_ns)
            elif now_ns - heard[1] >= INPUT_SILENCE_NS:
                problems.append(f"{topic} has {count} publisher{'s' if count > 1 else ''} but nothing arrived for "
                                f"{(now_ns - heard[1]) * 1e-9:.1f} s")
        appeared = bool(problems) and self.input_problem is None
        self.input_problem = "; ".join(problems) + f" (input path: {self.input_path})" if problems else None
        return appeared

    # ---- the cycle -------------------------------------------------------
    @property
    def settled(self) -> bool:
        """No joint state queued and no input held for a new timeline (compiled_cycle.py)."""
        return not self._joint_states and not self._held

    @property
    def last_times(self) -> tuple:
        """(the last joint state's stamp, the last odometry's stamp, the node's clock at the last input
        or step) [ns], each None before the first (or since a jump back in time)."""
        return self._last_joint_stamp, self._last_odometry_stamp, self._last_now

    @property
    def waiting(self) -> bool:
        """A joint state is queued: :meth:`step` may have an output to make."""
        return bool(self._joint_states)

    def step(self, now_ns: int, newest_only: bool = False) -> list[Output]:
        """Linearize the joint states that are ready; their outputs, oldest first.

        A joint state is ready when its odometry can no longer improve: the
        odometry stream has reached its stamp, a newer joint state has arrived,
        or pairing_tolerance has passed (node clock); a fixed base needs no
        odometry.  It is then paired with the nearest odometry within
        pairing_tolerance, or rejected with a diagnostic — never linearized with
        a base state further away than that.  newest_only (the rate_hz timer):
        only the newest ready joint state; older ones are skipped.
        """
        self.observe_clock(now_ns)
        if self.model is None:  # (no joint state is queued without a model)
            return []
        ready = len(self._joint_states)
        if ready and not self._newest_is_ready(self.model, now_ns):
            ready -= 1
        batch = [self._joint_states.popleft() for _ in range(ready)]
        if newest_only:
            batch = batch[-1:]
        model = self.model
        outputs = (self._linearize(model, joint_state, now_ns) for joint_state in batch)
        return [out for out in outputs if out is not None]

    def _newest_is_ready(self, model: AnyModel, now_ns: int) -> bool:
        stamp = self._joint_states[-1][0]
        return (not model.floating_base
                or (self._last_odometry_stamp is not None and self._last_odometry_stamp >= stamp)
                or now_ns - stamp > int(self.config.pairing_tolerance * 1e9))

    def _linearize(self, model: AnyModel, joint_state, now_ns: int) -> Output | None:
        """One joint state's output, or None after rejecting it with the reason."""
        stamp, positions, velocities, efforts = joint_state
        max_age = int(self.config.max_input_age * 1e9)
        if now_ns - stamp > max_age:
            self._drop(f"joint_states is stale: {(now_ns - stamp) * 1e-9:.3f} s old "
                       f"(max_input_age {self.config.max_input_age} s)", "stale")
            return None
        if model.floating_base:
            paired = self._pair_odometry(stamp)
            if isinstance(paired, str):
                self._drop(paired, "unpaired")
                return None
            H, twist = paired
            state = State._given(H, positions, twist, velocities)  # (arrays of the inputs' own, made by the reading)
        else:
            state = State._given(None, positions, None, velocities)
        torques = efforts if efforts is not None else np.zeros(model.n_joints)
        start = time.perf_counter()
        try:
            lin, jump = None, None
            if self.held_contacts not in (None, self.contacts) and touchdown(self.held_contacts, self.contacts):
                lin, jump = touchdown_linearization(
                    model, state, torques, self.contacts, self.held_contacts, self.config.restitution,
                    self.config.step(), self.config.kernel)
            if lin is None:  # (at a touchdown without a step: A, B, λ at x⁺ all the same, the impact map beside)
                lin = linearize(model, state if jump is None else jump.state, torques, contacts=self.contacts,
                                kernel=self.config.kernel, **self.config.step())
        except ContactError as e:
            self._drop(f"cannot linearize with contacts [{format_contacts(self.contacts)}]: {e}", "contacts")
            return None
        except ValueError as e:
            self._drop(f"cannot linearize: {e}", "invalid_state")
            return None
        margins, self.margin_problem = margins_of(model, self.config, lin)
        compute_time = time.perf_counter() - start  # (linearize raises rather than return inf/NaN)
        self.held_contacts = self.contacts
        self.latest = Output(stamp, model, state, torques, lin, compute_time, margins, jump)
        self._counters.outputs += 1
        self._counters.impacts += jump is not None
        self._counters.negative_margins += margins is not None and bool(margins.margins.min() < 0.0)
        self._output_times.append(now_ns)
        self.last_problem = None
        return self.latest

    def record_odometry(self, stamp: int, H: np.ndarray, twist: np.ndarray, now_ns: int) -> None:
        """What ``receive("odometry", …, now_ns)`` leaves behind for an odometry of ``stamp``, newer than
        the last, its pose H (4, 4) and twist (6,) (arrays kept, not copied), while the pipeline is
        :attr:`settled` and the clock has not gone back: the node's compiled cycle took it
        (compiled_cycle.py)."""
        self._received["odometry"] += 1
        self._last_now = now_ns
        self._last_odometry_stamp = stamp
        self._odometry.append((stamp, H, twist))

    def record_pair(self, odometry_stamp: int, H: np.ndarray, twist: np.ndarray, joint_state_stamp: int,
                    now_ns: int, output_of: Callable[[], Output]) -> None:
        """What ``receive("odometry", …)`` then ``receive("joint_states", …, now_ns)`` leave behind
        when the joint state is linearized at once with that odometry, its pose H (4, 4) and twist (6,)
        (arrays kept, not copied), without a notice or rejection: the node's compiled cycle
        (compiled_cycle.py) made the output, which ``output_of()`` builds when :attr:`latest` is
        asked for."""
        self._received["odometry"] += 1
        self._last_odometry_stamp = odometry_stamp
        self._odometry.append((odometry_stamp, H, twist))
        self.record_joint_state(joint_state_stamp, now_ns, output_of)

    def record_joint_state(self, stamp: int, now_ns: int, output_of: Callable[[], Output]) -> None:
        """What ``receive("joint_states", …, now_ns)`` leaves behind when the joint state of ``stamp`` is
        linearized at once (with the odometry :meth:`record_pair` recorded, or a fixed base's alone),
        without a notice or rejection: the node's compiled cycle made the output, which ``output_of()``
        builds when :attr:`latest` is asked for."""
        self._received["joint_states"] += 1
        self._last_joint_stamp, self._last_now = stamp, now_ns
        self.assumed, self.margin_problem, self.last_problem = (), None, None
        self.held_contacts = self.contacts
        self._latest, self._latest_of = None, output_of
        self._counters.outputs += 1
        self._output_times.append(now_ns)

    def _drop(self, reason: str, kind: str) -> None:
        self._reject(reason, kind)
        return None

    def _pair_odometry(self, stamp: int):
        """(H, twist) of the odometry nearest to ``stamp``, or the reason there is none."""
        return nearest_odometry(self._odometry, stamp, self.config.pairing_tolerance)

    # ---- services and diagnostics ----------------------------------------
    def snapshot(self) -> "Snapshot":
        """What the services need (the model, the settings, the latest output), taken in
        microseconds under the node's lock; the services then work on it without the lock,
        so that the inputs never wait on them."""
        return Snapshot(self.model, self.model_error, self.config, self.base_frame, self.latest, self.last_problem)

    def validate_output(self, out: Output | None = None):
        """(report, summary) of the ~/validate service (:meth:`Snapshot.validate_output`); a
        validation of the latest output is recorded for the diagnostics."""
        report, summary = self.snapshot().validate_output(out)
        if out is None and report is not None:
            self.record_validation(summary, report.passed(self.config.validation_tolerance))
        return report, summary

    def record_validation(self, summary: str, passed: bool) -> None:
        """The latest output's validation, shown in the diagnostics (an ERROR while it failed)."""
        self.last_validation = {"summary": summary, "passed": passed}

    def linearize_request(self, request) -> Output | str:
        """The ~/linearize service (:meth:`Snapshot.linearize_request`)."""
        return self.snapshot().linearize_request(request)

    def diagnostics(self, now_ns: int, name: str = "robot_linearization"):
        """[(level, name, message, values)] for diagnostic_msgs/DiagnosticArray."""
        values: dict[str, int | str] = {"outputs": self._counters.outputs}
        values.update({f"rejected_{k}": v for k, v in sorted(self._counters.rejected.items())})
        if self.model is not None:
            values.update(model=self.model.name, joints=self.model.n_joints,
                          contacts=format_contacts(self.contacts) or "none (free-floating)")
        if self.latest is not None:
            values["compute_time_ms"] = f"{self.latest.compute_time * 1e3:.3f}"
            values["input_age_ms"] = f"{(now_ns - self.latest.stamp_ns) * 1e-6:.1f}"
        if len(self._output_times) > 1:
            span = (self._output_times[-1] - self._output_times[0]) * 1e-9
            values["output_rate_hz"] = f"{(len(self._output_times) - 1) / span:.1f}" if span > 0 else "inf"
        if self.last_validation is not None:
            values["last_validation"] = self.last_validation["summary"]
        if self.assumed:
            values["assumed"] = "; ".join(self.assumed)
        if self._counters.impacts:
            values["impacts"] = self._counters.impacts
        if self._counters.time_jumps:
            values["time_jumps_back"] = self._counters.time_jumps
        if self._counters.negative_margins:
            values["outputs_with_negative_margins"] = self._counters.negative_margins
        margins = self.latest.margins if self.latest is not None else None
        if margins is not None:
            lowest = int(np.argmin(margins.margins))
            values["min_contact_margin"] = f"{margins.margins[lowest]:.4g} ({margins.labels[lowest]})"
        if self.margin_problem:
            values["margin_problem"] = self.margin_problem
        values["input_path"] = self.input_path
        if self.input_problem:
            values["input_problem"] = self.input_problem  # (the message too, unless a rejection says more)
        if self.model is None:
            level, message = ERROR, self.model_error
        elif self.latest is None and not self.last_problem and not self.input_problem:
            level, message = WARN, "no linearization yet: waiting for " + (
                "joint_states and odometry" if self.model.floating_base else "joint_states")
        elif self.last_validation is not None and not self.last_validation["passed"]:
            level, message = ERROR, self.last_validation["summary"]
        elif self.contact_problem:  # as long as it lasts, not only until the next output
            level, message = WARN, f"{self.contact_problem}: {FREE_FLOATING_UNTIL_FIT}"
        elif self.last_problem:
            level, message = WARN, self.last_problem
        elif self.input_problem:
            level, message = WARN, self.input_problem
        elif self.latest is not None and now_ns - self.latest.stamp_ns > int(self.config.max_input_age * 1e9):
            level, message = WARN, "no fresh input: last linearization is stale"
        elif margins is not None and margins.margins.min() < 0.0:  # as long as it lasts: the latest output's
            level, message = WARN, "contact forces not possible: " + negative_margins_text(margins)
        elif self.margin_problem:
            level, message = WARN, self.margin_problem
        else:
            level, message = OK, "; ".join(("linearizing",) + self.assumed)
        return [(level, name, message, values)]


@dataclass(frozen=True)
class Snapshot:
    """The pipeline as the services see it (:meth:`LinearizationPipeline.snapshot`): computing on it
    changes nothing of the pipeline, and needs none of its queues."""

    model: AnyModel | None
    model_error: str
    config: PipelineConfig
    base_frame: str
    latest: Output | None
    last_problem: str | None

    def validate_output(self, out: Output | None = None, validator: Callable = validate):
        """(report, summary) of the ~/validate service: rl.validate of ``out`` (default: the latest
        output) against finite differences, inv(CRBA) and the dense KKT solve; report None (and
        the reason) without an output.  Slow (tens of ms): run it outside the node's lock
        (``validator``: rl.validate, or the node's validation process, validation_process.py)."""
        out = self.latest if out is None else out
        if out is None:
            return None, f"no linearization yet: {self.last_problem or 'no input'}"
        report = validator(out.model, out.linearization)  # (out's model: the node may swap models meanwhile)
        tolerance = self.config.validation_tolerance
        summary = (f"{'PASS' if report.passed(tolerance) else 'FAIL'}: largest relative error {report.max_rel:.2e} "
                   f"(tolerance {tolerance:g}) against independent references, at the joint state of "
                   f"{out.stamp_ns * 1e-9:.9f} s")
        return report, summary

    def linearize_request(self, request) -> Output | str:
        """The ~/linearize service: the Output at the state a Linearize (or Validate) request carries
        (interfaces.request_point, request_options), with the node's model and margin settings but
        none of its inputs, queues or held contacts; or the one-line reason naming the field."""
        if self.model is None:
            return self.model_error
        try:
            state, torques = request_point(self.model, request.joint_state, request.odometry, self.base_frame)
            options = request_options(self.model, request)
            contacts, previous, step = options["contacts"], options["previous_contacts"], options["step"]
            start = time.perf_counter()
            lin = jump = None
            if previous and touchdown(previous, contacts):
                lin, jump = touchdown_linearization(self.model, state, torques, contacts, previous,
                                                    options["restitution"], step, self.config.kernel)
            if lin is None:
                lin = linearize(self.model, state if jump is None else jump.state, torques, contacts=contacts,
                                kernel=self.config.kernel, **step)
        except InputError as e:
            return str(e)
        except ContactError as e:
            return f"contacts: {e}"
        except ValueError as e:
            return f"cannot linearize at this state: {e}"
        margins, _ = margins_of(self.model, self.config, lin)
        return Output(stamp_to_ns(request.joint_state.header.stamp), self.model, state, torques, lin,
                      time.perf_counter() - start, margins, jump)


def nearest_odometry(odometries, stamp: int, tolerance: float):
    """(H (4, 4), twist (6,)) of the odometry in ``odometries`` ((stamp [ns], H, twist), stamps increasing)
    nearest to ``stamp`` [ns] (on a tie the older), or the reason there is none within ``tolerance`` [s]:
    how every node of the package pairs a joint state with its base's state."""
    if not odometries:
        return "no odometry received yet"
    # the stamps increase, so |gap| falls then rises from the newest back: stop at the turn
    best = odometries[-1]
    best_gap = abs(best[0] - stamp)
    for item in itertools.islice(reversed(odometries), 1, None):
        item_gap = abs(item[0] - stamp)
        if item_gap > best_gap:
            break
        best, best_gap = item, item_gap
    gap = best_gap * 1e-9
    if gap > tolerance:
        return f"no odometry within {tolerance} s of the joint state (nearest {gap:.3f} s away)"
    return best[1], best[2]


def touchdown_linearization(model: AnyModel, state: State, torques, contacts, previous_contacts, restitution: float,
                            step: dict, kernel: str | None) -> tuple[Linearization | None, Impact | None]:
    """At a touchdown (``contacts`` closes a contact ``previous_contacts`` did not): with a step,
    rl.linearize's own composition (A, B, λ at x⁺, A_d = A_d(x⁺)·A_impact: docs/impacts.md)
    and its impact; without, (None, the impact) for the caller to linearize at x⁺."""
    if step.get("dt"):
        lin = linearize(model, state, torques, contacts=contacts, previous_contacts=previous_contacts,
                        restitution=restitution, kernel=kernel, **step)
        return lin, lin.impact if isinstance(lin.impact, Impact) else None
    return None, impact(model, state, contacts, restitution, kernel=kernel)


def margins_of(model: AnyModel, config: PipelineConfig, lin: Linearization) -> tuple[ContactMargins | None, str | None]:
    """(the contact margins of ``lin``, None) with the node's friction coefficient, cone and soles,
    about the ground normal −g/|g| (docs/contact_margins.md); (None, None) without contacts, and
    (None, why) when they cannot be computed (a 6d contact without sole_size): never an error."""
    if not lin.contacts:
        return None, None
    try:
        return contact_margins(model, lin, friction=config.friction_coefficient, normal=ground_normal(model.gravity),
                               facets=config.friction_facets or None, sole_size=config.sole_size or None), None
    except Exception as e:  # noqa: BLE001 - the margins never cost the cycle its output
        soles = [c.frame for c in lin.contacts if c.kind == "6d"]
        return None, (f"no contact margins: the 6d contacts {soles} need the parameter sole_size "
                      "([length, width] of their soles, m)" if soles and not config.sole_size
                      else f"no contact margins: {e}")


def negative_margins_text(margins: ContactMargins) -> str:
    """What the negative margins mean, contact by contact, for /diagnostics: 'front_left_foot
    pulls (unilateral -3.2 N)', '… slips (friction margin -0.4 N)' (the smallest friction row;
    said only of a contact that does not pull, whose friction margin is then negative too),
    'left_sole_link tips (cop_x+ margin -1.3 N·m)', 'left_sole_link twists (yaw+_0 margin -2.1 N·m)' (a
    moment about the sole's normal that friction at its corners cannot give)."""
    worst: dict = {}  # frame -> {"unilateral" | "friction" | "cop" | "yaw": (margin, label)}
    for label, margin in zip(margins.labels, margins.margins):
        if margin < 0.0:
            frame, _, row = label.rpartition(":")
            kind = next((k for k in ("friction", "cop", "yaw") if row.startswith(k)), "unilateral")
            if kind not in worst.setdefault(frame, {}) or margin < worst[frame][kind][0]:
                worst[frame][kind] = (margin, row)
    parts = []
    for frame, rows in worst.items():
        if "unilateral" in rows:
            parts.append(f"{frame} pulls (unilateral {rows['unilateral'][0]:.3g} N)")
        elif "friction" in rows:
            parts.append(f"{frame} slips (friction margin {rows['friction'][0]:.3g} N)")
        for kind, what in (("cop", "tips"), ("yaw", "twists")):
            if kind in rows and "unilateral" not in rows:
                margin, row = rows[kind]
                parts.append(f"{frame} {what} ({row} margin {margin:.3g} N·m)")
    return "; ".join(parts)
