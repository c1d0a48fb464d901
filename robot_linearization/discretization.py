"""The exact Jacobians of one integrator step on SE(3)×ℝⁿ×ℝ⁶×ℝⁿ (what an MPC consumes).

The step is integrator.py's semi-implicit (symplectic) Euler, with ν̇ from the forward
dynamics (with contacts: the constrained ones):

    ν⁺ = ν + dt·ν̇(x, τ),   H⁺ = H·exp(dt·v⁺^),   s⁺ = s + dt·r⁺

With the left-trivialised perturbation z of :mod:`robot_linearization.linearization`
on both sides, x⁺ + z⁺ = step(x + z, τ + w) gives z⁺ = A_d z + B_d w with

    δν⁺  = z_ν + dt (A[ν̇ rows] z + B[ν̇ rows] w)
    z_s⁺ = z_s + dt δr⁺
    z_H⁺ = Ad(exp(−dt v⁺)) z_H + dt J_r(dt v⁺) δv⁺

where J_r is the right Jacobian of the SE(3) exponential, exp(ξ + δ) = exp(ξ)·exp(J_r(ξ) δ),
in closed form — exact, not I + A·dt (which is only its first order).  docs/discretization.md.

The zero-order hold of the continuous (A, B) is offered too (``method="zoh"``): the exact
flow of ż = A z + B w over dt with w held, by one matrix exponential.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import expm

from .arguments import check_linearization, choice, positive_number, real_array
from .compiled import kernel
from .coupling import AnyModel
from .model import State



class Linearized(Protocol):
    """What :func:`discretize` reads of a linearization: a :class:`~robot_linearization.Linearization`
    (one state or a horizon) or a filled :class:`~robot_linearization.Linearizer` (the layer above
    this one, which it does not import)."""

    @property
    def A(self) -> NDArray[np.float64]: ...

    @property
    def B(self) -> NDArray[np.float64]: ...

    @property
    def base_acceleration(self) -> NDArray[np.float64] | None: ...

    @property
    def state(self) -> State | tuple[State, ...] | None: ...

METHODS = ("euler", "zoh")
"""discretize's methods: the Jacobians of integrator.step (semi-implicit Euler), or the
zero-order hold of the continuous (A, B)."""


@kernel(inline=True)
def _skew_into(x, M):
    """M (3, 3) = x^."""
    M[0, 0], M[0, 1], M[0, 2] = 0.0, -x[2], x[1]
    M[1, 0], M[1, 1], M[1, 2] = x[2], 0.0, -x[0]
    M[2, 0], M[2, 1], M[2, 2] = -x[1], x[0], 0.0


@kernel(inline=True)
def _mm3_into(X, Y, out):
    """out = X Y for 3×3 matrices, in loops (no BLAS call from compiled code)."""
    out[:] = 0.0
    for i in range(3):
        for k in range(3):
            for j in range(3):
                out[i, j] += X[i, k] * Y[k, j]


@kernel
def se3_right_jacobian_into(xi: NDArray[np.float64], J: NDArray[np.float64]) -> None:
    """J (6, 6) = J_r(ξ) for a twist ξ = [ρ; φ]: exp(ξ + δ) = exp(ξ)·exp(J_r(ξ) δ) to first order.

    J_r(ξ) = J_l(−ξ) = Σ_k (−ad_ξ)^k/(k+1)!, in closed form [[J(−φ), Q(−ρ, −φ)], [0, J(−φ)]]
    with J the SO(3) left Jacobian and Q Barfoot's (State Estimation for Robotics, (7.86))."""
    rho, phi = -xi[:3], -xi[3:]
    theta2 = phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]
    if theta2 < 1e-2:  # series to θ⁶: the closed forms below cancel digits as θ → 0
        a = 0.5 - theta2 / 24.0 * (1.0 - theta2 / 30.0 * (1.0 - theta2 / 56.0))
        b = 1.0 / 6.0 - theta2 / 120.0 * (1.0 - theta2 / 42.0 * (1.0 - theta2 / 72.0))
        c = 1.0 / 24.0 - theta2 / 720.0 * (1.0 - theta2 / 56.0 * (1.0 - theta2 / 90.0))
        d = 1.0 / 120.0 - theta2 / 2520.0 * (1.0 - theta2 / 48.0 * (1.0 - 2.0 * theta2 / 165.0))
    else:
        theta = np.sqrt(theta2)
        half = np.sin(0.5 * theta)
        a = 2.0 * half * half / theta2  # (1 − cos θ)/θ², without its cancellation
        b = (theta - np.sin(theta)) / (theta2 * theta)
        c = (0.5 - a) / theta2  # (θ²/2 + cos θ − 1)/θ⁴
        d = 0.5 * (3.0 * (b - 1.0 / 6.0) / theta2 + c)  # ((θ − sin θ − θ³/6)·3/θ⁵ − (1 − θ²/2 − cos θ)/θ⁴)/2
    M = np.empty((10, 3, 3))  # (one allocation for the ten 3×3 products)
    P, R, PP, PR, RP, PRP, PPR, RPP, PRPP, PPRP = M[0], M[1], M[2], M[3], M[4], M[5], M[6], M[7], M[8], M[9]
    _skew_into(phi, P)
    _skew_into(rho, R)
    _mm3_into(P, P, PP)
    _mm3_into(P, R, PR)
    _mm3_into(R, P, RP)
    _mm3_into(PR, P, PRP)
    _mm3_into(PP, R, PPR)
    _mm3_into(RP, P, RPP)
    _mm3_into(PRP, P, PRPP)
    _mm3_into(P, PRP, PPRP)
    J[:] = 0.0
    for i in range(3):
        for j in range(3):
            J[i, j] = J[3 + i, 3 + j] = (1.0 if i == j else 0.0) + a * P[i, j] + b * PP[i, j]
            J[i, 3 + j] = (0.5 * R[i, j] + b * (PR[i, j] + RP[i, j] + PRP[i, j])
                           + c * (PPR[i, j] + RPP[i, j] - 3.0 * PRP[i, j]) + d * (PRPP[i, j] + PPRP[i, j]))  # Q


@kernel
def exp_adjoint_into(xi: NDArray[np.float64], X: NDArray[np.float64]) -> None:
    """X (6, 6) = Ad(exp(ξ)) = [[R, p^R], [0, R]] for a twist ξ = [ρ; φ] (2.36, 2.39)."""
    phi = xi[3:]
    theta2 = phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]
    if theta2 < 1e-8:
        sa, a, b = 1.0 - theta2 / 6.0, 0.5 - theta2 / 24.0, 1.0 / 6.0 - theta2 / 120.0
    else:
        theta = np.sqrt(theta2)
        sa, a, b = np.sin(theta) / theta, (1.0 - np.cos(theta)) / theta2, (theta - np.sin(theta)) / (theta2 * theta)
    M = np.empty((5, 3, 3))  # (one allocation for the 3×3 matrices)
    P, PP, R, p_hat, pR = M[0], M[1], M[2], M[3], M[4]
    _skew_into(phi, P)
    _mm3_into(P, P, PP)
    p = np.zeros(3)
    for i in range(3):
        for j in range(3):
            R[i, j] = (1.0 if i == j else 0.0) + sa * P[i, j] + a * PP[i, j]
            p[i] += ((1.0 if i == j else 0.0) + a * P[i, j] + b * PP[i, j]) * xi[j]  # V ρ
    _skew_into(p, p_hat)
    _mm3_into(p_hat, R, pR)
    X[:] = 0.0
    for i in range(3):
        for j in range(3):
            X[i, j] = X[3 + i, 3 + j] = R[i, j]
            X[i, 3 + j] = pR[i, j]


@kernel
def euler_step_jacobians_into(A: NDArray[np.float64], B: NDArray[np.float64], base_twists: NDArray[np.float64],
                              base_accelerations: NDArray[np.float64], floating_base: bool, dt: float,
                              A_d: NDArray[np.float64], B_d: NDArray[np.float64]) -> None:
    """A_d (K, 2N, 2N), B_d (K, 2N, n): the Jacobians of integrator.step from the continuous
    A (K, 2N, 2N), B (K, 2N, n) and, for a floating base, the twists v (K, 6) and
    accelerations v̇ (the first six columns of base_accelerations, (K, ≥ 6)) they were
    evaluated at (module docstring)."""
    N = A.shape[1] // 2
    off = 6 if floating_base else 0
    J, X = np.empty((6, 6)), np.empty((6, 6))
    xi = np.empty(6)
    for k in range(A.shape[0]):
        Ad, Bd = A_d[k], B_d[k]
        for i in range(N):  # δν⁺ = z_ν + dt (A z + B w)
            for j in range(2 * N):
                Ad[N + i, j] = dt * A[k, N + i, j]
            Ad[N + i, N + i] += 1.0
            for j in range(B.shape[2]):
                Bd[N + i, j] = dt * B[k, N + i, j]
        for i in range(off, N):  # z_s⁺ = z_s + dt δr⁺
            for j in range(2 * N):
                Ad[i, j] = dt * Ad[N + i, j]
            Ad[i, i] += 1.0
            for j in range(B.shape[2]):
                Bd[i, j] = dt * Bd[N + i, j]
        if not floating_base:
            continue
        for i in range(6):  # z_H⁺ = Ad(exp(−dt v⁺)) z_H + dt J_r(dt v⁺) δv⁺
            xi[i] = dt * (base_twists[k, i] + dt * base_accelerations[k, i])
        se3_right_jacobian_into(xi, J)
        exp_adjoint_into(-xi, X)
        for i in range(6):
            for j in range(2 * N):
                total = 0.0
                for m in range(6):
                    total += J[i, m] * Ad[N + m, j]
                Ad[i, j] = dt * total
            for j in range(6):
                Ad[i, j] += X[i, j]
            for j in range(B.shape[2]):
                total = 0.0
                for m in range(6):
                    total += J[i, m] * Bd[N + m, j]
                Bd[i, j] = dt * total


@kernel
def euler_step_into(A: NDArray[np.float64], B: NDArray[np.float64], twist: NDArray[np.float64],
                    accelerations: NDArray[np.float64], floating_base: bool, dt: float, A_d: NDArray[np.float64],
                    B_d: NDArray[np.float64]) -> None:
    """:func:`euler_step_jacobians_into` of one state: A_d (2N, 2N), B_d (2N, n) from A (2N, 2N),
    B (2N, n), the base twist v (6,) and ν̇ (N,) (its first six entries v̇ for a floating base)."""
    N, n = A.shape[0] // 2, B.shape[1]
    euler_step_jacobians_into(A.reshape((1, 2 * N, 2 * N)), B.reshape((1, 2 * N, n)), twist.reshape((1, 6)),
                              accelerations.reshape((1, N)), floating_base, dt, A_d.reshape((1, 2 * N, 2 * N)),
                              B_d.reshape((1, 2 * N, n)))


NO_STEP = (np.empty((0, 0)),) * 2
"""euler_step_into's A_d, B_d for a one-state kernel asked for no step (shared, never written)."""


def se3_right_jacobian(xi: ArrayLike) -> NDArray[np.float64]:
    """J_r(ξ) (6, 6) of a twist ξ = [v; ω] (:func:`se3_right_jacobian_into`)."""
    J = np.empty((6, 6))
    se3_right_jacobian_into(real_array(xi, "xi", (6,), what="a twist [v; ω]"), J)
    return J


def discretize(model: AnyModel, linearization: Linearized, dt: float, method: str = "euler"
               ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(A_d, B_d): the discrete-time linearization over one step of ``dt`` [s] at the
    state(s), torques (and contacts) of ``linearization``; z⁺ = A_d z + B_d w, with z
    left-trivialised on both sides.  Shapes as A and B: (2N, 2N), (2N, n), with a
    leading K axis for a horizon.  (``rl.linearize(..., dt=)`` fills the same in.)

    method "euler": the exact Jacobians of :func:`step` (semi-implicit Euler on the
    Lie group); "zoh": the zero-order hold of the continuous (A, B), i.e.
    expm([[A, B], [0, 0]]·dt) = [[A_d, B_d], [0, I]].  At a touchdown knot (linearization.impact)
    A_d is composed with the impact map's Jacobian, as :func:`linearize` does (docs/impacts.md).

    ``model``: the model ``linearization`` was computed on.
    """
    check_linearization(model, linearization)
    dt, method = positive_number(dt, "dt", "seconds"), choice(method, "method", METHODS)
    state, jump = linearization.state, getattr(linearization, "impact", None)
    if state is None:
        raise ValueError("linearization: remembers no state (a Linearizer before its first call)")
    single = isinstance(state, State)
    states, impacts = ((state,), (jump,)) if isinstance(state, State) else (state, jump or (None,) * len(state))
    evaluated = [s if i is None else i.state for s, i in zip(states, impacts)]
    base_acceleration = linearization.base_acceleration if model.floating_base else None
    twists = None if base_acceleration is None else np.array([s.base_twist for s in evaluated])
    A_d, B_d = step_jacobians(linearization.A.reshape((-1,) + linearization.A.shape[-2:]),
                              linearization.B.reshape((-1,) + linearization.B.shape[-2:]), twists,
                              None if base_acceleration is None else np.reshape(base_acceleration, (-1, 6)), dt,
                              method)
    for k, i in enumerate(impacts):  # a touchdown knot: the step from the post-impact state (docs/impacts.md)
        if i is not None:
            A_d[k] = A_d[k] @ i.A
    return (A_d[0], B_d[0]) if single else (A_d, B_d)


def step_jacobians(A: NDArray[np.float64], B: NDArray[np.float64], base_twists: NDArray[np.float64] | None,
                   base_accelerations: NDArray[np.float64] | None, dt: float, method: str = "euler"
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(A_d, B_d) from the continuous A (2N, 2N), B (2N, n) and, for a floating base, the
    twist v and acceleration v̇ (6,) where they were evaluated (None for a fixed base);
    every array may have a leading K axis (:func:`discretize`)."""
    if method == "zoh":
        return zero_order_hold(A, B, dt)
    K = 1 if A.ndim == 2 else A.shape[0]
    A_d, B_d = np.empty((K,) + A.shape[-2:]), np.empty((K,) + B.shape[-2:])
    floating = base_twists is not None
    if base_twists is None:
        twists = accelerations = np.zeros((K, 6))
    elif base_accelerations is None:
        raise ValueError("base_accelerations: a floating base's step needs them, as well as base_twists")
    else:
        twists, accelerations = np.reshape(base_twists, (K, 6)), np.reshape(base_accelerations, (K, 6))
    euler_step_jacobians_into(A.reshape(A_d.shape), B.reshape(B_d.shape), twists, accelerations, floating, dt,
                              A_d, B_d)
    return (A_d[0], B_d[0]) if A.ndim == 2 else (A_d, B_d)


def zero_order_hold(A: NDArray[np.float64], B: NDArray[np.float64], dt: float
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(A_d, B_d) = the flow of ż = A z + B w over dt with w held: expm([[A, B], [0, 0]]·dt)
    = [[A_d, B_d], [0, I]].  A (2N, 2N) and B (2N, n), or with a leading K axis."""
    if A.ndim == 3:
        pairs = [zero_order_hold(a, b, dt) for a, b in zip(A, B)]
        return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
    M, n = A.shape[0], B.shape[1]
    block = np.zeros((M + n, M + n))
    block[:M, :M], block[:M, M:] = A * dt, B * dt
    flow = expm(block)
    return flow[:M, :M], flow[:M, M:]
