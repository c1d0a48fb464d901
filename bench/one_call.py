"""rl.linearize (the one-line call) against an rl.Linearizer (arrays allocated once) on the same states.

    .venv/bin/python bench/one_call.py [--robots solo12 talos] [--states 5] [--repeat 2000]

Needs the test extra (pin, example-robot-data).  For each robot, free and on the contacts of
bench/benchmark.py's contact rows, with the kernels the default ("auto") runs once the generated ones
have taken over: rl.linearize with its result dropped at once; in a loop that keeps its last result
(``lin = rl.linearize(...)``); the path that allocates every array (linearization.linearize_allocating,
what rl.linearize does when the arrays it lends are all held); and an rl.Linearizer given the same
State: the one whose arrays rl.linearize lends, called directly, so that the difference is the one-line
call's own (two Linearizers of the same model differ by up to 1.5 µs on talos with where their arrays
lie in memory).  Every column is timed in the same interleaved rounds on one core
(pinocchio_pipelines.interleaved_times); prints each column's median µs over the states, and each one
over the Linearizer's.  Each path's A is checked equal to the Linearizer's, bit for bit.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmark import CONTACT_CASES, settle_default_kernels  # noqa: E402
from benchmark_robots import ROBOTS, random_states  # noqa: E402
from pinocchio_pipelines import interleaved_times  # noqa: E402

import robot_linearization as rl  # noqa: E402
from robot_linearization.algorithms.constrained_dynamics import contact_set  # noqa: E402
from robot_linearization.linearization import check_step, linearize_allocating  # noqa: E402
from robot_linearization.linearizer import _lender  # noqa: E402

COLUMNS = ("Linearizer", "linearize", "loop", "allocating")


def row(model, contacts, states, torques, repeat: int) -> tuple[dict, str]:
    """({column: median seconds per call over ``states``}, the kernel the Linearizer ran) of one robot and
    contact set (None: free)."""
    held = contact_set(model, contacts) if contacts else None
    linearizer = _lender(model, contacts, None, None, None, 0.0)._linearizers[0]  # (the one rl.linearize lends first)
    times: dict = {column: [] for column in COLUMNS}
    for state, tau in zip(states, torques):
        last = []

        def loop(state=state, tau=tau):
            last[:] = [rl.linearize(model, state, tau, contacts=contacts)]

        calls = {"Linearizer": functools.partial(linearizer.linearize, state, tau),
                 "linearize": functools.partial(rl.linearize, model, state, tau, contacts=contacts),
                 "loop": loop,
                 "allocating": functools.partial(linearize_allocating, model, state, tau, held, None, 0.0,
                                                 check_step(model, None, None), "auto")}
        reference = linearizer.linearize(state, tau).A.copy()
        loop()
        for column, call in calls.items():
            A = last[0].A if column == "loop" else call().A
            if not np.array_equal(A, reference):
                raise AssertionError(f"{model.name}: {column}'s A differs from the Linearizer's")
        for column, seconds in interleaved_times(calls, repeat).items():
            times[column].append(seconds)
    return {column: float(np.median(t)) for column, t in times.items()}, linearizer.kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", nargs="+", default=["solo12", "talos"], choices=sorted(CONTACT_CASES))
    parser.add_argument("--states", type=int, default=5, help="random states per row (default 5)")
    parser.add_argument("--repeat", type=int, default=2000, help="calls of each column per state (default 2000)")
    args = parser.parse_args()
    if args.states < 1 or args.repeat < 10:
        parser.error("--states must be at least 1 and --repeat at least 10")
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})
    rng = np.random.default_rng(2019)
    us = 1e6
    print(f"rl.linearize against an rl.Linearizer: median µs over {args.states} states, interleaved rounds, one "
          "core; 'loop': a loop that keeps its last result; 'allocating': every array allocated per call")
    print(f"{'robot, row':<24}" + "".join(f"{column:>12}" for column in COLUMNS)
          + "".join(f"{column + ' − L':>16}" for column in COLUMNS[1:]) + "   kernel")
    for name in args.robots:
        path, floating, options = ROBOTS[name]
        model = rl.load_urdf(path, floating_base=floating, **options)
        for contacts in (None, CONTACT_CASES[name]):
            settle_default_kernels(model, contacts)
            states = random_states(model, rng, args.states)
            torques = [rng.normal(size=model.n_joints) for _ in states]
            median, kernel = row(model, contacts, states, torques, args.repeat)
            label = f"{name}, " + (f"{len(contacts)}×{contacts[0].kind}" if contacts else "free")
            print(f"{label:<24}" + "".join(f"{median[column] * us:>12.1f}" for column in COLUMNS)
                  + "".join(f"{(median[column] - median['Linearizer']) * us:>+16.2f}" for column in COLUMNS[1:])
                  + f"   {kernel}")


if __name__ == "__main__":
    main()
