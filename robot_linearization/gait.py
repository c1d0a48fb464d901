"""A scheduled gait for the demo's simulated robot: which feet may stand over each instant,
the posture, and how high a swinging foot is lifted.

The schedule is a clock, as a gait scheduler's is: the phases follow each other at fixed
times, whatever the robot does.  The ground decides when a scheduled foot stands: the
simulation (ros/simulation.py) closes its contact once the foot is on the ground, with the
rigid impact there (docs/impacts.md); a foot the schedule lifts opens it.  The set held is
published as the text of the node's ``contacts`` topic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .contacts import as_contacts
from .robots import BUNDLED_FEET

GAITS = ("none", "trot")
"""The gaits the demo offers (``--gait``, the simulated robot's ``gait`` parameter)."""


@dataclass(frozen=True)
class Phase:
    """duration [s]; stance: the feet that may stand (link names); the others swing."""

    duration: float
    stance: tuple


@dataclass(frozen=True)
class Gait:
    """A periodic schedule of phases.  posture: the joints' standing angles by name;
    swing_height [m]: a swinging foot rises from where it lifted off along swing_height·sin(π φ)
    over the swing (φ from 0 to 1), and so comes back down onto the ground with some speed;
    gains (kp [1/s²], kd [1/s]) of the swinging feet's tracking of that path and base_gains of
    the base's starting pose (accelerations the simulation's whole-body torques aim at), chosen
    for its explicit step up to 10 ms."""

    name: str
    phases: tuple
    posture: dict
    swing_height: float = 0.06
    gains: tuple = (2500.0, 100.0)
    base_gains: tuple = (100.0, 20.0)

    @property
    def period(self) -> float:
        return sum(p.duration for p in self.phases)

    def phase_at(self, time: float) -> tuple[Phase, float]:
        """The phase held at ``time`` [s] from the gait's start, and how far into it (0 to 1)."""
        t = time % self.period
        for phase in self.phases:
            # a step that lands on a boundary up to rounding belongs to the phase that starts there
            if t < phase.duration - 1e-9:
                return phase, max(t, 0.0) / phase.duration
            t -= phase.duration
        return self.phases[0], 0.0

    def contacts_at(self, time: float) -> tuple:
        return as_contacts(list(self.phase_at(time)[0].stance))

    def joint_posture(self, joint_names) -> np.ndarray:
        """The standing angles of ``joint_names`` (0 for a joint the posture does not name)."""
        return np.array([self.posture.get(name, 0.0) for name in joint_names])


_LEGS = tuple(foot.removesuffix("_foot") for foot in BUNDLED_FEET)  # front_left, front_right, hind_left, hind_right
_PAIR_A, _PAIR_B = ("front_left", "hind_right"), ("front_right", "hind_left")

TROT = Gait(
    name="trot",
    phases=(Phase(0.1, BUNDLED_FEET),
            Phase(0.25, tuple(f"{leg}_foot" for leg in _PAIR_A)),
            Phase(0.1, BUNDLED_FEET),
            Phase(0.25, tuple(f"{leg}_foot" for leg in _PAIR_B))),
    posture={f"{leg}_{joint}": angle for leg in _LEGS
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
