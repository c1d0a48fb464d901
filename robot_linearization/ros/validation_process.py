"""The node's ~/validate computed in a process of its own.

rl.validate (finite differences, inv(CRBA), a dense KKT solve: docs/ros.md, ``~/validate``) is
mostly Python and numpy on small arrays: it holds the interpreter's lock for most of the tens to
hundreds of milliseconds it takes (talos: 0.2 s on a 2-core machine). In the node's process it would
take that lock from the input thread over and over, and a 1 kHz stream would lose inputs for as long
as a validation lasts, although the service never touches the inputs' lock. Here it runs in one
worker process (this module, run with -m), started at the first call and kept for the next ones,
below the node's priority and deaf to the Ctrl-C meant for the node, which ends it by closing its
input. The pickled (model, linearization) go in on its stdin, the pickled report (or the exception)
comes out on a pipe of its own; the caller only waits on that pipe, without the GIL. rclpy-free,
like everything the node does.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import threading
from typing import BinaryIO

from ..own_process import module_command
from ..validation import ComparisonReport, validate

WORKER_NICENESS = 10
"""How far below the node the worker runs: the robot's inputs first, a diagnostic after them."""


class ValidationError(RuntimeError):
    """The validation process could not answer (it could not start, or it ended during the call)."""


class ValidationProcess:
    """``validate(model, linearization)`` as rl.validate computes it, in the worker process; one call
    at a time (thread-safe). ``close()`` ends the worker. A worker that died is said by a
    ValidationError, and the next call starts another."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._worker: subprocess.Popen[bytes] | None = None
        self._answers: BinaryIO | None = None  # (the read end of the worker's answers)

    @property
    def pid(self) -> int | None:
        """The worker's process id (None before the first call, after close() and after it died)."""
        worker = self._worker
        return worker.pid if worker is not None and worker.poll() is None else None

    def validate(self, model, linearization) -> ComparisonReport:
        """rl.validate(model, linearization) (model: Model or CoupledModel; linearization: a
        Linearization of it), computed in the worker; what rl.validate raises is raised here."""
        with self._lock:
            try:
                worker = self._worker
                if worker is None or worker.poll() is not None:
                    worker = self._start()
                requests, answers = worker.stdin, self._answers
                assert requests is not None and answers is not None  # (both piped)
                pickle.dump((model, linearization), requests, protocol=4)
                requests.flush()
                answered, answer = pickle.load(answers)
            except (OSError, EOFError, pickle.UnpicklingError) as error:
                self._end()
                raise ValidationError(f"the validation process ended before it answered ({type(error).__name__}"
                                      f"{': ' + str(error) if str(error) else ''}); the next call starts another"
                                      ) from None
        if not answered:
            raise answer
        return answer

    def close(self) -> None:
        """End the worker (a call under way is answered first)."""
        with self._lock:
            self._end()

    def _start(self) -> subprocess.Popen[bytes]:
        """A new worker.  Its answers come on a pipe of their own, not its stdout, which it shares with
        the node: whatever a library prints there cannot come between them."""
        self._end()
        answers, answers_end = os.pipe()
        try:
            command, environment, directory = module_command("robot_linearization.ros.validation_process")
            worker = subprocess.Popen([*command, str(answers_end)], cwd=directory, env=environment,
                                      stdin=subprocess.PIPE, pass_fds=(answers_end,))
        except BaseException:
            os.close(answers)
            raise
        finally:
            os.close(answers_end)  # (the worker's alone: its end closes when it dies)
        self._worker, self._answers = worker, os.fdopen(answers, "rb")
        return worker

    def _end(self) -> None:
        worker, self._worker = self._worker, None
        answers, self._answers = self._answers, None
        if worker is None:
            return
        requests = worker.stdin
        assert requests is not None and answers is not None  # (both piped)
        try:
            requests.close()  # (its end of the input: the worker returns)
            worker.wait(timeout=5.0)
        except (OSError, subprocess.TimeoutExpired):
            worker.kill()
            worker.wait()
        answers.close()


def main() -> int:
    """The worker: (model, linearization) pickled on stdin, (True, report) or (False, the exception)
    pickled on the file descriptor its argument names, until stdin ends."""
    os.nice(WORKER_NICENESS)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (a terminal's Ctrl-C reaches the node's whole process group)
    requests, answers = sys.stdin.buffer, os.fdopen(int(sys.argv[1]), "wb")
    while True:
        try:
            model, linearization = pickle.load(requests)
        except EOFError:
            return 0
        answer: tuple[bool, ComparisonReport | Exception]
        try:
            answer = (True, validate(model, linearization))
        except Exception as error:  # noqa: BLE001 - the caller's to raise, as rl.validate would have
            answer = (False, error)
        pickle.dump(answer, answers, protocol=4)
        answers.flush()


if __name__ == "__main__":
    sys.exit(main())
