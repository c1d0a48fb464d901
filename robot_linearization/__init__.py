"""robot_linearization: singularity-free geometric linearization of moving-base
robot dynamics (M.P. Bos, TU/e 2019), with a ROS 2 adapter.

    import robot_linearization as rl
    model = rl.load_urdf(path_or_xml, floating_base=True)
    state = rl.State(base_pose=H, joint_positions=s, base_twist=v, joint_velocities=r)
    lin = rl.linearize(model, state, joint_torques=tau)   # lin.A, lin.B, lin.M_inv
    jump = rl.impact(model, state, contacts=["FL_FOOT"])  # a touchdown: jump.state, jump.A, jump.impulses

Conventions: docs/conventions.md.
"""

__version__ = "0.6.0"
"""This release (CHANGELOG.md); setup.py and package.xml carry the same."""

from .algorithms import (
    extended_inverse_dynamics,
    extended_inverse_dynamics_derivatives,
    forward_dynamics,
    inverse_dynamics,
    inverse_mass_matrix,
    mass_matrix,
)
from .algorithms.constrained_dynamics import constrained_forward_dynamics
from .contacts import Contact, ContactError
from .coupling import CoupledModel
from .discretization import discretize
from .integrator import step
from .contact_margins import ContactMargins, contact_margins
from .impacts import Impact, ImpactMap, impact
from .joints import Joint, JointType
from . import robots
from .linearization import Linearization, linearize_trajectory
from .linearizer import Linearizer, linearize
from .builder import ModelBuilder
from .model import Model, ModelError, State
from .urdf import load_urdf
from .validation import ComparisonReport, finite_difference_linearization, state_difference, validate

__all__ = [
    "ComparisonReport",
    "Contact",
    "ContactError",
    "ContactMargins",
    "CoupledModel",
    "Impact",
    "ImpactMap",
    "Joint",
    "JointType",
    "Linearization",
    "Linearizer",
    "Model",
    "ModelBuilder",
    "ModelError",
    "State",
    "constrained_forward_dynamics",
    "contact_margins",
    "discretize",
    "extended_inverse_dynamics",
    "extended_inverse_dynamics_derivatives",
    "finite_difference_linearization",
    "forward_dynamics",
    "impact",
    "inverse_dynamics",
    "inverse_mass_matrix",
    "linearize",
    "linearize_trajectory",
    "load_urdf",
    "mass_matrix",
    "robots",
    "state_difference",
    "step",
    "validate",
]
