"""The nodes' parameters: names, defaults, descriptions and their checks (rclpy-free).

The linearization node's defaults are repeated in config/linearization.yaml (a
test keeps the two equal).
Values arrive as ROS delivers them: a double parameter given as ``1`` on the
command line is an integer, so numbers are accepted as int or float and checked
here, where a wrong value gets a message naming the parameter.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..arguments import did_you_mean
from ..contacts import CONTACT_SYNTAX, ContactError, as_contacts
from ..discretization import METHODS
from ..urdf import MIMIC_MODES
from ..gait import GAITS
from ..kernel_choice import KERNELS
from ..walking.controller import ControllerSettings
from ..walking.mpc import MPCSettings
from ..walking.mujoco_plant import ContactOptions
from ..walking.robots import WALKER_GAITS, WALKERS, Walker, own_walker, walker
from .mujoco_robot import MuJoCoRobotSettings
from .pipeline import PipelineConfig
from .walking_control import InputSettings

PARAMETERS = {  # name: (default, description)
    "robot_description": ("", "URDF XML; empty: use urdf_path, else the robot_description topic"),
    "urdf_path": ("", "URDF file, used when robot_description is empty"),
    "floating_base": (True, "the URDF root link floats (needs odometry); false: welded to the world"),
    "base_frame": ("", "odometry child_frame_id to expect; empty: the URDF root link"),
    "gravity": ([0.0, 0.0, -9.81], "gravitational acceleration in the world frame [m/s^2]"),
    "use_effort": (False, "joint torques from JointState.effort (else zero)"),
    "pairing_tolerance": (0.02, "max time between a joint state and its odometry [s], > 0"),
    "max_input_age": (0.5, "inputs older than this (node clock) are stale [s], > 0"),
    "rate_hz": (0.0, "linearize at this rate [Hz]; 0: on every joint state"),
    "publish_matrix_topics": (False, "also publish each matrix as its own std_msgs/Float64MultiArray (~/A, ~/B, "
                                     "~/M_inv …, ~/stamp, JSON label lists), for tools that read std_msgs only; "
                                     "~/linearization carries all of them, typed and stamped"),
    "publish_heatmaps": (True, "publish ~/A_heatmap and ~/B_heatmap (rgb8 images, for eyes; made only while one "
                               "of them has a subscriber)"),
    "heatmap_rate_hz": (2.0, "rate of the heatmap images and of ~/health [Hz], > 0; made on their own timer, "
                             "never in the linearization cycle"),
    "publish_health": (True, "publish ~/health (a labelled vector for rqt_plot: compute time, spectral abscissa "
                             "of A, cond(M), spectral radius of A_d, contact normal forces and friction ratios) "
                             "and ~/health_labels, at heatmap_rate_hz (made only while one of them has a "
                             "subscriber)"),
    "validation_tolerance": (1e-6, "~/validate succeeds when every block's relative error is below this, > 0"),
    "mimic_joints": ("coupled", "URDF mimic joints: 'coupled' (they follow their source joint and are not states "
                                "or inputs), 'independent' (actuated joints) or 'error'"),
    "diagnostics_period": (1.0, "seconds between /diagnostics messages, > 0"),
    "discretization_dt": (0.0, "also publish ~/A_d, ~/B_d, the exact Jacobians of one integrator step of this "
                               "length [s], >= 0; 0: off"),
    "discretization": ("euler", "that step: 'euler' (semi-implicit Euler on the state's Lie group, rl.step) or "
                                "'zoh' (zero-order hold of A, B)"),
    "input_path": ("auto", "how joint_states and odom are taken: 'wait_set' (the fast path: an input thread on "
                           "rclpy's wait set, a private API, and ~/linearize and ~/validate answered by a thread of "
                           "their own on it), 'executor' (rclpy's public executor, for the services too), or 'auto' "
                           "(wait_set if a self-test at start-up shows it works, else executor)"),
    "kernel": ("", "which kernel linearizes: 'auto' (the generic one from the first cycle, and the one generated "
                   "for the robot and contact set once it is built in another process at low priority; the same "
                   "values), 'generic', or 'generated' (built at start-up: the first output waits); empty: "
                   "$ROBOT_LINEARIZATION_KERNEL, else 'auto'"),
    "contacts": ("", "frames held by the ground at start-up, " + CONTACT_SYNTAX
                 + " (e.g. 'FL_FOOT, FR_FOOT' or 'left_sole_link:6d'); empty: free-floating. "
                 "Changed at run time by a std_msgs/String on the 'contacts' topic"),
    "restitution": (0.0, "restitution coefficient e of a touchdown's impact (a set on the 'contacts' topic that "
                         "closes a contact: ~/impact_map, ~/impulses), in [0, 1]; 0: inelastic"),
    "friction_coefficient": (0.7, "friction coefficient mu of the contact margins on ~/contact_margins, > 0"),
    "friction_facets": (0, "friction cone of the margins: 0 for the exact cone, an even k >= 4 for the k-facet "
                           "pyramid inside it (Crocoddyl's FrictionCone)"),
    "sole_size": ([0.0, 0.0], "[length along x, width along y] of the soles of 6d contacts [m], > 0, for their "
                              "centre-of-pressure margins; [0, 0]: not given (no margins while a 6d contact is "
                              "active, and a warning)"),
}


SIMULATION_PARAMETERS = {  # the demo's simulated robot: name: (default, description)
    "urdf_path": ("", "URDF; empty: the bundled quadruped"),
    "floating_base": (True, "simulate a free-floating base"),
    "dt": (0.002, "simulation step [s], > 0"),
    "publish_rate": (100.0, "joint_states/odom rate [Hz], > 0"),
    "world_frame": ("odom", "odometry header.frame_id"),
    "reset_after": (10.0, "restart the simulation after this many seconds, > 0"),
    "contacts": ("", "frames held where they start, " + CONTACT_SYNTAX + "; empty: it floats"),
    "gait": ("none", "'trot': the bundled quadruped trots in place on a flat ground (a scheduled foot stands once "
                     "it is on the ground; the set held is published on the 'contacts' topic at each switch; a "
                     "touchdown is a rigid impact); 'none': contacts held"),
}


@dataclass(frozen=True)
class NodeSettings:
    """Checked parameter values: the pipeline's configuration and the node's own."""

    pipeline: PipelineConfig
    description: str  # URDF XML or a path; "" = wait for the robot_description topic
    rate_hz: float
    publish_matrix_topics: bool
    publish_heatmaps: bool
    heatmap_rate_hz: float  # the heatmaps' and the health vector's
    publish_health: bool
    diagnostics_period: float
    input_path: str  # one of INPUT_PATHS


INPUT_PATHS = ("auto", "wait_set", "executor")


@dataclass(frozen=True)
class SimulationSettings:
    urdf_path: str  # "" = the bundled robot
    floating_base: bool
    dt: float
    publish_rate: float
    world_frame: str
    reset_after: float
    contacts: tuple
    gait: str  # one of gait.GAITS


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"parameter '{name}' must be a finite number, got {value!r}")
    return float(value)


def _positive(name: str, value) -> float:
    number = _number(name, value)
    if number <= 0.0:
        raise ValueError(f"parameter '{name}' must be > 0, got {value!r}")
    return number


def _typed(name: str, value, kind: type):
    if not isinstance(value, kind):
        raise ValueError(f"parameter '{name}' must be a {kind.__name__}, got {value!r}")
    return value


def _one_of(name: str, value, options) -> str:
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"parameter '{name}' must be one of {options}, got {value!r}")
    return value


def _with_defaults(values: dict, table: dict) -> dict:
    unknown = sorted(set(values) - set(table))
    if unknown:
        raise ValueError(f"unknown parameters: {', '.join(unknown)}")
    return {name: values.get(name, default) for name, (default, _) in table.items()}


def _contacts(value) -> tuple:
    if not (isinstance(value, str) or (isinstance(value, (list, tuple)) and all(isinstance(c, str) for c in value))):
        raise ValueError(f"parameter 'contacts' must be a string ({CONTACT_SYNTAX}), got {value!r}")
    try:
        return as_contacts(value)
    except ContactError as e:
        raise ValueError(f"parameter 'contacts': {e}") from None


def _sole_size(value) -> tuple:
    """() for [0, 0] (not given), else (length, width), both > 0."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 2:
        raise ValueError(f"parameter 'sole_size' must be [length, width] in m, got {value!r}")
    size = tuple(_number("sole_size", x) for x in value)
    if size == (0.0, 0.0):
        return ()
    if min(size) <= 0.0:
        raise ValueError(f"parameter 'sole_size' must be two lengths > 0 (or [0, 0]: not given), got {list(size)}")
    return size


def _friction_facets(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or (value != 0 and (value < 4 or value % 2)):
        raise ValueError(f"parameter 'friction_facets' must be 0 (the exact cone) or an even integer >= 4, "
                         f"got {value!r}")
    return value


def node_settings(values: dict) -> NodeSettings:
    """Check and convert {parameter name: value} (missing names take their default).

    Raises ValueError naming the parameter for an unknown name, a wrong type,
    NaN/inf, a non-positive tolerance or period, a negative rate, a gravity that
    is not three numbers, an unknown mimic_joints mode or discretization, a
    negative discretization_dt, a restitution outside [0, 1], a friction
    coefficient ≤ 0, a friction_facets other than 0 or an even k ≥ 4, or a
    sole_size that is not [0, 0] or two positive lengths.
    """
    v = _with_defaults(values, PARAMETERS)
    gravity = v["gravity"]
    if isinstance(gravity, (str, bytes)) or not hasattr(gravity, "__len__") or len(gravity) != 3:
        raise ValueError(f"parameter 'gravity' must be three numbers [x, y, z], got {gravity!r}")
    mimic = _one_of("mimic_joints", v["mimic_joints"], MIMIC_MODES)
    contacts = _contacts(v["contacts"])
    discretization = _one_of("discretization", v["discretization"], METHODS)
    dt = _number("discretization_dt", v["discretization_dt"])
    if dt < 0.0:
        raise ValueError(f"parameter 'discretization_dt' must be >= 0 (0: off), got {dt!r}")
    restitution = _number("restitution", v["restitution"])
    if not 0.0 <= restitution <= 1.0:
        raise ValueError(f"parameter 'restitution' must be in [0, 1], got {restitution!r}")
    rate = _number("rate_hz", v["rate_hz"])
    if rate < 0.0:
        raise ValueError(f"parameter 'rate_hz' must be >= 0 (0: on every joint state), got {rate!r}")
    config = PipelineConfig(
        floating_base=_typed("floating_base", v["floating_base"], bool),
        base_frame=_typed("base_frame", v["base_frame"], str),
        gravity=tuple(_number("gravity", g) for g in gravity),
        use_effort=_typed("use_effort", v["use_effort"], bool),
        pairing_tolerance=_positive("pairing_tolerance", v["pairing_tolerance"]),
        max_input_age=_positive("max_input_age", v["max_input_age"]),
        validation_tolerance=_positive("validation_tolerance", v["validation_tolerance"]),
        mimic_joints=mimic,
        contacts=contacts,
        discretization_dt=dt,
        discretization=discretization,
        restitution=restitution,
        friction_coefficient=_positive("friction_coefficient", v["friction_coefficient"]),
        friction_facets=_friction_facets(v["friction_facets"]),
        sole_size=_sole_size(v["sole_size"]),
        kernel=_one_of("kernel", v["kernel"], ("",) + KERNELS) or None)
    return NodeSettings(
        pipeline=config,
        description=_typed("robot_description", v["robot_description"], str)
        or _typed("urdf_path", v["urdf_path"], str),
        rate_hz=rate,
        publish_matrix_topics=_typed("publish_matrix_topics", v["publish_matrix_topics"], bool),
        publish_heatmaps=_typed("publish_heatmaps", v["publish_heatmaps"], bool),
        heatmap_rate_hz=_positive("heatmap_rate_hz", v["heatmap_rate_hz"]),
        publish_health=_typed("publish_health", v["publish_health"], bool),
        diagnostics_period=_positive("diagnostics_period", v["diagnostics_period"]),
        input_path=_one_of("input_path", v["input_path"], INPUT_PATHS))


def simulation_settings(values: dict) -> SimulationSettings:
    """Check and convert the simulated robot's parameters (as :func:`node_settings`)."""
    v = _with_defaults(values, SIMULATION_PARAMETERS)
    return SimulationSettings(
        urdf_path=_typed("urdf_path", v["urdf_path"], str),
        floating_base=_typed("floating_base", v["floating_base"], bool),
        dt=_positive("dt", v["dt"]),
        publish_rate=_positive("publish_rate", v["publish_rate"]),
        world_frame=_typed("world_frame", v["world_frame"], str),
        reset_after=_positive("reset_after", v["reset_after"]),
        contacts=_contacts(v["contacts"]),
        gait=_one_of("gait", v["gait"], GAITS))


# ---- the walking controller and the MuJoCo robot (walk.launch.py) ----------------------------------------

WALKING_ROBOT = ("bundled", "the robot: " + ", ".join(WALKERS) + " (walking/robots.py; the last three from "
                 "example-robot-data)")
JOINTS = ("", "the effort commands' joint order, comma-separated; empty: the URDF's")
OWN_ROBOT = {  # a robot of the user's own instead of ``robot`` (walking/robots.own_walker)
    "urdf_path": ("", "a URDF of your own robot instead of 'robot' (with 'feet' and 'posture'); empty: 'robot'"),
    "feet": ("", "its feet, comma-separated frames (four point feet: front left, front right, hind left, hind right)"),
    "posture": ("", "its standing posture, 'joint: value, ...' [rad or m] (the others 0)"),
    "sole_size": ([0.0, 0.0], "[length, width] of its soles [m] (6d contacts, a walk); [0, 0]: point feet"),
}

CONTROLLER_PARAMETERS = {  # the walking controller: name: (default, description)
    "robot": WALKING_ROBOT,
    **OWN_ROBOT,
    "gait": ("default", "how it walks: " + ", ".join(WALKER_GAITS) + " (default: the robot's own, a quadruped's "
                        "trot, a humanoid's walk)"),
    "period": (0.01, "the MPC plans every period [s] of the states' stamps, > 0 (in between: the plan's torque)"),
    "command_timeout": (0.5, "a cmd_vel older than this [s] is followed no more: the command ramps to zero, > 0"),
    "acceleration": ([0.5, 0.5, 1.0], "how fast the followed command ramps [m/s^2, m/s^2, rad/s^2], > 0"),
    "max_command": ([0.5, 0.3, 1.0], "the largest command followed [m/s, m/s, rad/s], each axis clipped, >= 0"),
    "joints": JOINTS,
    "world_frame": ("odom", "the planned path's frame (the odometry's)"),
    "pairing_tolerance": (0.02, "max time between a joint state and its odometry [s], > 0"),
    "max_input_age": (0.5, "inputs older than this (node clock) are stale [s], > 0"),
    "diagnostics_period": (1.0, "seconds between /diagnostics messages, > 0"),
}
"""Besides these, ``mpc.<setting>`` (and ``mpc.weights.<name>``) override the robot's MPC settings
(walking/mpc.MPCSettings), e.g. from a parameters YAML file: ``mpc: {knots: 30, weights: {torque: 10.0}}``."""

MUJOCO_ROBOT_PARAMETERS = {  # the robot on MuJoCo: name: (default, description)
    "robot": WALKING_ROBOT,
    **OWN_ROBOT,
    "publish_rate": (500.0, "joint_states, odom and clock per second of simulated time [Hz], > 0 (a command "
                            "answers a state one period late in real time: at 100 Hz a trot falls)"),
    "timestep": (0.001, "MuJoCo's step [s], > 0"),
    "friction": (0.7, "friction coefficient of the feet on the floor, > 0"),
    "cone": ("elliptic", "MuJoCo's friction cones: 'elliptic' or 'pyramidal'"),
    "command_timeout": (0.2, "an effort command older than this [s, simulated] gives way to the damping hold, > 0"),
    "hold_damping": (2.0, "the hold's damping [N m s/rad]: tau = -d qdot, within the effort limits, >= 0"),
    "joints": JOINTS,
    "world_frame": ("odom", "odometry header.frame_id"),
    "lockstep": (False, "wait for the effort command answering each published state before simulating on "
                        "(for a machine slower than real time); false: real time"),
    "lockstep_timeout": (10.0, "lockstep: with no answer within this [s, wall] (a controller gone), run on in real "
                               "time until commands come again, > 0"),
    "diagnostics_period": (1.0, "seconds between /diagnostics messages, > 0"),
}


@dataclass(frozen=True)
class RobotChoice:
    """Which robot walks: a walker's ``name`` (walking/robots.WALKERS), or one's own (``urdf_path`` not
    empty: ``feet``, ``posture`` {joint: value}, ``sole_size`` or None)."""

    name: str
    urdf_path: str = ""
    feet: tuple = ()
    posture: dict = dataclasses.field(default_factory=dict)
    sole_size: tuple | None = None

    def walker(self) -> Walker:
        """The Walker; ValueError in one line (also for example-robot-data missing)."""
        if self.urdf_path:
            return own_walker(self.urdf_path, self.feet, self.posture, self.sole_size)
        try:
            return walker(self.name)
        except ImportError as error:
            raise ValueError(str(error)) from None


def _robot_choice(v: dict) -> RobotChoice:
    urdf_path = _typed("urdf_path", v["urdf_path"], str)
    name = _one_of("robot", v["robot"], WALKERS)
    if not urdf_path:
        return RobotChoice(name)
    feet = tuple(f.strip() for f in _typed("feet", v["feet"], str).split(",") if f.strip())
    if not feet:
        raise ValueError("parameter 'feet' must name the feet of the robot of 'urdf_path'")
    posture = {}
    for entry in (e for e in _typed("posture", v["posture"], str).split(",") if e.strip()):
        joint, _, value = entry.partition(":")
        try:
            posture[joint.strip()] = float(value)
        except ValueError:
            raise ValueError(f"parameter 'posture' must read 'joint: value, ...', got {entry.strip()!r}") from None
    return RobotChoice(name, urdf_path, feet, posture, _sole_size(v["sole_size"]) or None)


@dataclass(frozen=True)
class ControllerNodeSettings:
    """Checked parameter values of the walking controller."""

    robot: RobotChoice
    gait: str
    controller: ControllerSettings
    inputs: InputSettings
    diagnostics_period: float


@dataclass(frozen=True)
class MuJoCoNodeSettings:
    """Checked parameter values of the robot on MuJoCo."""

    robot: RobotChoice
    simulation: MuJoCoRobotSettings
    lockstep: bool
    lockstep_timeout: float
    diagnostics_period: float


def _numbers(name: str, value, count: int, *, positive: bool) -> tuple:
    """``count`` finite numbers, each > 0 (``positive``) or >= 0."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != count:
        raise ValueError(f"parameter '{name}' must be {count} numbers, got {value!r}")
    numbers = tuple(_number(name, x) for x in value)
    if min(numbers) < 0.0 or (positive and min(numbers) == 0.0):
        raise ValueError(f"parameter '{name}' must be {count} numbers {'> 0' if positive else '>= 0'}, got {value!r}")
    return numbers


def _joints(value) -> tuple:
    text = _typed("joints", value, str)
    return tuple(name for name in text.replace(",", " ").split())


def controller_settings(values: dict) -> ControllerNodeSettings:
    """Check and convert the walking controller's parameters (as :func:`node_settings`)."""
    v = _with_defaults(values, CONTROLLER_PARAMETERS)
    return ControllerNodeSettings(
        robot=_robot_choice(v),
        gait=_one_of("gait", v["gait"], WALKER_GAITS),
        controller=ControllerSettings(
            period=_positive("period", v["period"]),
            command_timeout=_positive("command_timeout", v["command_timeout"]),
            acceleration=_numbers("acceleration", v["acceleration"], 3, positive=True),
            max_command=_numbers("max_command", v["max_command"], 3, positive=False)),
        inputs=InputSettings(
            pairing_tolerance=_positive("pairing_tolerance", v["pairing_tolerance"]),
            max_input_age=_positive("max_input_age", v["max_input_age"]),
            joints=_joints(v["joints"]),
            world_frame=_typed("world_frame", v["world_frame"], str)),
        diagnostics_period=_positive("diagnostics_period", v["diagnostics_period"]))


def mpc_settings(base: MPCSettings, overrides: dict) -> MPCSettings:
    """``base`` with ``overrides`` {setting: value} ("weights.<name>" for a weight), each refused in one line
    naming the parameter (``mpc.<setting>``) and the nearest setting when it is not one; the values are then
    checked by WholeBodyMPC."""
    fields = {f.name: f for f in dataclasses.fields(MPCSettings)}
    changes: dict = {}
    weights = dict(base.weights)
    for name, value in sorted(overrides.items()):
        if name.startswith("weights."):
            weight = name.split(".", 1)[1]
            if weight not in weights:
                raise ValueError(f"parameter 'mpc.{name}': MPCSettings has no weight {weight!r}"
                                 f"{did_you_mean(weight, list(weights))}")
            weights[weight] = _number(f"mpc.{name}", value)
            changes["weights"] = weights
        elif name not in fields or name in ("weights", "scale"):
            raise ValueError(f"parameter 'mpc.{name}': MPCSettings has no such setting"
                             f"{did_you_mean(name, [f for f in fields if f not in ('weights', 'scale')])}")
        else:
            default = getattr(base, name)
            if isinstance(default, tuple) or name == "sole_size":
                value = _numbers(f"mpc.{name}", value, 2, positive=True)
            elif isinstance(default, bool) or isinstance(value, bool):
                raise ValueError(f"parameter 'mpc.{name}' must be a number, got {value!r}")
            elif isinstance(default, int) and not isinstance(default, bool):
                if not isinstance(value, int):
                    raise ValueError(f"parameter 'mpc.{name}' must be an integer, got {value!r}")
            elif name == "solver":
                value = _typed(f"mpc.{name}", value, str)
            else:
                value = _number(f"mpc.{name}", value)
            changes[name] = value
    return dataclasses.replace(base, **changes)


def mujoco_robot_settings(values: dict) -> MuJoCoNodeSettings:
    """Check and convert the MuJoCo robot's parameters (as :func:`node_settings`)."""
    v = _with_defaults(values, MUJOCO_ROBOT_PARAMETERS)
    damping = _number("hold_damping", v["hold_damping"])
    if damping < 0.0:
        raise ValueError(f"parameter 'hold_damping' must be >= 0, got {damping!r}")
    options = ContactOptions(timestep=_positive("timestep", v["timestep"]),
                             cone=_one_of("cone", v["cone"], ("elliptic", "pyramidal")),
                             friction=_positive("friction", v["friction"]))
    return MuJoCoNodeSettings(
        robot=_robot_choice(v),
        simulation=MuJoCoRobotSettings(
            period=1.0 / _positive("publish_rate", v["publish_rate"]),
            command_timeout=_positive("command_timeout", v["command_timeout"]),
            hold_damping=damping, joints=_joints(v["joints"]),
            world_frame=_typed("world_frame", v["world_frame"], str), options=options),
        lockstep=_typed("lockstep", v["lockstep"], bool),
        lockstep_timeout=_positive("lockstep_timeout", v["lockstep_timeout"]),
        diagnostics_period=_positive("diagnostics_period", v["diagnostics_period"]))
