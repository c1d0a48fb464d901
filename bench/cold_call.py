"""What a linearization costs a thread that sleeps between calls, as a node's input thread does.

    .venv/bin/python bench/cold_call.py [--robots talos solo12] [--calls 300] [--sleep-ms 1]

Needs the test extra (pin, example-robot-data).  For each robot, at one random state in motion:
an rl.Linearizer with the generated kernel and one with the generic kernel (their arrays allocated
once), and Pinocchio's bare computeABADerivatives on the same state.  Each is timed twice, in
interleaved rounds: calls made back to back (a hot loop, what bench/benchmark.py times), and a
call made right after the thread slept ``--sleep-ms`` (a node at 1 kHz waits about a millisecond for
each joint state).  Prints the median of each, and the second over the first.

A sleeping thread leaves its core idle, and an idle core (a deep C-state; a virtual machine's host
running something else meanwhile) gives its caches up: the call after the sleep fetches its code
and data again.  That, and not the call back to back, is the kernel's cost in a node (docs/ros.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchmark_robots import ROBOTS, PinocchioPipeline, random_states  # noqa: E402

import robot_linearization as rl  # noqa: E402


RUN = 10
"""Back-to-back calls timed together, after one untimed: a hot loop's time per call."""


def timed_calls(calls: dict, count: int, sleep: float) -> dict:
    """{name: (median back to back [s], median after ``sleep`` [s])} of each of ``calls`` ({name: a call
    of no argument}): ``count`` rounds, each path in turn: RUN calls back to back (their mean), then
    one call after the sleep."""
    hot = {name: [] for name in calls}
    cold = {name: [] for name in calls}
    for _ in range(count):
        for name, call in calls.items():
            call()
            start = time.perf_counter()
            for _ in range(RUN):
                call()
            hot[name].append((time.perf_counter() - start) / RUN)
            time.sleep(sleep)
            start = time.perf_counter()
            call()
            cold[name].append(time.perf_counter() - start)
    return {name: (float(np.median(hot[name])), float(np.median(cold[name]))) for name in calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", nargs="*", default=["talos", "solo12"], choices=list(ROBOTS))
    parser.add_argument("--calls", type=int, default=300, help="rounds: cold calls of each path")
    parser.add_argument("--sleep-ms", type=float, default=1.0, help="the sleep before a cold call [ms]")
    args = parser.parse_args()
    if args.calls < 1 or not (0.0 < args.sleep_ms <= 1000.0):
        parser.error("--calls: at least 1; --sleep-ms: in (0, 1000]")
    import pinocchio

    print(f"machine: {os.cpu_count()} cores; {args.calls} rounds of {RUN} calls back to back and a cold call after "
          f"{args.sleep_ms:g} ms of sleep; Pinocchio {pinocchio.__version__}")
    print(f"{'robot':<14}{'path':<34}{'back to back µs':>17}{'after the sleep µs':>20}{'ratio':>8}")
    rng = np.random.default_rng(0)
    for name in args.robots:
        path, floating, options = ROBOTS[name]
        model = rl.load_urdf(path, floating_base=floating, **options)
        state = random_states(model, rng, 1)[0]
        torques = rng.normal(size=model.n_joints)
        generated, generic = rl.Linearizer(model, kernel="generated"), rl.Linearizer(model, kernel="generic")
        reference = PinocchioPipeline(path, model)
        q, v, tau = reference.inputs(state, torques)
        calls = {"rl.Linearizer, generated kernel": lambda: generated.linearize(state, torques),
                 "rl.Linearizer, generic kernel": lambda: generic.linearize(state, torques),
                 f"Pinocchio {pinocchio.__version__} bare": lambda: reference.pipeline.free_bare(q, v, tau)}
        for path_name, (hot, cold) in timed_calls(calls, args.calls, args.sleep_ms * 1e-3).items():
            print(f"{name:<14}{path_name:<34}{hot * 1e6:>17.1f}{cold * 1e6:>20.1f}{cold / hot:>8.2f}")


if __name__ == "__main__":
    main()
