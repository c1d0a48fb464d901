"""Entry points of the ROS 2 programs ``linearization_node``, ``simulated_robot``, ``mujoco_robot`` and
``walking_controller``
(setup.py): rclpy-free, so that without ROS 2 they say in one line what to do
instead of ending in an ImportError traceback."""

from __future__ import annotations

import importlib
import sys

NEEDS_ROS = "needs ROS 2 (rclpy): source /opt/ros/<distro>/setup.bash first"


def _run(program: str, module: str) -> int:
    try:
        import rclpy  # noqa: F401
    except ImportError:
        print(f"{program}: {NEEDS_ROS}", file=sys.stderr)
        return 1
    return importlib.import_module(module, __package__).main()


def linearization_node() -> int:
    return _run("linearization_node", ".node")


def simulated_robot() -> int:
    return _run("simulated_robot", ".sim_node")


def mujoco_robot() -> int:
    return _run("mujoco_robot", ".mujoco_node")


def walking_controller() -> int:
    return _run("walking_controller", ".controller_node")
