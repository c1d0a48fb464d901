"""A horizon's states as stacked arrays, and the group's maps between them in compiled loops (walking/mpc.py).

The MPC keeps the K states of its knots as four arrays: the base poses H (K, 4, 4) in the world, the joint
positions s (K, n), the base twists v (K, 6), [linear; angular] in the base frame, and the joint velocities r (K,
n).  The state lives on SE(3) × ℝⁿ × ℝ⁶ × ℝⁿ and is perturbed on the left-trivialized side, b = a·exp(z) with z =
[z_H; z_s; z_v; z_r] (2N) and z_H a twist in the base frame (thesis §3.1, validation.perturb and
validation.state_difference for one state).  Each map here is one compiled pass over the knots.
"""

from __future__ import annotations

import numpy as np

from ..arguments import kernel_ready, real_array
from ..compiled import kernel
from ..model import State
from ..spatial import se3_exp_many_into, se3_log_many_into


def stacked(states) -> tuple:
    """(H (K, 4, 4), s (K, n), v (K, 6), r (K, n)) of K floating-base States."""
    return (np.array([x.base_pose for x in states]), np.array([x.joint_positions for x in states]),
            np.array([x.base_twist for x in states]), np.array([x.joint_velocities for x in states]))


def unstacked(H, s, v, r) -> list:
    """The K States of stacked arrays (new arrays, made here: not copied or checked again)."""
    return [State._given(*x) for x in zip(H, s, v, r)]


@kernel
def pose_logs_into(H_a, H_b, twists):
    """twists[k] = log(H_a[k]⁻¹ H_b[k]) (K, 6), [v; ω], of two arrays of poses (K, 4, 4)."""
    relative = np.empty((1, 3, 4))  # (the top rows of H_a⁻¹ H_b: [R_aᵀ R_b, R_aᵀ (p_b − p_a)])
    for k in range(H_a.shape[0]):
        A, B = H_a[k], H_b[k]
        for i in range(3):
            for j in range(3):
                relative[0, i, j] = A[0, i] * B[0, j] + A[1, i] * B[1, j] + A[2, i] * B[2, j]
            relative[0, i, 3] = (A[0, i] * (B[0, 3] - A[0, 3]) + A[1, i] * (B[1, 3] - A[1, 3])
                                 + A[2, i] * (B[2, 3] - A[2, 3]))
        se3_log_many_into(relative, twists[k:k + 1])


@kernel
def differences_into(H_a, s_a, v_a, r_a, H_b, s_b, v_b, r_b, z):
    """z[k] (2N) with b_k = a_k·exp(z_k): [log(H_a⁻¹ H_b); s_b − s_a; v_b − v_a; r_b − r_a], of two horizons'
    stacked arrays (K states each), into z (K, 2N)."""
    n = s_a.shape[1]
    pose_logs_into(H_a, H_b, z[:, :6])
    for k in range(z.shape[0]):
        for j in range(n):
            z[k, 6 + j] = s_b[k, j] - s_a[k, j]
            z[k, 12 + n + j] = r_b[k, j] - r_a[k, j]
        for j in range(6):
            z[k, 6 + n + j] = v_b[k, j] - v_a[k, j]


@kernel
def perturbed_into(H, s, v, r, z, H_out, s_out, v_out, r_out):
    """The states a_k·exp(z_k) of the stacked arrays a = (H, s, v, r) and z (K, 2N), into H_out, s_out, v_out,
    r_out (each shaped as its input; they may be its input, or rows of a larger horizon's)."""
    n = s.shape[1]
    moved = np.empty((1, 4, 4))
    for k in range(z.shape[0]):
        se3_exp_many_into(z[k:k + 1, :6], moved)
        E, A, out = moved[0], H[k], H_out[k]
        for i in range(3):
            a0, a1, a2, a3 = A[i, 0], A[i, 1], A[i, 2], A[i, 3]
            for j in range(4):
                out[i, j] = a0 * E[0, j] + a1 * E[1, j] + a2 * E[2, j]
            out[i, 3] += a3
        out[3, 0], out[3, 1], out[3, 2], out[3, 3] = 0.0, 0.0, 0.0, 1.0
        for j in range(n):
            s_out[k, j] = s[k, j] + z[k, 6 + j]
            r_out[k, j] = r[k, j] + z[k, 12 + n + j]
        for j in range(6):
            v_out[k, j] = v[k, j] + z[k, 6 + n + j]


def _horizon(x, name: str, like: tuple | None = None) -> tuple:
    """The stacked arrays ``x`` (H (K, 4, 4), s (K, n), v (K, 6), r (K, n)) as the kernels take them (float64,
    C-ordered: copies of any other layout), shaped as ``like``'s where given; ValueError in one line naming
    ``name`` otherwise.  Values are not checked: a NaN gives NaN."""
    if not isinstance(x, (tuple, list)) or len(x) != 4:
        raise ValueError(f"{name}: expected a horizon's four stacked arrays (H, s, v, r), got {type(x).__name__}"
                         + (f" of {len(x)}" if isinstance(x, (tuple, list)) else ""))
    K = -1 if like is None else len(like[0])
    H = real_array(x[0], f"{name}[0]", (K, 4, 4), what="base poses", finite=False)
    K = len(H)
    s = real_array(x[1], f"{name}[1]", (K, -1 if like is None else like[1].shape[1]),
                   what="joint positions", finite=False)
    n = s.shape[1]
    return (H, s, real_array(x[2], f"{name}[2]", (K, 6), what="base twists", finite=False),
            real_array(x[3], f"{name}[3]", (K, n), what="joint velocities", finite=False))


def differences(a: tuple, b: tuple) -> np.ndarray:
    """z (K, 2N) with b_k = a_k·exp(z_k) (validation.state_difference) of two horizons' stacked arrays (K states
    each).  ValueError in one line for arrays that are not a horizon's, or not of the same K and n."""
    a = _horizon(a, "a")
    b = _horizon(b, "b", a)
    z = np.empty((len(a[1]), 12 + 2 * a[1].shape[1]))
    differences_into(*a, *b, z)
    return z


def perturbed(a: tuple, z: np.ndarray, out: tuple | None = None) -> tuple:
    """The stacked arrays of the states a_k·exp(z_k) (validation.perturb) of a horizon's stacked arrays ``a`` and
    z (K, 2N), into ``out`` (four float64, C-ordered, writeable arrays shaped as a's, which may be a's own) or
    new arrays.  ValueError in one line for arrays of other shapes, or an ``out`` the kernel cannot write."""
    a = _horizon(a, "a")
    K, n = a[1].shape
    z = real_array(z, "z", (K, 12 + 2 * n), what="a perturbation per state", finite=False)
    if out is None:
        out = tuple(np.empty_like(x) for x in a)
    elif not (isinstance(out, (tuple, list)) and len(out) == 4
              and all(kernel_ready(o) and o.shape == x.shape for o, x in zip(out, a))):
        raise ValueError(f"out: expected four float64, C-ordered, writeable arrays shaped "
                         f"{', '.join(str(x.shape) for x in a)}")
    perturbed_into(*a, z, *out)
    return tuple(out)
