"""The linear inverted pendulum's sideways sway, which a humanoid's base follows over its soles.

A biped standing on one sole cannot keep its centre of mass still beside it: the centre of mass x
(sideways, [m]) of a pendulum of height z over the centre of pressure p obeys ẍ = ω² (x − p),
ω = √(g / z).  Its divergent component of motion ξ = x + ẋ / ω (the capture point) obeys
ξ̇ = ω (ξ − p) and x follows it, ẋ = −ω (x − ξ) (Englsberger, Ott and Albu-Schäffer, "Three-Dimensional
Bipedal Walking Control Based on Divergent Component of Motion", IEEE T-RO 31(2), 2015, eqs. 5–7).
Of all the motions from a given x, the one that stays bounded while p follows a plan is the one
whose ξ is the plan ahead, discounted: ξ(t) = ω ∫_t^∞ e^(−ω(s−t)) p(s) ds.  That motion is the
base's reference: with it the planned centre of pressure lies where the plan puts it (the middle
of the standing sole), not on the sole's edge, which a reference that does not sway holds it to.
"""

from __future__ import annotations

import math

import numpy as np

from ..arguments import real_array
from ..compiled import kernel


def frequency(height: float, gravity: float) -> float:
    """ω = √(g / z) [1/s] of a pendulum of ``height`` z [m] under ``gravity`` g [m/s²]."""
    return math.sqrt(gravity / height)


def sway(x0: float, pressure: np.ndarray, steps: np.ndarray, omega: float) -> tuple[np.ndarray, np.ndarray]:
    """The bounded sway from ``x0`` [m]: positions x (J,) [m] and velocities ẋ (J,) [m/s] at the times
    t_j = Σ_{i<j} steps_i, for a centre of pressure ``pressure`` (J,) [m] held over each step
    ``steps`` (J,) [s] (p_j from t_j to t_j + steps_j, the last held for ever) and ω ``omega`` [1/s].

    Exact for that piecewise-constant p (module docstring): backwards the bounded ξ, ξ_{J−1} = p_{J−1},
    ξ_j = p_j + (ξ_{j+1} − p_j) e^(−ω Δ_j); forwards from x_0 = x0 over each step, where ξ − p_j grows as
    e^(ωτ), x_{j+1} − p_j = ½ (ξ_j − p_j) e^(ω Δ_j) + (x_j − p_j − ½ (ξ_j − p_j)) e^(−ω Δ_j); and
    ẋ_j = ω (ξ_j − x_j)."""
    pressure = real_array(pressure, "pressure", (-1,), what="a centre of pressure per step [m]", finite=False)
    steps = real_array(steps, "steps", pressure.shape, what="a duration per centre of pressure [s]", finite=False)
    if not len(pressure):
        raise ValueError("pressure: expected at least one centre of pressure, got none")
    x, xi = np.empty(pressure.shape[0]), np.empty(pressure.shape[0])
    sway_into(x0, pressure, np.exp(-omega * steps), x, xi)
    return x, omega * (xi - x)


@kernel
def sway_into(x0: float, pressure: np.ndarray, decay: np.ndarray, x: np.ndarray, xi: np.ndarray) -> None:
    """:func:`sway`'s recurrences: x (J,) and ξ (J,) from x0, p (J,) and decay e^(−ω Δ_j) (J,)."""
    J = pressure.shape[0]
    xi[J - 1] = pressure[J - 1]
    for j in range(J - 2, -1, -1):
        xi[j] = pressure[j] + (xi[j + 1] - pressure[j]) * decay[j]
    x[0] = x0
    for j in range(J - 1):
        # over step j: ξ − p grows as e^(ωτ), x − p as the sum of a decaying and that growing mode
        growing = 0.5 * (xi[j] - pressure[j])
        x[j + 1] = pressure[j] + growing / decay[j] + (x[j] - pressure[j] - growing) * decay[j]
