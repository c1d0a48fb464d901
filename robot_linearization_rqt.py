"""rqt's entry to robot_linearization's view (plugin.xml names LinearizationPlugin here): Ctrl-C and
SIGTERM are taken before the view is imported.

Importing the view loads the package (numba, the kernels: about a second).  Until a Python handler
is in place, a signal meets the handlers rclcpp and rclpy installed as rqt started, and rclcpp's logs
from inside the signal handler: should the signal interrupt rqt's main thread while it holds a lock
that logging takes (stdio's, malloc's), rqt hangs for good (ros2/rclcpp#2982; rclcpp releases up to
late 2025 have it).  So this module imports nothing of the package before it has put a handler that
only remembers the signal in their place; the view's closing (robot_linearization/rqt/closing.py)
then takes over, and a signal remembered closes rqt once the view is made.
"""

import signal
import threading

RECEIVED: list = []
"""The signals (numbers) that came while the view was imported."""
PREVIOUS: dict = {}
"""The handlers found (signal number -> handler), put back when the last view closes."""
if threading.current_thread() is threading.main_thread():  # (Python sets handlers from the main thread only)
    PREVIOUS = {number: signal.signal(number, lambda number, frame: RECEIVED.append(number))
                for number in (signal.SIGINT, signal.SIGTERM)}

from robot_linearization.rqt.closing import CLOSE_ON_SIGNAL  # noqa: E402 - after the handlers, on purpose
from robot_linearization.rqt.plugin import LinearizationPlugin  # noqa: E402

if PREVIOUS:
    CLOSE_ON_SIGNAL.take_over(PREVIOUS, RECEIVED)

__all__ = ["LinearizationPlugin"]
