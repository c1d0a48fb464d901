"""Command line: ``robot-linearization demo`` (or ``python -m robot_linearization demo``)."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from . import load_urdf, linearize
from .model import ModelError, State
from .robots import bundled_urdf_path
from .spatial import se3_exp
from .validation import validate

VALIDATION_TOLERANCE = 1e-6


def _demo_state(model, rng: np.random.Generator) -> State:
    """A moving robot: random joint positions and velocities, base tilted and
    lifted, twisting in its own frame."""
    n = model.n_joints
    s, r = rng.uniform(-1.0, 1.0, n), rng.normal(size=n)
    if not model.floating_base:
        return State(joint_positions=s, joint_velocities=r)
    pose = se3_exp(np.array([0.0, 0.0, 0.35, 0.1, -0.2, 0.3]))
    return State(base_pose=pose, joint_positions=s, base_twist=rng.normal(scale=0.5, size=6), joint_velocities=r)


def demo(args: argparse.Namespace) -> int:
    path = args.urdf or bundled_urdf_path()
    try:
        model = load_urdf(path, floating_base=not args.fixed_base)
    except ModelError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    state = _demo_state(model, rng)
    torques = rng.normal(size=model.n_joints)
    lin = linearize(model, state, torques)
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        linearize(model, state, torques)
        times.append(time.perf_counter() - start)
    report = validate(model, state, lin, torques)
    kind = "floating" if model.floating_base else "fixed"
    print(f"robot: {model.name} ({kind} base, {model.n_joints} joints) from {path}")
    print(f"A: {lin.A.shape}  B: {lin.B.shape}  M_inv: {lin.M_inv.shape}  (state order [z_H, z_s, z_v, z_r])")
    print(f"time per linearization: median {1e3 * np.median(times):.2f} ms over {args.repeat} runs")
    print("validation against geometric finite differences (A, B) and inv(CRBA) (M_inv):")
    print(report.summary())
    ok = report.passed(VALIDATION_TOLERANCE)
    print(f"{'PASS' if ok else 'FAIL'}: largest relative error {report.max_rel:.2e} (tolerance {VALIDATION_TOLERANCE:g})")
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="robot-linearization", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="linearize the bundled robot, time it, and validate it")
    p.add_argument("--urdf", help="use this URDF instead of the bundled quadruped")
    p.add_argument("--fixed-base", action="store_true", help="weld the root link to the world")
    p.add_argument("--repeat", type=int, default=50, help="timing runs (default 50)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=demo)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
