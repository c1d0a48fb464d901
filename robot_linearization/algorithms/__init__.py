"""Recursive rigid-body algorithms in the Eindhoven-Genoa notation (thesis ch. 4, app. E).

Each algorithm is a compiled kernel over plain arrays (``*_into``) plus a
function taking a :class:`~robot_linearization.model.Model`.  Shapes: n joints,
n+1 bodies (0 = base), N = model.n_velocities generalised velocities ordered
[v (6, floating base only); r (n)].
"""

from .derivatives import ExtendedInverseDynamicsDerivatives, extended_inverse_dynamics_derivatives
from .forward_dynamics import forward_dynamics
from .inverse_dynamics import extended_inverse_dynamics, inverse_dynamics
from .inverse_mass_matrix import inverse_mass_matrix
from .kinematics import body_transforms
from .mass_matrix import mass_matrix

__all__ = [
    "ExtendedInverseDynamicsDerivatives",
    "body_transforms",
    "extended_inverse_dynamics",
    "extended_inverse_dynamics_derivatives",
    "forward_dynamics",
    "inverse_dynamics",
    "inverse_mass_matrix",
    "mass_matrix",
]
