"""The legged robots the walking examples and tests use: the bundled quadruped, and solo12,
ANYmal C and Talos from example-robot-data (their URDFs, feet and standing postures).

A standing posture is the SRDF's named group state, read from its XML: the joints' values by
name (the root joint's is the base's and is not taken).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

from ..coupling import AnyModel
from ..gait import TROT, Gait
from ..robots import BUNDLED_FEET, bundled_urdf_path
from ..urdf import effort_limits, load_urdf
from .mpc import MPCSettings


@dataclass(frozen=True)
class Walker:
    """A legged robot ready to walk: ``model`` (loaded from the URDF at ``urdf``), its ``feet``
    (frame names; a quadruped's as front left, front right, hind left, hind right), its standing
    ``posture`` ({joint: angle [rad]}), its joints' ``effort_limits`` (n,) [N m] (its URDF's), and
    ``sole_size`` (length, width) [m] of the rectangle a sole's centre of pressure is kept in (a
    robot on soles, "6d" contacts; None for feet); ``gait``: how it walks (gait.Gait: a
    quadruped's trot, a humanoid's walk on its soles) and ``settings`` the MPC's (walking/mpc.py)
    for it (:func:`sole_settings` on soles).

    ``name``: the robot's name (that of :func:`walker`'s choice)."""

    name: str
    urdf: str
    model: AnyModel
    feet: tuple
    posture: dict
    effort_limits: np.ndarray
    sole_size: tuple | None = None
    gait: Gait | None = None
    settings: MPCSettings = field(default_factory=MPCSettings)


def sole_settings(sole_size) -> MPCSettings:
    """The MPC's settings for a robot on soles of ``sole_size`` (length, width) [m]: knots of 5 ms (a
    0.2 s horizon; over a knot of 15 ms the semi-implicit Euler puts twice the effect of an
    acceleration on the position, and the plan of a light foot at the end of a long leg rang,
    landing it tilted by up to 0.2 rad), a torque held over 8 knots (40 ms), a swing of 5 % of the leg
    length, and the swinging sole's tilt and the feet's heights weighted 1000× and 10× the default
    (it lands flat, to 0.3 mrad, and on time, to 4 ms), its sliding as it lands 33× (on MuJoCo a stance
    then slips 0.6 mm, not 1.9) and as it lifts not at all (the sole held to the end of its stance then
    pulled on the ground in the turn: Talos fell at 7.9 s of WALK_TURN)."""
    return MPCSettings(knot_dt=0.005, knots=40, torque_hold=8, swing_lift=0.05, sole_size=tuple(sole_size),
                       weights={**MPCSettings().weights, "sole": 400000.0, "foot_height": 40000.0,
                                "landing_sliding": 10000.0, "lifting_sliding": 0.0})


# name -> (URDF and SRDF below example-robot-data's robots directory, the SRDF's standing state, feet,
# the soles' centre-of-pressure rectangle or None)
_EXAMPLE_ROBOTS = {
    "solo12": ("solo_description/robots/solo12.urdf", "solo_description/srdf/solo.srdf", "standing",
               ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"), None),
    "anymal": ("anymal_c_simple_description/urdf/anymal.urdf", "anymal_c_simple_description/srdf/anymal.srdf",
               "standing", ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"), None),
    # (Talos's soles: 0.2 m × 0.1 m about the sole frame kept for the centre of pressure)
    "talos": ("talos_data/robots/talos_reduced.urdf", "talos_data/srdf/talos.srdf", "half_sitting",
              ("left_sole_link", "right_sole_link"), (0.2, 0.1)),
}
WALKERS = ("bundled",) + tuple(_EXAMPLE_ROBOTS)
"""The robots :func:`walker` loads ("anymal": ANYmal C, example-robot-data's anymal_c)."""


def walker(name: str) -> Walker:
    """The robot called ``name`` (one of :data:`WALKERS`), loaded.  ValueError in one line for another
    name; ImportError in one line when example-robot-data is not installed, or lacks the robot
    (:func:`example_robots_directory`)."""
    if name == "bundled":
        model = load_urdf(bundled_urdf_path())
        return Walker(name, bundled_urdf_path(), model, BUNDLED_FEET, dict(TROT.posture),
                      effort_limits(bundled_urdf_path(), model.joint_names), gait=TROT)
    if name not in _EXAMPLE_ROBOTS:
        raise ValueError(f"robot {name!r}: expected one of {', '.join(WALKERS)}")
    urdf, srdf, state, feet, sole_size = _EXAMPLE_ROBOTS[name]
    root = example_robots_directory(name, urdf)
    urdf, srdf = os.path.join(root, urdf), os.path.join(root, srdf)
    model = load_urdf(urdf)
    posture = srdf_posture(srdf, state, model.joint_names)
    if sole_size is None:
        return Walker(name, urdf, model, feet, posture, effort_limits(urdf, model.joint_names),
                      gait=Gait.trot(feet, posture))
    return Walker(name, urdf, model, feet, posture, effort_limits(urdf, model.joint_names), sole_size,
                  Gait.walk(feet, posture, contact="6d", period=1.6, support=0.3),
                  sole_settings(sole_size))


WALKER_GAITS = ("default", "trot", "pace", "walk", "stand")
"""The gaits :func:`walker_gait` gives a walker ("default": its own)."""


def walker_gait(robot: Walker, name: str) -> Gait:
    """``robot``'s gait called ``name`` (one of :data:`WALKER_GAITS`) in its posture, on its kind of contact;
    ValueError in one line for another name or a gait its feet cannot walk (a trot on two soles)."""
    assert robot.gait is not None  # (every walker has one)
    if name == "default":
        return robot.gait
    if name not in WALKER_GAITS:
        raise ValueError(f"gait {name!r}: expected one of {', '.join(WALKER_GAITS)}")
    return getattr(Gait, name)(robot.feet, robot.posture, contact=robot.gait.contact)


def own_walker(urdf: str, feet, posture: dict, sole_size=None) -> Walker:
    """A robot of the user's own, ready to walk: the URDF at ``urdf`` (its effort limits), its ``feet`` (frame
    names; four point feet as front left, front right, hind left, hind right: a trot; two soles with
    ``sole_size`` (length, width) [m]: a walk on "6d" contacts with :func:`sole_settings`, as Talos'; else a
    walk), standing in ``posture`` ({joint: value}, the others at 0).  ValueError in one line for a foot or
    joint the URDF lacks."""
    model = load_urdf(urdf)
    feet = tuple(feet)
    limits = effort_limits(urdf, model.joint_names)
    if sole_size is not None:
        gait = Gait.walk(feet, posture, contact="6d", period=1.6, support=0.3)
        walker = Walker(model.name, urdf, model, feet, dict(posture), limits, tuple(sole_size), gait,
                        sole_settings(sole_size))
    else:
        gait = Gait.trot(feet, posture) if len(feet) == 4 else Gait.walk(feet, posture)
        walker = Walker(model.name, urdf, model, feet, dict(posture), limits, gait=gait)
    gait.check(model, feet)
    return walker


ROBOTS_SHARE = ("cmeel.prefix", "share", "example-robot-data", "robots")
"""Where the example-robot-data wheel installs its robots, below its site-packages directory."""


def example_robots_directory(name: str, urdf: str) -> str:
    """The robots directory of the installed example-robot-data that holds ``urdf`` (a path below it),
    for the robot ``name``: its ``example_robot_data`` module's, where the module is installed (up to
    5.0, or example-robot-data-loaders), else the data's own share directory (6.0 ships the data
    without the module).  ImportError in one line saying what is missing: the package, or the robot in
    the version installed."""
    try:
        import example_robot_data
    except ImportError:
        pass
    else:
        with contextlib.suppress(OSError, ValueError):  # (its search raises where the file is absent)
            return example_robot_data.getModelPath(urdf)
    try:
        distribution = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(f"robot {name!r} comes from example-robot-data, which is not installed: "
                          "pip install example-robot-data") from None
    root = str(distribution.locate_file(os.path.join(*ROBOTS_SHARE)))
    if not os.path.isfile(os.path.join(root, urdf)):
        raise ImportError(f"robot {name!r}: example-robot-data {distribution.version} is installed but has no "
                          f"{urdf} in {root}")
    return root


def srdf_posture(path: str, state: str, joint_names) -> dict:
    """{joint: value} of the group state called ``state`` in the SRDF at ``path``, for the joints of
    ``joint_names`` it names.  ValueError in one line when it has no such state."""
    for group_state in ET.parse(path).getroot().iter("group_state"):
        if group_state.get("name") == state:
            values = {joint.get("name"): joint.get("value") for joint in group_state.iter("joint")}
            return {name: float(value) for name in joint_names if (value := values.get(name)) is not None}
    raise ValueError(f"{path}: no group_state named {state!r}")
