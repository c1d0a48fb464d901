"""Closing rqt on Ctrl-C and SIGTERM, exactly once, whichever path comes first: a signal, rqt's own
close (its window's button, or qt_gui unloading the view), or rclpy's context ending.

qt_gui closes its main window in two passes: the first close event saves the perspective and shuts
every plugin down, then closes the window again.  A second close() from elsewhere in between
(the signal's path and the context's path both asking) lets the dock widgets unload the plugin a
second time, which fails in qt_gui ("disconnect() failed between 'close_signal' and
'unload_plugin'") and leaves rqt hung.  So rqt's window is closed here once per process, and not
at all once rqt has begun closing it itself.

Nor while qt_gui loads the view.  rqt's entry (robot_linearization_rqt) takes the signals before the
view is imported, and a signal that came while the view was imported or made closes rqt once the
view is there.  A close by qt_gui's own Ctrl-C handler, rqt's until then (a signal just before the
import), cannot shut the loading plugin down, and qt_gui, which keeps one pending callback per
plugin, loses the end of the load, which connects the view's unloading: the window stays marked as
closing and rqt runs on, deaf to later signals.  The view, once made, takes the mark off, and the
close is made again on the event loop, the unloading connected first.  rclpy-free: only Qt and the
signal module.
"""

from __future__ import annotations

import signal
import threading

from .qt import QtCore, QtWidgets


class CloseOnSignal:
    """SIGINT and SIGTERM as a close of rqt's window: each open view shuts down (its timers, then
    its subscription), and rqt's main window is closed (:func:`close_rqt`), which tears its plugins
    and nodes down in order.  Installed over the handlers rclpy and rclcpp put in place (which end
    their contexts from a thread of theirs while rqt's main thread and executor still use them: an
    abort or a segfault; and rclcpp's logs inside the signal handler: a hang), by rqt's entry before
    the view is imported (:meth:`take_over`), else as the first view is made; the Python handler runs
    on the main thread at the next bytecode and leaves the closing to the event loop's next turn.  The
    handlers found are put back when the last view closes.  A view: ``node`` (its logger),
    ``shutdown_plugin()``, and qt_gui's plugin context as its Qt parent."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.views: list = []
        self.previous: dict = {}  # the handlers found, while ours are installed
        self.pending: list = []  # signals that came before a view was made

    def take_over(self, previous: dict, received: list) -> None:
        """From rqt's entry, on the main thread: the handlers it found (signal number -> handler) and
        the list its own handler appended the signals to while the view was imported."""
        self.previous, self.pending = previous, received
        for number in self.SIGNALS:
            signal.signal(number, self.close)

    def add(self, view) -> None:
        """A view being made (inside qt_gui's load: nothing is closed here)."""
        if threading.current_thread() is not threading.main_thread():
            return  # (Python sets signal handlers from the main thread only)
        if not self.previous:
            self.previous = {number: signal.signal(number, self.close) for number in self.SIGNALS}
        self.views.append(view)
        interrupted = _unmark_interrupted_close()
        if interrupted:
            _interrupted_loads.append(view.parent().parent())
        if interrupted or self.pending:
            name = signal.Signals(self.pending[0]).name if self.pending else "SIGINT"
            self.pending.clear()
            view.node.get_logger().info(f"{name} while rqt was loading the view: closing the view and rqt")
            QtCore.QTimer.singleShot(0, self._close_now)

    def remove(self, view) -> None:
        if view in self.views:
            self.views.remove(view)
            if not self.views:
                for number, handler in self.previous.items():
                    signal.signal(number, handler if handler is not None else signal.SIG_DFL)
                self.previous = {}

    def close(self, number, frame) -> None:
        """The handler: it may run between any two bytecodes of the main thread, also inside Qt's or
        qt_gui's Python, so the closing itself is left to the event loop's next turn.  Before a view
        is made (rqt still imports or makes it) the signal is kept for the view (:meth:`add`)."""
        if not self.views:
            self.pending.append(number)
            return
        for view in self.views:
            view.node.get_logger().info(f"{signal.Signals(number).name}: closing the view and rqt")
        QtCore.QTimer.singleShot(0, self._close_now)

    def _close_now(self) -> None:
        for view in list(self.views):
            view.shutdown_plugin()
        close_rqt()


_closed_by_us = False  # close_rqt has closed rqt's window in this process
_interrupted_loads: list = []  # qt_gui's plugin handlers of views made while the window was marked


def close_rqt() -> None:
    """Close rqt's main window, as its close button does — once per process, and not while rqt is
    closing it already (its first close event has run): qt_gui then saves the perspective, shuts its
    plugins and their nodes down in order, and quits.  (Quitting the event loop under the window
    instead ends in a segfault: the dock widgets' hide events reach a toolbar already gone.)  From
    rqt's event loop only, not while qt_gui loads a plugin."""
    global _closed_by_us
    if _closed_by_us:
        return
    _closed_by_us = True
    for handler in _interrupted_loads:  # what the end of their load would have connected
        if not handler.receivers(handler.close_signal):
            handler.close_signal.connect(handler.parent().unload_plugin)
    windows = _main_windows()
    for window in windows:
        # qt_gui's MainWindow marks its first close event (it saves, shuts the plugins down, then closes
        # itself again): a window rqt is closing already is left to it
        if window.isVisible() and not getattr(window, "_save_on_close_signaled", False):
            window.close()
    if not windows:
        QtCore.QCoreApplication.quit()


def _unmark_interrupted_close() -> bool:
    """Whether rqt's main window is marked as closing while a view is being made: a close that came
    while rqt was starting, which qt_gui cannot finish (the module's docstring).  The mark is taken
    off, so that :func:`close_rqt` closes the window."""
    marked = [window for window in _main_windows() if getattr(window, "_save_on_close_signaled", False)]
    for window in marked:
        window._save_on_close_signaled = False
    return bool(marked)


def _main_windows() -> list:
    return [w for w in QtWidgets.QApplication.topLevelWidgets() if isinstance(w, QtWidgets.QMainWindow)]


CLOSE_ON_SIGNAL = CloseOnSignal()
