"""Benchmark: the contact margins (robot_linearization/contact_margins.py) against the
linearization they are computed from.

    .venv/bin/python bench/contact_margins.py

Needs the test extra (example-robot-data).  For the bundled quadruped, solo12 (4 point feet)
and talos (2 × 6d soles), world-aligned and local, prints the best-of-5 mean time of
rl.linearize(..., contacts=) and of contact_margins on its result, exact cone and 4-facet
pyramid.  One thread (numpy's BLAS too, as bench/benchmark.py).
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
import sys  # noqa: E402 (BLAS threads first)
import time  # noqa: E402 (BLAS threads first)

import numpy as np  # noqa: E402 (BLAS threads first)

import robot_linearization as rl  # noqa: E402 (BLAS threads first)
from robot_linearization.contact_margins import contact_margins  # noqa: E402 (BLAS threads first)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))
from conftest import load_example, random_state  # noqa: E402


def best_mean_us(function, calls: int = 1000) -> float:
    function()
    best = np.inf
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    cases = []
    for reference in ("world_aligned", "local"):
        cases.append(("rl_quadruped", rl.load_urdf(rl.robots.bundled_urdf_path()),
                      [rl.Contact(f, "point", reference) for f in rl.robots.BUNDLED_FEET], None))
        cases.append(("solo12", load_example("solo12"),
                      [rl.Contact(f, "point", reference) for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")], None))
        cases.append(("talos", load_example("talos"),
                      [rl.Contact(f, "6d", reference) for f in ("left_sole_link", "right_sole_link")], (0.2, 0.1)))
    print(f"{'robot':14s} {'contacts':22s} {'linearize':>10s} {'exact cone':>11s} {'4 facets':>9s}  [µs]")
    for name, model, contacts, sole in cases:
        state, tau = random_state(model, rng), rng.normal(size=model.n_joints)
        lin = rl.linearize(model, state, tau, contacts=contacts)
        linearize = best_mean_us(lambda: rl.linearize(model, state, tau, contacts=contacts))
        exact = best_mean_us(lambda: contact_margins(model, lin, friction=0.7, sole_size=sole))
        pyramid = best_mean_us(lambda: contact_margins(model, lin, friction=0.7, facets=4, sole_size=sole))
        what = f"{len(contacts)} × {contacts[0].kind} {contacts[0].reference}"
        print(f"{name:14s} {what:22s} {linearize:10.0f} {exact:11.0f} {pyramid:9.0f}")


if __name__ == "__main__":
    main()
