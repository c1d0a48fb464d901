"""What the rqt view takes in (rclpy-free): its ``--args``, and the newest message of
each topic, for a view that draws at its own rate.

Subscriptions at the node's rate (1 kHz) only ``put`` what arrives (serialized
bytes: nothing is decoded in between); the view ``take``s at most ~10 times a second
and decodes only what it draws, so the messages in between cost nothing but
their arrival."""

from __future__ import annotations

import argparse
import threading

from .heatmap import SCALES
from .matrices import BY_TOPIC

DRAW_PERIOD_S = 0.1
"""The view draws at most this often (10 Hz), whatever the input rate."""


class LatestMessages:
    """Thread-safe {topic: newest message}; ``take`` hands over what is new since the last take."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._new: dict = {}

    def put(self, topic: str, message) -> None:
        with self._lock:
            self._new[topic] = message

    def take(self) -> dict:
        with self._lock:
            new, self._new = self._new, {}
        return new

    def clear(self) -> None:
        with self._lock:
            self._new = {}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # inside rqt: no exit, the view shows the message
        raise ValueError(f"{self.prog}: {message}")


def plugin_arguments(argv) -> argparse.Namespace:
    """The plugin's ``--args``: ``--node NAMESPACE`` (followed once it appears),
    ``--matrix TOPIC`` (shown first: A, B, M_inv, A_d, …), ``--scale log|linear``.
    A wrong one is a ValueError of one line naming it."""
    parser = _Parser(prog="rqt --standalone robot_linearization/Linearization --args", add_help=False)
    parser.add_argument("--node", default=None, help="namespace of the linearization node, e.g. /robot_linearization")
    parser.add_argument("--matrix", default="A", choices=list(BY_TOPIC), help="the matrix shown first")
    parser.add_argument("--scale", default="log", choices=SCALES)
    return parser.parse_args(argv)
