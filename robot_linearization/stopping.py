"""Stop signals raised where the program is: Ctrl-C, and what `timeout`, systemd, a launch shutdown or
a closed terminal send, become an exception in the main thread, so that every output being written is
removed by the code that started it.  For the command line (cli.py) and a replay's pool workers
(ros/fleet.py)."""

from __future__ import annotations

import os
import signal
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Handled alike: Ctrl-C, and what `timeout`, systemd, a launch shutdown or a closed terminal send."""


class Interrupted(KeyboardInterrupt):
    """A stop signal, raised where the program is, so that every output being written
    is removed by the code that started it (as on Ctrl-C); exit status 128 + signum."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def stop(signum, frame):
    """The handler of STOP_SIGNALS: Interrupted(signum), every stop signal ignored from then on."""
    for other in STOP_SIGNALS:  # the clean-up that follows is not interrupted in turn
        signal.signal(other, signal.SIG_IGN)
    raise Interrupted(signum)


def raised_again(hook):
    """sys.unraisablehook: a stop signal's Interrupted that Python swallowed — raised in a weakref
    callback, a __del__ or a ctypes callback the signal happened to land in, which Python only reports — is
    sent again 10 ms later (from a thread: sent from here, it would land in this hook, which swallows it too),
    so that it is raised where the program is by then; anything else goes to ``hook``."""
    def unraisable(report) -> None:
        if isinstance(report.exc_value, Interrupted):
            signum = report.exc_value.signum
            signal.signal(signum, stop)
            again = threading.Timer(0.01, os.kill, (os.getpid(), signum))
            again.daemon = True
            again.start()
        else:
            hook(report)
    return unraisable
