"""Benchmark: one cycle of the whole-body MPC (robot_linearization/walking/mpc.py), and Crocoddyl's
FDDP and mim-solvers' CSQP on the same horizon and cost.

    .venv/bin/python bench/mpc.py [--robot bundled|solo12|anymal|talos] [--seconds 3] [--at 1.2]
                                  [--solver proxsuite|daqp|osqp] [--cold SECONDS]

Needs the test extra (crocoddyl 3.2.1, pin 4.0.0, mim-solvers, proxsuite, daqp, osqp; example-robot-data for solo12,
ANYmal C and Talos).  Runs the robot's gait and settings (walking/robots.py: a quadruped's trot
forward at 0.3 m/s, Talos's walk on its soles at 0.1 m/s) for --seconds on one core
(the process is pinned to it) and prints the median time of a cycle split into linearization, QP
assembly and solve, its 90th and 99th percentiles, its largest, and how many cycles exceed the 10 ms
of 100 Hz control (and the time of the first plan, made at rest before the start); then the parts of a cycle
that run compiled code (the knots' kernels, condensing, the cost, the constraint rows) and the QP solver, each
timed with the few lines that call it, and the Python between them (the rest of the cycle); and the time
each QP solver the MPC offers (ProxSuite, DAQP, OSQP) takes on the QPs of every tenth cycle, given all
their rows, and the MPC's own solve of them (its solver, the rows screened where a QP has many per unknown:
WholeBodyMPC._run_solver).  Then, at the
cycle at time --at, builds Crocoddyl's problem with the MPC's knots (the feet held at each, a
touchdown as an impulse node), the same residuals and weights (References: base pose and twist,
posture, joint velocities, swing feet, torques; Crocoddyl's Euler integration scales its running
costs by dt, so its weights are the MPC's over dt) and the friction pyramid as a quadratic barrier
(FDDP has no inequalities); on soles, 6d contacts and impulses, the wrench cone of the planned sole
(friction, centre of pressure, its yaw moment) as the barrier, and a swinging sole's tilt and
heading as the rotation residual log(R*ᵀR) (the MPC's rows to first order), and solves it with
FDDP warm-started from the plan the MPC started that cycle from.  Prints its iterations, time per
iteration and the cost it reaches, beside the cost of the MPC's own plan of that cycle in the same
problem.  Then the same problem with the pyramids (wrench cones) and the torque limits as inequality
constraints, as the MPC has them, solved by mim-solvers' CSQP (Crocoddyl's problem, a constrained SQP
whose QPs an ADMM solves; pip install mim-solvers): to convergence and one iteration (as the MPC makes one
step a cycle), its cost and largest constraint violation or gap.

With --cold, first a cold start: the robot walks --cold seconds from an empty kernel cache (a temporary
directory, removed at the end), as on a machine where nothing was built yet; every ten seconds of the wall
clock from the moment the MPC is made, the cycles' median and 99th percentile and how many of the MPC's
kernels (each contact set's constrained linearization and impact map) run generated; then when the last
one took over.  That phase is not pinned: the builds run beside it on the other cores, as in a robot's
process (ROBOT_LINEARIZATION_BUILD_JOBS of them at once).  The figures above it are then the steady state.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from importlib.metadata import version

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # one core, as the benchmark's other timings
import time  # noqa: E402

import numpy as np  # noqa: E402

import robot_linearization as rl  # noqa: E402
from robot_linearization.walking import mpc as mpc_module  # noqa: E402
from robot_linearization.walking.horizon_states import unstacked  # noqa: E402
from robot_linearization.walking.robots import WALKERS, walker  # noqa: E402
from robot_linearization.walking.scenario import Segment, walk  # noqa: E402


_clock = time.perf_counter  # (the MPC's solve names its argument ``time``)


def _timed(name: str):
    """WholeBodyMPC's method ``name``, its time added to the cycle's compiled calls (Recorder.calls)."""

    def method(self, *args):
        started = time.perf_counter()
        try:
            return getattr(mpc_module.WholeBodyMPC, name)(self, *args)
        finally:
            Recorder.calls[name] = Recorder.calls.get(name, 0.0) + time.perf_counter() - started

    return method


COMPILED = {"_compiled_steps": "the knots' kernels", "_condense": "condensing", "_condensed_cost": "cost",
            "_constraints": "constraint rows", "_run_solver": "solver"}
"""The calls of a cycle that run compiled code (or the QP solver), and their names in the printout."""


class Recorder(mpc_module.WholeBodyMPC):
    """The MPC, keeping what it started from and planned at one chosen cycle, every tenth
    cycle's QP (its solver's arguments), and each cycle's time with that of its compiled calls and its solver
    (COMPILED), the rest being the Python between them."""

    at = 1.2
    kept = None
    qps: list = []
    solved = 0
    calls: dict = {}  # this cycle's: COMPILED's name -> seconds
    cycles: list = []  # per cycle: (its seconds, COMPILED's seconds)

    _compiled_steps = _timed("_compiled_steps")
    _condense = _timed("_condense")
    _condensed_cost = _timed("_condensed_cost")
    _constraints = _timed("_constraints")
    _timed_solver = _timed("_run_solver")

    def _run_solver(self, *qp):
        if Recorder.solved % 10 == 0:
            Recorder.qps.append(qp)
        Recorder.solved += 1
        return self._timed_solver(*qp)

    def _timed_solve(self, time, state, contacts_now, held_now):
        """The MPC's cycle, its time and its compiled calls' kept in Recorder.cycles."""
        Recorder.calls = {}
        started = _clock()
        try:
            return super().solve(time, state, contacts_now, held_now)
        finally:
            Recorder.cycles.append((_clock() - started, [Recorder.calls.get(name, 0.0) for name in COMPILED]))

    def solve(self, time, state, contacts_now, held_now):
        if self.kept is not None or time < self.at - 1e-9:
            return self._timed_solve(time, state, contacts_now, held_now)
        x, torques = self._shifted_plan(time, state)
        shifted = (unstacked(*x), torques)
        result = self._timed_solve(time, state, contacts_now, held_now)
        # (the MPC's own cost of both plans now: its command, which the references follow, changes later)
        costs = {name: self.cost(time, state, states, torques, contacts_now)
                 for name, (states, torques) in (("start", shifted), ("plan", (result.states, result.torques_plan)))}
        Recorder.kept = dict(time=time, state=state, shifted=shifted, result=result, mpc=self,
                             knots=self._knot_contacts(time, contacts_now, held_now),
                             references=self.references(time, state, contacts_now), costs=costs)
        return result


class ColdRecorder(mpc_module.WholeBodyMPC):
    """The MPC, noting at each cycle the wall clock, the cycle's time and how many of its kernels run
    generated (and how many it has)."""

    cycles: list = []

    def solve(self, now, state, contacts_now, held_now):
        result = super().solve(now, state, contacts_now, held_now)
        held = self._contact_sets.values()
        kernels = [h.linearizer.kernel for h in held] + [h.impacts.kernel for h in held if h.impacts is not None]
        ColdRecorder.cycles.append((time.perf_counter(), sum(result.timings.values()), kernels.count("generated"),
                                    len(kernels)))
        return result


def cold_start(robot, settings, seconds: float) -> None:
    """Walk ``robot`` ``seconds`` from an empty kernel cache and print the cycles' time and the kernels
    generated per ten seconds of the wall clock (the module docstring); the temporary cache is removed
    once every build of the run has ended."""
    import shutil
    import tempfile

    from robot_linearization.codegen.background import build_jobs
    from robot_linearization.kernel_choice import _takeovers

    directory = tempfile.mkdtemp(prefix="robot_linearization-cold-")
    before = os.environ.get("ROBOT_LINEARIZATION_CACHE_DIR")
    os.environ["ROBOT_LINEARIZATION_CACHE_DIR"] = directory
    try:
        cold = walker(robot.name)  # (a model of its own: its kernels looked for in the empty cache)
        speed = 0.3 if cold.sole_size is None else 0.1
        start = time.perf_counter()
        log = walk(cold.model, cold.feet, cold.gait, cold.effort_limits, seconds, (Segment(0.0, (speed, 0.0, 0.0)),),
                   (), settings=settings, mpc_class=ColdRecorder)
        takeovers = list(_takeovers.get(cold.model, {}).values())
        for takeover in takeovers:  # (every build ended before its cache goes)
            takeover.wait()
        ready = time.perf_counter() - start
    finally:
        if before is None:
            del os.environ["ROBOT_LINEARIZATION_CACHE_DIR"]
        else:
            os.environ["ROBOT_LINEARIZATION_CACHE_DIR"] = before
        shutil.rmtree(directory, ignore_errors=True)
    cycles = np.array(ColdRecorder.cycles)
    print(f"cold start: {robot.name} walks {seconds:g} s from an empty kernel cache (not pinned; {build_jobs()} "
          f"build(s) at once beside it){': it stopped: ' + log.error if log.error else ''}")
    print("  wall clock [s]   cycles   median ms   p99 ms   kernels generated")
    wall = cycles[:, 0] - start
    for window in range(int(wall.max() // 10) + 1):
        inside = cycles[(wall >= 10 * window) & (wall < 10 * window + 10)]
        if len(inside):
            median, p99 = np.median(inside[:, 1]) * 1e3, np.percentile(inside[:, 1], 99) * 1e3
            print(f"  {10 * window:4d}-{10 * window + 10:<4d}        {len(inside):6d}   {median:9.2f}   {p99:6.2f}   "
                  f"{int(inside[-1, 2])} of {int(inside[-1, 3])}")
    problems = [t.problem for t in takeovers if t.problem]
    if not takeovers:
        print("  nothing built: the generic kernel is the default here ($ROBOT_LINEARIZATION_KERNEL)\n")
        return
    print(f"  every kernel's build ended {ready:.0f} s after the MPC was made"
          + (f"; {len(problems)} stay generic: {problems[0]}" if problems else "") + "\n")


def pinocchio_coordinates(pmodel, model):
    """Functions taking our states and torques to Pinocchio's x = [q; v] and u (its joint order)."""
    import pinocchio as pin

    names = list(pmodel.names)
    joints = [pmodel.joints[names.index(j)] for j in model.joint_names]

    def x_of(state):
        q, v = np.zeros(pmodel.nq), np.zeros(pmodel.nv)
        q[:3] = state.base_pose[:3, 3]
        q[3:7] = pin.Quaternion(state.base_pose[:3, :3]).coeffs()
        v[:6] = state.base_twist
        for k, joint in enumerate(joints):
            q[joint.idx_q], v[joint.idx_v] = state.joint_positions[k], state.joint_velocities[k]
        return np.concatenate([q, v])

    def u_of(torques):
        u = np.zeros(pmodel.nv - 6)
        for k, joint in enumerate(joints):
            u[joint.idx_v - 6] = torques[k]
        return u

    return x_of, u_of


def crocoddyl_problem(kept, model, urdf, constrained=False):
    """The MPC's cycle ``kept`` of ``model`` (from the URDF at ``urdf``) as a Crocoddyl ShootingProblem,
    and the node at each knot.  The friction pyramids (a sole's wrench cone) as a quadratic barrier in
    the cost, or with ``constrained`` as inequality constraints, the torque limits with them (for a
    solver that takes them: mim-solvers' CSQP)."""
    import crocoddyl
    import pinocchio as pin

    mpc, ref = kept["mpc"], kept["references"]
    settings = mpc.settings
    h, K = settings.knot_dt, settings.knots
    pmodel = pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer())
    state = crocoddyl.StateMultibody(pmodel)
    actuation = crocoddyl.ActuationModelFloatingBase(state)
    nu = actuation.nu
    x_of, u_of = pinocchio_coordinates(pmodel, model)
    base_id = pmodel.getFrameId(model.body_names[0])
    foot_ids = [pmodel.getFrameId(f) for f in mpc.feet]
    posture = rl.State(base_pose=np.eye(4), joint_positions=ref.posture, base_twist=np.zeros(6),
                       joint_velocities=np.zeros(model.n_joints))
    x_posture = x_of(posture)
    state_weights = np.concatenate([np.zeros(6), np.full(model.n_joints, ref.posture_weight), np.zeros(6),
                                    np.full(model.n_joints, ref.joint_velocity_weight)])

    def state_costs(costs, k, scale, nu=nu):
        """Knot k's state residuals into ``costs`` (CostModelSum of control size nu), each weight
        times ``scale``."""
        def add(name, residual, weights):
            costs.addCost(name, crocoddyl.CostModelResidual(state, crocoddyl.ActivationModelWeightedQuad(
                np.asarray(weights, dtype=float)), residual), scale * ref.scales[k])
        add("base_pose", crocoddyl.ResidualModelFramePlacement(state, base_id, pin.SE3(ref.base_poses[k]), nu),
            ref.pose_weights)
        add("base_twist", crocoddyl.ResidualModelFrameVelocity(state, base_id, pin.Motion(ref.twists[k]), pin.LOCAL,
                                                               nu), ref.twist_weights)
        add("posture", crocoddyl.ResidualModelState(state, x_posture, nu), state_weights)
        for feet, w in ((ref.landings[k], ref.landing_sliding_weight), (ref.lifts[k], ref.lifting_sliding_weight)):
            for i in feet:  # a foot landing or lifting: its velocity along the ground (mpc._sliding_rows)
                add(f"sliding_{i}", crocoddyl.ResidualModelFrameVelocity(state, foot_ids[i], pin.Motion.Zero(),
                                                                         pin.LOCAL_WORLD_ALIGNED, nu),
                    [w, w, 0.0, 0.0, 0.0, 0.0])
        for i, height, landing in ref.feet[k]:
            target = np.array([0.0, 0.0, height]) if landing is None else np.array([landing[0], landing[1], height])
            weights = [0.0, 0.0, ref.foot_height_weight] if landing is None else \
                [ref.foot_xy_weight, ref.foot_xy_weight, ref.foot_height_weight]
            add(f"foot_{i}", crocoddyl.ResidualModelFrameTranslation(state, foot_ids[i], target, nu), weights)
            if soles:  # flat, turning to the base reference's heading when it lands (mpc._sole_rows)
                fraction, remaining = ref.swings[k][i] or (1.0, 0.0)
                heading = mpc_module.yaw_of(ref.base_poses[0]) + ref.twists[0, 5] * (k * h + remaining)
                rotation = mpc_module.planar_pose(0.0, 0.0, 0.0, heading)[:3, :3]
                add(f"sole_{i}", crocoddyl.ResidualModelFrameRotation(state, foot_ids[i], rotation, nu),
                    ref.sole_weight * np.array([1.0, 1.0, fraction ** 2]))

    soles = mpc.gait.contact == "6d"

    def contact_set(feet, impulse=False):
        group = crocoddyl.ImpulseModelMultiple(state) if impulse else crocoddyl.ContactModelMultiple(state, nu)
        for foot in feet:
            i = mpc.feet.index(foot)
            if soles:  # (a sole's wrench in its own axes, where its centre of pressure is bounded)
                item = crocoddyl.ImpulseModel6D(state, foot_ids[i], pin.LOCAL) if impulse else \
                    crocoddyl.ContactModel6D(state, foot_ids[i], pin.SE3.Identity(), pin.LOCAL, nu,
                                             np.array([0.0, 0.0]))
            else:
                item = crocoddyl.ImpulseModel3D(state, foot_ids[i], pin.LOCAL_WORLD_ALIGNED) if impulse else \
                    crocoddyl.ContactModel3D(state, foot_ids[i], np.zeros(3), pin.LOCAL_WORLD_ALIGNED, nu,
                                             np.array([0.0, 0.0]))
            (group.addImpulse if impulse else group.addContact)(foot, item)
        return group

    nodes, knot_node = [], []
    for k in range(K):
        contacts, previous = kept["knots"][k]
        landing = bool(set(contacts) - set(previous))
        if landing and k > 0:  # the impact: an impulse node (pre-impact state: knot k's state costs)
            costs = crocoddyl.CostModelSum(state, 0)
            state_costs(costs, k, 1.0, 0)
            nodes.append(crocoddyl.ActionModelImpulseFwdDynamics(state, contact_set(contacts, True), costs, 0.0,
                                                                 0.0, True))
            knot_node.append(len(nodes) - 1)
        costs = crocoddyl.CostModelSum(state, nu)
        if k > 0 and not landing:
            state_costs(costs, k, 1.0 / h)
        elif k == 0 and landing:
            raise RuntimeError("--at: choose a cycle that does not start with a touchdown")
        costs.addCost("torque", crocoddyl.CostModelResidual(state, crocoddyl.ResidualModelControl(state, nu)),
                      ref.torque_weight / h)
        constraints = crocoddyl.ConstraintModelManager(state, nu)
        if constrained:
            limits = u_of(mpc.effort_limits)
            constraints.addConstraint("torque_limits", crocoddyl.ConstraintModelResidual(
                state, crocoddyl.ResidualModelControl(state, nu), -limits, limits))
        for foot in contacts:  # the planned forces' pyramid (a sole's wrench cone), a barrier or constraints
            frame = foot_ids[mpc.feet.index(foot)]
            if soles:
                cone = crocoddyl.WrenchCone(np.eye(3), settings.friction, np.array(mpc._planned_sole),
                                            mpc_module.FACETS, True, mpc.min_normal_force)
                residual = crocoddyl.ResidualModelContactWrenchCone(state, frame, cone, nu)
            else:
                cone = crocoddyl.FrictionCone(np.eye(3), settings.friction, mpc_module.FACETS, True,
                                              mpc.min_normal_force)
                residual = crocoddyl.ResidualModelContactFrictionCone(state, frame, cone, nu)
            if constrained:
                constraints.addConstraint(f"cone_{foot}", crocoddyl.ConstraintModelResidual(
                    state, residual, cone.lb, cone.ub))
            else:
                bounds = crocoddyl.ActivationBounds(cone.lb, cone.ub)
                costs.addCost(f"cone_{foot}", crocoddyl.CostModelResidual(
                    state, crocoddyl.ActivationModelQuadraticBarrier(bounds), residual), 1e2 / h)
        dynamics = crocoddyl.DifferentialActionModelContactFwdDynamics(state, actuation, contact_set(contacts), costs,
                                                                        constraints, 0.0, True)
        nodes.append(crocoddyl.IntegratedActionModelEuler(dynamics, h))
        if not (landing and k > 0):
            knot_node.append(len(nodes) - 1)
    costs = crocoddyl.CostModelSum(state, nu)
    state_costs(costs, K, 1.0)
    terminal = crocoddyl.IntegratedActionModelEuler(crocoddyl.DifferentialActionModelContactFwdDynamics(
        state, actuation, contact_set(kept["knots"][K][0]), costs, 0.0, True), 0.0)
    problem = crocoddyl.ShootingProblem(x_of(kept["state"]), nodes, terminal)
    # one thread, as the MPC's cycle (Crocoddyl's default is one per core: on this machine, threads waiting for
    # a core another process holds made an iteration several times slower)
    problem.nthreads = 1
    return problem, x_of, u_of, knot_node


def barrier_cost(problem, h):
    """The part of ``problem``'s cost at its last calc that its friction cones' barrier (the costs named
    "cone_…", which the MPC has as constraints instead) makes: Σ over the running nodes of h times each
    one's weight times its value (a cost's data holds its value unweighted)."""
    total = 0.0
    for model, data in zip(problem.runningModels, problem.runningDatas):
        if hasattr(data, "differential"):  # (an impulse node has no cone)
            items, values = model.differential.costs.costs, data.differential.costs.costs.todict()
            total += h * sum(items[name].weight * item.cost for name, item in values.items()
                             if name.startswith("cone_"))
    return total


def trajectories(problem, kept, model, states, torques, x_of, u_of, knot_node):
    """xs, us of Crocoddyl's nodes from our knot states and torques (after an impulse node, the
    post-impact state)."""
    K = kept["mpc"].settings.knots
    xs, us = [], []
    for k in range(K):
        contacts, previous = kept["knots"][k]
        if k > 0 and set(contacts) - set(previous):
            xs.append(x_of(states[k]))
            us.append(np.zeros(0))
            kind = kept["mpc"].gait.contact
            xs.append(x_of(rl.impact(model, states[k], [rl.Contact(f, kind) for f in contacts]).state))
        else:
            xs.append(x_of(states[k]))
        us.append(u_of(torques[k]))
    xs.append(x_of(states[K]))
    return xs, us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robot", choices=WALKERS, default="bundled")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--at", type=float, default=1.2, help="the cycle compared with Crocoddyl [s]")
    parser.add_argument("--solver", choices=mpc_module.SOLVERS, default="proxsuite", help="the MPC's QP solver")
    parser.add_argument("--cold", type=float, metavar="SECONDS",
                        help="first walk SECONDS from an empty kernel cache and report the first minutes")
    args = parser.parse_args()
    if args.cold is not None and not args.cold > 0.0:
        parser.error(f"--cold {args.cold:g}: expected a positive duration")
    if not args.seconds > 0.0:
        parser.error(f"--seconds {args.seconds:g}: expected a positive duration")
    if not 0.0 <= args.at < args.seconds:
        parser.error(f"--at {args.at:g}: expected a time in the run, 0 ≤ --at < --seconds ({args.seconds:g})")
    import crocoddyl

    robot = walker(args.robot)
    speed = 0.3 if robot.sole_size is None else 0.1
    settings = dataclasses.replace(robot.settings, solver=args.solver)
    if args.cold is not None:
        cold_start(robot, settings, args.cold)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    Recorder.at = args.at
    log = walk(robot.model, robot.feet, robot.gait, robot.effort_limits, args.seconds,
               (Segment(0.0, (speed, 0.0, 0.0)),), (), settings=settings, mpc_class=Recorder)
    if log.error:
        raise SystemExit(f"the {robot.gait.name} stopped: {log.error}")
    timings = np.array([[t["linearization"], t["assembly"], t["solve"]] for t in log.timings]) * 1e3
    total = timings.sum(axis=1)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end; the MPC on "
          f"{robot.name} ({robot.gait.name}, {robot.gait.contact} contacts) at {speed:g} m/s, "
          f"{len(total)} cycles; {settings.knots} knots of {settings.knot_dt * 1e3:g} ms, torques held over "
          f"{settings.torque_hold}, QP solver {settings.solver}")
    print(f"one cycle (median ms): linearization {np.median(timings[:, 0]):.2f}, QP assembly "
          f"{np.median(timings[:, 1]):.2f}, solve {np.median(timings[:, 2]):.2f}; total {np.median(total):.2f} "
          f"(p90 {np.percentile(total, 90):.2f}, p99 {np.percentile(total, 99):.2f}, largest {total.max():.2f}) = "
          f"{1e3 / np.median(total):.0f} Hz against 100 Hz; {np.count_nonzero(total > 10.0)} of {len(total)} cycles "
          f"over 10 ms (the first plan, made at rest before the start: {sum(log.first_plan.values()) * 1e3:.2f} ms)")
    cycle = np.array([seconds for seconds, _ in Recorder.cycles]) * 1e3
    parts = np.array([calls for _, calls in Recorder.cycles]) * 1e3
    compiled = parts.sum(axis=1)
    print("of a cycle (median ms): " + ", ".join(f"{name} {np.median(parts[:, j]):.2f}"
                                                 for j, name in enumerate(COMPILED.values()))
          + f"; these compiled calls and the solver {np.median(compiled):.2f} of {np.median(cycle):.2f}, the Python "
          f"between them {np.median(cycle - compiled):.2f}")
    mpc = Recorder.kept["mpc"]
    solvers = {"ProxSuite (dense, primal-dual, warm from the shifted plan)": mpc._proxsuite,
               "DAQP (dense dual active set, cold)": mpc._daqp, "OSQP": mpc._osqp,
               f"the MPC's own: {settings.solver}, rows screened where many":
                   lambda *qp: mpc_module.WholeBodyMPC._run_solver(mpc, *qp)}
    print(f"\nthe QP of every tenth cycle ({len(Recorder.qps)}, {Recorder.qps[0][2].shape[1]} unknowns, "
          f"≈ {np.median([len(qp[3]) for qp in Recorder.qps]):.0f} inequality rows and the torque limits), "
          "solved to eps 1e-9 by each solver (median ms, 90th percentile):")
    for name, solve in solvers.items():
        times, unsolved = [], 0
        for qp in Recorder.qps:
            started = time.perf_counter()
            unsolved += not solve(*qp)[1]
            times.append(time.perf_counter() - started)
        print(f"  {name:60s} {np.median(times) * 1e3:7.2f} {np.percentile(times, 90) * 1e3:7.2f}"
              + (f"  ({unsolved} not solved within its iteration limit)" if unsolved else ""))
    kept = Recorder.kept
    model = kept["mpc"].model
    problem, x_of, u_of, knot_node = crocoddyl_problem(kept, model, robot.urdf)
    shifted_states, shifted_torques = kept["shifted"]
    xs0, us0 = trajectories(problem, kept, model, shifted_states, shifted_torques, x_of, u_of, knot_node)
    result = kept["result"]
    xs_mpc, us_mpc = trajectories(problem, kept, model, result.states, result.torques_plan, x_of, u_of, knot_node)
    mpc_cost, mpc_barrier = problem.calc(xs_mpc, us_mpc), barrier_cost(problem, kept["mpc"].settings.knot_dt)
    start_cost, start_barrier = problem.calc(xs0, us0), barrier_cost(problem, kept["mpc"].settings.knot_dt)
    ours = kept["costs"]
    print(f"\nthe cost in both measures (a check that the two problems are the same; Crocoddyl's without its "
          f"cones' barrier, which the MPC keeps as constraints): the plan the MPC started from {ours['start']:.6g} "
          f"(ours) {start_cost - start_barrier:.6g} (Crocoddyl's; its barrier {start_barrier:.3g}), its new plan "
          f"{ours['plan']:.6g} {mpc_cost - mpc_barrier:.6g} (barrier {mpc_barrier:.3g})")
    solver = crocoddyl.SolverFDDP(problem)
    solver.th_stop = 1e-9
    started = time.perf_counter()
    solver.solve(xs0, us0, 100, False)
    elapsed = time.perf_counter() - started
    iterations = max(solver.iter, 1)
    print(f"\nat t = {kept['time']:.2f} s, the same horizon and cost in Crocoddyl 3.2.1 (pin 4.0.0, {problem.nthreads} "
          f"thread), from the plan the MPC started from (cost {start_cost:.4g}):")
    print(f"  the MPC's QP (one Gauss-Newton step, hard margins):   cost {mpc_cost:.4g} in "
          f"{sum(result.timings.values()) * 1e3:.1f} ms")
    barrier = "wrench cone" if robot.sole_size is not None else "pyramid"
    print(f"  Crocoddyl FDDP (the {barrier} as a barrier), {iterations} iterations: cost {solver.cost:.4g} in "
          f"{elapsed * 1e3:.1f} ms, {elapsed / iterations * 1e3:.2f} ms per iteration")
    one = crocoddyl.SolverFDDP(problem)
    started = time.perf_counter()
    one.solve(xs0, us0, 1, False)
    print(f"  Crocoddyl FDDP, one iteration: cost {one.cost:.4g} in {(time.perf_counter() - started) * 1e3:.1f} ms")
    try:
        import mim_solvers  # (after crocoddyl, whose libraries it uses)
    except ImportError:
        print("  mim-solvers' CSQP: not installed (pip install mim-solvers)")
        return
    constrained = crocoddyl_problem(kept, model, robot.urdf, constrained=True)[0]
    plan_cost = constrained.calc(xs_mpc, us_mpc)  # (no barrier in it: the MPC's own measure)
    limit_rows = sum(node.nu for node in constrained.runningModels)  # (a limit per torque of every knot)
    cone_rows = sum(node.ng for node in constrained.runningModels) - limit_rows
    print(f"  CSQP's problem: {cone_rows} rows of the {barrier}s and {limit_rows} torque limits as inequalities")
    for iterations in (100, 1):
        csqp = mim_solvers.SolverCSQP(constrained)
        csqp.termination_tolerance = 1e-6
        started = time.perf_counter()
        csqp.solve(xs0, us0, iterations, False)
        elapsed = time.perf_counter() - started
        done = max(csqp.iter, 1) if iterations > 1 else 1
        print(f"  mim-solvers {version('mim-solvers')} CSQP (the {barrier} and the torque limits as constraints), "
              f"{done} iteration{'s' * (done > 1)} ({int(csqp.qp_iters)} ADMM iterations in the last QP): cost "
              f"{csqp.cost:.4g} (the MPC's plan {plan_cost:.6g} in it), largest violation "
              f"{max(csqp.constraint_norm, csqp.gap_norm):.1e}, in {elapsed * 1e3:.1f} ms, "
              f"{elapsed / done * 1e3:.2f} ms per iteration")


if __name__ == "__main__":
    main()
