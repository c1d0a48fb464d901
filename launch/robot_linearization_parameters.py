"""Node parameters for the package's launch files (which import this module from beside them: ros2
launch runs them in ROS's Python, which need not have the package's dependencies), in a file of
their own that the launch removes when it shuts down.

launch_ros writes the parameters given as a dict (a URDF for robot_state_publisher, a path, a flag)
to a temporary ``launch_params_*`` file and never removes it, so every launch would leave files in
the temporary directory.  :func:`parameters_file` writes them itself and removes its file at the
launch's shutdown (a launch killed with SIGKILL runs no handler and leaves it behind)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile

from launch.actions import RegisterEventHandler
from launch.event_handlers import OnShutdown


def launch_value(text: str) -> bool | int | float | str:
    """A launch argument's text as the parameter value launch_ros would make of it: true/false (any
    case) a bool, a finite number an int or a float, anything else the text (which the node's checks
    name; "nan" and "inf" too, as YAML reads them and a parameters file could not hold them)."""
    flag = {"true": True, "false": False}.get(text.strip().lower())
    if flag is not None:
        return flag
    for number in (int, float):
        try:
            value = number(text)
        except ValueError:
            continue
        return value if math.isfinite(value) else text
    return text


def parameters_file(parameters: dict) -> tuple[str, RegisterEventHandler]:
    """(the path of a parameters file giving ``parameters`` — {name: bool, int, float or str} — to the
    node it is passed to, the launch action that removes the file when the launch shuts down).  JSON
    is YAML: rcl reads it, and a URDF's quotes, newlines and non-ASCII characters survive its escapes."""
    with tempfile.NamedTemporaryFile("w", prefix="robot_linearization_parameters_", suffix=".yaml",
                                     delete=False) as f:
        json.dump({"/**": {"ros__parameters": parameters}}, f)
    path = f.name

    def remove(event, context) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)

    return path, RegisterEventHandler(OnShutdown(on_shutdown=remove))
