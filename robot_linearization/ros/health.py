"""The health vector: a few numbers per linearization for rqt_plot and PlotJuggler (rclpy-free).

The node publishes it on ``~/health`` (std_msgs/Float64MultiArray) at heatmap_rate_hz,
beside the heatmaps and never in the linearization cycle, and names its entries on
the latched ``~/health_labels``; the bag replay writes both.  Entries, in this order
(README, topic table):

  [0] compute_time_ms       ms   wall time of the cycle's computation (Output.compute_time: linearize,
                                 and the contact margins and a touchdown's impact when there are)
  [1] spectral_abscissa_A   1/s  max Re λ(A): > 0 means a mode of the linearized dynamics
                                 grows (a robot tipping over, a leg giving way)
  [2] cond_M                –    2-norm condition number of the mass matrix M, σ_max/σ_min of
                                 M⁻¹ (the same number); capped at 1/ε ≈ 4.5e15
  [3] spectral_radius_A_d   –    max |λ(A_d)|, only with discretization_dt > 0 (> 1: the
                                 linearized step grows)
  then, only while contacts are active (after spectral_radius_A_d when it is there):
      min_normal_force      N    smallest normal force f_n = n·f over the set's contacts
      max_tangential_ratio  –    largest ‖f_t‖/f_n over the contacts with f_n > 0: the
                                 friction coefficient the set needs; 0 when no contact
                                 has f_n > 0 (then min_normal_force ≤ 0 says the set pulls)

f is the force part of λ (the first 3 entries of a 6d contact's wrench [force; moment]),
the force of the ground ON THE ROBOT (docs/contacts.md), taken to world axes (a "local"
contact's λ is in its frame's axes: rotated by the frame's world orientation A_R_c at
the state); n = −g/|g| is the ground normal for the model's gravity g (world +z when g
is zero), f_t = f − f_n n.  Every entry is finite: the layout depends only on the node's
discretization_dt and on whether contacts are active, so index [k] of a field path stays
the same entry while the node runs (the contact entries come and go at the end).
"""

from __future__ import annotations

import numpy as np

from ..algorithms.kinematics import body_transforms, frame_poses
from ..coupling import tree_of

COND_CAP = 1.0 / np.finfo(float).eps
"""cond_M beyond this is numerically singular: published as this value (≈ 4.5e15), never inf."""

LABELS = ("compute_time_ms", "spectral_abscissa_A", "cond_M")
STEP_LABELS = ("spectral_radius_A_d",)
CONTACT_LABELS = ("min_normal_force", "max_tangential_ratio")


def health_labels(discretized: bool, contacts: bool) -> tuple[str, ...]:
    """The names of the health vector's entries, in order, for a node with A_d (discretized)
    and active contacts or not."""
    return LABELS + (STEP_LABELS if discretized else ()) + (CONTACT_LABELS if contacts else ())


def ground_normal(gravity) -> np.ndarray:
    """n = −g/|g| (3,), world axes; world +z for a zero gravity."""
    g = np.asarray(gravity, dtype=float)
    norm = float(np.linalg.norm(g))
    return -g / norm if norm > 0.0 else np.array([0.0, 0.0, 1.0])


def frame_rotation_in_world(model, state, frame: str, X_up: np.ndarray | None = None) -> np.ndarray:
    """A_R_c (3, 3): the orientation of the link or frame ``frame`` in the world at ``state``
    (:func:`~robot_linearization.algorithms.kinematics.frame_poses`'s rotation)."""
    return frame_poses(model, state, [frame], X_up)[0, :3, :3]


def contact_force_components(model, state, linearization) -> tuple[np.ndarray, np.ndarray]:
    """(f_n (k,), ‖f_t‖ (k,)) of the k active contacts of ``linearization``: the normal force
    along n = −g/|g| of ``model``'s gravity and the size of the tangential force, from the
    force part of λ (on the robot) in world axes, as the module docstring says."""
    contacts = linearization.contacts
    normal = ground_normal(model.gravity)
    forces = np.asarray(linearization.contact_forces, dtype=float)
    tree = tree_of(model)
    X_up = None
    f_n, f_t = np.empty(len(contacts)), np.empty(len(contacts))
    start = 0
    for k, contact in enumerate(contacts):
        force = forces[start:start + 3]  # (a 6d wrench is [force; moment])
        if contact.reference == "local":
            if X_up is None:
                full = model.tree_state(state) if tree is not model else state
                X_up = body_transforms(tree, full.joint_positions)
            force = frame_rotation_in_world(model, state, contact.frame, X_up) @ force
        f_n[k] = normal @ force
        f_t[k] = np.linalg.norm(force - f_n[k] * normal)
        start += contact.dimension
    return f_n, f_t


def health(output) -> tuple[tuple[str, ...], np.ndarray]:
    """(labels, values (k,)) of one pipeline Output (:class:`~robot_linearization.ros.pipeline.Output`).
    Costs a few ms for a humanoid (the eigenvalues of A, 2N × 2N): the node computes it
    at heatmap_rate_hz, once per new Output, on its executor."""
    lin = output.linearization
    values = [output.compute_time * 1e3, float(np.max(np.linalg.eigvals(lin.A).real))]
    singular = np.linalg.svd(lin.M_inv, compute_uv=False)  # (M is SPD: M⁻¹'s σ are 1/σ of M)
    values.append(float(singular[0] / singular[-1]) if singular[-1] * COND_CAP > singular[0] else COND_CAP)
    if lin.A_d is not None:
        values.append(float(np.max(np.abs(np.linalg.eigvals(lin.A_d)))))
    if lin.contacts:
        f_n, f_t = contact_force_components(output.model, output.state, lin)
        pushing = f_n > 0.0
        with np.errstate(over="ignore"):  # (an f_n of 1e-310: below)
            ratios = f_t[pushing] / f_n[pushing]
        values += [float(f_n.min()), float(ratios.max()) if ratios.size else 0.0]
    # finite by construction for finite inputs (linearize refuses NaN/inf); a ratio over an f_n of
    # 1e-310 (subnormal) would be inf: the largest double instead, so no published entry is ever inf
    finite = np.nan_to_num(np.array(values), nan=0.0, posinf=np.finfo(float).max, neginf=-np.finfo(float).max)
    return health_labels(lin.A_d is not None, bool(lin.contacts)), finite
