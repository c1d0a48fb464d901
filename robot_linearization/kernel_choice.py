"""Which kernel runs a linearization or an impact map: the ``kernel`` argument of rl.linearize,
rl.impact, rl.linearize_trajectory, rl.Linearizer and rl.ImpactMap (and the node's parameter).

- "generic": the compiled passes (free_linearization, contact_linearization, impact_map), from the
  first call, for every model.
- "generated": the kernel generated for the robot and contact set (robot_linearization.codegen:
  straight-line C, equal bit for bit), built now if it is not cached: the call waits for it.
- "auto" (the default, unless $ROBOT_LINEARIZATION_KERNEL says otherwise): the generic kernel
  answers from the first call while the generated one is built in another process at the lowest
  priority (codegen/background.py; it holds neither this process's GIL nor its locks), then loaded
  and warmed on a thread of its own; it takes over at the next call, with the same bits, unless it
  was timed slower than the generic kernel by more than TIMING_SCATTER when it was built
  (codegen/timing.py).  One INFO line on the
  'robot_linearization' logger says when it takes over, or why it does not (no C compiler, a robot
  it does not cover, slower here).

Everything a caller needs is a :class:`Takeover` per model, contact set and kind, shared by the
whole process.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref

import numpy as np

from .arguments import choice
from .compiled import TypedCall
from .codegen import GenerationError, c_compiler, generated, timing
from .codegen.background import build_elsewhere, build_jobs
from .codegen.build import cached
from .model import Model

KERNELS = ("auto", "generic", "generated")
"""The values of every ``kernel`` argument."""

DEFAULT_VARIABLE = "ROBOT_LINEARIZATION_KERNEL"
"""The environment variable that sets what ``kernel=None`` (every default) means: one of KERNELS,
"auto" when unset (e.g. "generic" on a machine that must never compile in the background)."""

_log = logging.getLogger("robot_linearization")
_BUILDING = threading.BoundedSemaphore(build_jobs())
"""Held while this process waits for a background build (Takeover): background.build_jobs() at a time."""


TIMING_SCATTER = 0.1
"""How much slower than the generic kernel a generated one may be timed when it is built and still take over
(the same bits either way): one timing's scatter.  Talos's constrained kernel on both soles, timed 44–47 µs
against the generic 59–61 µs in two builds on one machine, was timed 62.05 against 59.91 in a third; refused,
it left every knot of the walking MPC's horizon on that set to the generic kernel, and the horizon out of its
one compiled call (walking/knots.py)."""

_DEFAULT = os.environ.get(DEFAULT_VARIABLE) or "auto"  # (read once, as numba reads its NUMBA_* variables)


def set_default_kernel(kernel: str) -> None:
    """What ``kernel=None`` means in this process from now on (one of KERNELS), whatever
    $ROBOT_LINEARIZATION_KERNEL said when the package was imported."""
    global _DEFAULT
    _DEFAULT = choice(kernel, "kernel", KERNELS)


def kernel_argument(kernel) -> str:
    """``kernel`` checked: one of KERNELS, or None for the default ($ROBOT_LINEARIZATION_KERNEL as it was
    when the package was imported, else "auto"); ValueError naming it (or the variable)."""
    if kernel is None:
        if _DEFAULT not in KERNELS:
            raise ValueError(f"${DEFAULT_VARIABLE}: expected one of {', '.join(map(repr, KERNELS))}, "
                             f"got {_DEFAULT!r}")
        return _DEFAULT
    return choice(kernel, "kernel", KERNELS)


def describe(model: Model, contacts: tuple, kind: str) -> str:
    """What a generated kernel computes, in words: "constrained linearization of model 'x' on 4 contacts"."""
    on = f" on {len(contacts)} contacts" if contacts else ""
    return {"linearize": "linearization", "impact": "impact map", "constrained": "constrained linearization"}[kind] \
        + f" of model '{model.name}'{on}"


class Takeover:
    """The generated kernel of one model, contact set and kind for ``kernel="auto"``: ``kernel`` is None
    while the generic kernel answers, then the loaded, warmed kernel (kernels.GeneratedKernel or
    GeneratedContactKernel); ``problem`` says why it stays None where it cannot be built."""

    def __init__(self, model: Model, contacts: tuple, kind: str):
        self.kernel = None
        self.problem: str | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._take_over, args=(model, contacts, kind), daemon=True,
                                        name=f"generated {kind} kernel of {model.name}")
        self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the kernel has taken over or cannot (True), at most ``timeout`` seconds."""
        return self._done.wait(timeout)

    def _take_over(self, model: Model, contacts: tuple, kind: str) -> None:
        start = time.monotonic()
        what = describe(model, contacts, kind)
        try:
            if c_compiler() is None:
                raise GenerationError("no C compiler found (set CC, or install gcc)")
            if _untimed(model, contacts, kind):
                with _BUILDING:  # (build_jobs() build processes at a time from this process: the others wait here)
                    problem = build_elsewhere(model, contacts, kind) if _untimed(model, contacts, kind) else None
                if problem is not None:
                    raise GenerationError(problem)
            _check_it_pays(cached(model, contacts, kind))
            kernel = generated(model, contacts, kind)
            _warm(kernel, model, contacts, kind)
        except GenerationError as error:
            self.problem = str(error)
            _log.info("the generic kernel stays for the %s: %s", what, error)
        except Exception as error:  # noqa: BLE001 - never the caller's problem: the generic kernel goes on
            self.problem = f"{type(error).__name__}: {error}"
            _log.info("the generic kernel stays for the %s: %s", what, self.problem)
        else:
            self.kernel = kernel
            _log.info("the generated kernel takes over the %s (ready in %.1f s)", what, time.monotonic() - start)
        finally:
            self._done.set()


def _untimed(model: Model, contacts: tuple, kind: str) -> bool:
    """Whether the kernel is not in the cache yet, or not yet timed against the generic one (or its record's
    timing is no verdict: timed again)."""
    library = cached(model, contacts, kind)
    return library is None or not timing.measured(library.timing)


def _check_it_pays(library) -> None:
    """GenerationError, saying so with the figures, where ``library`` (build.Library) was timed slower
    than the generic kernel by more than TIMING_SCATTER when it was built (codegen/timing.py)."""
    figures = library.timing if library is not None else None
    if figures and figures["generated_us"] > (1.0 + TIMING_SCATTER) * figures["generic_us"]:
        raise GenerationError(f"the generated kernel runs slower here ({figures['generated_us']:.1f} against "
                              f"{figures['generic_us']:.1f} µs per call, timed when it was built)")


def _warm(kernel, model: Model, contacts: tuple, kind: str) -> None:
    """Call ``kernel`` once on arrays of the types its callers pass, so that its numba entry is compiled
    here, on this thread, not in a caller's cycle."""
    state, outputs = timing.arguments(model, contacts, kind)
    scratch = np.empty(kernel.scratch_size)
    timing.call(kernel, scratch, state, outputs, kind)
    if kind == "linearize":
        kernel.call_at(scratch, state, kernel.addresses_of(outputs))
        kernel.call_states(scratch, tuple(x[None] for x in state),
                           tuple(x[None] for x in outputs[:4]) + (np.empty(1, dtype=np.int64), np.empty((0, 0, 0)),
                                                                  np.empty((0, 0, 0))), 0.0)


_takeovers: "weakref.WeakKeyDictionary[Model, dict]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def takeover(model: Model, contacts: tuple, kind: str) -> Takeover:
    """The process's :class:`Takeover` of ``model``'s kernel of ``kind`` ("linearize", "impact",
    "constrained") on ``contacts`` (a tuple of Contact; () for "linearize"), started on first request."""
    with _lock:
        table = _takeovers.setdefault(model, {})
        found = table.get((contacts, kind))
        if found is None:
            found = table[(contacts, kind)] = Takeover(model, contacts, kind)
        return found


def current(model: Model, contacts: tuple, kind: str, kernel: str):
    """The generated kernel ``kernel`` ("auto", "generic", "generated": checked by the caller) asks to run
    now for ``model``'s ``kind`` on ``contacts``: None for the generic one ("generic"; "auto" until the
    generated one has taken over; "generated" where it cannot be built, said once)."""
    if kernel == "generic":
        return None
    table = getattr(model.thread_local, "kernels", None)
    if table is None:
        table = model.thread_local.kernels = {}
    found = table.get((contacts, kind, kernel), _MISSING)
    if found is _MISSING:
        found = takeover(model, contacts, kind) if kernel == "auto" else generated_now(model, contacts, kind)
        table[(contacts, kind, kernel)] = found
    if type(found) is Takeover:
        if not found._done.is_set():
            return None
        found = table[(contacts, kind, kernel)] = found.kernel
    return found


_MISSING = object()


def runnable(model: Model, contacts: tuple, kind: str, kernel: str):
    """:func:`current`'s kernel as this thread runs it, (its scratch, a compiled.TypedCall of its ``call``),
    or None for the generic kernel.  (A control cycle's call: once the kernel has taken over, one lookup.)"""
    if kernel == "generic":
        return None
    try:
        return model.thread_local.runnables[(contacts, kind, kernel)]
    except (AttributeError, KeyError):
        pass
    generated = current(model, contacts, kind, kernel)
    if generated is None:
        return None
    found = (np.empty(generated.scratch_size), TypedCall(generated.call))
    if not hasattr(model.thread_local, "runnables"):
        model.thread_local.runnables = {}
    model.thread_local.runnables[(contacts, kind, kernel)] = found
    return found


def generated_now(model: Model, contacts: tuple, kind: str):
    """``kernel="generated"``: the generated kernel, built now if need be (the caller waits), or None with
    a warning where it cannot be (the generic kernel then runs)."""
    try:
        return generated(model, contacts, kind)
    except GenerationError as error:
        _log.warning("the generic kernel runs: %s", error)
        return None
