"""The unoptimised path, kept only as a test oracle: the first (numpy) version of
the derivative sweep, dense over all 2N columns with 6×6 matrices, and M⁻¹ by
inverting the CRBA.  The compiled engine must reproduce it to ≤ 1e-10."""

import numpy as np

import robot_linearization as rl
from robot_linearization.algorithms.kinematics import base_gravity, body_transforms
from robot_linearization.spatial import cross_force, cross_force_operand, cross_motion, skew


def dense_linearization(model: rl.Model, state: rl.State, torques: np.ndarray):
    n, N, n_bodies = model.n_joints, model.n_velocities, model.n_bodies
    S, I, floating = model.motion_subspaces, model.inertias, model.floating_base
    X_up = body_transforms(model, state.joint_positions)
    M = rl.mass_matrix(model, state.joint_positions)
    M_inv = np.linalg.inv(M)
    # accelerations: M ν̇ = [0; τ] − h, h = ID̄ at zero acceleration
    if floating:
        h = np.concatenate(rl.extended_inverse_dynamics(model, state, np.zeros(6), np.zeros(n)))
        nu_dot = M_inv @ (np.concatenate([np.zeros(6), torques]) - h)
        base_acc, rdot = nu_dot[:6], nu_dot[6:]
    else:
        h, _ = rl.inverse_dynamics(model, state, np.zeros(n))
        rdot = M_inv @ (torques - h)
    col_s, col_v, col_r = (6, 6 + n, 12 + n) if floating else (0, None, n)
    m = 2 * N
    g0 = base_gravity(model, state)
    r = state.joint_velocities
    v, a = np.zeros((n_bodies, 6)), np.zeros((n_bodies, 6))
    dv, da = np.zeros((n_bodies, 6, m)), np.zeros((n_bodies, 6, m))
    v[0] = state.base_twist if floating else 0.0
    a[0] = (base_acc if floating else 0.0) - g0
    if floating:
        dv[0][:, col_v:col_v + 6] = np.eye(6)
        da[0][:3, 3:6] = -skew(g0[:3])
    for i in range(1, n_bodies):
        p, k, X = model.parent[i], i - 1, X_up[i]
        v_joint = S[i] * r[k]
        v[i] = X @ v[p] + v_joint
        a[i] = X @ a[p] + S[i] * rdot[k] + cross_motion(v[i]) @ v_joint
        dv[i] = X @ dv[p]
        dv[i][:, col_s + k] += cross_motion(v[i]) @ S[i]
        dv[i][:, col_r + k] += S[i]
        da[i] = X @ da[p] - cross_motion(v_joint) @ dv[i]
        da[i][:, col_s + k] += cross_motion(X @ a[p]) @ S[i]
        da[i][:, col_r + k] += cross_motion(v[i]) @ S[i]
    f = np.array([I[i] @ a[i] + cross_force(v[i]) @ I[i] @ v[i] for i in range(n_bodies)])
    df = np.array([I[i] @ da[i] + (cross_force(v[i]) @ I[i] + cross_force_operand(I[i] @ v[i])) @ dv[i]
                   for i in range(n_bodies)])
    for i in range(n_bodies - 1, 0, -1):
        p, k, XT = model.parent[i], i - 1, X_up[i].T
        df[p] += XT @ df[i]
        df[p][:, col_s + k] += XT @ (cross_force(S[i]) @ f[i])
        f[p] += XT @ f[i]
    joint_rows = np.einsum("bi,bik->bk", S[1:], df[1:])
    D = np.vstack([df[0], joint_rows]) if floating else joint_rows
    A = np.zeros((m, m))
    A[:N, N:] = np.eye(N)
    if floating:
        A[:6, :6] = -cross_motion(state.base_twist)
    A[N:] = -M_inv @ D
    B = np.zeros((m, n))
    B[N:] = M_inv[:, N - n:]
    return A, B, M_inv
