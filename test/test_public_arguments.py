"""Every public function checks what it is given before a compiled kernel sees it.

The table below has one entry per public callable of ``robot_linearization.__all__``
and ``robot_linearization.algorithms.__all__`` (a test fails when a new one is
added without an entry): a valid call, and for each argument the bad inputs of
its kind — wrong length (0, n−1, n+1), wrong ndim, wrong dtype, NaN/inf, a state
of another model or base kind, ...  Each must give a ValueError of one line that
names the argument; never garbage, a numba TypingError or a raw traceback.
``scripts/test.sh`` also runs this file with numba's bounds checking on
(NUMBA_BOUNDSCHECK=1), so a kernel that indexes outside its arrays fails here.
"""

from __future__ import annotations

import functools
import os
import re

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.joints import JointType

FLOATING = rl.load_urdf(rl.robots.bundled_urdf_path())
FIXED = rl.load_urdf(rl.robots.bundled_urdf_path(), floating_base=False)
OTHER = rl.robots.thesis_test_system()  # another floating-base model: 9 joints
with open(rl.robots.bundled_urdf_path()) as _f:
    COUPLED = rl.load_urdf(_f.read().replace(
        '<joint name="front_right_knee" type="revolute">',
        '<joint name="front_right_knee" type="revolute"><mimic joint="front_left_knee" multiplier="1" offset="0.1"/>'))
N_JOINTS = FLOATING.n_joints
FOOT = rl.robots.BUNDLED_FEET[0]


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    n = model.n_joints
    if not model.floating_base:
        return rl.State(joint_positions=rng.uniform(-1, 1, n), joint_velocities=rng.normal(size=n))
    H = rl.spatial.se3_exp(rng.normal(size=6))
    return rl.State(base_pose=H, joint_positions=rng.uniform(-1, 1, n), base_twist=rng.normal(size=6),
                    joint_velocities=rng.normal(size=n))


STATE, FIXED_STATE = _state(FLOATING), _state(FIXED)
LIN = rl.linearize(FLOATING, STATE)
LIN_CONTACTS = rl.linearize(FLOATING, STATE, contacts=[FOOT + ":6d", rl.robots.BUNDLED_FEET[3]])


def _with(state, **changes):
    fields = dict(base_pose=state.base_pose, joint_positions=state.joint_positions, base_twist=state.base_twist,
                  joint_velocities=state.joint_velocities)
    fields.update(changes)
    return rl.State(**fields)


def _joint_vectors(n):
    """Bad values of a per-joint vector (n,)."""
    return {"empty": np.array([]), "n-1": np.zeros(n - 1), "n+1": np.zeros(n + 1), "2d": np.zeros((2, n)),
            "scalar": 0.5, "complex": np.zeros(n, dtype=complex), "objects": [None] * n, "strings": ["1.0"] * n,
            "booleans": np.zeros(n, dtype=bool), "nan": np.full(n, np.nan), "inf": np.full(n, np.inf),
            "ragged": [[0.0]] * (n - 1) + [[0.0, 1.0]], "dict": {"a": 1.0}, "none": None}


def _six_vectors():
    return {"5": np.zeros(5), "7": np.zeros(7), "2d": np.zeros((2, 6)), "complex": np.zeros(6, dtype=complex),
            "nan": np.full(6, np.nan), "string": "000000", "none": None}


BAD = {
    "joint_vector": _joint_vectors(N_JOINTS),
    "joint_vector_or_none": {k: v for k, v in _joint_vectors(N_JOINTS).items() if k != "none"},
    "six_vector": _six_vectors(),
    "twist_array": {k: v for k, v in _six_vectors().items() if k not in ("none", "nan")},
    # (State itself checks shapes and dtypes; values, lengths and rigidity where it is used)
    "vector": {"2d": np.zeros((2, 3)), "complex": np.zeros(3, dtype=complex), "strings": ["1"] * 3,
               "objects": [None] * 3, "dict": {"a": 1.0}},
    "pose_array": {"3x3": np.eye(3), "strings": [["1"] * 4] * 4, "complex": np.eye(4, dtype=complex)},
    "state": {"none": None, "dict": {"joint_positions": np.zeros(N_JOINTS)}, "other model": _state(OTHER),
              "fixed-base state": FIXED_STATE, "nan position": _with(STATE, joint_positions=np.full(N_JOINTS, np.nan)),
              "inf twist": _with(STATE, base_twist=np.full(6, np.inf)),
              "non-rigid pose": _with(STATE, base_pose=2 * np.eye(4)),
              "short velocities": _with(STATE, joint_velocities=np.zeros(N_JOINTS - 1))},
    "fixed_state": {"floating-base state": STATE,
                    "other length": rl.State(joint_positions=np.zeros(3), joint_velocities=np.zeros(3))},
    "seconds": {"zero": 0.0, "negative": -1e-3, "nan": float("nan"), "inf": float("inf"), "string": "0.002",
                "bool": True, "complex": 1e-3j, "array": np.array([1e-3])},
    "optional_seconds": {"zero": 0.0, "negative": -1e-3, "nan": float("nan"), "string": "0.002"},
    "positive": {"zero": 0.0, "negative": -1.0, "nan": float("nan"), "string": "1e-3"},
    "contacts": {"unknown frame": "front_left_fot", "int": 3, "twice": [FOOT, FOOT], "bad kind": FOOT + ":plane",
                 "too many fields": FOOT + ":6d:local:x", "dict": {FOOT: "6d"}},
    "model": {"none": None, "path": rl.robots.bundled_urdf_path(), "state": STATE},
    "tree": {"coupled model": COUPLED, "none": None},
    "linearization": {"none": None, "of another model": rl.linearize(OTHER, _state(OTHER)), "a matrix": np.eye(36)},
    "method": {"unknown": "rk4", "int": 1, "none": None},
    "discretization": {"unknown": "rk4", "int": 1},
    "kernel": {"unknown": "fast", "int": 1, "empty": ""},
    "states": {"one state": STATE, "empty": [], "with a dict": [STATE, {"a": 1}], "other model": [_state(OTHER)],
               "string": "state"},
    "joint_dict": {"list": [0.0] * N_JOINTS, "nan": {j: np.nan for j in FLOATING.joint_names},
                   "none values": {j: None for j in FLOATING.joint_names},
                   "missing": {j: 0.0 for j in FLOATING.joint_names[1:]},
                   "unknown": {**{j: 0.0 for j in FLOATING.joint_names}, "elbow": 0.0}},
    "quaternion": {"3 entries": (0.0, 0.0, 1.0), "zero": (0.0, 0.0, 0.0, 0.0), "nan": (np.nan, 0.0, 0.0, 1.0),
                   "complex": (0j, 0, 0, 1), "string": "0001"},
    "number": {"nan": float("nan"), "string": "1", "array": np.ones(2), "complex": 1j, "none": None},
    "matrix3": {"2x2": np.eye(2), "nan": np.full((3, 3), np.nan), "strings": [["1"] * 3] * 3},
    "position3": {"2 entries": (0.0, 0.0), "nan": (np.nan, 0.0, 0.0), "string": "000"},
    "matrix4": {"3x3": np.eye(3), "nan": np.full((4, 4), np.nan), "strings": [["1"] * 4] * 4,
                "not rigid": 2 * np.eye(4)},
    "matrix6": {"5x5": np.eye(5), "nan": np.full((6, 6), np.nan), "complex": np.eye(6, dtype=complex),
                "not symmetric": np.triu(np.ones((6, 6)))},
    "gravity": {"2 entries": (0.0, -9.81), "nan": (0.0, 0.0, np.nan), "complex": (0, 0, -9.81j), "string": "down"},
    "description": {"none": None, "int": 3, "missing file": "/no/such/robot.urdf", "not xml": "<robot",
                    "not a robot": "<html/>"},
    "bool": {"string": "false", "none": None},
    "mimic_mode": {"unknown": "maybe", "int": 0},
    "frame_name": {"empty": "", "int": 3},
    "contact_kind": {"unknown": "plane", "none": None},
    "contact_reference": {"unknown": "global"},
    "joint_name": {"empty": "", "int": 3},
    "joint_type": {"string": "revolute", "none": None},
    "axis": {"zero": (0.0, 0.0, 0.0), "2 entries": (1.0, 0.0), "nan": (np.nan, 0.0, 1.0), "string": "x"},
    "pitch": {"nan": float("nan"), "string": "0.1"},
    "derivative_frame": {"unknown": "world"},
    "restitution": {"negative": -0.1, "above one": 1.5, "nan": float("nan"), "string": "0.5", "array": np.ones(2),
                    "none": None},
    "previous_contacts": {"unknown frame": "front_left_fot", "int": 3, "bad kind": FOOT + ":plane"},
    "contact_linearization": {"none": None, "of another model": rl.linearize(OTHER, _state(OTHER)),
                              "a matrix": np.eye(36), "without contacts": LIN},
    "normal": {"zero": (0.0, 0.0, 0.0), "2 entries": (0.0, 1.0), "nan": (np.nan, 0.0, 1.0), "string": "001",
               "none": None},
    "facets": {"odd": 5, "two": 2, "float": 4.0, "string": "4", "bool": True},
    "sole_size": {"none": None, "zero": (0.2, 0.0), "1 entry": (0.2,), "nan": (np.nan, 0.1), "string": "big",
                  "missing frame": {"other": (0.2, 0.1)}},
}


def _builder():
    return rl.ModelBuilder("base", np.eye(6))


def _add_body(**arguments):
    builder = _builder()
    builder.add_body(**arguments)


GOOD_JOINT = rl.Joint("j", JointType.REVOLUTE, (0.0, 0.0, 1.0))

LINEARIZER = rl.Linearizer(FLOATING, contacts=[FOOT], dt=0.002)
IMPACT_MAP = rl.ImpactMap(FLOATING, rl.robots.BUNDLED_FEET, restitution=0.5)

# name -> (callable, valid keyword arguments, {argument: kind of its bad inputs})
CALLS = {
    "linearize": (rl.linearize, dict(model=FLOATING, state=STATE, joint_torques=np.zeros(N_JOINTS), contacts=[FOOT],
                                     dt=0.002, discretization="euler", previous_contacts=(), restitution=0.5,
                                     kernel="generic"),
                  {"model": "model", "state": "state", "joint_torques": "joint_vector_or_none", "contacts": "contacts",
                   "dt": "optional_seconds", "discretization": "discretization",
                   "previous_contacts": "previous_contacts", "restitution": "restitution", "kernel": "kernel"}),
    "Linearizer": (rl.Linearizer, dict(model=FLOATING, contacts=[FOOT], dt=0.002, discretization="euler",
                                       kernel="generic"),
                   {"model": "model", "contacts": "contacts", "dt": "optional_seconds",
                    "discretization": "discretization", "kernel": "kernel"}),
    "Linearizer.linearize": (lambda **a: LINEARIZER.linearize(**a), dict(state=STATE, joint_torques=np.zeros(N_JOINTS)),
                             {"state": "state", "joint_torques": "joint_vector_or_none"}),
    "Linearizer.linearize_arrays": (
        lambda **a: LINEARIZER.linearize_arrays(**a),
        dict(joint_positions=STATE.joint_positions, joint_velocities=STATE.joint_velocities,
             joint_torques=np.zeros(N_JOINTS), base_pose=STATE.base_pose, base_twist=STATE.base_twist),
        {"joint_positions": "joint_vector", "joint_velocities": "joint_vector", "joint_torques": "joint_vector_or_none",
         "base_pose": "pose_array", "base_twist": "six_vector"}),
    "linearize_trajectory": (rl.linearize_trajectory, dict(model=FLOATING, states=[STATE, STATE],
                                                           joint_torques=np.zeros((2, N_JOINTS)), dt=0.002,
                                                           contacts=[[], [FOOT]], restitution=0.5, kernel="generic"),
                             {"model": "model", "states": "states", "dt": "optional_seconds",
                              "previous_contacts": "previous_contacts", "restitution": "restitution",
                              "kernel": "kernel"}),
    "step": (rl.step, dict(model=FLOATING, state=STATE, joint_torques=np.zeros(N_JOINTS), dt=0.002, contacts=[FOOT],
                           previous_contacts=(), restitution=0.5),
             {"model": "model", "state": "state", "joint_torques": "joint_vector_or_none", "dt": "seconds",
              "contacts": "contacts", "previous_contacts": "previous_contacts", "restitution": "restitution"}),
    "impact": (rl.impact, dict(model=FLOATING, state=STATE, contacts=rl.robots.BUNDLED_FEET, restitution=0.5,
                               kernel="generic"),
               {"model": "model", "state": "state", "contacts": "contacts", "restitution": "restitution",
                "kernel": "kernel"}),
    "ImpactMap": (rl.ImpactMap, dict(model=FLOATING, contacts=rl.robots.BUNDLED_FEET, restitution=0.5,
                                     kernel="generic"),
                  {"model": "model", "contacts": "contacts", "restitution": "restitution", "kernel": "kernel"}),
    "ImpactMap.impact": (lambda **a: IMPACT_MAP.impact(**a), dict(state=STATE), {"state": "state"}),
    "ImpactMap.impact_arrays": (
        lambda **a: IMPACT_MAP.impact_arrays(**a),
        dict(joint_positions=STATE.joint_positions, joint_velocities=STATE.joint_velocities, base_pose=STATE.base_pose,
             base_twist=STATE.base_twist),
        {"joint_positions": "joint_vector", "joint_velocities": "joint_vector", "base_pose": "pose_array",
         "base_twist": "six_vector"}),
    "contact_margins": (rl.contact_margins, dict(model=FLOATING, linearization=LIN_CONTACTS, friction=0.6,
                                                 normal=(0.0, 0.0, 1.0), facets=4, inner=True, sole_size=(0.2, 0.1)),
                        {"model": "model", "linearization": "contact_linearization", "friction": "positive",
                         "normal": "normal", "facets": "facets", "inner": "bool", "sole_size": "sole_size"}),
    "forward_dynamics": (rl.forward_dynamics, dict(model=FLOATING, state=STATE, joint_torques=np.zeros(N_JOINTS)),
                         {"model": "tree", "state": "state", "joint_torques": "joint_vector_or_none"}),
    "constrained_forward_dynamics": (
        rl.constrained_forward_dynamics, dict(model=FLOATING, state=STATE, joint_torques=np.zeros(N_JOINTS),
                                              contacts=[FOOT]),
        {"model": "model", "state": "state", "joint_torques": "joint_vector_or_none", "contacts": "contacts"}),
    "inverse_dynamics": (rl.inverse_dynamics, dict(model=FLOATING, state=STATE,
                                                   joint_accelerations=np.zeros(N_JOINTS)),
                         {"model": "tree", "state": "state", "joint_accelerations": "joint_vector"}),
    "extended_inverse_dynamics": (
        rl.extended_inverse_dynamics, dict(model=FLOATING, state=STATE, base_acceleration=np.zeros(6),
                                           joint_accelerations=np.zeros(N_JOINTS)),
        {"model": "tree", "state": "state", "base_acceleration": "six_vector", "joint_accelerations": "joint_vector"}),
    "extended_inverse_dynamics_derivatives": (
        rl.extended_inverse_dynamics_derivatives, dict(model=FLOATING, state=STATE, base_acceleration=np.zeros(6),
                                                       joint_accelerations=np.zeros(N_JOINTS), frame="base"),
        {"model": "tree", "state": "state", "base_acceleration": "six_vector", "joint_accelerations": "joint_vector",
         "frame": "derivative_frame"}),
    "mass_matrix": (rl.mass_matrix, dict(model=FLOATING, joint_positions=np.zeros(N_JOINTS)),
                    {"model": "tree", "joint_positions": "joint_vector"}),
    "inverse_mass_matrix": (rl.inverse_mass_matrix, dict(model=FLOATING, joint_positions=np.zeros(N_JOINTS)),
                            {"model": "tree", "joint_positions": "joint_vector"}),
    "body_transforms": (rl.algorithms.body_transforms, dict(model=FLOATING, joint_positions=np.zeros(N_JOINTS)),
                        {"model": "tree", "joint_positions": "joint_vector"}),
    "discretize": (rl.discretize, dict(model=FLOATING, linearization=LIN, dt=0.002, method="euler"),
                   {"model": "model", "linearization": "linearization", "dt": "seconds", "method": "method"}),
    "state_difference": (rl.state_difference, dict(model=FLOATING, a=STATE, b=STATE),
                         {"model": "model", "a": "state", "b": "state"}),
    "finite_difference_linearization": (
        rl.finite_difference_linearization, dict(model=FIXED, state=FIXED_STATE, joint_torques=None, step=1e-3),
        {"state": "fixed_state", "step": "positive"}),
    "validate": (rl.validate, dict(model=FLOATING, state=LIN), {"model": "model", "state": "linearization"}),
    "load_urdf": (rl.load_urdf, dict(path_or_xml=rl.robots.bundled_urdf_path(), floating_base=True,
                                     gravity=(0.0, 0.0, -9.81), mimic_joints="coupled"),
                  {"path_or_xml": "description", "floating_base": "bool", "gravity": "gravity",
                   "mimic_joints": "mimic_mode"}),
    "State": (rl.State, dict(base_pose=np.eye(4), joint_positions=np.zeros(3), base_twist=np.zeros(6),
                             joint_velocities=np.zeros(3)),
              {"base_pose": "pose_array", "base_twist": "twist_array", "joint_positions": "vector",
               "joint_velocities": "vector"}),
    "State.from_named": (lambda **a: rl.State.from_named(FLOATING, **a),
                         dict(joint_positions={j: 0.1 for j in FLOATING.joint_names}, joint_velocities=None,
                              base_position=(0.0, 0.0, 0.3), base_orientation=(0.0, 0.0, 0.0, 1.0),
                              base_twist=np.zeros(6)),
                         {"joint_positions": "joint_dict", "base_orientation": "quaternion",
                          "base_position": "position3", "base_twist": "six_vector"}),
    "Contact": (rl.Contact, dict(frame=FOOT, kind="point", reference="local"),
                {"frame": "frame_name", "kind": "contact_kind", "reference": "contact_reference"}),
    "Joint": (rl.Joint, dict(name="j", type=JointType.HELICAL, axis=(0.0, 0.0, 1.0), pitch=0.1),
              {"name": "joint_name", "type": "joint_type", "axis": "axis", "pitch": "pitch"}),
    "ModelBuilder": (rl.ModelBuilder, dict(base_name="base", base_inertia=np.eye(6), gravity=(0.0, 0.0, -9.81)),
                     {"base_inertia": "matrix6", "gravity": "gravity"}),
    "ModelBuilder.add_frame": (lambda **a: _builder().add_frame(**a), dict(name="tip", body="base",
                                                                          placement=np.eye(4)),
                               {"placement": "matrix4", "name": "frame_name"}),
    "State.check": (lambda **a: STATE.check(**a), dict(model=FLOATING), {"model": "model"}),
    "ModelBuilder.add_body": (_add_body, dict(name="link", parent="base", joint=GOOD_JOINT, placement=np.eye(4),
                                              inertia=np.eye(6)),
                              {"placement": "matrix4", "inertia": "matrix6", "name": "frame_name"}),
}



@functools.lru_cache(maxsize=None)
def _generated(kind: str):
    """The Linearizer and ImpactMap above with kernel="generated", made at their first call (within a
    test: the generated kernels then go to the test run's cache, conftest: ROBOT_LINEARIZATION_CACHE_DIR)."""
    made = (rl.Linearizer(FLOATING, contacts=[FOOT], dt=0.002, kernel="generated") if kind == "Linearizer" else
            rl.ImpactMap(FLOATING, rl.robots.BUNDLED_FEET, restitution=0.5, kernel="generated"))
    assert made.kernel == "generated" or rl.codegen.c_compiler() is None, kind
    return made


# the same calls where a generated kernel takes the arrays (kernel="generated")
def _on_generated(name: str):
    kind, method = name.split(".")
    return lambda **arguments: getattr(_generated(kind), method)(**arguments)


CALLS.update({f"{name}, generated": (_on_generated(name), *CALLS[name][1:]) for name in (
    "Linearizer.linearize", "Linearizer.linearize_arrays", "ImpactMap.impact", "ImpactMap.impact_arrays")})
CALLS["linearize_trajectory, generated"] = (
    lambda **arguments: rl.linearize_trajectory(**arguments, kernel="generated"),
    dict(model=FLOATING, states=[STATE, STATE], joint_torques=np.zeros((2, N_JOINTS)), dt=0.002),
    {"states": "states", "dt": "optional_seconds"})

# functions of the modules, outside __all__, that users call (the README and docstrings name them)
CALLS.update({
    "spatial.spatial_inertia": (rl.spatial.spatial_inertia, dict(mass=2.0, com=np.zeros(3), inertia_at_com=np.eye(3)),
                                {"mass": "number", "com": "position3", "inertia_at_com": "matrix3"}),
    "discretization.se3_right_jacobian": (rl.discretization.se3_right_jacobian, dict(xi=np.ones(6)),
                                          {"xi": "six_vector"}),
    "joints.joint_transform": (rl.joints.joint_transform, dict(motion_subspace=GOOD_JOINT.motion_subspace,
                                                               position=0.3),
                               {"motion_subspace": "six_vector", "position": "number"}),
})

NOT_CALLED = {
    "ComparisonReport": "a result (validate returns it)",
    "ContactError": "an exception",
    "ModelError": "an exception",
    "CoupledModel": "built by load_urdf from a URDF's mimic joints",
    "Impact": "a result (impact returns it)",
    "ContactMargins": "a result (contact_margins returns it)",
    "JointType": "an enumeration",
    "Linearization": "a result (linearize returns it)",
    "Model": "built by ModelBuilder.build or load_urdf",
    "ExtendedInverseDynamicsDerivatives": "a result",
    "ModelBuilder.build": "takes no arguments (the bodies were checked as they were added)",
    "robots": "a module: the bundled URDF's path and the thesis's test system, no arguments to check",
}

# how a message may name an argument of that kind besides by the argument's own name
NAMED_AS = {"tree": ("Model",), "states": ("state",), "contacts": ("contact",), "previous_contacts": ("contact",),
            "linearization": ("linearization",),
            "matrix6": ("inertia",), "description": ("URDF", "robot description")}

CASES = [pytest.param(name, argument, bad, id=f"{name}-{argument}-{label}")
         for name, (_, _, checked) in CALLS.items() for argument, kind in checked.items()
         for label, bad in BAD[kind].items()]


def test_every_public_name_is_in_the_table():
    public = set(rl.__all__) | set(rl.algorithms.__all__)
    missing = {name for name in public if name not in CALLS and name not in NOT_CALLED}
    assert not missing, f"add these public names to CALLS (or NOT_CALLED with a reason): {sorted(missing)}"
    for name, value in vars(rl).items():  # and the methods of the classes a user constructs
        if name in public and isinstance(value, type) and name not in NOT_CALLED:
            for method, function in vars(value).items():
                if callable(getattr(function, "__func__", function)) and not method.startswith("_") \
                        and not isinstance(function, property):
                    assert f"{name}.{method}" in CALLS or f"{name}.{method}" in NOT_CALLED, \
                        f"{name}.{method} has no entry in CALLS"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_valid_call_of_each_entry_succeeds(name):
    function, arguments, _ = CALLS[name]
    function(**arguments)


@pytest.mark.parametrize("call", [
    lambda: rl.linearize(FLOATING, STATE, np.ones(N_JOINTS), contacts=f"{FOOT}:6d:local", dt=0.002),
    lambda: rl.linearize(FLOATING, STATE, contacts=rl.robots.BUNDLED_FEET, dt=0.002, discretization="zoh"),
    lambda: rl.linearize(COUPLED, _state(COUPLED), contacts=FOOT + ":6d", dt=0.002),
    lambda: rl.linearize(FIXED, FIXED_STATE, np.ones(N_JOINTS), dt=0.002),
    lambda: rl.linearize_trajectory(FLOATING, [STATE] * 3, contacts=[[FOOT], [], None], dt=0.002, workers=2),
    lambda: rl.linearize_trajectory(FIXED, [FIXED_STATE] * 3, workers=2),
    lambda: rl.step(COUPLED, _state(COUPLED), None, 0.002, contacts=rl.robots.BUNDLED_FEET),
    lambda: rl.validate(COUPLED, rl.linearize(COUPLED, _state(COUPLED), contacts=FOOT, dt=0.002)),
    lambda: rl.linearize_trajectory(FLOATING, [STATE] * 3, contacts=[[], rl.robots.BUNDLED_FEET, [FOOT + ":6d"]],
                                    dt=0.002, workers=2),
    lambda: rl.impact(FIXED, FIXED_STATE, [FOOT + ":point:local"], restitution=1.0),
], ids=["6d local + dt", "4 feet + zoh", "coupled + 6d", "fixed base + dt", "gait horizon", "fixed horizon",
        "coupled step", "coupled validate", "touchdown horizon", "fixed-base impact"])
def test_every_engine_path_runs_on_valid_input(call):
    """(In the bounds-checked pass, every kernel path indexes inside its arrays.)"""
    call()


@pytest.mark.parametrize("name, argument, bad", CASES)
def test_a_bad_argument_is_one_line_naming_it(name, argument, bad):
    function, arguments, _ = CALLS[name]
    with pytest.raises(ValueError) as caught:
        function(**{**arguments, argument: bad})
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    assert type(caught.value).__module__.split(".")[0] in ("builtins", "robot_linearization"), type(caught.value)
    kind = CALLS[name][2][argument]
    expected = NAMED_AS.get(kind, ()) + (argument,)
    assert any(re.search(re.escape(w), message, re.IGNORECASE) for w in expected), \
        f"the message does not name {argument!r}: {message}"


def test_the_table_tries_a_sensible_number_of_bad_inputs():
    """(The count the issue asks for; also guards against an empty parametrisation.)"""
    assert len(CALLS) >= 20 and len(CASES) >= 250, (len(CALLS), len(CASES))


def test_an_unknown_contact_frame_suggests_the_close_ones():
    with pytest.raises(rl.ContactError, match=r"did you mean 'front_left_foot'"):
        rl.linearize(FLOATING, STATE, contacts="FRONT_LEFT_FOT")


def test_the_api_takes_the_contact_text_of_the_node_and_the_cli():
    text = rl.linearize(FLOATING, STATE, contacts=f"{FOOT}, {rl.robots.BUNDLED_FEET[1]}:point:local")
    objects = rl.linearize(FLOATING, STATE, contacts=[rl.Contact(FOOT),
                                                      rl.Contact(rl.robots.BUNDLED_FEET[1], reference="local")])
    assert text.contacts == objects.contacts and np.array_equal(text.A, objects.A)
    assert rl.linearize(FLOATING, STATE, contacts="none").contacts == ()


def test_a_horizon_with_a_contact_set_per_state_must_have_one_per_state():
    with pytest.raises(ValueError, match="3 contact sets for 4 states"):
        rl.linearize_trajectory(FLOATING, [STATE] * 4, contacts=[[FOOT]] * 3)


def test_a_method_without_a_step_is_an_error():
    with pytest.raises(ValueError, match="discretization='zoh' needs dt"):
        rl.linearize(FLOATING, STATE, discretization="zoh")


def test_a_state_keeps_its_own_copy_of_the_callers_arrays():
    positions = np.zeros(N_JOINTS)
    state = rl.State(joint_positions=positions, joint_velocities=np.zeros(N_JOINTS))
    positions[0] = 1.0
    assert state.joint_positions[0] == 0.0


def test_the_coupled_model_is_refused_by_the_tree_algorithms_with_a_pointer():
    with pytest.raises(ValueError, match="not a CoupledModel"):
        rl.mass_matrix(COUPLED, np.zeros(COUPLED.n_joints))
    assert isinstance(COUPLED, rl.CoupledModel) and COUPLED.mimics[0][3] == 0.1
    lin = rl.linearize(COUPLED, _state(COUPLED))  # the reduced model itself is accepted
    assert lin.M_inv.shape == (COUPLED.n_velocities,) * 2



@pytest.mark.skipif(os.environ.get("NUMBA_BOUNDSCHECK") != "1",
                    reason="runs in scripts/test.sh's bounds-checked pass (NUMBA_BOUNDSCHECK=1)")
def test_the_bounds_checked_pass_really_checks_bounds():
    """A kernel handed an array one entry short raises IndexError in this pass (where,
    without bounds checks, it would read past the end)."""
    from robot_linearization.algorithms.kinematics import body_transforms_into

    X_up = np.empty((FLOATING.n_bodies, 6, 6))
    with pytest.raises(IndexError):
        body_transforms_into(FLOATING.motion_subspaces, FLOATING.tree_transforms, np.zeros(N_JOINTS - 1), X_up)


# ---- layouts: the same numbers in every array layout a user can hand over -------------------

ARRAY_KINDS = {"joint_vector", "joint_vector_or_none", "six_vector", "twist_array", "vector", "pose_array", "matrix3",
               "position3", "matrix4", "matrix6", "gravity", "axis", "normal", "quaternion"}
SCALAR_KINDS = {"seconds", "optional_seconds", "positive", "number", "pitch", "restitution"}
# arrays the table checks through another kind of test (a horizon's torques (K, n), a sole's size)
EXTRA_LAYOUT_ARGUMENTS = [("linearize_trajectory", "joint_torques"),
                          ("linearize_trajectory, generated", "joint_torques"), ("contact_margins", "sole_size")]


def _memmap(canonical, directory):
    path = directory / f"memmap-{canonical.size}-{canonical.ndim}.f8"
    mapped = np.memmap(path, dtype=np.float64, mode="w+", shape=canonical.shape)
    mapped[...] = canonical
    return mapped


def _unaligned(canonical):
    buffer = bytearray(canonical.nbytes + 1)
    array = np.frombuffer(buffer, dtype=np.float64, count=canonical.size, offset=1).reshape(canonical.shape)
    array[...] = canonical
    assert not array.flags.aligned
    return array


def _read_only(canonical):
    array = canonical.copy()
    array.flags.writeable = False
    return array


def _reversed_twice(canonical):
    """The same values in an array whose strides are all negative."""
    flipped = canonical[(slice(None, None, -1),) * canonical.ndim].copy()
    return flipped[(slice(None, None, -1),) * canonical.ndim]


def _layouts(value, directory):
    """(label, the same numbers laid out otherwise) of a valid array argument."""
    canonical = np.array(value, dtype=np.float64)
    layouts = {"big-endian": canonical.astype(">f8"), "negative strides": _reversed_twice(canonical),
               "strided": np.repeat(canonical, 2, axis=-1)[..., ::2], "float32": canonical.astype(np.float32),
               "integer": np.rint(canonical).astype(np.int64), "read-only": _read_only(canonical),
               "unaligned": _unaligned(canonical), "memmap": _memmap(canonical, directory),
               "0-d": np.array(canonical.ravel()[0]),
               "list of numpy scalars": [np.float64(x) for x in canonical] if canonical.ndim == 1
               else [[np.float32(x) for x in row] for row in canonical]}
    if canonical.ndim == 2:
        layouts["Fortran order"] = np.asfortranarray(canonical)
        layouts["big-endian, Fortran order"] = np.asfortranarray(canonical).astype(">f8", order="F")
    return layouts


def _scalar_layouts(value):
    return {"0-d": np.array(value), "0-d big-endian": np.array(value, dtype=">f8"), "0-d read-only":
            _read_only(np.array(value)), "numpy float32": np.float32(value), "numpy float64": np.float64(value)}


def _numbers(result, depth=0):
    """Every number a result holds, flattened in a fixed order, and every array it holds."""
    if isinstance(result, np.ndarray):
        return [result]
    if isinstance(result, (bool, int, float, np.number)):
        return [np.asarray(result)]
    if isinstance(result, (str, type(None))) or depth > 3:
        return []
    if isinstance(result, (list, tuple)):
        return [a for item in result for a in _numbers(item, depth + 1)]
    if isinstance(result, dict):
        return [a for key in sorted(result, key=str) for a in _numbers(result[key], depth + 1)]
    fields = getattr(result, "__dict__", None) or {}
    return [a for key in sorted(fields) if not key.startswith("_") for a in _numbers(fields[key], depth + 1)]


def _outcome(function, arguments):
    """(copies of the numbers of the result, None) or (None, the ValueError); a new Linearizer is
    filled at STATE first (its arrays hold nothing before).  Copies: a Linearizer's next call
    overwrites its arrays."""
    try:
        result = function(**arguments)
    except ValueError as error:
        return None, error
    if function is rl.Linearizer:
        result.linearize(STATE)
    if function is rl.ImpactMap:
        result.impact(STATE)
    return [np.array(a, copy=True, order="K") for a in _numbers(result)], None


LAYOUT_CASES = [pytest.param(name, argument, id=f"{name}-{argument}")
                for name, (_, arguments, checked) in CALLS.items() for argument, kind in checked.items()
                if kind in ARRAY_KINDS | SCALAR_KINDS and arguments.get(argument) is not None] \
    + [pytest.param(name, argument, id=f"{name}-{argument}") for name, argument in EXTRA_LAYOUT_ARGUMENTS]


@pytest.mark.parametrize("name, argument", LAYOUT_CASES)
def test_every_array_layout_gives_the_canonical_arrays_numbers_or_one_line(name, argument, tmp_path):
    """Big-endian, Fortran order, negative or other strides, float32, integers, read-only, unaligned,
    a memory map, 0-d, lists of numpy scalars: each call gives exactly what the same numbers as a
    native C-contiguous float64 array give, or the same one-line ValueError; every array of the
    result is native-endian (a State keeps no big-endian copy for a kernel to misread)."""
    function, arguments, checked = CALLS[name]
    value = arguments[argument]
    if checked.get(argument) in SCALAR_KINDS:
        layouts = _scalar_layouts(value)
    elif isinstance(value, dict):  # sole_size per frame: the layouts of each frame's size
        layouts = {label: {frame: variant} for frame, size in value.items()
                   for label, variant in _layouts(size, tmp_path).items()}
    else:
        layouts = _layouts(value, tmp_path)
    for label, variant in layouts.items():
        if isinstance(variant, dict):
            same = {frame: np.array(v, dtype=np.float64) for frame, v in variant.items()}
        else:
            same = np.array(variant, dtype=np.float64)  # the same numbers, canonical
        expected, expected_error = _outcome(function, {**arguments, argument: same})
        result, error = _outcome(function, {**arguments, argument: variant})
        if error is not None:
            message = str(error)
            assert "\n" not in message and len(message) < 400, (label, message)
            assert expected_error is not None or any(
                w in message for w in (argument, "0-d", "shape", "number")), (label, message)
            continue
        assert expected_error is None, f"{label}: accepted what the canonical array is refused for: {expected_error}"
        ours, theirs = result, expected
        assert len(ours) == len(theirs), label
        for a, b in zip(ours, theirs):
            assert a.dtype.isnative, f"{label}: the result holds a {a.dtype.str} array"
            np.testing.assert_array_equal(a, b, err_msg=label)


def test_big_endian_inputs_of_the_control_cycle_give_the_same_linearization():
    """The issue's cases by name: torques and a State's positions from a big-endian source, and
    rl.step with big-endian torques (a raw numba TypingError before)."""
    rng = np.random.default_rng(7)
    torques = rng.normal(size=N_JOINTS)
    reference = rl.linearize(FLOATING, STATE, torques, contacts=[FOOT], dt=0.002)
    big = rl.linearize(FLOATING, _with(STATE, joint_positions=STATE.joint_positions.astype(">f8"),
                                       base_pose=STATE.base_pose.astype(">f8")), torques.astype(">f8"),
                       contacts=[FOOT], dt=0.002)
    for field in ("A", "B", "M_inv", "A_d", "B_d", "contact_forces"):
        np.testing.assert_array_equal(getattr(big, field), getattr(reference, field), err_msg=field)
    stepped = rl.step(FLOATING, STATE, torques.astype(">f8"), 0.002, contacts=[FOOT])
    expected = rl.step(FLOATING, STATE, torques, 0.002, contacts=[FOOT])
    for a, b in zip(_numbers(stepped), _numbers(expected)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(LINEARIZER.linearize(STATE, torques.astype(">f8")).A,
                                  LINEARIZER.linearize(STATE, torques).A.copy())
