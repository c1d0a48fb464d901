"""The scripts under examples/ run as a user runs them, and do what they say."""

import os
import subprocess
import sys
from pathlib import Path

import robot_linearization

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_finite_horizon_lqr_brings_the_pushed_quadruped_back():
    package_root = str(Path(robot_linearization.__file__).resolve().parent.parent)  # the one under test
    done = subprocess.run([sys.executable, str(EXAMPLES / "finite_horizon_lqr.py")], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": package_root})
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.strip()[:1].isdigit()]
    closed, nominal_only = float(rows[-1][1]), float(rows[-1][2])
    assert closed < 1e-2 * float(rows[0][1]) and nominal_only > float(rows[0][2])
    assert "A_d (250, 36, 36)" in done.stdout


def test_mpc_trot_walks_prints_its_costs_and_draws_a_new_figure(tmp_path):
    package_root = str(Path(robot_linearization.__file__).resolve().parent.parent)
    environment = {**os.environ, "PYTHONPATH": package_root}
    figure = tmp_path / "trot.png"
    done = subprocess.run([sys.executable, str(EXAMPLES / "mpc_trot.py"), str(figure), "--seconds", "1.5"],
                          capture_output=True, text=True, timeout=600, env=environment)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "walked 1.50 s" in done.stdout and "MPC cycle: median" in done.stdout
    assert "of 150 cycles over 10 ms (the first plan, made at rest before the start: " in done.stdout
    assert figure.stat().st_size > 10_000
    again = subprocess.run([sys.executable, str(EXAMPLES / "mpc_trot.py"), str(figure)], capture_output=True,
                           text=True, timeout=600, env=environment)
    assert again.returncode == 2 and "exists: give a new file" in again.stderr
    assert again.stderr.strip().splitlines()[-1].count("error") == 1
