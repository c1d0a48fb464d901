"""The geometric linearization ż = A z + B w (thesis Propositions 3.1–3.3).

State perturbation z = [z_H (6), z_s (n), z_v (6), z_r (n)] about (H, s, v, r),
left-trivialised: H → H·exp(z_H^), s → s + z_s, v → v + z_v, r → r + z_r, with
z_H = [translation; rotation] in the base frame.  Input perturbation w = δτ.
For a fixed base, z = [z_s, z_r].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .algorithms.derivatives import derivatives_at
from .algorithms.forward_dynamics import forward_dynamics_at
from .algorithms.inverse_mass_matrix import inverse_mass_matrix_at
from .algorithms.kinematics import body_transforms
from .model import Model, State
from .spatial import cross_motion


@dataclass(frozen=True)
class Linearization:
    """A (2N, 2N), B (2N, n), M_inv (N, N) at one state and input; N = n_velocities.

    base_acceleration v̇ (6,) or None and joint_accelerations ṙ (n,) are the
    forward dynamics at (state, τ), where the derivatives were evaluated.
    state_labels names the rows/columns of A (and rows of B), see Model.state_labels.
    """

    A: np.ndarray
    B: np.ndarray
    M_inv: np.ndarray
    base_acceleration: np.ndarray | None
    joint_accelerations: np.ndarray
    state_labels: list[str]


def linearize(model: Model, state: State, joint_torques=None) -> Linearization:
    """Left-trivialised linearization of the forward dynamics at (state, τ).

    joint_torques τ (n,), default zeros.  A is (3.42) with the dynamics rows
    −M⁻¹[D₁ID̄, D₂ID̄, D₃ID̄, D₄ID̄] (Proposition 3.3) evaluated at the ABAmb
    accelerations; B = [0; M⁻¹S] (3.29); M⁻¹ by the IMMAmb (Table 4.7).
    Fixed base: A = [[0, I], [∂ṙ/∂s, ∂ṙ/∂r]], B = [0; M⁻¹].
    """
    state.check(model)
    n, N = model.n_joints, model.n_velocities
    torques = np.zeros(n) if joint_torques is None else np.asarray(joint_torques, dtype=float).reshape(-1)
    if torques.shape != (n,) or not np.all(np.isfinite(torques)):
        raise ValueError(f"joint_torques must be a finite vector of length {n}")
    X_up = body_transforms(model, state.joint_positions)
    base_acceleration, joint_accelerations = forward_dynamics_at(model, X_up, state, torques)
    derivatives = derivatives_at(model, X_up, state, base_acceleration, joint_accelerations)
    M_inv = inverse_mass_matrix_at(model, X_up)
    A = np.zeros((2 * N, 2 * N))
    A[:N, N:] = np.eye(N)  # ż_H = … + z_v (3.20), ż_s = z_r
    if model.floating_base:
        A[:6, :6] = -cross_motion(state.base_twist)  # −ad_v: the left-trivialised kinematics
    A[N:] = -M_inv @ derivatives.stacked()
    B = np.zeros((2 * N, n))
    B[N:] = M_inv[:, N - n:]
    return Linearization(A=A, B=B, M_inv=M_inv, base_acceleration=base_acceleration,
                         joint_accelerations=joint_accelerations, state_labels=model.state_labels())
