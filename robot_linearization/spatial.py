"""Spatial algebra in the Eindhoven-Genoa notation (thesis §2.4, Table 2.7).

Every 6D vector is ordered [linear; angular]: a twist is v = [v; ω], a wrench
f = [f; τ].  A homogeneous transform ``a_H_b`` (4×4) maps coordinates in frame b
to frame a.  The functions here operate on plain numpy arrays.
"""

from __future__ import annotations

import math

import numpy as np

from .arguments import real_array
from .compiled import kernel

_SMALL_ANGLE = 1e-4


def skew(w: np.ndarray) -> np.ndarray:
    """so(3) hat: 3-vector w -> 3×3 matrix w^ with w^ x = w × x."""
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def unskew(W: np.ndarray) -> np.ndarray:
    """so(3) vee: inverse of :func:`skew` (uses the antisymmetric part)."""
    return 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


def hat(twist: np.ndarray) -> np.ndarray:
    """se(3) hat (2.26): twist [v; ω] (6,) -> 4×4 matrix [[ω^, v], [0, 0]]."""
    T = np.zeros((4, 4))
    T[:3, :3] = skew(twist[3:])
    T[:3, 3] = twist[:3]
    return T


def vee(T: np.ndarray) -> np.ndarray:
    """se(3) vee (2.31): inverse of :func:`hat`, returns [v; ω] (6,)."""
    return np.concatenate([T[:3, 3], unskew(T[:3, :3])])


def inverse_transform(H: np.ndarray) -> np.ndarray:
    """Inverse of a homogeneous transform without a general matrix inverse."""
    R, p = H[:3, :3], H[:3, 3]
    Hi = np.eye(4)
    Hi[:3, :3] = R.T
    Hi[:3, 3] = -R.T @ p
    return Hi


def velocity_transform(H: np.ndarray) -> np.ndarray:
    """Velocity transformation a_X_b = Ad(a_H_b) (2.36), 6×6.

    Maps a twist expressed in frame b to the same twist expressed in frame a:
    [[R, p^ R], [0, R]].
    """
    R, p = H[:3, :3], H[:3, 3]
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[:3, 3:] = skew(p) @ R
    X[3:, 3:] = R
    return X


def wrench_transform(H: np.ndarray) -> np.ndarray:
    """Wrench transformation a_X^b for a_H_b, 6×6: maps a wrench expressed in
    frame b to frame a.  Equal to (b_X_a)^T = [[R, 0], [p^ R, R]]."""
    return velocity_transform(inverse_transform(H)).T


def cross_motion(v: np.ndarray) -> np.ndarray:
    """6D cross product v× (2.33) acting on twists: [[ω^, v^], [0, ω^]]."""
    C = np.zeros((6, 6))
    W = skew(v[3:])
    C[:3, :3] = W
    C[:3, 3:] = skew(v[:3])
    C[3:, 3:] = W
    return C


def cross_force(v: np.ndarray) -> np.ndarray:
    """6D dual cross product v×̄* (2.42) acting on wrenches: -(v×)^T."""
    return -cross_motion(v).T


def spatial_inertia(mass: float, com: np.ndarray, inertia_at_com: np.ndarray) -> np.ndarray:
    """6×6 rigid-body inertia at the body frame's origin, [linear; angular] order.

    mass [kg]; com (3,): centre of mass in the body frame [m]; inertia_at_com
    (3×3): rotational inertia about the centre of mass, body-frame axes [kg m²].
    Returns [[m I, -m c^], [m c^, I_c - m c^ c^]], so that the momentum of a
    body with twist [v; ω] is M [v; ω].
    """
    mass = float(real_array(mass, "mass", (), what="a mass in kg"))
    c = skew(real_array(com, "com", (3,), what="centre of mass in the body frame [m]"))
    M = np.zeros((6, 6))
    M[:3, :3] = mass * np.eye(3)
    M[:3, 3:] = -mass * c
    M[3:, :3] = mass * c
    M[3:, 3:] = real_array(inertia_at_com, "inertia_at_com", (3, 3), what="about the centre of mass [kg m²]") \
        - mass * c @ c
    return M


def is_rigid_body_inertia(inertia: np.ndarray) -> bool:
    """Whether the symmetric 6×6 ``inertia`` has the form of :func:`spatial_inertia`,
    [[m 1, −m c^], [m c^, ·]], to RIGID_BODY_TOLERANCE of its largest entry (a body
    lumped from links welded together keeps it to rounding)."""
    inertia = np.asarray(inertia, dtype=float)
    mass, first_moment = inertia[0, 0], np.array([inertia[5, 1], inertia[3, 2], inertia[4, 0]])
    form = np.zeros((6, 6))
    form[:3, :3] = mass * np.eye(3)
    form[3:, :3] = skew(first_moment)
    form[:3, 3:] = -form[3:, :3]
    deviation = np.abs((inertia - form)[:, :3]).max(initial=0.0), np.abs((inertia - form)[:3, 3:]).max(initial=0.0)
    return bool(max(deviation) <= RIGID_BODY_TOLERANCE * np.abs(inertia).max(initial=0.0))


RIGID_BODY_TOLERANCE = 1e-14
"""Relative deviation below which :func:`is_rigid_body_inertia` holds (lumped URDF links: 1e-18)."""


def _series(theta2: float) -> tuple[float, float, float]:
    """(a, b, c) = (sin θ/θ, (1 − cos θ)/θ², (θ − sin θ)/θ³) of θ² = |w|²: exp(w^) = I + a w^ + b w^²
    (Rodrigues) and the SE(3) exponential's V = I + b w^ + c w^²; their Taylor series below |w| = 1e-4."""
    if theta2 < _SMALL_ANGLE**2:
        return 1.0 - theta2 / 6.0, 0.5 - theta2 / 24.0, 1.0 / 6.0 - theta2 / 120.0
    theta = math.sqrt(theta2)
    sin, cos = math.sin(theta), math.cos(theta)
    return sin / theta, (1.0 - cos) / theta2, (theta - sin) / (theta2 * theta)


def _identity_plus(x: float, y: float, z: float, a: float, b: float) -> list:
    """The rows of I + a w^ + b w^ w^ for w = (x, y, z), in plain floats (w^ w^ = w wᵀ − |w|² I,
    entry by entry): numpy's cost per call is most of the time on 3×3 matrices."""
    xy, xz, yz = b * x * y, b * x * z, b * y * z
    return [[1.0 - b * (y * y + z * z), xy - a * z, xz + a * y],
            [xy + a * z, 1.0 - b * (x * x + z * z), yz - a * x],
            [xz - a * y, yz + a * x, 1.0 - b * (x * x + y * y)]]


def so3_exp(w: np.ndarray) -> np.ndarray:
    """Rotation matrix exp(w^) (Rodrigues), accurate for small |w|."""
    x, y, z = np.asarray(w, dtype=float).tolist()
    a, b, _ = _series(x * x + y * y + z * z)
    return np.array(_identity_plus(x, y, z, a, b))


def _quaternion_rows(w: float, x: float, y: float, z: float) -> list:
    """The rows of the rotation matrix of the unit quaternion w + xi + yj + zk, as lists."""
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]


def quaternion_rotation(w: float, x: float, y: float, z: float) -> np.ndarray:
    """Rotation matrix (3×3) of the unit quaternion w + xi + yj + zk (Hamilton, as ROS and
    Eigen use; ROS messages store it in the order x, y, z, w)."""
    return np.array(_quaternion_rows(w, x, y, z))


@kernel(inline=True)
def unit_quaternion_pose_into(w, x, y, z, px, py, pz, H) -> None:
    """H (4×4) of the frame at (px, py, pz) with the orientation of the unit quaternion w + xi + yj + zk,
    as :func:`quaternion_rotation` computes it (the same bits), for compiled callers."""
    H[0, 0], H[0, 1], H[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)
    H[1, 0], H[1, 1], H[1, 2] = 2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)
    H[2, 0], H[2, 1], H[2, 2] = 2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)
    H[0, 3], H[1, 3], H[2, 3] = px, py, pz
    H[3, 0], H[3, 1], H[3, 2], H[3, 3] = 0.0, 0.0, 0.0, 1.0


@kernel
def position_quaternion_pose_into(pose, H) -> bool:
    """H (4×4) of ``pose`` (7,) = position x, y, z then quaternion x, y, z, w (ROS's order), the
    quaternion normalised first, as :func:`quaternion_rotation` of (w, x, y, z)/norm computes it
    (the same bits); False, and H untouched, unless its norm is within 1e-3 of 1."""
    x, y, z, w = pose[3], pose[4], pose[5], pose[6]
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if not abs(norm - 1.0) <= 1e-3:  # (NaN included)
        return False
    unit_quaternion_pose_into(w / norm, x / norm, y / norm, z / norm, pose[0], pose[1], pose[2], H)
    return True


def quaternion_pose(w: float, x: float, y: float, z: float, position) -> np.ndarray:
    """H (4×4) of the frame at ``position`` (x, y, z) with the orientation of the unit quaternion
    w + xi + yj + zk (:func:`quaternion_rotation`), built in one call (a 1 kHz input's cost)."""
    rows = _quaternion_rows(w, x, y, z)
    for row, coordinate in zip(rows, position):
        row.append(coordinate)
    rows.append([0.0, 0.0, 0.0, 1.0])
    return np.array(rows, dtype=float)


def pose_quaternion(H: np.ndarray) -> tuple:
    """Unit quaternion (w, x, y, z) of the rotation of H, w ≥ 0 (Shepperd's method; plain floats:
    numpy's per-call cost on 3×3 is most of the time at 1 kHz)."""
    R = H[:3, :3].tolist()
    trace = R[0][0] + R[1][1] + R[2][2]
    if trace > 0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = [0.25 * s, (R[2][1] - R[1][2]) / s, (R[0][2] - R[2][0]) / s, (R[1][0] - R[0][1]) / s]
    else:
        diagonal = [R[0][0], R[1][1], R[2][2]]
        i = diagonal.index(max(diagonal))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + R[i][i] - R[j][j] - R[k][k])
        q = [0.0] * 4
        q[0] = (R[k][j] - R[j][k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j][i] + R[i][j]) / s
        q[1 + k] = (R[k][i] + R[i][k]) / s
    return tuple(q) if q[0] >= 0 else tuple(-c for c in q)


def so3_log(R: np.ndarray) -> np.ndarray:
    """Rotation vector w with exp(w^) = R, |w| ∈ [0, π]; robust near 0 and π."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = np.asarray(R, dtype=float)[:3, :3].tolist()
    cos_theta = min(max(0.5 * (r00 + r11 + r22 - 1.0), -1.0), 1.0)
    x, y, z = 0.5 * (r21 - r12), 0.5 * (r02 - r20), 0.5 * (r10 - r01)  # = sin(θ) · axis
    sin_theta = math.sqrt(x * x + y * y + z * z)
    theta = math.atan2(sin_theta, cos_theta)
    if theta < _SMALL_ANGLE:
        return (1.0 + theta**2 / 6.0) * np.array([x, y, z])
    if math.pi - theta > 1e-3:
        return theta / sin_theta * np.array([x, y, z])
    # Near π, sin θ loses the axis: R + R^T = 2cosθ I + 2(1 - cosθ) n n^T.
    R = np.asarray(R, dtype=float)[:3, :3]
    B = 0.5 * (R + R.T) - cos_theta * np.eye(3)
    k = int(np.argmax(np.diag(B)))
    n = B[:, k] / np.linalg.norm(B[:, k])
    if n @ np.array([x, y, z]) < 0.0:
        n = -n
    return theta * n


def se3_exp(twist: np.ndarray) -> np.ndarray:
    """SE(3) exponential (2.39) of a twist [v; ω] (6,) -> 4×4 transform."""
    v0, v1, v2, x, y, z = np.asarray(twist, dtype=float).tolist()
    a, b, c = _series(x * x + y * y + z * z)
    R = _identity_plus(x, y, z, a, b)
    V = _identity_plus(x, y, z, b, c)  # the left Jacobian: the translation is V v
    return np.array([R[0] + [V[0][0] * v0 + V[0][1] * v1 + V[0][2] * v2],
                     R[1] + [V[1][0] * v0 + V[1][1] * v1 + V[1][2] * v2],
                     R[2] + [V[2][0] * v0 + V[2][1] * v1 + V[2][2] * v2],
                     [0.0, 0.0, 0.0, 1.0]])


def se3_log(H: np.ndarray) -> np.ndarray:
    """SE(3) logarithm (2.40): 4×4 transform (or its top three rows, 3×4) -> twist [v; ω] with |ω| ≤ π."""
    x, y, z = so3_log(H).tolist()
    theta2 = x * x + y * y + z * z
    if theta2 < _SMALL_ANGLE**2:
        d = 1.0 / 12.0 + theta2 / 720.0
    else:
        theta = math.sqrt(theta2)
        d = (1.0 - theta * math.sin(theta) / (2.0 * (1.0 - math.cos(theta)))) / theta2
    V_inv = _identity_plus(x, y, z, -0.5, d)  # I − ½ w^ + d w^²
    p0, p1, p2 = np.asarray(H, dtype=float)[:3, 3].tolist()
    return np.array([V_inv[0][0] * p0 + V_inv[0][1] * p1 + V_inv[0][2] * p2,
                     V_inv[1][0] * p0 + V_inv[1][1] * p1 + V_inv[1][2] * p2,
                     V_inv[2][0] * p0 + V_inv[2][1] * p1 + V_inv[2][2] * p2, x, y, z])


def se3_exp_many(twists: np.ndarray) -> np.ndarray:
    """:func:`se3_exp` of K twists [v; ω] (K, 6) at once -> (K, 4, 4) (a horizon's knots), in one
    compiled loop (:func:`se3_exp_many_into`)."""
    twists = np.ascontiguousarray(twists, dtype=float).reshape(-1, 6)
    H = np.empty((len(twists), 4, 4))
    se3_exp_many_into(twists, H)
    return H


@kernel
def se3_exp_many_into(twists, H):
    """H[k] = exp(twists[k]^) for twists (K, 6), H (K, 4, 4): R = I + a ω^ + b ω^², t = V v with
    V = I + b ω^ + c ω^², (a, b, c) of :func:`_series` (its Taylor series below |ω| = 1e-4).
    With ω^² = ω ωᵀ − |ω|² I, entry by entry."""
    for k in range(twists.shape[0]):
        v0, v1, v2, x, y, z = twists[k, 0], twists[k, 1], twists[k, 2], twists[k, 3], twists[k, 4], twists[k, 5]
        theta2 = x * x + y * y + z * z
        if theta2 < _SMALL_ANGLE * _SMALL_ANGLE:
            a, b, c = 1.0 - theta2 / 6.0, 0.5 - theta2 / 24.0, 1.0 / 6.0 - theta2 / 120.0
        else:
            theta = math.sqrt(theta2)
            sin, cos = math.sin(theta), math.cos(theta)
            a, b, c = sin / theta, (1.0 - cos) / theta2, (theta - sin) / (theta2 * theta)
        out = H[k]
        xy, xz, yz = b * x * y, b * x * z, b * y * z  # R = I + a ω^ + b ω^²
        out[0, 0], out[0, 1], out[0, 2] = 1.0 - b * (y * y + z * z), xy - a * z, xz + a * y
        out[1, 0], out[1, 1], out[1, 2] = xy + a * z, 1.0 - b * (x * x + z * z), yz - a * x
        out[2, 0], out[2, 1], out[2, 2] = xz - a * y, yz + a * x, 1.0 - b * (x * x + y * y)
        xy, xz, yz = c * x * y, c * x * z, c * y * z  # t = (I + b ω^ + c ω^²) v
        out[0, 3] = (1.0 - c * (y * y + z * z)) * v0 + (xy - b * z) * v1 + (xz + b * y) * v2
        out[1, 3] = (xy + b * z) * v0 + (1.0 - c * (x * x + z * z)) * v1 + (yz - b * x) * v2
        out[2, 3] = (xz - b * y) * v0 + (yz + b * x) * v1 + (1.0 - c * (x * x + y * y)) * v2
        out[3, 0], out[3, 1], out[3, 2], out[3, 3] = 0.0, 0.0, 0.0, 1.0


def se3_log_many(H: np.ndarray) -> np.ndarray:
    """:func:`se3_log` of K transforms (K, 4, 4) (or their top rows, (K, 3, 4)) at once -> (K, 6),
    |ω| ≤ π, in one compiled loop (:func:`se3_log_many_into`)."""
    H = np.ascontiguousarray(H, dtype=float)
    if H.ndim != 3 or H.shape[1:] not in ((4, 4), (3, 4)):
        raise ValueError(f"H: expected K transforms (K, 4, 4) or their top rows (K, 3, 4), got shape {H.shape}")
    twists = np.empty((len(H), 6))
    se3_log_many_into(H, twists)
    return twists


@kernel
def se3_log_many_into(H, twists):
    """twists[k] = log(H[k]) [v; ω] for H (K, 3 or 4, 4), twists (K, 6): ω as :func:`so3_log`
    takes it (sin θ · axis from R − Rᵀ; its series below 1e-4; within 1e-3 of π the axis from
    R + Rᵀ), v = V⁻¹ t with V⁻¹ = I − ½ ω^ + d ω^² as :func:`se3_log`."""
    for k in range(H.shape[0]):
        R = H[k]
        cos_theta = min(max(0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0), -1.0), 1.0)
        x, y, z = 0.5 * (R[2, 1] - R[1, 2]), 0.5 * (R[0, 2] - R[2, 0]), 0.5 * (R[1, 0] - R[0, 1])
        sin_theta = math.sqrt(x * x + y * y + z * z)
        theta = math.atan2(sin_theta, cos_theta)
        if theta < _SMALL_ANGLE:
            scale = 1.0 + theta * theta / 6.0
            x, y, z = scale * x, scale * y, scale * z
        elif math.pi - theta > 1e-3:
            scale = theta / sin_theta
            x, y, z = scale * x, scale * y, scale * z
        else:  # near π, sin θ loses the axis: R + Rᵀ = 2 cos θ I + 2(1 − cos θ) n nᵀ
            best, column = -math.inf, 0
            for c in range(3):
                if R[c, c] - cos_theta > best:
                    best, column = R[c, c] - cos_theta, c
            n0 = 0.5 * (R[0, column] + R[column, 0]) - (cos_theta if column == 0 else 0.0)
            n1 = 0.5 * (R[1, column] + R[column, 1]) - (cos_theta if column == 1 else 0.0)
            n2 = 0.5 * (R[2, column] + R[column, 2]) - (cos_theta if column == 2 else 0.0)
            norm = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
            sign = -1.0 if n0 * x + n1 * y + n2 * z < 0.0 else 1.0
            x, y, z = sign * theta * n0 / norm, sign * theta * n1 / norm, sign * theta * n2 / norm
        theta2 = x * x + y * y + z * z
        if theta2 < _SMALL_ANGLE * _SMALL_ANGLE:
            d = 1.0 / 12.0 + theta2 / 720.0
        else:
            angle = math.sqrt(theta2)
            d = (1.0 - angle * math.sin(angle) / (2.0 * (1.0 - math.cos(angle)))) / theta2
        p0, p1, p2 = R[0, 3], R[1, 3], R[2, 3]
        xy, xz, yz = d * x * y, d * x * z, d * y * z
        twists[k, 0] = (1.0 - d * (y * y + z * z)) * p0 + (xy + 0.5 * z) * p1 + (xz - 0.5 * y) * p2
        twists[k, 1] = (xy - 0.5 * z) * p0 + (1.0 - d * (x * x + z * z)) * p1 + (yz + 0.5 * x) * p2
        twists[k, 2] = (xz + 0.5 * y) * p0 + (yz - 0.5 * x) * p1 + (1.0 - d * (x * x + y * y)) * p2
        twists[k, 3], twists[k, 4], twists[k, 5] = x, y, z


def is_rotation(R: np.ndarray, tol: float = 1e-6) -> bool:
    """True when R is a proper rotation matrix to within ``tol``."""
    R = np.asarray(R)
    return (
        R.shape == (3, 3)
        and bool(np.all(np.isfinite(R)))
        and np.allclose(R.T @ R, np.eye(3), atol=tol)
        and abs(np.linalg.det(R) - 1.0) < tol
    )


def cross_force_operand(wrench: np.ndarray) -> np.ndarray:
    """The matrix B(h) with B(h)·v = v ×̄* h, i.e. v ×̄* h as a linear map of v.

    Needed to differentiate v ×̄* (M v) w.r.t. v (Tables 4.3–4.5).
    """
    B = np.zeros((6, 6))
    B[:3, 3:] = -skew(wrench[:3])
    B[3:, :3] = -skew(wrench[:3])
    B[3:, 3:] = -skew(wrench[3:])
    return B


# In-place forms for the compiled recursive passes: 6-vectors and 6×6 matrices
# as plain arrays, results written into ``out`` (which must not alias inputs).

@kernel(inline=True)
def axpy(alpha, x, y):
    """y += alpha x."""
    for r in range(6):
        y[r] += alpha * x[r]


@kernel(inline=True)
def dot6(x, y):
    """x · y (no BLAS call, unlike ``@`` on 1-D arrays in compiled code)."""
    acc = 0.0
    for r in range(6):
        acc += x[r] * y[r]
    return acc


@kernel(inline=True)
def mat_vec_into(M, x, out):
    """out = M x."""
    for r in range(6):
        acc = 0.0
        for k in range(6):
            acc += M[r, k] * x[k]
        out[r] = acc


@kernel(inline=True)
def skew_entry(x, r, c):
    """Entry (r, c) of x^ (3×3), without forming it."""
    if r == c:
        return 0.0
    if r == 0:
        return -x[2] if c == 1 else x[1]
    if r == 1:
        return x[2] if c == 0 else -x[0]
    return -x[1] if c == 0 else x[0]


@kernel(inline=True)
def transform_motion_into(X, x, out):
    """out = X x for a velocity transform X = [[R, p^R], [0, R]] (its zero block skipped)."""
    for r in range(3):
        acc_l = 0.0
        acc_a = 0.0
        for k in range(3):
            acc_l += X[r, k] * x[k] + X[r, 3 + k] * x[3 + k]
            acc_a += X[3 + r, 3 + k] * x[3 + k]
        out[r] = acc_l
        out[3 + r] = acc_a


@kernel(inline=True)
def transform_force_add(X, f, out):
    """out += X^T f for a velocity transform X: a wrench carried from child to parent."""
    for r in range(3):
        acc_l = 0.0
        acc_a = 0.0
        for k in range(3):
            acc_l += X[k, r] * f[k]
            acc_a += X[k, 3 + r] * f[k] + X[3 + k, 3 + r] * f[3 + k]
        out[r] += acc_l
        out[3 + r] += acc_a


@kernel(inline=True)
def cross_motion_into(v, x, out):
    """out = v × x (2.33)."""
    out[0] = v[4] * x[2] - v[5] * x[1] + v[1] * x[5] - v[2] * x[4]
    out[1] = v[5] * x[0] - v[3] * x[2] + v[2] * x[3] - v[0] * x[5]
    out[2] = v[3] * x[1] - v[4] * x[0] + v[0] * x[4] - v[1] * x[3]
    out[3] = v[4] * x[5] - v[5] * x[4]
    out[4] = v[5] * x[3] - v[3] * x[5]
    out[5] = v[3] * x[4] - v[4] * x[3]


@kernel(inline=True)
def cross_force_into(v, f, out):
    """out = v ×̄* f (2.42)."""
    out[0] = v[4] * f[2] - v[5] * f[1]
    out[1] = v[5] * f[0] - v[3] * f[2]
    out[2] = v[3] * f[1] - v[4] * f[0]
    out[3] = v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1]
    out[4] = v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2]
    out[5] = v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0]


@kernel(inline=True)
def mat_mat_into(A, B, out):
    """out = A B for 6×6 matrices."""
    for r in range(6):
        for c in range(6):
            acc = 0.0
            for k in range(6):
                acc += A[r, k] * B[k, c]
            out[r, c] = acc


@kernel(inline=True)
def transform_product_into(X1, X2, out):
    """out = X1 X2 for velocity transforms [[E, Q], [0, E]] (6×6), their zero blocks skipped: 81
    multiply-adds instead of :func:`mat_mat_into`'s 216, the same sums in the same order."""
    for r in range(3):
        for c in range(3):
            out[r, c] = X1[r, 0] * X2[0, c] + X1[r, 1] * X2[1, c] + X1[r, 2] * X2[2, c]
            out[r, 3 + c] = (X1[r, 0] * X2[0, 3 + c] + X1[r, 1] * X2[1, 3 + c] + X1[r, 2] * X2[2, 3 + c]
                             + X1[r, 3] * X2[3, 3 + c] + X1[r, 4] * X2[4, 3 + c] + X1[r, 5] * X2[5, 3 + c])
            out[3 + r, c] = 0.0
            out[3 + r, 3 + c] = X1[3 + r, 3] * X2[3, 3 + c] + X1[3 + r, 4] * X2[4, 3 + c] + X1[3 + r, 5] * X2[5, 3 + c]


@kernel(inline=True)
def congruence_add(X, M, out, tmp):
    """out += X^T M X (an inertia carried to the parent frame); tmp: 6×6 scratch."""
    mat_mat_into(M, X, tmp)
    for r in range(6):
        for c in range(6):
            acc = 0.0
            for k in range(6):
                acc += X[k, r] * tmp[k, c]
            out[r, c] += acc


@kernel(inline=True)
def inertia_transform_add(X, M, out, tmp):
    """out += Xᵀ M X for a velocity transform X = [[E, Q], [0, E]] (its zero block skipped) and a
    symmetric M (an articulated inertia carried to the parent frame): the upper triangle is
    computed and mirrored, about 250 multiply-adds instead of :func:`congruence_add`'s 432.
    tmp: 6×6 scratch, M X."""
    for r in range(6):
        for c in range(3):
            tmp[r, c] = M[r, 0] * X[0, c] + M[r, 1] * X[1, c] + M[r, 2] * X[2, c]
        for c in range(3, 6):
            acc = 0.0
            for k in range(6):
                acc += M[r, k] * X[k, c]
            tmp[r, c] = acc
    for r in range(3):  # (column r < 3 of X is E's, zero below)
        for c in range(r, 6):
            acc = X[0, r] * tmp[0, c] + X[1, r] * tmp[1, c] + X[2, r] * tmp[2, c]
            out[r, c] += acc
            if c != r:
                out[c, r] += acc
    for r in range(3, 6):
        for c in range(r, 6):
            acc = 0.0
            for k in range(6):
                acc += X[k, r] * tmp[k, c]
            out[r, c] += acc
            if c != r:
                out[c, r] += acc


@kernel(inline=True)
def lu_factor6(M, LU, pivots):
    """LU factorisation with partial pivoting of a 6×6 matrix (e.g. the base's
    articulated inertia, not necessarily positive definite for raw inertias).
    Kept out of LAPACK so the compiled passes never enter threaded BLAS."""
    LU[:] = M
    for k in range(6):
        best = k
        for r in range(k + 1, 6):
            if abs(LU[r, k]) > abs(LU[best, k]):
                best = r
        pivots[k] = best
        if best != k:
            for c in range(6):
                LU[k, c], LU[best, c] = LU[best, c], LU[k, c]
        for r in range(k + 1, 6):
            LU[r, k] /= LU[k, k]
            for c in range(k + 1, 6):
                LU[r, c] -= LU[r, k] * LU[k, c]


@kernel(inline=True)
def lu_solve6(LU, pivots, b, x):
    """x = M⁻¹ b from :func:`lu_factor6`'s factors."""
    x[:] = b
    for k in range(6):
        p = pivots[k]
        x[k], x[p] = x[p], x[k]
    for r in range(6):
        for c in range(r):
            x[r] -= LU[r, c] * x[c]
    for r in range(5, -1, -1):
        for c in range(r + 1, 6):
            x[r] -= LU[r, c] * x[c]
        x[r] /= LU[r, r]
