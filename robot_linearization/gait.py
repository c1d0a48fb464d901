"""A scheduled gait for the demo's simulated robot: which feet the ground holds over each
instant, and where the joints are asked to be (the swinging legs lifted and put back).

The schedule is a clock, not a decision: the phases follow each other at fixed times, as
a gait scheduler's would, whatever the robot does.  There is no ground model: a foot
that closes its contact is held where it is at that instant (the simulation applies the
rigid impact there, docs/impacts.md), and one that opens it is free.  The set held is
published as the text of the node's ``contacts`` topic (:meth:`Gait.contacts_text`).
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
    """duration [s]; stance: the feet held (link names); swing: the legs lifted (their joints' prefix)."""

    duration: float
    stance: tuple
    swing: tuple = ()


@dataclass(frozen=True)
class Gait:
    """A periodic schedule of phases.  posture: the joints' standing angles by name;
    lift: the angle added to a swinging leg's joint at mid-swing, by the joint name's
    suffix (after the leg's prefix), along sin(π φ) over the swing (φ from 0 to 1), so
    the foot leaves and comes back with some speed; gains (kp [1/s²], kd [1/s]) of the
    swinging joints' PD tracking and base_gains of the base's starting pose (accelerations
    the simulation's whole-body torques aim at), chosen for its explicit step up to 10 ms."""

    name: str
    phases: tuple
    posture: dict
    lift: dict
    gains: tuple = (400.0, 40.0)
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

    def contacts_text(self, time: float) -> str:
        """The set held at ``time`` as the node's ``contacts`` topic reads it."""
        return ", ".join(self.phase_at(time)[0].stance)

    def joint_targets(self, joint_names, time: float) -> tuple[np.ndarray, np.ndarray]:
        """(angles, angular velocities) the joints are asked to follow at ``time``."""
        phase, fraction = self.phase_at(time)
        angles = np.array([self.posture.get(name, 0.0) for name in joint_names])
        rates = np.zeros(len(joint_names))
        for i, name in enumerate(joint_names):
            for leg in phase.swing:
                offset = self.lift.get(name[len(leg) + 1:], 0.0) if name.startswith(leg + "_") else 0.0
                angles[i] += offset * np.sin(np.pi * fraction)
                rates[i] += offset * np.pi / phase.duration * np.cos(np.pi * fraction)
        return angles, rates


    def swinging(self, joint_names, time: float) -> np.ndarray:
        """Whether each joint belongs to a leg swinging at ``time`` (bool array)."""
        swing = self.phase_at(time)[0].swing
        return np.array([any(name.startswith(leg + "_") for leg in swing) for name in joint_names], dtype=bool)


_LEGS = tuple(foot.removesuffix("_foot") for foot in BUNDLED_FEET)  # front_left, front_right, hind_left, hind_right
_PAIR_A, _PAIR_B = ("front_left", "hind_right"), ("front_right", "hind_left")

TROT = Gait(
    name="trot",
    phases=(Phase(0.1, BUNDLED_FEET),
            Phase(0.25, tuple(f"{leg}_foot" for leg in _PAIR_A), _PAIR_B),
            Phase(0.1, BUNDLED_FEET),
            Phase(0.25, tuple(f"{leg}_foot" for leg in _PAIR_B), _PAIR_A)),
    posture={f"{leg}_{joint}": angle for leg in _LEGS
             for joint, angle in (("hip_abduction", 0.0), ("hip_flexion", 0.7), ("knee", -1.4))},
    lift={"hip_flexion": 0.2, "knee": -0.4})
"""Trot in place for the bundled quadruped (rl.robots.BUNDLED_FEET): four feet, then the
diagonal pair front_left + hind_right while the other pair swings (hip and knee bent
further, about 6 cm of foot lift), four feet again (the swung pair touches down: an
impact), then the other diagonal; 0.7 s a cycle, two touchdowns each."""


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
