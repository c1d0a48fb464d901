"""Command line: robot-linearization demo | replay | cache (or python -m robot_linearization)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import sys
import time

import numpy as np

from . import load_urdf, linearize
from .contacts import CONTACT_SYNTAX, ContactError, as_contacts, format_contacts, resolve
from .codegen.build import cache_directory, cache_entries, clear_cache
from .codegen.timing import measured
from .kernel_choice import KERNELS
from .model import Model, ModelError
from .robots import BUNDLED_FEET, bundled_urdf_path
from .walking.robots import WALKERS
from .stopping import STOP_SIGNALS, raised_again, stop
from .validation import validate

VALIDATION_TOLERANCE = 1e-6


DEMO_MARKER = ".robot_linearization_demo"
"""Written into every demo output directory: what the demo may replace on its next run."""
DEMO_OUTPUTS = ("input_bag", "output_bag", "heatmap_A_B.png", "touchdown.png", DEMO_MARKER)
def _remove_demo_outputs(path: str, names) -> None:
    for name in names:
        target = os.path.join(path, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        elif os.path.lexists(target):
            os.remove(target)


def prepare_demo_directory(path: str) -> str | None:
    """Make ``path`` ready for the demo's outputs; the reason it cannot be, or None.

    The demo writes only into a directory that is new, empty, or a previous demo
    output (it holds DEMO_MARKER); there it replaces only its own outputs
    (DEMO_OUTPUTS) and leaves every other file alone.  Anything else is refused:
    the user's data is never deleted.
    """
    if os.path.exists(path) and not os.path.isdir(path):
        return f"--output-dir {path} exists and is not a directory"
    if os.path.isdir(path):
        entries = os.listdir(path)
        if entries and DEMO_MARKER not in entries:
            return (f"--output-dir {path} is not empty and is not a previous demo output: refusing to write into it "
                    "(choose a new or empty directory)")
        _remove_demo_outputs(path, DEMO_OUTPUTS)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, DEMO_MARKER), "w") as f:
        f.write("robot-linearization demo output: the next demo run with this --output-dir replaces "
                + ", ".join(DEMO_OUTPUTS[:-1]) + " here and nothing else.\n")
    return None


def demo(args: argparse.Namespace) -> int:
    """Simulate the bundled robot, record a bag, replay it through the node's
    pipeline (linearizing every step), validate a sample, draw A and B (and, when it
    walks, one touchdown)."""
    from .gait import gait_for

    path = args.urdf or bundled_urdf_path()
    try:
        model = load_urdf(path, floating_base=not args.fixed_base)
        default = args.contacts is None and not args.urdf
        stance = ",".join(BUNDLED_FEET) if default else (args.contacts or "")
        contacts = as_contacts(stance)
        resolve(model, contacts)
        # the bundled quadruped on its own feet trots by default; its schedule sets the contacts
        name = args.gait or ("trot" if default and not args.fixed_base else "none")
        if name != "none" and args.contacts is not None:
            raise ValueError(f"--gait {name} sets the contacts (its schedule): leave out --contacts")
        gait = gait_for(name, model)
    except (ModelError, ContactError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with open(path) as f:
        description = f.read()
    if args.duration < args.dt:
        print(f"error: --duration {args.duration:g} s is shorter than one step (--dt {args.dt:g} s)", file=sys.stderr)
        return 2
    out_dir = args.output_dir
    created = not os.path.lexists(out_dir)
    problem = prepare_demo_directory(out_dir)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        return _run_demo(args, model, contacts, gait, path, description, out_dir)
    except BaseException:  # an error, a stop signal, a closed stdout: no half-written outputs stay
        _remove_demo_outputs(out_dir, DEMO_OUTPUTS[:-1])
        if created:  # the directory is this run's: it goes too, unless someone put a file in it meanwhile
            _remove_demo_outputs(out_dir, [DEMO_MARKER])
            with contextlib.suppress(OSError):
                os.rmdir(out_dir)
        raise


def _run_demo(args, model, contacts, gait, path: str, description: str, out_dir: str) -> int:
    """The demo's work, into the prepared ``out_dir``; its exit status."""
    from .ros.bag import replay, write_simulation_bag
    from .ros.images import write_linearization_figure, write_touchdown_figure
    from .ros.pipeline import PipelineConfig
    from .ros.simulation import Simulation

    kind = "floating" if model.floating_base else "fixed"
    print(f"robot: {model.name} ({kind} base, {model.n_joints} joints) from {path}")
    if gait is None:
        print(f"contacts: {format_contacts(contacts) or 'none (free-floating)'}")
    else:
        contacts = gait.contacts_at(0.0)
        print(f"contacts: the {gait.name}'s schedule, {gait.period:g} s a cycle: "
              + ", then ".join(f"{' + '.join(p.stance) if len(p.stance) < 4 else 'four feet'} {p.duration:g} s"
                               for p in gait.phases)
              + "; on a flat ground (z = 0), a foot closes its contact when it is on it, by a rigid impact "
                "(restitution 0)")

    simulation = Simulation(model, dt=args.dt, seed=args.seed, contacts=contacts, gait=gait)
    input_bag, output_bag = os.path.join(out_dir, "input_bag"), os.path.join(out_dir, "output_bag")
    start = time.perf_counter()
    steps = write_simulation_bag(input_bag, simulation, description, args.duration)
    print(f"simulated {args.duration:g} s ({steps} steps of {args.dt * 1e3:g} ms) -> {input_bag} "
          f"in {time.perf_counter() - start:.1f} s"
          + (f"; {len(simulation.touchdowns)} touchdowns, the schedule on /contacts" if gait else ""))

    config = PipelineConfig(floating_base=model.floating_base, use_effort=True, contacts=contacts)
    start = time.perf_counter()
    summary = replay(input_bag, output_bag, config=config, progress=False, heatmap_rate_hz=args.heatmap_rate,
                     health_rate_hz=args.heatmap_rate, contacts_topic="/contacts" if gait else None)
    print(f"replayed through the node pipeline -> {output_bag} in {time.perf_counter() - start:.1f} s")
    print(summary.text())
    last = summary.last_output
    if last is None:
        print("error: no linearization was produced", file=sys.stderr)
        return 1
    lin = last.linearization
    print(f"A: {lin.A.shape}  B: {lin.B.shape}  M_inv: {lin.M_inv.shape}  (state order [z_H, z_s, z_v, z_r])")
    contact_forces, d_state, d_input = (lin.contact_forces, lin.contact_forces_state_jacobian,
                                        lin.contact_forces_input_jacobian)
    if lin.contacts and contact_forces is not None and d_state is not None and d_input is not None:
        forces = contact_forces.reshape(-1, 3) if all(c.kind == "point" for c in lin.contacts) else None
        print(f"contact forces λ {contact_forces.shape}, ∂λ/∂z {d_state.shape}, "
              f"∂λ/∂τ {d_input.shape}"
              + (f"; vertical forces at the last state [N]: {np.round(forces[:, 2], 2).tolist()}"
                 if forces is not None and all(c.reference == "world_aligned" for c in lin.contacts) else ""))
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        linearize(model, last.state, last.joint_torques, contacts=lin.contacts)
        times.append(time.perf_counter() - t0)
    print(f"time per linearization: median {np.median(times) * 1e6:.0f} µs over {args.repeat} runs")

    # validate a sample of the recorded states against finite differences and inv(CRBA)
    rng = np.random.default_rng(args.seed)
    reports = []
    for _ in range(args.samples):  # (at least one)
        sim_state = Simulation(model, dt=args.dt, seed=int(rng.integers(1 << 30)), contacts=contacts, gait=gait)
        for _ in range(int(rng.integers(1, steps))):
            state, torques = sim_state.step()
        reports.append(validate(model, state, linearize(model, state, torques, contacts=sim_state.contacts), torques))
    worst = max(reports, key=lambda report: report.max_rel)  # (the first of the worst)
    touchdown = simulation.touchdowns[0] if simulation.touchdowns else None
    if touchdown is not None:  # the step through the first touchdown: A_d = A_d(step at x⁺)·A_impact(x⁻)
        knot = linearize(model, touchdown.impact.pre_impact_state, touchdown.joint_torques,
                         contacts=touchdown.impact.contacts, previous_contacts=touchdown.previous_contacts,
                         dt=args.dt)
        report = validate(model, knot)
        worst = report if report.max_rel > worst.max_rel else worst
    print(f"validation of {args.samples} sampled states (worst shown), against geometric finite differences "
          "(A, B) and inv(CRBA) (M_inv)" + (", and of the step through the first touchdown (A_d, B_d against "
                                            "differences of rl.step across the impact)" if touchdown else "") + ":")
    print(worst.summary(VALIDATION_TOLERANCE))
    png = os.path.join(out_dir, "heatmap_A_B.png")
    stance = f", standing on {len(lin.contacts)} contacts" if lin.contacts else ""
    write_linearization_figure(png, lin.A, lin.B, model,
                               f"ż = A z + B w of '{model.name}' at the last recorded state{stance}")
    print(f"A (left) and B (right): {png}  (red > 0, blue < 0, log scale over 8 decades)")
    if touchdown is not None:
        png = os.path.join(out_dir, "touchdown.png")
        again = Simulation(model, dt=args.dt, seed=args.seed, contacts=contacts, gait=gait)  # the same run
        times, states = [], []
        while again.time < touchdown.time + 0.1 and again.steps < steps:
            times.append(again.time)
            states.append(again.step()[0])
        times, states = times[-int(0.4 / args.dt):], states[-int(0.4 / args.dt):]  # the swing before it, and after
        write_touchdown_figure(png, model, touchdown, times, states,
                               f"'{model.name}' trotting: the first touchdown, as the simulation applies it "
                               "(rl.impact) and the node linearizes it")
        print(f"the first touchdown (feet, impulses, A_impact): {png}")
    return 0 if worst.passed(VALIDATION_TOLERANCE) else 1


def replay_command(args: argparse.Namespace) -> int:
    from .ros.fleet import OUTPUT_SUFFIX, find_bags, replay_bag, replay_bags, replayed
    from .ros.pipeline import PipelineConfig

    try:
        bags = find_bags(args.in_bags)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.output and len(bags) > 1:
        print(f"error: -o names the output of one bag, and {len(bags)} are given: without it each is written "
              f"beside its bag as BAG{OUTPUT_SUFFIX}", file=sys.stderr)
        return 2
    try:
        contacts = as_contacts(args.contacts)
    except ValueError as e:
        print(f"error: --contacts: {e}", file=sys.stderr)
        return 2
    config = PipelineConfig(floating_base=not args.fixed_base, base_frame=args.base_frame, use_effort=args.effort,
                            pairing_tolerance=args.pairing_tolerance, max_input_age=args.max_input_age,
                            mimic_joints=args.mimic_joints, contacts=contacts,
                            discretization_dt=args.discretization_dt, discretization=args.discretization,
                            restitution=args.restitution, friction_coefficient=args.friction,
                            friction_facets=args.friction_facets, sole_size=tuple(args.sole_size or ()),
                            kernel=args.kernel)
    options = dict(urdf=args.urdf, joint_states_topic=args.joint_states_topic, odom_topic=args.odom_topic,
                   config=config, heatmap_rate_hz=0.0 if args.no_heatmaps else args.heatmap_rate,
                   health_rate_hz=0.0 if args.no_health else args.heatmap_rate, storage=args.storage,
                   contacts_topic=args.contacts_topic, matrix_topics=args.matrix_topics)
    many = len(bags) > 1  # (what the summary and the exit status follow, whatever is skipped)
    if args.skip_existing:
        done = [bag for bag in bags if replayed(bag, args.output)]
        if done:
            print(f"{len(done)} bag{'s' * (len(done) > 1)} already replayed, skipped (--skip-existing): "
                  + ", ".join(done[:5]) + (f" and {len(done) - 5} more" if len(done) > 5 else ""))
            bags = [bag for bag in bags if bag not in done]
            if not bags:
                return 0
    if not many:
        result = replay_bag(bags[0], args.output, progress=sys.stderr.isatty(), **options)  # a bar on a terminal
        if result.output is None:
            print(f"error: {result.error}", file=sys.stderr)
            return 2
        print(f"wrote {result.output}")
        print(result.summary)
        return 0 if result.linearizations else 1
    jobs = args.jobs or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    start = time.perf_counter()
    results = replay_bags(bags, jobs=jobs, progress=sys.stderr.isatty(), **options)
    failed = [r for r in results if r.error]
    print(f"{len(results) - len(failed)} of {len(results)} bags replayed in {time.perf_counter() - start:.1f} s "
          f"on {min(jobs, len(bags))} process{'es' * (min(jobs, len(bags)) > 1)}, each into BAG{OUTPUT_SUFFIX} beside "
          f"it: {sum(r.linearizations for r in results)} linearizations from {sum(r.messages_read for r in results)} "
          "messages" + (f"; {len(failed)} failed:" if failed else ""))
    for r in failed:
        print(f"  {r.bag}: {r.error}" + (f" ({r.output} is written)" if r.output else ""))
    return 1 if failed else 0


def _number(kind, low=None, high=None, low_open=True, unit=""):
    """argparse type: a finite number in (low, high], with a one-line error."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a{'n integer' if kind is int else ' number'}") from None
        if not np.isfinite(value) or (low is not None and (value <= low if low_open else value < low)) \
                or (high is not None and value > high):
            lower, upper = ("-inf" if low is None else low), ("inf" if high is None else high)
            bounds = f"{'(' if low_open else '['}{lower}, {upper}]"
            raise argparse.ArgumentTypeError(f"{text} is outside {bounds}{unit}")
        return value
    return parse


def _facets(text):
    """argparse type of --friction-facets: 0 or an even integer >= 4."""
    value = _number(int, 0, None, low_open=False)(text)
    if value != 0 and (value < 4 or value % 2):
        raise argparse.ArgumentTypeError(f"{text} is neither 0 (the exact cone) nor an even integer >= 4")
    return value


class _Version(argparse.Action):
    """--version: 'robot-linearization 0.6.0 (<the package directory imported>)' on one line
    (argparse's own version action wraps it at the terminal's width): which copy runs, an
    installation or a checkout's sources, matters for the compiled kernels' cache."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print the version and the package directory, exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from . import __version__

        print(f"robot-linearization {__version__} ({os.path.dirname(os.path.abspath(__file__))})")
        parser.exit()


MAX_DEMO_STEP = 0.01
"""s: the demo's explicit integrator and gains are stable up to this step."""


def cache_command(args) -> int:
    """``robot-linearization cache list|clear|build``."""
    directory = cache_directory()
    if args.action == "build":
        return build_walker_kernels(args.robot, args.gait)
    if args.action == "clear":
        count, size = clear_cache(directory)
        print(f"removed {count} files ({_size(size)}) from {directory}")
        return 0
    entries = cache_entries(directory)
    if not entries:
        print(f"no generated kernels in {directory}")
        return 0
    for entry in entries:
        timed = (f", {entry.timing['generated_us']:.1f} µs a call against the generic {entry.timing['generic_us']:.1f}"
                 if entry.timing and measured(entry.timing) else "")
        print(f"{entry.robot}: {entry.what}, {entry.operations} operations, {_size(entry.bytes)}, built {entry.created}"
              f"{timed}  ({entry.name})")
    print(f"{len(entries)} kernels, {_size(sum(e.bytes for e in entries))}, in {directory}")
    return 0


def build_walker_kernels(name: str, gait: str) -> int:
    """``cache build``: every generated kernel the walking MPC of the walker ``name`` (walking.robots) runs
    with ``gait`` ("default": its own; "stand"), built and timed now, one after the other, each said in a
    line; 0 when all are in the cache, 1 when one cannot be built (its line says why)."""
    from .codegen.background import build_elsewhere
    from .kernel_choice import describe
    from .walking.mpc import mpc_kernels
    from .walking.robots import walker, walker_gait

    try:
        robot = walker(name)
    except ImportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    assert isinstance(robot.model, Model)  # (every walker's)
    chosen = walker_gait(robot, gait)
    kernels = mpc_kernels(chosen, robot.feet)
    failed = 0
    for contacts, kind in kernels:
        what = describe(robot.model, contacts, kind)
        start = time.perf_counter()
        problem = build_elsewhere(robot.model, contacts, kind)
        if problem is None:
            print(f"{what}: in the cache ({time.perf_counter() - start:.1f} s)")
        else:
            failed += 1
            print(f"{what}: not built: {problem}")
    print(f"{name}'s {chosen.name}: {len(kernels) - failed} kernels in {cache_directory()}"
          + (f", {failed} not built" if failed else ""))
    return 1 if failed else 0


def _size(count: int) -> str:
    return f"{count / 1024:.0f} KiB" if count < 1024 * 1024 else f"{count / 1024 ** 2:.1f} MiB"


def command_line_parser() -> argparse.ArgumentParser:
    """The parser of ``robot-linearization`` and its subcommands (what ``--help`` prints, and the
    manual's command-line page); each subcommand sets ``run``, its function."""
    parser = argparse.ArgumentParser(
        prog="robot-linearization",
        description="Geometric linearization (A, B, M^-1) of floating-base robot dynamics: a demo on the bundled "
                    "quadruped, and the ROS 2 node's pipeline run offline over recorded bags.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="{demo,replay,cache}")
    p = sub.add_parser("demo", help="simulate the bundled robot, linearize every step, validate, write bags and a PNG",
                       description="Simulate a robot, record a ROS 2 bag, replay it through the node's pipeline, "
                                   "time and validate the linearization, and draw A and B.")
    p.add_argument("--urdf", help="URDF file to use instead of the bundled quadruped (default: the bundled quadruped)")
    p.add_argument("--fixed-base", action="store_true", help="weld the root link to the world (default: floating)")
    p.add_argument("--duration", type=_number(float, 0.0, 600.0, unit=" s"), default=3.0,
                   help="simulated time [s], in (0, 600] (default: 3)")
    p.add_argument("--dt", type=_number(float, 0.0, MAX_DEMO_STEP, unit=" s"), default=0.002,
                   help=f"simulation step [s], in (0, {MAX_DEMO_STEP:g}] (default: 0.002)")
    p.add_argument("--samples", type=_number(int, 1, None, low_open=False), default=5,
                   help="recorded states validated against finite differences, >= 1 (default: 5)")
    p.add_argument("--repeat", type=_number(int, 1, None, low_open=False), default=200,
                   help="timing runs of one linearization, >= 1 (default: 200)")
    p.add_argument("--contacts", help=f"frames held by the ground ({CONTACT_SYNTAX}), or 'none' for a "
                   "free-floating robot (default: the bundled quadruped stands on its four feet; none with --urdf)")
    p.add_argument("--gait", choices=["trot", "none"],
                   help="a scheduled gait: 'trot' in place, the bundled quadruped's diagonal pairs in turn, each "
                        "touchdown a rigid impact; 'none' holds --contacts throughout (default: trot for the bundled "
                        "quadruped on its feet, none otherwise)")
    p.add_argument("--output-dir", default="demo_output",
                   help="directory for the bags and the PNG: new, empty, or a previous demo's; nothing else in "
                        "it is touched (default: demo_output)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the simulated motion without a gait; a trot is the same every run (default: 0)")
    p.add_argument("--heatmap-rate", type=_number(float, 0.0, None, low_open=False, unit=" Hz"), default=2.0,
                   help="heatmap images and ~/health vectors per simulated second in the output bag [Hz], 0 for "
                        "none (default: 2)")
    p.set_defaults(run=demo)
    r = sub.add_parser("replay", help="run the node's pipeline over ROS 2 bags and record its outputs",
                       description="Read joint states and odometry from ROS 2 bags (mcap or sqlite3), linearize as "
                                   "the node does, and write the node's output topics to a new bag for each.")
    r.add_argument("in_bags", nargs="+", metavar="IN_BAG",
                   help="ROS 2 bag directories (with metadata.yaml) to read, or glob patterns of them ('logs/*/')")
    r.add_argument("--urdf", help="URDF file (default: the bag's /robot_description)")
    r.add_argument("-o", "--output", help="bag directory to write, with one IN_BAG; must not exist "
                   "(default: IN_BAG_linearized, beside each IN_BAG)")
    r.add_argument("-j", "--jobs", type=_number(int, 0, None, low_open=False), default=1,
                   help="bags replayed at once, each in its own process; 0 for one per core (default: 1)")
    r.add_argument("--skip-existing", action="store_true",
                   help="skip the bags whose output is already a finished bag (a rerun over a folder of logs); "
                        "an unfinished output is still refused, never replaced (default: every bag is replayed, "
                        "and one whose output exists fails)")
    r.add_argument("--joint-states-topic", default="/joint_states",
                   help="sensor_msgs/JointState topic (default: /joint_states)")
    r.add_argument("--odom-topic", default="/odom",
                   help="nav_msgs/Odometry topic of the base, twist in the base frame (default: /odom)")
    r.add_argument("--fixed-base", action="store_true", help="weld the root link to the world: no odometry "
                   "needed (default: floating)")
    r.add_argument("--base-frame", default="", help="odometry child_frame_id expected (default: the URDF root link)")
    r.add_argument("--effort", action="store_true",
                   help="take joint torques [N m, N] from JointState.effort (default: zero torques)")
    r.add_argument("--pairing-tolerance", type=_number(float, 0.0, None, unit=" s"), default=0.02,
                   help="max time between a joint state and the odometry it is paired with [s], > 0 (default: 0.02)")
    r.add_argument("--max-input-age", type=_number(float, 0.0, None, unit=" s"), default=0.5,
                   help="inputs older than this at their log time are stale [s], > 0 (default: 0.5)")
    r.add_argument("--mimic-joints", choices=["coupled", "independent", "error"], default="coupled",
                   help="URDF mimic joints: follow their source joint (not states or inputs), be actuated joints, "
                        "or refuse the robot (default: coupled)")
    r.add_argument("--contacts", default="",
                   help=f"frames held by the ground ({CONTACT_SYNTAX}) (default: none, free-floating)")
    r.add_argument("--contacts-topic", help="std_msgs/String topic in the bag that changes the contact set, as the "
                   "node's 'contacts' topic (default: none)")
    r.add_argument("--restitution", type=_number(float, 0.0, 1.0, low_open=False), default=0.0,
                   help="restitution coefficient of a touchdown's impact (a set on --contacts-topic that closes a "
                        "contact: ~/impact_map, ~/impulses), in [0, 1] (default: 0, inelastic)")
    r.add_argument("--friction", type=_number(float, 0.0, None), default=0.7,
                   help="friction coefficient of the contact margins (~/contact_margins), > 0 (default: 0.7)")
    r.add_argument("--friction-facets", type=_facets, default=0,
                   help="the margins' friction cone: 0 for the exact cone, an even k >= 4 for the k-facet inner "
                        "pyramid (default: 0)")
    r.add_argument("--sole-size", type=_number(float, 0.0, None, unit=" m"), nargs=2, metavar=("LENGTH", "WIDTH"),
                   help="sole of the 6d contacts [m], for their centre-of-pressure margins (default: none; no "
                        "margins while a 6d contact is active)")
    r.add_argument("--discretization-dt", type=_number(float, 0.0, None, low_open=False, unit=" s"), default=0.0,
                   help="also write ~/A_d, ~/B_d, the exact Jacobians of one integrator step of this length [s], "
                        "0 for none (default: 0)")
    r.add_argument("--discretization", choices=["euler", "zoh"], default="euler",
                   help="that step: semi-implicit Euler on the state's Lie group (rl.step), or the zero-order hold "
                        "of A, B (default: euler)")
    r.add_argument("--heatmap-rate", type=_number(float, 0.0, None, low_open=False, unit=" Hz"), default=2.0,
                   help="~/A_heatmap, ~/B_heatmap images and ~/health vectors per second of bag time [Hz], 0 for "
                        "none (default: 2)")
    r.add_argument("--no-heatmaps", action="store_true", help="write no heatmap images (default: write them)")
    r.add_argument("--no-health", action="store_true", help="write no ~/health vectors (default: write them)")
    r.add_argument("--matrix-topics", action="store_true",
                   help="also write each matrix as its own std_msgs/Float64MultiArray topic, with ~/stamp and the "
                        "JSON label lists, as the node's publish_matrix_topics (default: the typed ~/linearization "
                        "only)")
    r.add_argument("--storage", choices=["mcap", "sqlite3"], default="mcap",
                   help="storage of the output bag (default: mcap)")
    r.add_argument("--kernel", choices=KERNELS, default=None,
                   help="which kernel linearizes, as the node's 'kernel' parameter: 'auto' (the generic one until the "
                        "robot's generated one is built in the background), 'generic' or 'generated' (built first) "
                        "(default: $ROBOT_LINEARIZATION_KERNEL, else auto)")
    r.set_defaults(run=replay_command)
    c = sub.add_parser("cache", help="list, clear or build ahead the generated kernels compiled on this machine",
                       description="The shared libraries of the kernels generated for robots (kernel='auto' or "
                                   "'generated'), in $ROBOT_LINEARIZATION_CACHE_DIR, else $XDG_CACHE_HOME (default "
                                   "~/.cache)/robot_linearization: list them, remove them (only them), or build "
                                   "ahead those a walking robot's MPC runs (for a deployment image).")
    c.add_argument("action", choices=["list", "clear", "build"],
                   help="list: each kernel, its robot and size; clear: remove them (rebuilt at their next use); build: "
                        "every kernel the MPC of --robot with --gait runs, built and timed now")
    c.add_argument("--robot", choices=WALKERS, default="bundled",
                   help="build: the walking robot (default: bundled; solo12, anymal, talos: example-robot-data)")
    c.add_argument("--gait", choices=["default", "stand"], default="default",
                   help="build: its own gait (default) or standing on every foot")
    c.set_defaults(run=cache_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``robot-linearization`` with ``argv`` (default: sys.argv[1:]); returns the exit status
    (0 on success, 1 for a failed run, 2 for a wrong argument, 128 + the signal when interrupted)."""
    # warnings from the library (e.g. an unphysical inertia in a URDF) name where they come from
    logging.basicConfig(format="%(name)s: %(levelname)s: %(message)s", level=logging.WARNING)
    args = command_line_parser().parse_args(argv)
    handlers = {signum: signal.signal(signum, stop) for signum in STOP_SIGNALS}
    unraisable_hook, sys.unraisablehook = sys.unraisablehook, raised_again(sys.unraisablehook)
    try:
        status = args.run(args)
        sys.stdout.flush()  # a closed stdout shows here, not in the interpreter's last flush
        return status
    except KeyboardInterrupt as e:
        signum = getattr(e, "signum", signal.SIGINT)
        print(f"interrupted by {signal.Signals(signum).name}: stopped; what this run was writing is removed",
              file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:  # `robot-linearization demo | head`: the reader has gone, say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    finally:
        sys.unraisablehook = unraisable_hook
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


if __name__ == "__main__":
    sys.exit(main())
