"""The size of a legged robot, and the MPC's settings made absolute with it.

The MPC's weights, forces and swing height (walking/mpc.py, MPCSettings) are given without
units, in the robot's own: the mass m, the leg length ℓ (the base's height above its feet,
standing) and the rotational inertia I about the centre of mass, with the gravity g.  The cost
is read as an energy in units of m g ℓ: a base position error e [m] costs like a spring of
stiffness m g / ℓ, ½ ŵ (e / ℓ)²; a base velocity v [m/s] (and a foot's sliding as it lands or
lifts) like the kinetic energy ½ ŵ v² / (g ℓ); an angular rate ω [rad/s] about an axis of inertia
I_a like ½ ŵ I_a ω² / (m g ℓ); a joint torque τ [N m] as ½ ŵ (τ / (m g ℓ))², a joint velocity ṡ as
½ ŵ ṡ² ℓ / g, angles (a swinging sole's tilt and heading too) as they are [rad].
Forces are in units of the weight m g, heights of ℓ, Raibert's gain of √(ℓ / g).  So robots of
one shape but any size walk under one default (a geometrically and dynamically similar robot —
a Froude-scaled one — gets the same plan, scaled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..algorithms.kinematics import frame_poses
from ..algorithms.mass_matrix import mass_matrix
from ..arguments import positive_number, real_array
from ..model import Model, State

WEIGHTS = ("base_xy", "base_z", "roll_pitch", "yaw", "velocity_xy", "velocity_z", "rate_xy", "yaw_rate", "posture",
           "joint_velocity", "foot_height", "foot_xy", "landing_sliding", "lifting_sliding", "torque", "sole",
           "terminal")
"""The MPC's residual weights, by name (MPCSettings.weights)."""


@dataclass(frozen=True)
class RobotScale:
    """A legged robot's size: ``mass`` [kg], ``leg_length`` [m] (its base's height above the feet,
    standing), ``inertia`` (3,) [kg m²] (the principal moments about roll, pitch and yaw: the
    diagonal of the whole robot's rotational inertia about its centre of mass, in the base's
    axes, standing) and ``gravity`` [m/s²] (its magnitude).  ValueError in one line, naming the
    field, for a value that is not positive and finite."""

    mass: float
    leg_length: float
    inertia: tuple
    gravity: float = 9.81

    def __post_init__(self):
        object.__setattr__(self, "mass", positive_number(self.mass, "mass", "kg"))
        object.__setattr__(self, "leg_length", positive_number(self.leg_length, "leg_length", "m"))
        object.__setattr__(self, "gravity", positive_number(self.gravity, "gravity", "m/s²"))
        inertia = real_array(self.inertia, "inertia", (3,), what="three positive moments of inertia [kg m²]")
        if not (inertia > 0).all():
            raise ValueError(f"inertia: expected three positive moments of inertia [kg m²], got {inertia.tolist()}")
        object.__setattr__(self, "inertia", tuple(float(i) for i in inertia))

    @classmethod
    def of(cls, model: Model, posture: np.ndarray, feet) -> RobotScale:
        """The scale of ``model`` standing level in ``posture`` (n,) [rad] on ``feet`` (frame
        names): its mass, the base's height above the feet's mean, its inertia about its centre of
        mass, the magnitude of its gravity.  ValueError in one line when its feet are not below
        its base there (a posture that does not stand)."""
        state = State(base_pose=np.eye(4), joint_positions=posture, base_twist=np.zeros(6),
                      joint_velocities=np.zeros(model.n_joints))
        height = -float(frame_poses(model, state, list(feet))[:, 2, 3].mean())
        if not height > 0:
            raise ValueError(f"posture: model '{model.name}''s feet {', '.join(feet)} are not below its base there "
                             f"(at {-height:+.3f} m): give a standing posture")
        M = mass_matrix(model, posture)[:6, :6]  # the composite inertia at the base, [linear; angular]
        mass = M[0, 0]
        cross = M[3:6, 0:3] / mass  # [c]× of the centre of mass c in the base
        inertia = M[3:6, 3:6] - mass * cross @ cross.T  # about the centre of mass
        return cls(mass, height, tuple(np.diag(inertia)), float(np.linalg.norm(model.gravity)))

    @property
    def weight(self) -> float:
        """m g [N]."""
        return self.mass * self.gravity

    @property
    def time(self) -> float:
        """√(ℓ / g) [s]."""
        return math.sqrt(self.leg_length / self.gravity)

    def weights(self, dimensionless: dict) -> dict:
        """The weights (1/σ² in the residuals' own units) of the ``dimensionless`` ones (by the names
        of :data:`WEIGHTS`).  ValueError in one line for a missing or unknown name or a weight that
        is negative or not finite."""
        unknown = [name for name in dimensionless if name not in WEIGHTS]
        missing = [name for name in WEIGHTS if name not in dimensionless]
        if unknown or missing:
            raise ValueError(f"weights: {'unknown ' + repr(unknown[0]) if unknown else 'no ' + repr(missing[0])}: "
                             f"expected {', '.join(WEIGHTS)}")
        for name, value in dimensionless.items():
            number = real_array(value, f"weights[{name!r}]", (), what="a non-negative number")
            if number < 0:
                raise ValueError(f"weights[{name!r}]: expected a non-negative number, got {value!r}")
        w, length, g = dimensionless, self.leg_length, self.gravity
        energy = self.weight * length
        roll_pitch_inertia, yaw_inertia = 0.5 * (self.inertia[0] + self.inertia[1]), self.inertia[2]
        return {
            "base_xy": w["base_xy"] / length ** 2, "base_z": w["base_z"] / length ** 2,
            "roll_pitch": w["roll_pitch"], "yaw": w["yaw"],
            "velocity_xy": w["velocity_xy"] / (g * length), "velocity_z": w["velocity_z"] / (g * length),
            "rate_xy": w["rate_xy"] * roll_pitch_inertia / energy, "yaw_rate": w["yaw_rate"] * yaw_inertia / energy,
            "posture": w["posture"], "joint_velocity": w["joint_velocity"] * length / g,
            "foot_height": w["foot_height"] / length ** 2, "foot_xy": w["foot_xy"] / length ** 2,
            "landing_sliding": w["landing_sliding"] / (g * length),
            "lifting_sliding": w["lifting_sliding"] / (g * length),
            "torque": w["torque"] / energy ** 2, "sole": w["sole"], "terminal": w["terminal"]}
