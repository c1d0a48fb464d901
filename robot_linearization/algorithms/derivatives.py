"""Derivatives of the extended inverse dynamics (thesis §4.2, Tables 4.2–4.5).

One forward-mode sweep differentiates the EIDAmb (Table 4.1) line by line with
respect to all four state variables at once: every per-body quantity x_i
carries its derivative ∂x_i (6, m) with the m columns ordered as the state
perturbation [z_H (6) | z_s (n) | z_v (6) | z_r (n)] (fixed base: [z_s | z_r],
where the sweep reduces to the fixed-base RNEA derivatives of Tables E.8–E.9).

Deviation from Table 4.2 (consistency fix): Table 4.2 holds the inertial-frame
twist ᴬv_A,0 fixed when perturbing H, but the state of Proposition 3.1 carries
the body twist v = ⁰v_A,0.  Holding v fixed, H enters the EIDAmb only through
gravity, a_0 = v̇ − [R^T g; 0]; with R → R exp(ω^), ∂(R^T g)/∂ω = (R^T g)^, so
the H-derivative is the propagation of ∂a_0/∂z_H = [[0, −(R^T g)^], [0, 0]].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import Model, State
from ..spatial import cross_force, cross_force_operand, cross_motion, skew
from .inverse_dynamics import newton_euler_forward
from .kinematics import base_gravity, body_transforms


@dataclass(frozen=True)
class ExtendedInverseDynamicsDerivatives:
    """Left-trivialised derivatives of ID̄ = [τ̄_b; τ] (N rows), one block per
    state variable (absent blocks are None for a fixed base):

    base_pose (N, 6): D₁ID̄ ∘ DL_H(I), columns [translation; rotation] of z_H (Table 4.2)
    joint_positions (N, n): D₂ID̄ (Table 4.3)
    base_twist (N, 6): D₃ID̄ (Table 4.4)
    joint_velocities (N, n): D₄ID̄ (Table 4.5)
    """

    base_pose: np.ndarray | None
    joint_positions: np.ndarray
    base_twist: np.ndarray | None
    joint_velocities: np.ndarray

    def stacked(self) -> np.ndarray:
        """[D₁ | D₂ | D₃ | D₄] (N, 2N), columns in the state order of A."""
        blocks = [self.base_pose, self.joint_positions, self.base_twist, self.joint_velocities]
        return np.hstack([b for b in blocks if b is not None])


def extended_inverse_dynamics_derivatives(model: Model, state: State, base_acceleration, joint_accelerations
                                          ) -> ExtendedInverseDynamicsDerivatives:
    """Derivatives of the EIDAmb (floating base) or RNEA (fixed base) at
    (state, v̇, ṙ); ``base_acceleration`` is ignored (pass None) for a fixed base."""
    state.check(model)
    X_up = body_transforms(model, state.joint_positions)
    return derivatives_at(model, X_up, state, base_acceleration, np.asarray(joint_accelerations, dtype=float))


def derivatives_at(model: Model, X_up: np.ndarray, state: State, base_acceleration, joint_accelerations
                   ) -> ExtendedInverseDynamicsDerivatives:
    """:func:`extended_inverse_dynamics_derivatives` with the body transforms given."""
    n, n_bodies = model.n_joints, model.n_bodies
    S, I = model.motion_subspaces, model.inertias
    floating = model.floating_base
    # Column offsets of the four state blocks.
    col_s, col_v, col_r = (6, 6 + n, 12 + n) if floating else (0, None, n)
    m = 2 * model.n_velocities
    g0 = base_gravity(model, state)
    a0 = (np.asarray(base_acceleration, dtype=float) if floating else 0.0) - g0
    v, a, f = newton_euler_forward(model, X_up, state, a0, joint_accelerations)
    r = state.joint_velocities

    dv = np.zeros((n_bodies, 6, m))
    da = np.zeros((n_bodies, 6, m))
    if floating:
        dv[0][:, col_v:col_v + 6] = np.eye(6)  # Table 4.4 line 1
        da[0][:3, 3:6] = -skew(g0[:3])  # gravity seen from a rotated base
    for i in range(1, n_bodies):
        p, k = model.parent[i], i - 1
        X = X_up[i]
        v_joint = S[i] * r[k]
        # line 17: v_i = X v_λ + Γ r_i;  ∂(X v_λ)/∂s_i = −Γ×(X v_λ) = v_i × Γ
        dv[i] = X @ dv[p]
        dv[i][:, col_s + k] += cross_motion(v[i]) @ S[i]
        dv[i][:, col_r + k] += S[i]
        # line 18: a_i = X a_λ + Γ ṙ_i + v_i × v_Ji
        Xa = X @ a[p]
        da[i] = X @ da[p] - cross_motion(v_joint) @ dv[i]
        da[i][:, col_s + k] += cross_motion(Xa) @ S[i]
        da[i][:, col_r + k] += cross_motion(v[i]) @ S[i]
    # line 22: f_i = M_i a_i + v_i ×̄* M_i v_i
    df = np.einsum("bij,bjk->bik", I, da)
    for i in range(n_bodies):
        df[i] += (cross_force(v[i]) @ I[i] + cross_force_operand(I[i] @ v[i])) @ dv[i]
    # line 27: f_λ += λ_X^i f_i;  ∂(λ_X^i)/∂s_i f_i = λ_X^i (Γ ×̄* f_i)
    for i in range(n_bodies - 1, 0, -1):
        p, k = model.parent[i], i - 1
        XT = X_up[i].T
        df[p] += XT @ df[i]
        df[p][:, col_s + k] += XT @ (cross_force(S[i]) @ f[i])
        f[p] += XT @ f[i]
    # line 32 (τ_i = Γ^T f_i) and line 41 (τ̄_b = f_0)
    joint_rows = np.einsum("bi,bik->bk", S[1:], df[1:])
    D = np.vstack([df[0], joint_rows]) if floating else joint_rows
    if not floating:
        return ExtendedInverseDynamicsDerivatives(None, D[:, col_s:col_s + n], None, D[:, col_r:col_r + n])
    return ExtendedInverseDynamicsDerivatives(
        base_pose=D[:, 0:6],
        joint_positions=D[:, col_s:col_s + n],
        base_twist=D[:, col_v:col_v + 6],
        joint_velocities=D[:, col_r:col_r + n],
    )
