"""Compile every kernel once, at install time, so that no process pays for it later.

    python -m robot_linearization.precompile

numba compiles a kernel on its first call and caches the machine code on disk,
next to the installed sources (or in $NUMBA_CACHE_DIR): ≈ 30 s on 2 cores for
all of them, after which a new process loads them in under a second.  This runs
the calls that a node, the API and the CLI make — a floating and a fixed base,
the step Jacobians, rigid contacts, a touchdown's impact, the contact margins, coupled
mimic joints, a step of the simulated robot, a heatmap, the validation against finite
differences, the MPC's horizon — on the bundled quadruped, so the first start after an install is a warm start.
`colcon build` runs it after installing the package (setup.py); scripts/venv.sh
after `pip install`.  Running it again costs about a second.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def precompile() -> float:
    """Compile (or load from the cache) every kernel; returns the seconds it took."""
    start = time.perf_counter()
    import robot_linearization as rl
    from robot_linearization.kernel_choice import set_default_kernel

    set_default_kernel("generic")  # the numba kernels only: no robot's generated kernel is built from here
    from robot_linearization.robots import BUNDLED_FEET, bundled_urdf_path
    from robot_linearization.ros.compiled_cycle import compile_serve_pair
    from robot_linearization.ros.images import heatmap_rgb

    for floating_base in (True, False):
        model = rl.load_urdf(bundled_urdf_path(), floating_base=floating_base)
        n = model.n_joints
        state = rl.State(base_pose=np.eye(4) if floating_base else None, joint_positions=np.tile([0.0, 0.8, -1.5], 4),
                         base_twist=np.zeros(6) if floating_base else None, joint_velocities=np.zeros(n))
        lin = rl.linearize(model, state, dt=1e-3)
        on_feet = rl.linearize(model, state, contacts=BUNDLED_FEET, dt=1e-3)
        rl.step(model, state, np.zeros(n), 1e-3, contacts=BUNDLED_FEET)
        rl.step(model, state, np.zeros(n), 1e-3, contacts=BUNDLED_FEET, previous_contacts=BUNDLED_FEET[:2])
        rl.contact_margins(model, on_feet, friction=0.7)
        if floating_base:  # (a 6d foot on a welded quadruped's 3-joint leg is a degenerate set)
            sole_and_local_foot = [BUNDLED_FEET[0] + ":6d", BUNDLED_FEET[3] + ":point:local"]
            rl.contact_margins(model, rl.linearize(model, state, contacts=sole_and_local_foot), friction=0.7,
                               facets=4, sole_size=(0.1, 0.05))
        rl.step(model, state, np.zeros(n), 1e-3)
        if floating_base:  # (the pose as odometry gives it: position and quaternion)
            rl.Linearizer(model).linearize_arrays(state.joint_positions, state.joint_velocities,
                                                  base_pose=np.array([0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 1.0]),
                                                  base_twist=np.zeros(6))
        heatmap_rgb(lin.A, cell=2)
        rl.validate(model, lin)  # the node's ~/validate service
    from robot_linearization.algorithms.constrained_dynamics import contact_frame_kinematics_many
    from robot_linearization.contacts import as_contacts
    from robot_linearization.coupling import tree_of
    from robot_linearization.spatial import se3_exp_many, se3_log_many

    from robot_linearization.contact_margins import MarginEvaluator
    from robot_linearization.walking import pendulum
    from robot_linearization.walking.condensing import (CondensedCost, condense_into, constraint_rows_into,
                                                        perturbations_into)
    from robot_linearization.walking.horizon_states import differences, perturbed, pose_logs_into
    from robot_linearization.walking.knots import KnotKernels

    # a horizon's maps on SE(3), its feet's kinematics and its condensing: the MPC's
    se3_log_many(se3_exp_many(np.zeros((2, 6))))
    horizon_states = (np.tile(np.eye(4), (2, 1, 1)), np.zeros((2, 12)), np.zeros((2, 6)), np.zeros((2, 12)))
    z = differences(horizon_states, horizon_states)
    perturbed(horizon_states, z)
    pose_logs_into(horizon_states[0], horizon_states[0], z[:, :6])  # (into the state residuals' columns)
    Gamma_T, d, reach = np.empty((3, 2, 4)), np.empty((3, 4)), np.array([0, 1, 2])
    condense_into(np.zeros((2, 4, 4)), np.zeros((2, 4, 1)), np.zeros((2, 4)), reach, Gamma_T, d)
    perturbations_into(Gamma_T, d, reach, np.zeros(2), np.empty((3, 4)))
    knots, rows = np.array([1, 2]), np.zeros((2, 4))
    CondensedCost(reach, 4)(Gamma_T, d, np.ones((2, 4)), np.zeros((2, 4)), knots, rows, np.zeros(2))
    pendulum.sway(0.0, np.zeros(2), np.ones(2), 1.0)  # (a humanoid's sway over its soles)
    margins = MarginEvaluator(model, BUNDLED_FEET, friction=0.7, facets=4)  # (the MPC's knots in one call, on none)
    horizon = KnotKernels(model, 1e-3)
    horizon.add(rl.Linearizer(model, contacts=BUNDLED_FEET, dt=1e-3), margins, np.zeros(len(margins.layout.labels)),
                [0, 1, 2, 3])
    horizon.load()
    constraint_rows_into(Gamma_T, d, reach, np.array([0, 0, 1]), knots, rows, np.zeros((2, 1)), np.zeros(2),
                         np.empty((2, 2)), np.empty(2))
    contact_frame_kinematics_many(tree_of(model), as_contacts(BUNDLED_FEET), np.tile(np.eye(4), (2, 1, 1)),
                                  np.zeros((2, 12)), np.tile(np.eye(4), (4, 1, 1)))
    # a mimic-coupled robot (the quadruped with one knee following another): the reduced-map kernel
    text = open(bundled_urdf_path()).read()
    end = text.index("</joint>", text.index('<joint name="front_right_knee"'))
    coupled = rl.load_urdf(text[:end] + '<mimic joint="front_left_knee"/>' + text[end:], floating_base=True)
    compile_serve_pair()  # the node's compiled cycle
    rl.linearize(coupled, rl.State(base_pose=np.eye(4), joint_positions=np.zeros(coupled.n_joints),
                                   base_twist=np.zeros(6), joint_velocities=np.zeros(coupled.n_joints)))
    return time.perf_counter() - start


def main() -> int:
    try:
        seconds = precompile()
    except Exception as e:  # noqa: BLE001 - an install must not fail on this: the kernels then compile on first use
        print(f"robot_linearization: could not precompile the kernels ({e!r}); they will compile on first use",
              file=sys.stderr)
        return 1
    import robot_linearization

    print(f"robot_linearization: kernels compiled and cached for {robot_linearization.__path__[0]} ({seconds:.1f} s)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
