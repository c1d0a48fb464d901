"""Every demo variant prints PASS: the validation neither cries wolf on a correct
linearization (a locked robot's zero blocks, the finite-difference reference's own
error) nor is loosened to get there (test_validation_trust.py shows it still fails
on each sign error).  Each variant runs through the CLI, as a user types it, with a
short simulation and one validated state."""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from robot_linearization.robots import BUNDLED_FEET

from conftest import ROBOTS_DIR, example_robot_path

FEET = list(BUNDLED_FEET)
ANYMAL_C = os.path.join(ROBOTS_DIR, "anymal_c_simple_description", "urdf", "anymal.urdf")

# name -> (robot: None = the bundled quadruped, an EXAMPLE_ROBOTS name or a path; demo arguments)
VARIANTS = {
    "quadruped, trotting (default), through a touchdown": (None, ["--duration", "0.4"]),
    "quadruped, 4 feet standing": (None, ["--gait", "none"]),
    "quadruped, free-floating": (None, ["--contacts", "none"]),
    "quadruped, 1 foot": (None, ["--contacts", FEET[0]]),
    "quadruped, 2 feet": (None, ["--contacts", ", ".join(FEET[:2])]),
    "quadruped, 3 feet": (None, ["--contacts", ", ".join(FEET[:3])]),
    "quadruped, fixed base, 4 feet (locked)": (None, ["--fixed-base"]),
    "quadruped, fixed base, no contacts": (None, ["--fixed-base", "--contacts", "none"]),
    "talos, 6d soles": ("talos", ["--contacts", "left_sole_link:6d, right_sole_link:6d"]),
    "talos, point feet": ("talos", ["--contacts", "left_sole_link, right_sole_link"]),
    "talos_full coupled, 6d soles": ("talos_full", ["--contacts", "left_sole_link:6d, right_sole_link:6d"]),
    "talos_full coupled, point feet": ("talos_full", ["--contacts", "left_sole_link, right_sole_link"]),
    "panda coupled": ("panda", ["--fixed-base"]),
    "solo12": ("solo12", []),
    "solo12, 4 feet": ("solo12", ["--contacts", "FL_FOOT, FR_FOOT, HL_FOOT, HR_FOOT"]),
    "anymal_c": (ANYMAL_C, []),
    "ur5": ("ur5", ["--fixed-base"]),
}


def run_demo(variant, output_dir):
    robot, arguments = VARIANTS[variant]
    if robot is not None:
        path = robot if os.path.isabs(robot) else example_robot_path(robot)
        assert os.path.exists(path), path
        arguments = ["--urdf", path] + arguments  # the demo loads mimic joints coupled, the default
    command = [sys.executable, "-m", "robot_linearization", "demo", "--duration", "0.05", "--samples", "1",
               "--repeat", "1", "--heatmap-rate", "0", "--output-dir", str(output_dir)] + arguments
    # (run beside its output, not in a checkout: `-m` imports the installed package these tests import, whose
    # kernels are compiled, not the checkout's sources, which would compile them again under each demo)
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=os.path.dirname(output_dir))


@pytest.fixture(scope="module")
def demo_runs(request, tmp_path_factory):
    """The selected variants' runs, two at a time (each is mostly interpreter and cache start-up)."""
    selected = [item.callspec.params["variant"] for item in request.session.items
                if getattr(item, "originalname", None) == "test_every_demo_variant_prints_pass"]
    root = tmp_path_factory.mktemp("demos")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = {variant: pool.submit(run_demo, variant, root / f"out{k}") for k, variant in enumerate(selected)}
        return {variant: run.result() for variant, run in runs.items()}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_demo_variant_prints_pass(variant, demo_runs):
    run = demo_runs[variant]
    verdicts = [line for line in run.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert run.returncode == 0 and len(verdicts) == 1 and verdicts[0].startswith("PASS: largest relative error"), (
        f"{variant}: exit {run.returncode}\n{run.stdout}\n{run.stderr}")
