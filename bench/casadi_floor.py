"""The code-generation floor: robot-specific generated C for what computeABADerivatives gives.

    .venv/bin/python bench/casadi_floor.py [--robots solo12 talos] [--method analytic|ad]

For one robot, ``dnu_dz`` = ∂ν̇/∂[z_H, z_s, z_v, z_r] (N, 2N: the bottom rows of rl.linearize's A)
and ``M_inv`` (N, N) are written in CasADi SX from the model's arrays alone, in the base frame:
ν̇ and M⁻¹ by the Articulated Body Algorithm, dnu_dz = −M⁻¹ ∂ID/∂z with the RNEA's derivatives in
closed form (``--method ad``: M⁻¹ and ∂ID/∂z by CasADi's AD).  CasADi writes C, which gcc -O3
-march=x86-64, with the instruction set the engine's generated kernels get here
(codegen/build.target_flags: -mavx2 on most x86-64 CPUs), compiles beside a C driver calling it
K times between two CLOCK_MONOTONIC readings: the time is the generated code's alone, the
median per call over several rounds.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

import robot_linearization as rl
from robot_linearization.codegen.build import target_flags
from robot_linearization.joints import JointType

COMPILE_TIMEOUT = 300.0  # seconds for gcc; a larger function is reported as too large
CFLAGS = ["-O3", "-march=x86-64", *target_flags()[1], "-shared", "-fPIC"]
FUNCTION = "rl_floor"
METHODS = ("analytic", "ad")


@dataclass
class FloorResult:
    """seconds: median per call of the generated code (None: see reason), fastest_seconds: its
    fastest round's; generate_seconds:
    building the expressions and writing the C; compile_seconds: gcc; source_bytes,
    library_bytes: the .c and the .so; operations: the instructions of its SX part (the matrix
    product's loop not counted); max_error: the largest per-block relative
    difference from rl.linearize over the states (:func:`block_error`); beside: {name: median
    seconds per call} of other calls timed in the same rounds."""

    seconds: float | None
    reason: str = ""
    fastest_seconds: float | None = None
    method: str = "analytic"
    generate_seconds: float | None = None
    compile_seconds: float | None = None
    source_bytes: int | None = None
    library_bytes: int | None = None
    operations: int | None = None
    max_error: float | None = None
    beside: dict = field(default_factory=dict)


# --- algebra on Python lists of SX scalars and floats; float zeros and ones are folded away ---

def _zero(x) -> bool:
    return isinstance(x, float) and x == 0.0


def _mul(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a * b
    if isinstance(b, float):
        a, b = b, a
    if isinstance(a, float):
        if a == 0.0:
            return 0.0
        if a == 1.0:
            return b
        if a == -1.0:
            return -b
    return a * b


def _sum(terms):
    total = 0.0
    for term in terms:
        if _zero(term):
            continue
        total = term if _zero(total) else total + term
    return total


def _neg(x):
    return 0.0 if _zero(x) else -x


def _sub(a, b):
    return _sum([a, _neg(b)])


def _dot(x, y):
    return _sum([_mul(a, b) for a, b in zip(x, y)])


def _add(x, y):
    return [_sum([a, b]) for a, b in zip(x, y)]


def _scale(x, k):
    return [_mul(a, k) for a in x]


def _cross(a, b):
    return [_sub(_mul(a[1], b[2]), _mul(a[2], b[1])), _sub(_mul(a[2], b[0]), _mul(a[0], b[2])),
            _sub(_mul(a[0], b[1]), _mul(a[1], b[0]))]


def _mat_vec(M, x):
    return [_dot(row, x) for row in M]


def _mat_mat(A, B):
    return [[_dot(A[i], [B[0][j], B[1][j], B[2][j]]) for j in range(3)] for i in range(3)]


def _floats(array):
    return [[float(x) for x in row] for row in np.asarray(array)]


# --- spatial algebra in the base frame, [linear; angular] ---

def _motion_cross(v, x):
    """v × x (2.33)."""
    return _add(_cross(v[3:], x[:3]), _cross(v[:3], x[3:])) + _cross(v[3:], x[3:])


def _force_cross(v, f):
    """v ×̄* f (2.42)."""
    return _cross(v[3:], f[:3]) + _add(_cross(v[3:], f[3:]), _cross(v[:3], f[:3]))


# A spatial inertia (m, h, J) = [[m 1, −h^], [h^, J]]: mass, first moment and rotational inertia
# about the frame's origin.  Its rate under a motion v, (v×*)Y − Y(v×), is (0, ḣ, J̇).

def _inertia_apply(Y, x):
    m, h, J = Y
    return _sub_vec(_scale(x[:3], m), _cross(h, x[3:])) + _add(_cross(h, x[:3]), _mat_vec(J, x[3:]))


def _sub_vec(x, y):
    return [_sub(a, b) for a, b in zip(x, y)]


def _inertia_add(Y1, Y2):
    return (_sum([Y1[0], Y2[0]]), _add(Y1[1], Y2[1]), [_add(a, b) for a, b in zip(Y1[2], Y2[2])])


def _symmetric(upper):
    """The 3×3 symmetric matrix of a function of (i, j), i ≤ j."""
    J = [[None] * 3 for _ in range(3)]
    for i in range(3):
        for j in range(i, 3):
            J[i][j] = J[j][i] = upper(i, j)
    return J


def _inertia_rate(Y, v):
    """(v×*)Y − Y(v×) of a rigid body's inertia moving with v: ḣ = m v + ω × h,
    J̇ = 2(h·v)1 − (v hᵀ + h vᵀ) + ω^J − Jω^."""
    m, h, J = Y
    lin, w = v[:3], v[3:]
    wJ = _mat_mat([[0.0, _neg(w[2]), w[1]], [w[2], 0.0, _neg(w[0])], [_neg(w[1]), w[0], 0.0]], J)
    hv = _dot(h, lin)
    return (0.0, _add(_scale(lin, m), _cross(w, h)),
            _symmetric(lambda i, j: _sum([_mul(2.0, hv) if i == j else 0.0, _neg(_mul(lin[i], h[j])),
                                          _neg(_mul(h[i], lin[j])), wJ[i][j], wJ[j][i]])))


def _inertia_in_base(model, i, R, p):
    """Body i's inertia (the model's, at its frame) expressed in the base frame, the body
    frame at rotation R and position p: h = R h_b + m p, J = R J_b Rᵀ + 2(h_r·p)1 − (p h_rᵀ +
    h_r pᵀ) + m(|p|²1 − p pᵀ), h_r = R h_b."""
    I = np.asarray(model.inertias[i], dtype=float)
    m = float(I[0, 0])
    h_b = [float(I[5, 1]), float(I[3, 2]), float(I[4, 0])]
    h_r = _mat_vec(R, h_b)
    RJ = _mat_mat(R, _floats(I[3:, 3:]))
    hp, pp = _dot(h_r, p), _dot(p, p)
    J = _symmetric(lambda a, b: _sum([_dot(RJ[a], R[b]), _mul(2.0, hp) if a == b else 0.0,
                                      _neg(_mul(p[a], h_r[b])), _neg(_mul(h_r[a], p[b])),
                                      _mul(m, _sub(pp, _mul(p[a], p[b])) if a == b else _neg(_mul(p[a], p[b])))]))
    return m, _add(h_r, _scale(p, m)), J


def rigid_body_inertias(model) -> bool:
    """True when every inertia of the model has the form [[m 1, −h^], [h^, J]] (as from a URDF)."""
    for I in np.asarray(model.inertias, dtype=float):
        m, h = I[0, 0], np.array([I[5, 1], I[3, 2], I[4, 0]])
        hat = np.array([[0.0, -h[2], h[1]], [h[2], 0.0, -h[0]], [-h[1], h[0], 0.0]])
        scale = max(np.abs(I).max(), 1e-300)
        if (np.abs(I - I.T).max() > 1e-12 * scale or np.abs(I[:3, :3] - m * np.eye(3)).max() > 1e-12 * scale
                or np.abs(I[3:, :3] - hat).max() > 1e-12 * scale):
            return False
    return True


def _rotation(ca, axis, angle):
    """Rodrigues: the rotation by ``angle`` about the unit ``axis``."""
    e = [float(x) for x in axis]
    sn, cs = ca.sin(angle), 1.0 - ca.cos(angle)
    skew = [[0.0, -e[2], e[1]], [e[2], 0.0, -e[0]], [-e[1], e[0], 0.0]]
    return [[_sum([1.0 if i == j else 0.0, _mul(sn, skew[i][j]), _mul(cs, e[i] * e[j] - (1.0 if i == j else 0.0))])
             for j in range(3)] for i in range(3)]


class _Tree:
    """Kinematics and inertias of the model at (s, v, r), in the base frame (the world frame for a
    fixed base): per body its pose (R, p), velocity, inertia, momentum and velocity-product force,
    per joint its Γ in the base frame and the bias acceleration."""

    def __init__(self, ca, model, s, v, r):
        n = model.n_joints
        self.model, self.n = model, n
        self.parent = [int(k) for k in model.parent]
        self.R, self.p = [None] * (n + 1), [None] * (n + 1)
        self.S, self.vel, self.bias = [None] * (n + 1), [None] * (n + 1), [None] * (n + 1)
        self.R[0], self.p[0] = _floats(np.eye(3)), [0.0, 0.0, 0.0]
        self.vel[0] = list(v) if model.floating_base else [0.0] * 6
        for i in range(1, n + 1):
            joint, k = model.joints[i - 1], self.parent[i]
            X = np.asarray(model.tree_transforms[i], dtype=float)  # λ(i)|i_X_λ(i) = Ad(J_H_λ)
            R_T = X[3:, 3:]
            P = X[:3, 3:] @ R_T.T  # p_T^
            R_JT = R_T.T  # λ_H_J = (R_Tᵀ, −R_Tᵀ p_T)
            p_JT = -R_T.T @ np.array([P[2, 1], P[0, 2], P[1, 0]])
            R_A = _mat_mat(self.R[k], _floats(R_JT))
            p_A = _add(self.p[k], _mat_vec(self.R[k], [float(x) for x in p_JT]))
            gamma = [float(x) for x in model.motion_subspaces[i]]
            # the child frame is exp(s Γ^) from the joint frame; Γ's linear part lies along its axis
            angular = _mat_vec(R_A, gamma[3:])
            self.S[i] = _add(_mat_vec(R_A, gamma[:3]), _cross(p_A, angular)) + angular
            rotates = joint.type is not JointType.PRISMATIC
            self.R[i] = _mat_mat(R_A, _rotation(ca, joint.axis, s[i - 1])) if rotates else R_A
            self.p[i] = _add(p_A, _scale(_mat_vec(R_A, gamma[:3]), s[i - 1]))
            joint_velocity = _scale(self.S[i], r[i - 1])
            self.vel[i] = _add(self.vel[k], joint_velocity)
            self.bias[i] = _motion_cross(self.vel[k], joint_velocity)  # v_i × Γ r (= v_λ × Γ r)
        self.Y = [_inertia_in_base(model, i, self.R[i], self.p[i]) for i in range(n + 1)]
        self.momentum = [_inertia_apply(self.Y[i], self.vel[i]) for i in range(n + 1)]
        self.velocity_force = [_force_cross(self.vel[i], self.momentum[i]) for i in range(n + 1)]

    def subtree(self, i):
        return range(i, int(self.model.subtree_end[i]) + 1)

    def strict_ancestors(self, i):
        """The joints' bodies on the path from the base to i, i excluded."""
        k, path = self.parent[i], []
        while k > 0:
            path.append(k)
            k = self.parent[k]
        return path


def _ldl_inverse(M):
    """M⁻¹ of a symmetric positive definite 6×6 M (LDLᵀ, no pivoting), as rows."""
    size = len(M)
    L = [[0.0] * size for _ in range(size)]
    d = [None] * size
    for j in range(size):
        d[j] = _sub(M[j][j], _sum([_mul(_mul(L[j][k], L[j][k]), d[k]) for k in range(j)]))
        for i in range(j + 1, size):
            L[i][j] = _sub(M[i][j], _sum([_mul(_mul(L[i][k], L[j][k]), d[k]) for k in range(j)])) / d[j]
    d_inv = [1.0 / x for x in d]
    columns = []
    for c in range(size):
        y = [None] * size
        for i in range(size):
            y[i] = _sub(1.0 if i == c else 0.0, _dot(L[i][:i], y[:i]))
        x = [None] * size
        for i in range(size - 1, -1, -1):
            x[i] = _sub(_mul(y[i], d_inv[i]), _dot([L[k][i] for k in range(i + 1, size)], x[i + 1:]))
        columns.append(x)
    return _symmetric6(lambda i, j: columns[j][i])


def _symmetric6(upper):
    M = [[None] * 6 for _ in range(6)]
    for i in range(6):
        for j in range(i, 6):
            M[i][j] = M[j][i] = upper(i, j)
    return M


class _ArticulatedBodies:
    """The ABA (Featherstone's, in the base frame, gravity as the base's fictitious acceleration
    −[Rᵀg; 0]) at torques τ and base wrench: the accelerations a_i of every body (with that
    fictitious part), ṙ, and the factors U_i = I^A_i Γ_i, 1/D_i and (I^A_0)⁻¹."""

    def __init__(self, tree: _Tree, gravity_base, tau, wrench):
        model, n, parent = tree.model, tree.n, tree.parent
        IA = [None] * (n + 1)
        for i in range(n + 1):
            m, h, J = tree.Y[i]
            hat = [[0.0, _neg(h[2]), h[1]], [h[2], 0.0, _neg(h[0])], [_neg(h[1]), h[0], 0.0]]
            IA[i] = ([[m if a == b else 0.0 for a in range(3)] + [_neg(hat[b][a]) for a in range(3)] for b in range(3)]
                     + [hat[b] + J[b] for b in range(3)])
        pA = list(tree.velocity_force)
        self.U, self.D_inv, self.u = [None] * (n + 1), [None] * (n + 1), [None] * (n + 1)
        for i in range(n, 0, -1):
            S = tree.S[i]
            U = self.U[i] = _mat_vec(IA[i], S)
            D_inv = self.D_inv[i] = 1.0 / _dot(S, U)
            u = self.u[i] = _sub(tau[i - 1], _dot(S, pA[i]))
            k = parent[i]
            IA[k] = _symmetric6(lambda a, b: _sum([IA[k][a][b], IA[i][a][b], _neg(_mul(_mul(U[a], U[b]), D_inv))]))
            gain = _mul(D_inv, _sub(u, _dot(U, tree.bias[i])))
            pA[k] = _add(pA[k], _add(_add(pA[i], _mat_vec(IA[i], tree.bias[i])), _scale(U, gain)))
        self.acc, self.joint_acc = [None] * (n + 1), [None] * n
        if model.floating_base:
            self.IA0_inv = _ldl_inverse(IA[0])
            self.acc[0] = _mat_vec(self.IA0_inv, _sub_vec(wrench, pA[0]))
            self.base_acc = _add(self.acc[0], list(gravity_base) + [0.0] * 3)  # v̇
        else:
            self.acc[0] = [_neg(g) for g in gravity_base] + [0.0] * 3
            self.base_acc = []
        for i in range(1, n + 1):
            a = _add(self.acc[parent[i]], tree.bias[i])
            self.joint_acc[i - 1] = _mul(self.D_inv[i], _sub(self.u[i], _dot(self.U[i], a)))
            self.acc[i] = _add(a, _scale(tree.S[i], self.joint_acc[i - 1]))


def _inverse_mass_matrix(tree: _Tree, aba: _ArticulatedBodies):
    """M⁻¹ (N×N rows) from the ABA's factors: a backward pass over each joint's subtree columns,
    then a forward pass over the columns from the joint's own on, mirrored (M⁻¹ is symmetric)."""
    model, n, parent = tree.model, tree.n, tree.parent
    off = 6 if model.floating_base else 0
    N = n + off
    col = lambda i: off + i - 1  # noqa: E731  (the column of the joint moving body i)
    Minv = [[0.0] * N for _ in range(N)]
    F = [dict() for _ in range(n + 1)]  # body -> {column: force}
    for i in range(n, 0, -1):
        ci, S, U, D_inv = col(i), tree.S[i], aba.U[i], aba.D_inv[i]
        Minv[ci][ci] = D_inv
        for c, force in F[i].items():
            Minv[ci][c] = _neg(_mul(D_inv, _dot(S, force)))
        F[i][ci] = [0.0] * 6
        for c in list(F[i]):
            F[i][c] = _add(F[i][c], _scale(U, Minv[ci][c]))
            F[parent[i]][c] = _add(F[parent[i]].get(c, [0.0] * 6), F[i][c])
    P = [None] * (n + 1)  # body -> {column: acceleration}
    if model.floating_base:
        P[0] = {c: [aba.IA0_inv[a][c] for a in range(6)] for c in range(6)}
        for c, force in F[0].items():
            P[0][c] = _scale(_mat_vec(aba.IA0_inv, force), -1.0)
        for c in range(N):
            for a in range(6):
                Minv[a][c] = P[0][c][a]
    else:
        P[0] = {c: [0.0] * 6 for c in range(N)}
    for i in range(1, n + 1):
        ci, S, U, D_inv = col(i), tree.S[i], aba.U[i], aba.D_inv[i]
        P[i] = {}
        for c in range(ci, N):
            Minv[ci][c] = _sub(Minv[ci][c], _mul(D_inv, _dot(U, P[parent[i]][c])))
            if c > ci:
                P[i][c] = _add(P[parent[i]][c], _scale(S, Minv[ci][c]))
    return [[Minv[min(a, b)][max(a, b)] for b in range(N)] for a in range(N)]


def _inverse_dynamics_derivatives(tree: _Tree, aba: _ArticulatedBodies):
    """∂ID/∂[s, v, r] (rows [base; joints], N × (2N − 6) as a dict {(row, column): entry}) of the
    RNEA at the ABA's accelerations, in closed form in the base frame: with Y_k, Ẏ_k, L_k, F_k the
    inertia, inertia rate, momentum and force of body k's subtree and B_k x = Ẏ_k x + x ×̄* L_k,
    for joint j (body b, parent λ, Γ_b in the base frame):
      w = Γ_b × v_λ, c = Γ_b × a_λ − w × v_λ, e = −2 Γ_b × v_b,
      ∂τ_k/∂s_j = −Γ_k·(Y_k c + B_k w), ∂τ_k/∂r_j = Γ_k·(Y_k e + B_k Γ_b) (k in b's subtree),
      ∂τ_k/∂s_j = Γ_k·φ, ∂τ_k/∂r_j = Γ_k·ψ (k above b), ∂τ̄_b/∂(s_j, r_j) = (φ, ψ), with
      φ = Γ_b ×̄* F_b − Y_b c − B_b w, ψ = Y_b e + B_b Γ_b;
    and for the base twist ∂τ_k/∂v = (B_kᵀΓ_k − v_0 ×̄* Y_kΓ_k)ᵀ, ∂τ̄_b/∂v = Y_0 (v_0×) + B_0."""
    model, n, parent = tree.model, tree.n, tree.parent
    floating = model.floating_base
    off = 6 if floating else 0
    forces = [_add(_inertia_apply(tree.Y[i], aba.acc[i]), tree.velocity_force[i]) for i in range(n + 1)]
    Y = list(tree.Y)
    rate = [_inertia_rate(tree.Y[i], tree.vel[i]) for i in range(n + 1)]
    L, F = list(tree.momentum), forces
    for i in range(n, 0, -1):
        k = parent[i]
        Y[k], rate[k] = _inertia_add(Y[k], Y[i]), _inertia_add(rate[k], rate[i])
        L[k], F[k] = _add(L[k], L[i]), _add(F[k], F[i])

    def B(k, x):
        return _add(_inertia_apply(rate[k], x), _force_cross(x, L[k]))

    YS = [None] + [_inertia_apply(Y[k], tree.S[k]) for k in range(1, n + 1)]
    BS = [None] + [_sub_vec(_inertia_apply(rate[k], tree.S[k]), _force_cross(tree.S[k], L[k])) for k in range(1, n + 1)]
    s_col = lambda j: j  # noqa: E731
    v_col = lambda m: n + m  # noqa: E731
    r_col = lambda j: n + (6 if floating else 0) + j  # noqa: E731
    D = {}
    for b in range(1, n + 1):
        j, lam, S = b - 1, parent[b], tree.S[b]
        w = _motion_cross(S, tree.vel[lam])
        c = _sub_vec(_motion_cross(S, aba.acc[lam]), _motion_cross(w, tree.vel[lam]))
        e = _scale(_motion_cross(S, tree.vel[b]), -2.0)
        for k in tree.subtree(b):
            D[off + k - 1, s_col(j)] = _neg(_sum([_dot(YS[k], c), _dot(BS[k], w)]))
            D[off + k - 1, r_col(j)] = _sum([_dot(YS[k], e), _dot(BS[k], S)])
        phi = _sub_vec(_sub_vec(_force_cross(S, F[b]), _inertia_apply(Y[b], c)), B(b, w))
        psi = _add(_inertia_apply(Y[b], e), B(b, S))
        for k in tree.strict_ancestors(b):
            D[off + k - 1, s_col(j)] = _dot(tree.S[k], phi)
            D[off + k - 1, r_col(j)] = _dot(tree.S[k], psi)
        if floating:
            for a in range(6):
                D[a, s_col(j)], D[a, r_col(j)] = phi[a], psi[a]
    if floating:
        v0 = tree.vel[0]
        for k in range(1, n + 1):
            row = _sub_vec(BS[k], _force_cross(v0, YS[k]))
            for m in range(6):
                D[off + k - 1, v_col(m)] = row[m]
        for m in range(6):
            unit = [1.0 if a == m else 0.0 for a in range(6)]
            column = _add(_inertia_apply(Y[0], _motion_cross(v0, unit)), B(0, unit))
            for a in range(6):
                D[a, v_col(m)] = column[a]
    return D


def _inverse_dynamics(tree: _Tree, gravity_base, accelerations):
    """[τ̄_b; τ] = M ν̇ + h by the RNEA in the base frame (for CasADi's AD)."""
    model, n, parent = tree.model, tree.n, tree.parent
    off = 6 if model.floating_base else 0
    if model.floating_base:
        acc = [_sub_vec(accelerations[:6], list(gravity_base) + [0.0] * 3)]
    else:
        acc = [[_neg(g) for g in gravity_base] + [0.0] * 3]
    for i in range(1, n + 1):
        acc.append(_add(_add(acc[parent[i]], tree.bias[i]), _scale(tree.S[i], accelerations[off + i - 1])))
    F = [_add(_inertia_apply(tree.Y[i], acc[i]), tree.velocity_force[i]) for i in range(n + 1)]
    for i in range(n, 0, -1):
        F[parent[i]] = _add(F[parent[i]], F[i])
    return (F[0] if model.floating_base else []) + [_dot(tree.S[i], F[i]) for i in range(1, n + 1)]


def _sx_matrix(ca, rows, columns, entries):
    """The SX matrix of {(row, column): entry}, float zeros left structurally zero."""
    M = ca.SX(rows, columns)
    for (a, b), x in entries.items():
        if not _zero(x):
            M[a, b] = x
    return M


def floor_function(ca, model, method: str = "analytic"):
    """(The CasADi Function (pose (3, 4) = H[:3, :4], s, v, r, τ) -> (dnu_dz (N, 2N), M_inv (N, N)),
    dense outputs, the number of operations of its SX part).  A fixed base takes pose and v and
    ignores them (z = [z_s, z_r]).  method "analytic": M⁻¹ from the ABA's factors and ∂ID/∂z in
    closed form; "ad": both by CasADi's AD (of the ABA in τ̄ and of the RNEA in [s, v, r])."""
    if method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r}")
    n, floating, N = model.n_joints, model.floating_base, model.n_velocities
    pose = ca.SX.sym("pose", 3, 4)
    s, v, r, tau = (ca.SX.sym(name, size) for name, size in (("s", n), ("v", 6), ("r", n), ("tau", n)))
    listed = lambda x: [x[k] for k in range(x.numel())]  # noqa: E731
    g = [float(x) for x in model.gravity]
    gravity_base = [_dot([pose[0, i], pose[1, i], pose[2, i]], g) for i in range(3)] if floating else g  # Rᵀg
    tree = _Tree(ca, model, listed(s), listed(v), listed(r))
    if method == "analytic":
        aba = _ArticulatedBodies(tree, gravity_base, listed(tau), [0.0] * 6)
        M_inv = ca.SX(N, N)
        for a, row in enumerate(_inverse_mass_matrix(tree, aba)):
            for b, x in enumerate(row):
                M_inv[a, b] = x
        D = _sx_matrix(ca, N, 2 * N - (6 if floating else 0), _inverse_dynamics_derivatives(tree, aba))
    else:
        wrench = ca.SX.sym("wrench", 6)
        aba = _ArticulatedBodies(tree, gravity_base, listed(tau), listed(wrench) if floating else [0.0] * 6)
        nu_dot = ca.vertcat(*(aba.base_acc + aba.joint_acc))
        J = ca.jacobian(nu_dot, ca.vertcat(wrench, tau) if floating else tau)
        M_inv = ca.SX(N, N)
        for a in range(N):
            for b in range(N):
                M_inv[a, b] = J[min(a, b), max(a, b)]
        a_sym = ca.SX.sym("a", N)
        ID = ca.vertcat(*_inverse_dynamics(tree, gravity_base, listed(a_sym)))
        D = ca.jacobian(ID, ca.vertcat(s, v, r) if floating else ca.vertcat(s, r))
        D = ca.substitute(D, ca.vertcat(a_sym, wrench), ca.vertcat(ca.substitute(nu_dot, wrench, ca.DM.zeros(6)),
                                                                    ca.DM.zeros(6)))
    outputs = [M_inv, D]
    if floating:  # ∂v̇/∂z_H: gravity, a uniform field, acts as a base acceleration −Rᵀg
        G = ca.SX(N, 6)
        hat = [[0.0, _neg(gravity_base[2]), gravity_base[1]], [gravity_base[2], 0.0, _neg(gravity_base[0])],
               [_neg(gravity_base[1]), gravity_base[0], 0.0]]
        for a in range(3):
            for b in range(3):
                if not _zero(hat[a][b]):
                    G[a, 3 + b] = hat[a][b]
        outputs.append(G)
    names = ["pose", "s", "v", "r", "tau"]
    core = ca.Function(f"{FUNCTION}_core", [pose, s, v, r, tau], outputs, {"cse": True})
    inputs = [ca.MX.sym(name, x.sparsity()) for name, x in zip(names, (pose, s, v, r, tau))]
    parts = core(*inputs)
    product = -ca.mtimes(parts[0], parts[1])  # (CasADi's sparse product loop)
    dnu_dz = ca.horzcat(parts[2], product) if floating else product
    function = ca.Function(FUNCTION, inputs, [ca.densify(dnu_dz), ca.densify(parts[0])], names, ["dnu_dz", "M_inv"])
    return function, core.n_instructions()


DRIVER = r"""
#include <stdlib.h>
#include <time.h>

int %(f)s(const double** arg, double** res, int* iw, double* w, int mem);
int %(f)s_work(int* sz_arg, int* sz_res, int* sz_iw, int* sz_w);

static double* work;
static int* iwork;
static const double* args[64];
static double* results[64];

static int prepare(const double* pose, const double* s, const double* v, const double* r, const double* tau,
                   double* dnu_dz, double* M_inv) {
    int sz_arg, sz_res, sz_iw, sz_w;
    %(f)s_work(&sz_arg, &sz_res, &sz_iw, &sz_w);
    if (sz_arg > 64 || sz_res > 64) return 1;
    if (!work) {
        work = malloc(sizeof(double) * (sz_w > 0 ? sz_w : 1));
        iwork = malloc(sizeof(int) * (sz_iw > 0 ? sz_iw : 1));
        if (!work || !iwork) return 1;
    }
    args[0] = pose; args[1] = s; args[2] = v; args[3] = r; args[4] = tau;
    results[0] = dnu_dz; results[1] = M_inv;
    return 0;
}

int rl_floor_eval(const double* pose, const double* s, const double* v, const double* r, const double* tau,
                  double* dnu_dz, double* M_inv) {
    if (prepare(pose, s, v, r, tau, dnu_dz, M_inv)) return 1;
    return %(f)s(args, results, iwork, work, 0);
}

double rl_floor_time(int K, const double* pose, const double* s, const double* v, const double* r,
                     const double* tau, double* dnu_dz, double* M_inv) {
    struct timespec start, stop;
    if (prepare(pose, s, v, r, tau, dnu_dz, M_inv)) return -1.0;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int k = 0; k < K; ++k) %(f)s(args, results, iwork, work, 0);
    clock_gettime(CLOCK_MONOTONIC, &stop);
    return (double)(stop.tv_sec - start.tv_sec) + 1e-9 * (double)(stop.tv_nsec - start.tv_nsec);
}
"""


class _Library:
    """The compiled floor of one model, called at one state's inputs."""

    def __init__(self, path, model):
        self.lib = ctypes.CDLL(path)
        pointer = ctypes.POINTER(ctypes.c_double)
        self.lib.rl_floor_eval.argtypes = [pointer] * 7
        self.lib.rl_floor_eval.restype = ctypes.c_int
        self.lib.rl_floor_time.argtypes = [ctypes.c_int] + [pointer] * 7
        self.lib.rl_floor_time.restype = ctypes.c_double
        N = model.n_velocities
        self.dnu_dz = np.zeros((2 * N, N))  # (N, 2N) column-major, CasADi's order
        self.M_inv = np.zeros((N, N))
        self.model = model

    def at(self, state, torques) -> "_Library":
        pose = np.eye(4) if state.base_pose is None else np.asarray(state.base_pose, dtype=float)
        twist = np.zeros(6) if state.base_twist is None else state.base_twist
        self.inputs = [np.ascontiguousarray(a, dtype=float) for a in
                       (pose[:3, :4].ravel(order="F"), state.joint_positions, twist, state.joint_velocities,
                        np.asarray(torques, dtype=float).reshape(self.model.n_joints))]
        pointer = ctypes.POINTER(ctypes.c_double)
        self.pointers = [a.ctypes.data_as(pointer) for a in self.inputs + [self.dnu_dz, self.M_inv]]
        return self

    def evaluate(self):
        """(dnu_dz, M_inv) at the inputs of :meth:`at`."""
        if self.lib.rl_floor_eval(*self.pointers) != 0:
            raise RuntimeError("the generated function failed")
        return self.dnu_dz.T.copy(), self.M_inv.T.copy()

    def per_call(self, burst: int) -> float:
        """Seconds per call of ``burst`` calls, timed in C."""
        return self.lib.rl_floor_time(burst, *self.pointers) / burst


def block_error(model, ours, reference) -> float:
    """max over the blocks (rows v̇, ṙ × the columns of each part of the state) of
    max|ours − reference| / the block's largest |reference| entry (floored at 1e-3 of the matrix's)."""
    sizes = [6, model.n_joints] if model.floating_base else [model.n_joints]
    rows = np.cumsum([0] + sizes)
    columns = np.cumsum([0] + sizes * (reference.shape[1] // reference.shape[0]))
    floor = 1e-3 * max(np.abs(reference).max(), 1e-300)
    worst = 0.0
    for r0, r1 in zip(rows[:-1], rows[1:]):
        for c0, c1 in zip(columns[:-1], columns[1:]):
            if r1 > r0 and c1 > c0:
                block = np.s_[r0:r1, c0:c1]
                scale = max(np.abs(reference[block]).max(), floor)
                worst = max(worst, float(np.abs(ours[block] - reference[block]).max() / scale))
    return worst


def compiler():
    """The C compiler's path ($CC, gcc or cc), or None."""
    for name in (os.environ.get("CC"), "gcc", "cc"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def codegen_floor(model, states, torques, repeat: int = 250, rounds: int = 40, beside=None,
                  method: str = "analytic") -> FloorResult:
    """The floor of ``model`` at ``states`` with ``torques`` (one (n,) array each): the median
    seconds per call of the generated C over ``rounds`` rounds of ``repeat`` calls (the rounds
    cycle through the states), its error against rl.linearize at every state, and the cost of
    getting it.  beside: {name: at}, ``at(k)`` a call of no argument at state k (a functools.partial:
    no Python frame of the benchmark's own in what is timed), called ``repeat`` times in the same
    rounds (e.g. Pinocchio's call), their medians in result.beside.  Without casadi or a C
    compiler, for a mimic-coupled model, inertias not of a rigid body's form or a compile over
    COMPILE_TIMEOUT: seconds None and reason says why."""
    if len(states) == 0 or len(states) != len(torques):
        raise ValueError(f"states and torques: expected as many of each, at least one, got {len(states)} "
                         f"and {len(torques)}")
    result = FloorResult(None, method=method)
    try:
        import casadi as ca
    except ImportError:
        result.reason = "casadi not installed (pip install casadi)"
        return result
    cc = compiler()
    if cc is None:
        result.reason = "no C compiler (gcc, cc or $CC) on PATH"
        return result
    if isinstance(model, rl.CoupledModel):
        result.reason = "mimic-coupled models are not supported (load with mimic_joints='independent')"
        return result
    if not rigid_body_inertias(model):
        result.reason = "an inertia is not of a rigid body's form [[m 1, -h^], [h^, J]]"
        return result
    start = time.perf_counter()
    function, result.operations = floor_function(ca, model, method)
    with tempfile.TemporaryDirectory(prefix="rl_casadi_floor_") as directory:
        source = f"{FUNCTION}.c"
        generator = ca.CodeGenerator(source, {"casadi_int": "int", "casadi_real": "double"})
        generator.add(function)
        generator.generate(directory + os.sep)
        with open(os.path.join(directory, "driver.c"), "w") as file:
            file.write(DRIVER % {"f": FUNCTION})
        result.generate_seconds = time.perf_counter() - start
        result.source_bytes = os.path.getsize(os.path.join(directory, source))
        library = os.path.join(directory, "floor.so")
        start = time.perf_counter()
        compile_job = subprocess.Popen([cc, *CFLAGS, "-o", library, source, "driver.c", "-lm"], cwd=directory,
                                       env=dict(os.environ, TMPDIR=directory), stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            _, errors = compile_job.communicate(timeout=COMPILE_TIMEOUT)
        except subprocess.TimeoutExpired:  # (the driver and its cc1: the session gcc leads)
            os.killpg(compile_job.pid, signal.SIGKILL)
            compile_job.communicate()
            result.reason = f"too large: the compiler took over {COMPILE_TIMEOUT:g} s"
            return result
        result.compile_seconds = time.perf_counter() - start
        if compile_job.returncode != 0:
            result.reason = f"the compiler failed: {errors.strip()[-500:]}"
            return result
        result.library_bytes = os.path.getsize(library)
        floor = _Library(library, model)
        N, worst = model.n_velocities, 0.0
        for state, tau in zip(states, torques):
            dnu_dz, M_inv = floor.at(state, tau).evaluate()
            lin = rl.linearize(model, state, tau)
            worst = max(worst, block_error(model, dnu_dz, lin.A[N:]), block_error(model, M_inv, lin.M_inv))
        result.max_error = worst
        beside = dict(beside or {})
        times = {name: [] for name in ["floor", *beside]}
        for k in range(len(states)):  # (one untimed call of each)
            floor.at(states[k], torques[k]).per_call(1)
            for at in beside.values():
                at(k)()
        for j in range(max(rounds, 1)):
            k = j % len(states)
            times["floor"].append(floor.at(states[k], torques[k]).per_call(repeat))
            for name, at in beside.items():
                call = at(k)
                begin = time.perf_counter()
                for _ in range(repeat):
                    call()
                times[name].append((time.perf_counter() - begin) / repeat)
    floor_times = times.pop("floor")
    result.seconds, result.fastest_seconds = float(np.median(floor_times)), float(np.min(floor_times))
    result.beside = {name: float(np.median(t)) for name, t in times.items()}
    return result


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import benchmark_robots  # (the robots, their random states, Pinocchio's inputs)

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", nargs="*", default=["solo12", "talos"], choices=list(benchmark_robots.ROBOTS))
    parser.add_argument("--method", choices=METHODS, default="analytic")
    parser.add_argument("--states", type=int, default=5, help="random states per robot")
    parser.add_argument("--repeat", type=int, default=250, help="calls per timing round")
    parser.add_argument("--rounds", type=int, default=40, help="timing rounds (they cycle through the states)")
    args = parser.parse_args()
    rng = np.random.default_rng(2019)
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    print(f"code-generation floor ({args.method}, gcc {' '.join(CFLAGS[:-2])}): µs per call of dnu_dz and M_inv, "
          f"median of {args.rounds} rounds of {args.repeat} calls; beside it "
          + (f"Pinocchio {pin.__version__}'s bare computeABADerivatives called from Python in the same rounds"
             if pin else "no Pinocchio (not installed)"))
    for name in args.robots:
        path, floating, options = benchmark_robots.ROBOTS[name]
        model = rl.load_urdf(path, floating_base=floating, **options)
        states = benchmark_robots.random_states(model, rng, args.states)
        torques = [rng.normal(size=model.n_joints) for _ in states]
        beside = {}
        if pin is not None and not isinstance(model, rl.CoupledModel):
            pipeline = benchmark_robots.PinocchioPipeline(path, model)
            inputs = [pipeline.inputs(state, tau) for state, tau in zip(states, torques)]
            pmodel, pdata = pipeline.pmodel, pipeline.pipeline.data
            beside["pin"] = lambda k: functools.partial(pin.computeABADerivatives, pmodel, pdata, *inputs[k])
        result = codegen_floor(model, states, torques, args.repeat, args.rounds, beside, args.method)
        head = f"{name:<12} N = {model.n_velocities:<3}"
        if result.seconds is None:
            print(f"{head} floor: none ({result.reason})")
            continue
        pin_text = (f", Pinocchio {result.beside['pin'] * 1e6:.1f} µs (floor/Pinocchio "
                    f"{result.seconds / result.beside['pin']:.2f})" if "pin" in result.beside else "")
        print(f"{head} floor {result.seconds * 1e6:.1f} µs (fastest round {result.fastest_seconds * 1e6:.1f})"
              f"{pin_text}; error vs rl.linearize {result.max_error:.1e}; "
              f"{result.operations} operations; generate {result.generate_seconds:.1f} s, compile "
              f"{result.compile_seconds:.1f} s; .c {result.source_bytes / 1024:.0f} KiB, "
              f".so {result.library_bytes / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
