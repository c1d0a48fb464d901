"""A whole-body MPC trots a quadruped: forward at 0.3 m/s, a lateral push at 2.5 s (0.5 m/s for the
bundled robot, 0.3 m/s for the others), a turn in place at 0.5 rad/s from 4 s, trotting in place
from 7 s; 10 s in all.  --robot: the bundled quadruped (default), solo12 or anymal (ANYmal C), the
last two from example-robot-data, with their SRDF's standing posture and the MPC's default
settings (in each robot's units, walking/scale.py).  --robot talos: Talos (example-robot-data)
walks on its two soles (6d contacts, their centres of pressure kept in 0.2 m × 0.1 m, its gait
and settings from walking/robots.py): stepping in place, forward at 0.1 m/s from 2 s, turning at
0.25 rad/s as it walks from 6 s (scenario.WALK_TURN).

Every 10 ms the MPC (robot_linearization/walking/mpc.py, docs/mpc.md) linearizes the robot along
its previous plan at 20 knots of 15 ms with the exact step Jacobians (through the touchdowns'
impacts), and solves one QP with the contact margins as constraints; the robot, on a flat ground
(walking/ground.py), gets its first torque; the first plan is made at rest, before the start.
Prints how well it followed, what a cycle costs (median, 99th percentile, largest, the cycles
over the 10 ms of 100 Hz) and how far the held feet drifted; draws the base velocity against the
command, the foot heights, the contact forces against their cones (on soles, also how far inside
its sole each wrench's centre of pressure lay) and the time per cycle into FIGURE (a new file).

--plant mujoco: the same on MuJoCo (walking/mujoco_plant.py: the robot's MJCF written from the model,
elliptic cones, impratio 100), which adds each stance's slip and the feet's penetration.  Where MuJoCo
renders offscreen ($MUJOCO_GL=egl or osmesa), it also writes an animation beside FIGURE (its name, .gif:
a new file; 10 images a second, played in real time).

--control-period: how often the MPC plans (default 10 ms; the walks of 5 and 2 ms in docs/mpc.md).

Run: python examples/mpc_trot.py [FIGURE.png] [--robot bundled|solo12|anymal|talos] [--seconds S]
     [--plant ground|mujoco] [--control-period SECONDS]
(exit status 1 if the robot falls)
"""

import argparse
import os
import sys

import numpy as np

from robot_linearization.walking.robots import WALKERS, walker
from robot_linearization.walking.scenario import LATERAL_PUSH, PLANTS, TROT_TURN_PUSH, WALK_TURN, Push, walk


def figure(log, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    time, velocity, command = np.array(log.time), np.array(log.velocity), np.array(log.command)
    heading = np.array(log.yaw)
    forward = velocity[:, 0] * np.cos(heading) + velocity[:, 1] * np.sin(heading)
    lateral = -velocity[:, 0] * np.sin(heading) + velocity[:, 1] * np.cos(heading)
    soles = bool(log.pressure_margins)
    fig, axes = plt.subplots(5 if soles else 4, 1, figsize=(10, 13.5 if soles else 11), sharex=True)
    axes[0].plot(time, forward, label="forward [m/s]")
    axes[0].plot(time, command[:, 0], "--", label="commanded forward")
    axes[0].plot(time, lateral, label="lateral [m/s]")
    axes[0].plot(time, log.yaw_rate, label="yaw rate [rad/s]")
    axes[0].plot(time, command[:, 2], "--", label="commanded yaw rate")
    axes[0].legend(loc="upper right", fontsize=8)
    axes[0].set_title(f"{title}: base velocity (in its heading) against the command")
    heights = np.array(log.foot_heights) * 1e3
    for i, foot in enumerate(log.feet):
        axes[1].plot(time, heights[:, i], label=foot)
    axes[1].set_ylabel("foot height [mm]")
    axes[1].legend(loc="upper right", fontsize=8)
    for foot in log.feet:
        samples = [(t, f) for t, name, f in log.forces if name == foot]
        if samples:
            t, f = np.array([s[0] for s in samples]), np.array([s[1] for s in samples])
            axes[2].plot(t, np.hypot(f[:, 0], f[:, 1]) / np.maximum(f[:, 2], 1e-9), ".", markersize=1, label=foot)
    axes[2].axhline(0.7, color="k", linestyle="--", label="friction coefficient 0.7")
    axes[2].set_ylim(0, 1.0)
    axes[2].set_ylabel("|f_t| / f_n")
    axes[2].legend(loc="upper right", fontsize=8)
    if soles:  # each received wrench's centre of pressure: how far inside its sole
        for foot in log.feet:
            samples = np.array([(t, margin) for t, name, margin in log.pressure_margins if name == foot])
            if len(samples):
                axes[3].plot(samples[:, 0], samples[:, 1] * 1e3, ".", markersize=1, label=foot)
        axes[3].axhline(0.0, color="k", linestyle="--", label="the sole's edge")
        axes[3].set_ylabel("centre of pressure:\nmargin [mm]")
        axes[3].legend(loc="upper right", fontsize=8)
    timings = np.array([[t["linearization"], t["assembly"], t["solve"]] for t in log.timings]) * 1e3
    axes[-1].stackplot(time, timings.T, labels=["linearization", "QP assembly", "solve"])
    axes[-1].axhline(10.0, color="k", linestyle="--", label="10 ms (100 Hz)")
    axes[-1].set_ylabel("ms per cycle")
    axes[-1].set_xlabel("time [s]")
    axes[-1].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=60)


FRAME_PERIOD = 0.1
"""[s] between two images of the animation (--plant mujoco)."""


def write_animation(frames, path: str) -> None:
    """The images ``frames`` ((H, W, 3) uint8) as a looping GIF at ``path``, one every FRAME_PERIOD: written
    beside it first, then moved there (a run that fails leaves no half-written file)."""
    import tempfile

    from PIL import Image

    images = [Image.fromarray(frame).quantize(colors=64) for frame in frames]
    descriptor, temporary = tempfile.mkstemp(suffix=".gif", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(descriptor, "wb") as file:
            images[0].save(file, format="GIF", save_all=True, append_images=images[1:],
                           duration=int(FRAME_PERIOD * 1000), loop=0, optimize=True)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # (as a file made with open(): mkstemp's is its owner's alone)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _inside(pressure_margins) -> str:
    """Where the centres of pressure of Log.pressure_margins came nearest a sole's edge, in words."""
    least = min(margin for _, _, margin in pressure_margins) * 1e3  # [mm]
    return f"at least {least:.2f} mm inside the sole" if least >= 0 else f"at most {-least:.2f} mm outside the sole"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("figure", nargs="?", default=None, help="a new PNG file for the figure (none: no figure)")
    parser.add_argument("--robot", choices=WALKERS, default="bundled", help="which robot trots (default: bundled)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to walk (default 10)")
    parser.add_argument("--plant", choices=PLANTS, default="ground",
                        help="what it walks on: the project's own ground or MuJoCo (the mujoco extra; default ground)")
    parser.add_argument("--control-period", type=float, default=0.01, metavar="SECONDS",
                        help="how often the MPC plans, a whole number of milliseconds from 1 to 50 (default 0.01); "
                             "the simulation steps 2 ms, or 1 ms where that does not divide it")
    args = parser.parse_args()
    milliseconds = args.control_period * 1e3
    if not (np.isfinite(milliseconds) and 1 <= milliseconds <= 50 and abs(milliseconds - round(milliseconds)) < 1e-9):
        parser.error(f"--control-period: expected a whole number of milliseconds from 0.001 to 0.05 s, got "
                     f"{args.control_period:g}")
    step = 0.002 if round(milliseconds) % 2 == 0 else 0.001
    if args.figure is not None and os.path.exists(args.figure):
        parser.error(f"{args.figure} exists: give a new file")
    if args.figure is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.figure))):
        parser.error(f"{args.figure}: its directory does not exist")
    if not 0 < args.seconds <= 60:
        parser.error(f"--seconds: expected a duration in (0, 60], got {args.seconds:g}")
    animation = None
    if args.plant == "mujoco" and args.figure is not None and os.environ.get("MUJOCO_GL") in ("egl", "osmesa"):
        animation = os.path.splitext(args.figure)[0] + ".gif"
        if os.path.exists(animation):
            parser.error(f"{animation} (the animation beside the figure) exists: give a new figure name")
    try:
        robot = walker(args.robot)
    except ImportError as error:  # (a robot of example-robot-data without it)
        parser.error(str(error))
    soles = robot.sole_size is not None
    if soles:  # a humanoid: it walks and turns
        segments, push = WALK_TURN, ()
    else:
        segments = TROT_TURN_PUSH
        push = LATERAL_PUSH if args.robot == "bundled" else (Push(2.5, (0.0, 0.3, 0.0)),)
    try:
        log = walk(robot.model, robot.feet, robot.gait, robot.effort_limits, args.seconds, segments, push,
                   settings=robot.settings, plant=args.plant, frame_period=FRAME_PERIOD if animation else None,
                   control_period=args.control_period, dt=step)
    except (ImportError, RuntimeError) as error:  # (MuJoCo not installed, or it cannot render here)
        parser.error(str(error))
    if not log.time:
        print(f"stopped: {log.error}", file=sys.stderr)
        return 1
    time, velocity = np.array(log.time), np.array(log.velocity)
    timings = np.array([[t["linearization"], t["assembly"], t["solve"]] for t in log.timings]) * 1e3
    total = timings.sum(axis=1)
    print(f"walked {time[-1] + args.control_period:.2f} s: base at {np.round(log.position[-1], 3).tolist()} m, "
          f"heading {np.degrees(log.yaw[-1]):.0f}°")
    heading = np.array(log.yaw)
    forward = velocity[:, 0] * np.cos(heading) + velocity[:, 1] * np.sin(heading)
    # the settled windows (a humanoid's: whole steps of 0.8 s)
    windows = (((3.2, 6.0, 0.1, "forward speed", "m/s"), (7.6, 10.0, 0.25, "yaw rate", "rad/s")) if soles else
               ((1.5, 2.5, 0.3, "forward speed", "m/s"), (5.5, 7.0, 0.5, "yaw rate", "rad/s")))
    for (start, end, commanded, what, unit), values in zip(windows, (forward, np.array(log.yaw_rate))):
        inside = (time >= start) & (time < end)
        if inside.any():
            print(f"{what} {start:g}–{end:g} s: {values[inside].mean():.3f} {unit} (command {commanded:g})")
    print(f"MPC cycle: median {np.median(total):.1f} ms (linearization {np.median(timings[:, 0]):.1f}, "
          f"QP assembly {np.median(timings[:, 1]):.1f}, solve {np.median(timings[:, 2]):.1f}), "
          f"{1e3 / np.median(total):.0f} Hz; 99th percentile {np.percentile(total, 99):.1f} ms, largest "
          f"{total.max():.1f} ms, {np.count_nonzero(total > milliseconds)} of {len(total)} cycles over "
          f"{milliseconds:.0f} ms (the first plan, made at rest before the start: "
          f"{sum(log.first_plan.values()) * 1e3:.1f} ms)")
    if log.fallbacks or max(log.slack, default=0.0) > 0:
        print(f"constraints made soft in {sum(s > 0 for s in log.slack)} cycles (largest slack "
              f"{max(log.slack):.3g}); the previous plan used in {len(log.fallbacks)} cycles")
    if args.plant == "mujoco":
        slips = np.array([slip for _, _, slip in log.slips]) * 1e3
        print(f"on MuJoCo: each stance's slip median {np.median(slips):.2f} mm, largest {slips.max():.2f} mm; "
              f"the feet at most {log.penetration * 1e3:.2f} mm into the floor")
        if soles and log.pressure_margins:
            print(f"every sole's centre of pressure {_inside(log.pressure_margins)}")
        if args.figure is not None:
            figure(log, args.figure, f"{robot.model.name} on MuJoCo")
            print(f"figure: {args.figure}")
        if animation is not None and log.frames:
            write_animation(log.frames, animation)
            print(f"animation: {animation} ({len(log.frames)} images)")
        if log.error is not None:
            print(f"stopped: {log.error}", file=sys.stderr)
            return 1
        return 0
    unit = "mm or mrad (a sole's tilt)" if soles else "mm"
    print(f"held feet: at most {max(log.drift) * 1e3:.2g} {unit} from where they are held after a step's "
          f"projection, which corrected up to {max(log.corrections) * 1e3:.2f} {unit}"
          + (f" and turned a sole by up to {max(log.turns) * 1e3:.2f} mrad" if soles else ""))
    if soles:
        print(f"every wrench a sole received: its centre of pressure {_inside(log.pressure_margins)}")
    print(f"largest dynamics residual {max(log.dynamics_residual):.1e}, "
          f"smallest planned margin {min(log.min_margin):.1e}")
    kinds = {}
    for violation in log.violations:
        kinds.setdefault(violation.what, []).append(violation.amount)
    print("on the ground (μ = 0.7), where a rigid contact would have pulled or needed more friction: "
          + (", ".join({"lets go": f"a foot let go {len(a)} times (instead of pulling by up to {max(a):.2f} N)",
                        "slides": f"a foot slid {len(a)} times (instead of needing up to {max(a):.2f} N more "
                                  "friction)",
                        "pulls": f"a sole held although it pulled, {len(a)} times (by up to {max(a):.2f} N)",
                        "twists": f"a sole held although friction could not hold its turn, {len(a)} times (by up "
                                  f"to {max(a):.2f} N m)"}
                       .get(what, f"{what} {len(a)} times (at most {max(a) * 1e3:.2f} mm)")
                       for what, a in kinds.items()) or "none"))
    if args.figure is not None:
        figure(log, args.figure, robot.model.name if args.robot != "bundled" else "the bundled quadruped")
        print(f"figure: {args.figure}")
    if log.error is not None:
        print(f"stopped: {log.error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
