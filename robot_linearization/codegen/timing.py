"""Whether a generated kernel pays on this machine: its call timed against the generic kernel's it
replaces, on the same state and arrays, in the background build's process (background.py), once per
kernel; the figures go into its record (build.record_timing), and ``kernel="auto"`` hands over only to
a kernel that is faster (robot_linearization.kernel_choice).

Straight-line code stops paying where it outgrows the caches, and where that is depends on the robot,
the contact set and the machine: measured, not guessed from the trace's size."""

from __future__ import annotations

import math
import time

import numpy as np

from ..algorithms.constrained_dynamics import contact_arrays
from ..contact_linearization import constrained_linearize_into
from ..discretization import NO_STEP
from ..free_linearization import linearize_into
from ..impact_map import impact_into
from ..model import Model
from ..spatial import se3_exp
from ..workspace import Workspace

ROUNDS, CALLS = 25, 40
"""Rounds of CALLS calls each, the two kernels interleaved; each kernel's best round counts (a round
that another process interrupted only ever takes longer)."""


def arguments(model: Model, contacts: tuple, kind: str) -> tuple:
    """(state, outputs) a kernel of ``kind`` ("linearize", "impact", "constrained") on ``contacts`` takes,
    of the types its callers pass: the state (pose (4, 4), s (n,), twist (6,), r (n,), τ (n,)) a fixed
    one in motion (a robot at rest lets the generic kernel skip the velocity terms), the outputs
    empty arrays of their shapes (impact_into's, constrained_linearize_into's without a step)."""
    n, N = model.n_joints, model.n_velocities
    rng = np.random.default_rng(0)
    pose = se3_exp(0.1 * rng.normal(size=6)) if model.floating_base else np.eye(4)
    twist = rng.normal(size=6) if model.floating_base else np.zeros(6)
    state = (pose, 0.1 * rng.normal(size=n), twist, rng.normal(size=n), rng.normal(size=n))
    if kind == "linearize":
        return state, (np.empty((2 * N, 2 * N)), np.empty((2 * N, n)), np.empty((N, N)), np.empty(N)) + NO_STEP
    m = contact_arrays(model, contacts).m
    if kind == "impact":
        return state, (np.empty((N, N)), np.empty((2 * N, 2 * N)), np.empty(m), np.empty((m, 2 * N)), np.empty(N))
    return state, (np.empty((2 * N, 2 * N)), np.empty((2 * N, n)), np.empty((N, N)), np.empty(N), np.empty(m),
                   np.empty((m, 2 * N)), np.empty((m, n))) + NO_STEP


def call(kernel, scratch: np.ndarray, state: tuple, outputs: tuple, kind: str) -> int:
    """One call of a generated ``kernel`` (kernels.GeneratedKernel, GeneratedContactKernel) of ``kind``
    with ``scratch`` (its scratch_size,) on :func:`arguments`' ``state`` and ``outputs``; its status."""
    return kernel.call(scratch, state, 0.0, outputs) if kind == "impact" else kernel.call(scratch, state, outputs, 0.0)


FIGURES = ("generated_us", "generic_us")
"""The figures of a verdict (:func:`timings`)."""


def measured(figures) -> bool:
    """Whether ``figures`` (a kernel record's timing) is a verdict :func:`timings` gave: both FIGURES,
    positive finite numbers, or {} where none was possible.  False for None (not timed yet) and for
    anything else (a record cut short or written by another version): such a kernel is timed again."""
    if figures == {}:
        return True
    return isinstance(figures, dict) and set(figures) == set(FIGURES) and all(
        type(value) in (int, float) and math.isfinite(value) and value > 0 for value in figures.values())


def timings(kernel, model: Model, contacts: tuple, kind: str) -> dict | None:
    """{"generated_us": …, "generic_us": …}: the best time per call of the generated ``kernel`` and of
    the generic kernel of ``kind`` on ``contacts`` at :func:`arguments`' state; None where either
    has no result there (a degenerate contact set: no verdict)."""
    state, outputs = arguments(model, contacts, kind)
    scratch, workspace = np.empty(kernel.scratch_size), Workspace(model)
    if kind == "linearize":
        data = workspace.data
        calls = {"generated_us": lambda: call(kernel, scratch, state, outputs, kind),
                 "generic_us": lambda: linearize_into(data, state, outputs, 0.0)}
    else:
        data = contact_arrays(model, contacts).new_data(workspace)[0]
        calls = {"generated_us": lambda: call(kernel, scratch, state, outputs, kind),
                 "generic_us": (lambda: impact_into(data, state, 0.0, outputs)) if kind == "impact"
                 else lambda: constrained_linearize_into(data, state, outputs, 0.0)}
    valid = -1 if kind == "linearize" else 0  # (the status of a result: linearize_state_into's, else 0)
    if any(run() != valid for run in calls.values()):
        return None
    best = dict.fromkeys(calls, np.inf)
    for _ in range(ROUNDS):
        for name, run in calls.items():
            start = time.perf_counter()
            for _ in range(CALLS):
                run()
            best[name] = min(best[name], (time.perf_counter() - start) / CALLS * 1e6)
    return {name: round(float(value), 2) for name, value in best.items()}
