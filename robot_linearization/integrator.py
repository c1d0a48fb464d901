"""One semi-implicit Euler step on SE(3)×ℝⁿ×ℝ⁶×ℝⁿ: what :func:`step` (``rl.step``) does, and
what the step Jacobians A_d, B_d of discretization.py differentiate (docs/discretization.md).

    ν⁺ = ν + dt·ν̇(x, τ),   H⁺ = H·exp(dt·v⁺^),   s⁺ = s + dt·r⁺

with ν̇ from the forward dynamics (with contacts or mimic couplings: the constrained ones), and,
at a touchdown, the rigid impact first (docs/impacts.md).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .algorithms.constrained_dynamics import (ContactArrays, bias_motion, constrained_forward_dynamics,
                                              contact_kinematics, contact_set)
from .algorithms.inverse_mass_matrix import inverse_mass_matrix
from .algorithms.kinematics import body_transforms
from .algorithms.forward_dynamics import forward_dynamics
from .arguments import joint_vector, positive_number
from .contacts import Contacts
from .coupling import AnyModel, CoupledModel, tree_of
from .impacts import impact, restitution_coefficient, touchdown
from .model import State, check_state, floating_base_of
from .spatial import se3_exp


def step(model: AnyModel, state: State, joint_torques: ArrayLike | None, dt: float,
         contacts: Contacts | ContactArrays = (), *, previous_contacts: Contacts | ContactArrays = None,
         restitution: float = 0.0) -> State:
    """The state after one semi-implicit Euler step of ``dt`` [s] (module docstring) with
    ``contacts`` held over it.

    previous_contacts: the set held over the step before.  If ``contacts`` closes one that
    was not in it (a touchdown, :func:`~robot_linearization.impacts.touchdown`), the step
    starts with the rigid impact of ``state`` on ``contacts`` (:func:`~robot_linearization.impact`,
    restitution e ∈ [0, 1]) and integrates from the post-impact state; docs/impacts.md.
    None (the default): no impact.

    ``model``: a Model; ``state``: its State; ``joint_torques`` τ (n,); ``contacts``: the set held
    over the step (names or Contact objects).  Each set is read once, here
    (constrained_dynamics.contact_set, which takes its own result as is).
    """
    check_state(model, state)
    torques = joint_vector(model, joint_torques, "joint_torques")
    dt = positive_number(dt, "dt", "seconds")
    e = restitution_coefficient(restitution)
    held = contact_set(model, contacts)
    if previous_contacts is not None and touchdown(contact_set(model, previous_contacts), held):
        state = impact(model, state, held, e).state  # (the step integrates from the post-impact state)
    if held.contacts or isinstance(model, CoupledModel):
        nu_dot = constrained_forward_dynamics(model, state, torques, held)[0]
    else:
        base, joints = forward_dynamics(model, state, torques)
        nu_dot = joints if base is None else np.concatenate([base, joints])
    off = 6 if model.floating_base else 0
    r = state.joint_velocities + dt * nu_dot[off:]
    s = state.joint_positions + dt * r
    if not model.floating_base:
        return State(joint_positions=s, joint_velocities=r)
    pose, twist = floating_base_of(state)
    v = twist + dt * nu_dot[:6]
    return State(base_pose=pose @ se3_exp(dt * v), joint_positions=s, base_twist=v, joint_velocities=r)


def contact_rows(rows: ArrayLike, m: int) -> NDArray[np.int64]:
    """``rows`` as indices (k,) of m contact rows, each in [0, m) and once (ValueError naming it)."""
    index = np.asarray(rows) if not isinstance(rows, (str, bytes)) else np.array([rows])
    if index.ndim != 1 or (index.size and index.dtype.kind not in "iu") or index.dtype.kind == "b":
        raise ValueError(f"rows: expected indices of the contacts' rows (integers 0 to {m - 1}), got {rows!r}")
    if index.size and not (0 <= index.min() and index.max() < m) or len(set(index.tolist())) != index.size:
        raise ValueError(f"rows: expected distinct indices of the contacts' {m} rows (0 to {m - 1}), got "
                         f"{index.tolist()}")
    return index.astype(np.int64)


def contact_velocities_zeroed(model: AnyModel, state: State, contacts: Contacts, rows: ArrayLike | None = None
                              ) -> State:
    """``state`` with its velocity ν projected, in the metric of M, onto zero contact velocity
    J ν = 0 (contacts as for :func:`step`; ``rows``: only those rows of J, e.g. a sliding foot's
    normal one): what a simulation does after each explicit step so
    that its drift off the constraint does not build up.  The linearized model has no such
    correction; a CoupledModel's projection is taken in its tree and read back."""
    tree = tree_of(model)
    full = model.tree_state(state) if isinstance(model, CoupledModel) else state
    X_up = body_transforms(tree, full.joint_positions)
    v, _ = bias_motion(tree, full, X_up)
    J, _ = contact_kinematics(model, full, contacts, X_up, v, v)
    if rows is not None:
        J = J[contact_rows(rows, J.shape[0])]
    M_inv = inverse_mass_matrix(tree, full.joint_positions)
    nu = full.joint_velocities if not tree.floating_base else np.concatenate([full.base_twist, full.joint_velocities])
    nu = nu - M_inv @ J.T @ np.linalg.lstsq(J @ M_inv @ J.T, J @ nu, rcond=None)[0]
    if isinstance(model, CoupledModel):  # back to the independent joints
        nu = nu[model.velocity_rows]
    if not model.floating_base:
        return State(joint_positions=state.joint_positions, joint_velocities=nu)
    return State(base_pose=state.base_pose, joint_positions=state.joint_positions, base_twist=nu[:6],
                 joint_velocities=nu[6:])
