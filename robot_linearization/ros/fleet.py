"""A fleet's bags: the replay of bag.py over many bags, one task per bag, on this
machine's cores (a process pool) or on a Dask cluster (``client.map(replay_bag, bags)``).

replay_bag is the task: a top-level function of its arguments only (no module state, no
working directory), whose result is a small picklable BagResult; a bag that fails is a
result with its reason, never an exception, so one bad bag never stops the others."""

from __future__ import annotations

import concurrent.futures
import glob
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..stopping import Interrupted, raised_again, stop
from .bag import draw_progress, replay

OUTPUT_SUFFIX = "_linearized"
"""A bag's default output is the directory beside it with this suffix: logs/run1 -> logs/run1_linearized."""


@dataclass(frozen=True)
class BagResult:
    """What replay_bag did with one bag (picklable, small).

    ``bag``: the input bag's path; ``output``: the bag written, or None when nothing was written;
    ``messages_read``: the input messages read; ``linearizations``: the Linearization messages
    written; ``error``: why the bag failed, in one line, or None when it succeeded; ``summary``: the
    replay's summary text (ReplaySummary.text()) of a bag that was replayed; ``seconds``: the task's
    wall time [s]."""

    bag: str
    output: str | None
    messages_read: int = 0
    linearizations: int = 0
    error: str | None = None
    summary: str = ""
    seconds: float = 0.0


def default_output(bag: str | os.PathLike) -> str:
    """The output path of ``bag`` (str or path of a bag directory) when none is given:
    beside it, its name with OUTPUT_SUFFIX.  Returns a str; raises nothing."""
    return os.fspath(bag).rstrip("/") + OUTPUT_SUFFIX


def replayed(bag: str | os.PathLike, output: str | os.PathLike | None = None) -> bool:
    """Whether ``bag``'s output (``output``, default: default_output(bag)) is a finished bag: a
    directory with the metadata.yaml its writer writes when it closes (a replay killed while it
    wrote leaves none).  Raises nothing."""
    output = os.fspath(output) if output is not None else default_output(bag)
    return os.path.isfile(os.path.join(output, "metadata.yaml"))


def find_bags(patterns: Sequence[str]) -> list[str]:
    """The bags named by ``patterns`` (sequence of str): each a path, taken as it is, or a
    glob pattern (``*``, ``?``, ``[...]``; expanded here, so a quoted pattern works too), whose
    matches are sorted and kept when they are bag directories (with metadata.yaml) that are
    not a replay's output (their name ends in OUTPUT_SUFFIX).  A bag named twice is taken once.
    Returns the list of paths (str) in the order given; raises ValueError, in one line, for a
    pattern that matches no bag."""
    bags, seen = [], set()
    for pattern in patterns:
        if any(c in pattern for c in "*?["):
            matches = [m.rstrip("/") for m in sorted(glob.glob(os.path.expanduser(pattern)))]
            matches = [m for m in matches if os.path.isfile(os.path.join(m, "metadata.yaml"))
                       and not m.endswith(OUTPUT_SUFFIX)]
            if not matches:
                raise ValueError(f"{pattern} matches no bag (a directory with metadata.yaml)")
        else:
            matches = [pattern.rstrip("/") or pattern]
        for path in matches:
            if os.path.realpath(path) not in seen:
                seen.add(os.path.realpath(path))
                bags.append(path)
    return bags


def replay_bag(bag: str | os.PathLike, output: str | os.PathLike | None = None, *,
               progress: bool | Callable[[int, int], None] = False, **options: Any) -> BagResult:
    """Replay one bag through the node's pipeline (bag.replay) and say how it went.

    ``bag`` (str or path): the ROS 2 bag directory to read.  ``output`` (str, path or None):
    the bag directory to write, which must not exist (default: default_output(bag), beside
    it); an existing path is never touched.  ``progress`` (bool or callable): bag.replay's,
    False for none.  ``options``: bag.replay's other keyword arguments (``urdf``, ``config``,
    topics, rates, ``storage``, ...), all picklable; a ``urdf`` path must be readable where
    this runs.  Returns a BagResult: its ``error`` says in one line why the bag failed (it
    is unreadable, lacks a topic, the URDF is refused, the output exists, no linearization
    came out of it), None if it did not; a failed replay leaves no output behind (but a bag
    that yields no linearization keeps its complete output, whose /diagnostics say why).
    Raises nothing for a bad bag; KeyboardInterrupt and SystemExit (a stop signal) pass,
    after the output being written is removed."""
    start = time.perf_counter()
    bag = os.fspath(bag)
    output = os.fspath(output) if output is not None else default_output(bag)

    def failed(reason: str) -> BagResult:
        return BagResult(bag, None, error=" ".join(reason.split()), seconds=time.perf_counter() - start)

    if os.path.lexists(output):
        return failed(f"{output} exists; it is not replaced (remove it, or choose another output)")
    try:
        summary = replay(bag, output, progress=progress, **options)
    except (ValueError, FileNotFoundError) as e:
        return failed(str(e))
    except Exception as e:  # rosbags' reader errors on a broken bag
        return failed(f"cannot read {bag}: {e}")
    reason = None
    if not summary.outputs:
        problems = sorted(summary.problems.items(), key=lambda kv: -kv[1])
        reason = "no linearization came out of it" + (f" ({problems[0][1]}× {problems[0][0]})" if problems else "")
    return BagResult(bag, output, summary.messages_read, summary.outputs, reason and " ".join(reason.split()),
                     summary.text(), time.perf_counter() - start)


class _FleetProgress:
    """The bar of replay_bags: the finished bags plus the fractions of the running ones."""

    def __init__(self, bags: int):
        self.bags, self.finished, self.failed, self.messages = bags, 0, 0, 0
        self.running: dict[int, tuple[int, int]] = {}  # index -> (messages read, messages to read)
        self.last = 0.0

    def update(self, index: int, done: int, total: int) -> None:
        self.running[index] = (done, total)
        self.draw()

    def finish(self, index: int, result: BagResult) -> None:
        self.running.pop(index, None)
        self.finished += 1
        self.failed += result.error is not None
        self.messages += result.messages_read
        self.draw(force=True)

    def draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self.last < 0.2:
            return
        self.last = now
        partial = sum(done / max(total, 1) for done, total in self.running.values())
        messages = self.messages + sum(done for done, _ in self.running.values())
        draw_progress((self.finished + partial) / max(self.bags, 1),
                      f"{self.finished}/{self.bags} bags" + (f", {self.failed} failed" if self.failed else "")
                      + f", {messages} messages", self.finished == self.bags)


def replay_bags(bags: Sequence[str], *, jobs: int = 1, progress: bool = False,
                **options: Any) -> list[BagResult]:
    """Replay every bag of ``bags`` (sequence of str, bag directories) with replay_bag, each
    into default_output(bag), on ``jobs`` (int >= 1) processes: 1 runs them one after the
    other in this process; more runs a pool of that many (spawned: no fork of a process
    with threads).  ``progress`` (bool): draw a bar of the bags and messages done on stderr.
    ``options``: replay_bag's keyword arguments.  Returns the BagResults in the order of
    ``bags`` (a worker process that dies, killed or out of memory, fails its bag and those
    not yet done).  Raises ValueError for ``jobs`` < 1; on Ctrl-C or a stop signal the
    workers stop too, each removing the bag it was writing, and the interruption is raised."""
    if jobs < 1:
        raise ValueError(f"jobs is {jobs}: at least 1")
    bar = _FleetProgress(len(bags)) if progress else None
    if jobs == 1 or len(bags) == 1:
        results = []
        for index, bag in enumerate(bags):
            report = (lambda done, total, index=index: bar.update(index, done, total)) if bar else False
            results.append(replay_bag(bag, progress=report, **options))
            if bar:
                bar.finish(index, results[-1])
        return results
    return _replay_on_a_pool(bags, min(jobs, len(bags)), bar, options)


def _replay_on_a_pool(bags: Sequence[str], jobs: int, bar: _FleetProgress | None, options: dict) -> list[BagResult]:
    """replay_bags on ``jobs`` spawned processes.  A worker that dies (killed, out of memory) fails
    its bag, and then those not done yet; Ctrl-C or a stop signal here kills the workers.  Either
    way the outputs of the bags a worker had begun and not finished are removed here — only those:
    an output that was there before the run (replay_bag refuses it), or of a bag no worker began,
    is never touched."""
    outputs = [default_output(bag) for bag in bags]
    existed = [os.path.lexists(output) for output in outputs]
    context = multiprocessing.get_context("spawn")
    manager = context.Manager() if bar else None
    messages = manager.Queue() if manager else None
    begun = context.SimpleQueue()  # (the index of each bag a worker begins)
    pool = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker,
                                                  initargs=(begun, os.getpid()))
    futures = []
    try:
        futures = [pool.submit(_pool_task, bag, messages, index, options) for index, bag in enumerate(bags)]
        position = {future: index for index, future in enumerate(futures)}
        pending = set(futures)
        while pending:
            done, pending = concurrent.futures.wait(pending, timeout=0.1 if bar else None,
                                                    return_when=concurrent.futures.FIRST_COMPLETED)
            if bar is None:
                continue
            while messages is not None and not messages.empty():
                bar.update(*messages.get())
            for future in done:
                bar.finish(position[future], _result(future, bags[position[future]]))
        return [_result(future, bag) for future, bag in zip(futures, bags)]
    except BaseException:  # Ctrl-C, a stop signal: no bag is finished after it
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.kill()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if manager:
            manager.shutdown()
        started = set()
        while not begun.empty():
            started.add(begun.get())
        for index, (future, output, was_there) in enumerate(zip(futures, outputs, existed)):
            if index in started and not was_there and future.done() and not future.cancelled() \
                    and future.exception() is not None:
                shutil.rmtree(output, ignore_errors=True)  # its worker died writing it


def _result(future: concurrent.futures.Future, bag: str) -> BagResult:
    try:
        return future.result()
    except concurrent.futures.BrokenExecutor:
        return BagResult(bag, None, error="not replayed: a worker process died (killed, or out of memory) while "
                                          "this or another bag was being replayed")


_begun: Any = None
"""A pool worker's queue of the bags it begins (_start_worker)."""


def _start_worker(begun, parent: int) -> None:
    """A pool's worker of the process ``parent`` (its pid): it says which bag it begins on ``begun`` (a
    SimpleQueue) and ignores Ctrl-C at the terminal (the parent stops the workers).  A stop signal
    (SIGTERM: the pool's own when another worker died) ends it, the bag it was writing removed first
    (bag._new_bag); so does its parent's death, whatever killed the parent, seen within PARENT_WATCH s:
    the worker stops rather than finish a bag nobody waits for, or wait for work forever."""
    global _begun
    _begun = begun
    signal.signal(signal.SIGTERM, stop)  # (as the command line's: raised where the worker is, never swallowed)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.unraisablehook = raised_again(sys.unraisablehook)
    # (the parent's pid as the parent gave it: one that died while this worker started is seen at once)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True, name="parent watch").start()


PARENT_WATCH = 0.2
"""s between a pool worker's looks at whether its parent is alive."""


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_WATCH)
    os.kill(os.getpid(), signal.SIGTERM)


def _pool_task(bag: str, messages, index: int, options: dict) -> BagResult:
    """replay_bag in a pool's worker, its progress sent as (index, done, total) to ``messages``."""
    report = (lambda done, total: messages.put((index, done, total))) if messages is not None else False
    _begun.put(index)
    try:
        return replay_bag(bag, progress=report, **options)
    except Interrupted as stopped:  # (the bag is removed by now; the pool would hand it the next one)
        os._exit(128 + stopped.signum)
