"""Scheduled gaits for a legged robot: which feet may stand over each instant, the posture, and
how high a swinging foot is lifted.

The schedule is a clock, as a gait scheduler's is: the phases follow each other at fixed
times, whatever the robot does.  The ground decides when a scheduled foot stands: the
simulations (ros/simulation.py, walking/ground.py) close its contact once the foot is on the
ground, with the rigid impact there (docs/impacts.md); a foot the schedule lifts opens it.  The
set held is published as the text of the node's ``contacts`` topic.

Any legged robot gets its gaits from the names of its feet (:meth:`Gait.trot`, :meth:`Gait.pace`,
:meth:`Gait.walk`, :meth:`Gait.stand`); :meth:`Gait.check` says in one line what does not fit a
model.  :data:`TROT` is the bundled quadruped's trot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .arguments import did_you_mean, positive_number, real_array
from .contacts import Contact, as_contacts
from .robots import BUNDLED_FEET

GAITS = ("none", "trot")
"""The gaits the demo offers (``--gait``, the simulated robot's ``gait`` parameter)."""


@dataclass(frozen=True)
class Phase:
    """``duration`` [s]; ``stance``: the feet that may stand (frame names); the others swing."""

    duration: float
    stance: tuple


@dataclass(frozen=True)
class Gait:
    """A periodic schedule of ``phases`` (Phase), called ``name``.

    ``posture``: the joints' standing angles [rad] (or positions [m]) by joint name, a joint it
    does not name standing at 0 (the URDF's zero); ``swing_height`` [m]: a swinging foot of the
    demo's simulation rises from where it lifted off along swing_height·sin(π φ) over the swing
    (φ from 0 to 1), and so comes back down onto the ground with some speed; ``gains`` (kp [1/s²],
    kd [1/s]) of the swinging feet's tracking of that path and ``base_gains`` of the base's
    starting pose (accelerations the demo's whole-body torques aim at), chosen for its explicit
    step up to 10 ms.  (The MPC, walking/mpc.py, plans its own swing height from its settings.)
    ``contact``: how a standing foot is held, "point" (a foot) or "6d" (a sole held flat).
    """

    name: str
    phases: tuple
    posture: dict
    swing_height: float = 0.06
    gains: tuple = (2500.0, 100.0)
    base_gains: tuple = (100.0, 20.0)
    contact: str = "point"

    # ---- the gaits of any legged robot --------------------------------------------------------
    @classmethod
    def trot(cls, feet: Sequence[str], posture: Mapping[str, float] | None = None, *, period: float = 0.7,
             support: float = 0.1, **options) -> Gait:
        """A trot of the four ``feet`` (frame names, in the order front left, front right, hind left,
        hind right): all four stand for ``support`` [s], then the diagonal pair front left + hind
        right while the other pair swings, all four again (the swung pair touches down), then the
        other diagonal; ``period`` [s] a cycle.  ``posture``: the joints' standing angles by name
        (None: the URDF's zero); ``options``: swing_height, gains, base_gains (the demo's; see
        the class, and contact).  ValueError in one line for feet that are not four distinct names, a period or
        support that is not a positive number, or a support that leaves no time to swing."""
        front_left, front_right, hind_left, hind_right = _named_feet(feet, "trot", 4)
        return cls._alternating("trot", (feet, (front_left, hind_right), feet, (front_right, hind_left)),
                                posture, period, support, options)

    @classmethod
    def pace(cls, feet: Sequence[str], posture: Mapping[str, float] | None = None, *, period: float = 0.7,
             support: float = 0.1, **options) -> Gait:
        """A pace: :meth:`trot`'s schedule with the lateral pairs (front left + hind left, then
        front right + hind right) instead of the diagonal ones.  Parameters and errors as
        :meth:`trot`'s.

        ``feet`` (four frame names: front left, front right, hind left, hind right), ``posture``
        ({joint: angle [rad]}), ``period`` [s], ``support`` [s] and ``options`` (Gait's other
        fields) as :meth:`trot` takes them."""
        front_left, front_right, hind_left, hind_right = _named_feet(feet, "pace", 4)
        return cls._alternating("pace", (feet, (front_left, hind_left), feet, (front_right, hind_right)),
                                posture, period, support, options)

    @classmethod
    def walk(cls, feet: Sequence[str], posture: Mapping[str, float] | None = None, *, period: float = 1.2,
             support: float = 0.1, **options) -> Gait:
        """A walk: one foot swings at a time, every foot standing for ``support`` [s] between two
        swings; ``period`` [s] a cycle.  ``feet``: two or more frame names; four are taken as
        front left, front right, hind left, hind right and swing in the order hind left, front
        left, hind right, front right; others swing in the order given (a biped: left, right).
        ``posture``, ``options`` and the errors as :meth:`trot`'s (feet: fewer than two)."""
        feet = _named_feet(feet, "walk", None)
        order = (feet[2], feet[0], feet[3], feet[1]) if len(feet) == 4 else feet
        phases = []
        for foot in order:
            phases += [feet, tuple(f for f in feet if f != foot)]
        return cls._alternating("walk", tuple(phases), posture, period, support, options)

    @classmethod
    def stand(cls, feet: Sequence[str], posture: Mapping[str, float] | None = None, *, period: float = 1.0,
              **options) -> Gait:
        """Every one of ``feet`` stands throughout (one phase of ``period`` [s]).  ``posture``,
        ``options`` and the errors as :meth:`trot`'s (feet: none)."""
        feet = _named_feet(feet, "stand", None, least=1)
        return cls(name="stand", phases=(Phase(positive_number(period, "period", "s"), feet),),
                   posture=_posture(posture), **options)

    @classmethod
    def _alternating(cls, name: str, stances: tuple, posture, period, support, options) -> Gait:
        """Phases alternating ``support`` [s] on every foot with a swing of the rest of each of the
        len(stances)/2 equal parts of ``period``."""
        period, support = positive_number(period, "period", "s"), positive_number(support, "support", "s")
        parts = len(stances) // 2
        # (the durations rounded to the nanosecond: a period of 0.7 s splits into 0.1 and 0.25, not 0.24999…)
        swing = round(period / parts - support, 9)
        if swing <= 0:
            raise ValueError(f"support: {support:g} s on every foot leaves no time to swing in a {name} of "
                             f"period {period:g} s (at most {period / parts:g} s)")
        durations = (support, swing) * parts
        return cls(name=name, phases=tuple(Phase(d, tuple(s)) for d, s in zip(durations, stances)),
                   posture=_posture(posture), **options)

    # ---- the schedule -------------------------------------------------------------------------
    @cached_property
    def period(self) -> float:
        """The cycle's duration [s] (summed once: the phases never change)."""
        return sum(p.duration for p in self.phases)

    @property
    def feet(self) -> tuple:
        """Every foot some phase stands on, in the order they first appear."""
        return tuple(dict.fromkeys(foot for phase in self.phases for foot in phase.stance))

    def phase_at(self, time: float) -> tuple[Phase, float]:
        """The phase held at ``time`` [s] from the gait's start, and how far into it (0 to 1)."""
        t = time % self.period
        for phase in self.phases:
            # a step that lands on a boundary up to rounding belongs to the phase that starts there
            if t < phase.duration - 1e-9:
                return phase, max(t, 0.0) / phase.duration
            t -= phase.duration
        return self.phases[0], 0.0

    @cached_property
    def _phase_bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each phase's start in the cycle [s], its duration [s] and its end less 1 ns [s], each (P,), summed
        once."""
        durations = np.array([p.duration for p in self.phases])
        ends = np.cumsum(durations)
        return ends - durations, durations, ends - 1e-9

    def phases_at(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`phase_at` of each of ``times`` (J,) [s] at once: the index of its phase in ``phases`` (J,),
        int, and how far into it (J,), 0 to 1, by the same rule (a time less than 1 ns short of a boundary
        belongs to the phase that starts there; a time that is not a number: the first phase, at its start, as
        phase_at).  ValueError in one line for ``times`` that are not a 1-D array of real numbers."""
        starts, durations, ends = self._phase_bounds
        with np.errstate(invalid="ignore"):  # (an infinite time: NaN, as phase_at takes it)
            t = real_array(times, "times", (-1,), what="times [s]", finite=False) % self.period
        index = np.searchsorted(ends, t, side="right")
        past = index == len(ends)  # (rounding at the cycle's end: phase_at's first phase, at its start)
        index[past] = 0
        fraction = np.maximum(t - starts[index], 0.0) / durations[index]
        fraction[past] = 0.0
        return index, fraction

    def contacts_at(self, time: float) -> tuple:
        """The Contacts (of the gait's ``contact`` kind) of the feet that may stand at ``time`` [s]."""
        return as_contacts([Contact(foot, self.contact) for foot in self.phase_at(time)[0].stance])

    def contact_sets(self, feet: Sequence[str] | None = None) -> tuple:
        """The distinct sets of feet that stand in the gait's phases, each a tuple of names in the order
        of ``feet`` (None: the gait's own), in the order the phases first meet them."""
        order = self.feet if feet is None else tuple(feet)
        return tuple(dict.fromkeys(tuple(f for f in order if f in phase.stance) for phase in self.phases))

    def swing_duration(self, foot: str) -> float:
        """The longest time [s] ``foot`` swings at a stretch (0 if it never does)."""
        longest, running = 0.0, 0.0
        for phase in self.phases * 2:  # (twice: a swing across the cycle's end)
            running = 0.0 if foot in phase.stance else running + phase.duration
            longest = max(longest, running)
        return min(longest, self.period)

    def joint_posture(self, joint_names) -> np.ndarray:
        """The standing angles of ``joint_names`` (0 for a joint the posture does not name)."""
        return np.array([self.posture.get(name, 0.0) for name in joint_names])

    def check(self, model, feet: Sequence[str] | None = None) -> None:
        """ValueError in one line, naming the thing, if the gait does not fit ``model`` (a floating
        base): a contact kind that is neither "point" nor "6d", a foot of ``feet`` (None: the
        gait's own) or of a phase that is not a frame of the model, a joint of the posture the
        model does not have, or a phase that stands on none of ``feet``."""
        feet = self.feet if feet is None else tuple(feet)
        if self.contact not in ("point", "6d"):
            raise ValueError(f"gait '{self.name}': contact: expected 'point' or '6d', got {self.contact!r}")
        if not model.floating_base:
            raise ValueError(f"gait '{self.name}': model '{model.name}' has a fixed base: it cannot walk")
        for foot in dict.fromkeys(feet + self.feet):
            if not isinstance(foot, str) or foot not in model.frames:
                raise ValueError(f"gait '{self.name}': foot {foot!r} is not a frame of model '{model.name}'"
                                 + (did_you_mean(foot, model.frames) if isinstance(foot, str) else ""))
        for joint in self.posture:
            if joint not in model.joint_names:
                raise ValueError(f"gait '{self.name}': the posture's joint {joint!r} is not a joint of model "
                                 f"'{model.name}'" + did_you_mean(joint, model.joint_names))
        for number, phase in enumerate(self.phases, 1):
            if not set(phase.stance) & set(feet):
                raise ValueError(f"gait '{self.name}': phase {number} ({phase.duration:g} s) lifts every foot: "
                                 "nothing holds the robot there and the MPC has no contact force to plan")


def _named_feet(feet, gait: str, count: int | None, least: int = 2) -> tuple:
    """``feet`` as a tuple of distinct names, ``count`` of them (None: at least ``least``), or a
    ValueError of one line."""
    names = (feet,) if isinstance(feet, str) else tuple(feet) if isinstance(feet, Sequence) else None
    if names is None or not all(isinstance(f, str) and f for f in names):
        raise ValueError(f"feet: expected the frame names of the feet, got {feet!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"feet: {', '.join(names)} names a foot twice")
    if count is not None and len(names) != count:
        raise ValueError(f"feet: a {gait} needs {count} feet (front left, front right, hind left, hind right), "
                         f"got {len(names)}")
    if len(names) < least:
        raise ValueError(f"feet: a {gait} needs at least {least} feet, got {len(names)}")
    return names


def _posture(posture) -> dict:
    """``posture`` ({joint: angle}, None: {}) as a dict of finite floats, or a ValueError of one line."""
    if posture is None:
        return {}
    if not isinstance(posture, Mapping):
        raise ValueError(f"posture: expected the joints' standing angles by name (a dict), "
                         f"got {type(posture).__name__}")
    checked = {}
    for joint, angle in posture.items():
        try:
            checked[joint] = float(angle)
        except (TypeError, ValueError):
            raise ValueError(f"posture: joint {joint!r}: expected a number, got {angle!r}") from None
        if not np.isfinite(checked[joint]):
            raise ValueError(f"posture: joint {joint!r}: expected a finite number, got {angle!r}")
    return checked


TROT = Gait.trot(BUNDLED_FEET, {f"{foot.removesuffix('_foot')}_{joint}": angle for foot in BUNDLED_FEET
                                for joint, angle in (("hip_abduction", 0.0), ("hip_flexion", 0.7), ("knee", -1.4))})
"""Trot in place for the bundled quadruped (rl.robots.BUNDLED_FEET): four feet, then the
diagonal pair front_left + hind_right while the other pair swings (its feet lifted 6 cm),
four feet again (the swung pair touches down: an impact), then the other diagonal; 0.7 s a
cycle, two touchdowns each."""


def gait_for(name: str, model) -> Gait | None:
    """The gait called ``name`` ("none" or "" → None) for ``model``; ValueError in one
    line if it does not exist or the model lacks its feet or joints."""
    if name in ("", "none"):
        return None
    if name != "trot":
        raise ValueError(f"gait {name!r}: expected one of {', '.join(GAITS)}")
    missing = [f for f in BUNDLED_FEET if f not in model.frames] + [
        j for j in TROT.posture if j not in model.joint_names]
    if missing or not model.floating_base:
        why = f"it has no {', '.join(missing[:3])}" if missing else "its base is fixed"
        raise ValueError(f"gait 'trot' is the bundled quadruped's (floating, feet {', '.join(BUNDLED_FEET)}): "
                         f"model '{model.name}' cannot trot ({why})")
    return TROT
