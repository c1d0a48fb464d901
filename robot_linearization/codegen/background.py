"""The build of one generated kernel in a process of its own, at the lowest priority, for a parent
that keeps working meanwhile (robot_linearization.kernel_choice, ``kernel="auto"``): it never holds
the parent's GIL or locks.  The parent writes the pickled (model, contacts, kind, largest trace) to its stdin;
the kernel goes into the cache (build.py: under the kernel's lock, so a second process needing it
waits for this one), then its call is timed against the generic kernel's and the figures kept in its
record (timing.py), where the parent reads whether it pays.  Exit status 0: built (or found) and
timed; REFUSED: it cannot be built here, the reason in one line on stderr.

At most :func:`build_jobs` builds run at once on the machine (slots locked in the cache: an MPC's
contact sets, several robots' nodes), and as many from one process (kernel_choice)."""

from __future__ import annotations

import os
import pickle
import signal
import sys

REFUSED = 3

JOBS_VARIABLE = "ROBOT_LINEARIZATION_BUILD_JOBS"
"""The environment variable that sets :func:`build_jobs` (a whole number ≥ 1)."""


def build_jobs() -> int:
    """How many kernels are built at once: $ROBOT_LINEARIZATION_BUILD_JOBS, else one per core this process
    may run on but one, which the robot's own work keeps (at least one; a compile takes a core and a few
    hundred MB while it runs).  A value that is no whole number ≥ 1 is said on stderr once, and the default
    taken."""
    cores = max(len(os.sched_getaffinity(0)) - 1, 1)
    given = os.environ.get(JOBS_VARIABLE)
    if given is None:
        return cores
    try:
        jobs = int(given)
    except ValueError:
        jobs = 0
    if jobs < 1:
        print(f"robot_linearization: ${JOBS_VARIABLE}={given!r} is no whole number ≥ 1: {cores} build(s) at once",
              file=sys.stderr)
        return cores
    return jobs


def build_elsewhere(model, contacts: tuple, kind: str) -> str | None:
    """Run this module for ``model``'s kernel of ``kind`` on ``contacts`` and wait for it (the wait holds
    no GIL); None when the kernel is in the cache, else why not, in one line."""
    import subprocess

    from ..own_process import module_command
    from . import kernels

    command, environment, directory = module_command("robot_linearization.codegen.background")
    try:
        done = subprocess.run(command, cwd=directory, env=environment, capture_output=True, timeout=1800,
                              input=pickle.dumps((model, contacts, kind, kernels.GENERATED_OPERATIONS), protocol=4))
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"the background build could not run: {error}"
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    if done.returncode == 0:
        return None
    if done.returncode == REFUSED and lines:
        return lines[-1]
    return f"the background build failed (exit status {done.returncode}){': ' + lines[-1] if lines else ''}"


def _stop(signum, frame):
    raise SystemExit(128 + signum)


def main() -> int:
    os.nice(19)  # (the lowest priority: the robot's own work comes first)
    # stopped (SIGTERM), the build ends as on an error: its compiler killed, nothing half-written left
    signal.signal(signal.SIGTERM, _stop)
    model, contacts, kind, largest = pickle.load(sys.stdin.buffer)
    from . import kernels, timing
    from .build import GenerationError, cache_directory, free_slot, record_timing

    kernels.GENERATED_OPERATIONS = largest  # (the parent's bound)

    try:
        # build_jobs() background builds at once on the machine (an MPC's contact sets, several robots'
        # nodes: each its own compiler at once would take every core and gigabytes); the others wait their turn
        with free_slot(os.path.join(cache_directory(), "background"), build_jobs()):
            if not timing.measured(kernels.library(model, contacts, kind).timing):
                kernel = kernels.generated(model, contacts, kind)
                try:
                    figures = timing.timings(kernel, model, contacts, kind) or {}
                except Exception as error:  # noqa: BLE001 - no verdict: the kernel is taken as built
                    print(f"the kernel could not be timed: {type(error).__name__}: {error}", file=sys.stderr)
                    figures = {}
                record_timing(model, contacts, kind, figures)
    except GenerationError as error:
        print(str(error).replace("\n", " "), file=sys.stderr)
        return REFUSED
    return 0


if __name__ == "__main__":
    sys.exit(main())
