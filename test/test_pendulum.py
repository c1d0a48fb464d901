"""The linear inverted pendulum's bounded sway (walking/pendulum.py), against an ODE solver and the
closed-form periodic walk."""

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from robot_linearization.walking import pendulum

OMEGA = pendulum.frequency(0.9, 9.81)


def test_the_frequency_is_the_square_root_of_gravity_over_height():
    assert OMEGA == pytest.approx(3.3015, abs=1e-4)


def test_the_sway_obeys_the_pendulum_from_where_it_starts():
    """Integrated by scipy from the returned x_0, ẋ_0 under the same piecewise-constant centre of pressure,
    ẍ = ω² (x − p) passes through every returned position and velocity."""
    rng = np.random.default_rng(3)
    steps = rng.uniform(0.005, 0.03, 60)
    pressure = rng.uniform(-0.1, 0.1, 60)
    x, velocity = pendulum.sway(0.02, pressure, steps, OMEGA)
    assert x[0] == 0.02
    times = np.concatenate([[0.0], np.cumsum(steps)])
    y = np.array([x[0], velocity[0]])
    for j in range(59):
        p = pressure[j]
        solution = solve_ivp(lambda t, s: [s[1], OMEGA ** 2 * (s[0] - p)], (times[j], times[j + 1]), y,
                             rtol=1e-12, atol=1e-14)
        y = solution.y[:, -1]
        assert y == pytest.approx([x[j + 1], velocity[j + 1]], abs=1e-10)


def test_a_square_wave_of_pressure_gives_the_periodic_walk():
    """p = +w for T, then −w for T, …: the bounded motion crosses the middle at each switch at the speed
    w ω tanh(ω T / 2) and reaches w (1 − 1 / cosh(ω T / 2)) mid-step (ẍ = ω² (x − p) solved by hand:
    x = w + c cosh(ω (t − T/2)) over a step on +w, with x = 0 at both ends)."""
    w, T, h = 0.08, 0.8, 0.001
    per_step = int(round(T / h))
    pressure = np.tile(np.r_[np.full(per_step, w), np.full(per_step, -w)], 6)
    x, velocity = pendulum.sway(0.0, pressure, np.full(pressure.shape, h), OMEGA)
    switches = np.arange(1, 5) * per_step  # (the plan's end, 8 s later, moves these by e^(−ω 8 s))
    assert np.abs(x[switches]).max() < 1e-9
    speed = w * OMEGA * math.tanh(OMEGA * T / 2)
    assert np.abs(velocity[switches]) == pytest.approx(np.full(4, speed), rel=1e-9)
    assert x[per_step // 2] == pytest.approx(w * (1 - 1 / math.cosh(OMEGA * T / 2)), rel=1e-9)
    # ẋ at the first switch goes from +w's side towards −w: negative (a wrong sign of ω in ξ would not)
    assert velocity[per_step] < 0 < velocity[2 * per_step]


def test_the_sway_stays_bounded_and_settles_over_a_still_pressure():
    x, velocity = pendulum.sway(0.05, np.full(2000, -0.03), np.full(2000, 0.005), OMEGA)
    assert np.abs(x).max() <= 0.05 + 1e-12
    assert x[-1] == pytest.approx(-0.03, abs=1e-9) and velocity[-1] == pytest.approx(0.0, abs=1e-8)


@pytest.mark.parametrize("pressure, steps, message", [
    (np.zeros(3), np.full(2, 0.1), r"^steps: expected shape \(3,\)"),
    (np.zeros((2, 2)), np.full(4, 0.1), r"^pressure: expected a 1-D array"),
    (np.zeros(0), np.zeros(0), r"^pressure: expected at least one centre of pressure, got none$"),
    (["a", "b"], [0.1, 0.1], r"^pressure: expected real numbers")])
def test_arrays_that_do_not_fit_are_refused_in_one_line(pressure, steps, message):
    """A centre of pressure and durations of other lengths, none at all, or not numbers: a ValueError naming
    the argument, before the compiled recurrences read past an array's end."""
    with pytest.raises(ValueError, match=message):
        pendulum.sway(0.0, pressure, steps, OMEGA)


def test_the_sway_takes_any_layout_of_float_arrays():
    """float32, Fortran-ordered, strided and read-only arrays give the sway of their float64 copies."""
    rng = np.random.default_rng(5)
    pressure, steps = rng.normal(0.0, 0.05, 40), np.full(40, 0.02)
    expected = pendulum.sway(0.01, pressure, steps, OMEGA)
    read_only = pressure.copy()
    read_only.flags.writeable = False
    for given in (np.repeat(pressure, 2)[::2], read_only, np.asfortranarray(pressure)):
        np.testing.assert_array_equal(pendulum.sway(0.01, given, steps, OMEGA)[0], expected[0])
    np.testing.assert_allclose(pendulum.sway(0.01, pressure.astype(np.float32), steps, OMEGA)[0], expected[0],
                               atol=1e-7)
