"""The scripts under examples/ run as a user runs them, and do what they say."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

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


def test_mpc_trot_refuses_a_figure_whose_directory_does_not_exist_before_it_walks(tmp_path):
    package_root = str(Path(robot_linearization.__file__).resolve().parent.parent)
    figure = tmp_path / "missing" / "trot.png"
    refused = subprocess.run([sys.executable, str(EXAMPLES / "mpc_trot.py"), str(figure)], capture_output=True,
                             text=True, timeout=120, env={**os.environ, "PYTHONPATH": package_root})
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout + refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.endswith(f"{figure}: its directory does not exist") and last.count("error") == 1
    assert list(tmp_path.iterdir()) == []


def test_mpc_trot_on_mujoco_writes_an_animation_beside_its_figure_where_mujoco_renders(tmp_path):
    """--plant mujoco with $MUJOCO_GL=egl: the figure and, beside it, a looping GIF of the walk (10 images a
    second, the robot moving in them); a second run with the same figure name refuses in one line, the GIF
    untouched.  Where MuJoCo cannot render at all, the error is one line (then the test skips, saying so)."""
    import pytest

    pytest.importorskip("mujoco", reason="MuJoCo is not installed (pip install .[mujoco])")
    from PIL import Image

    package_root = str(Path(robot_linearization.__file__).resolve().parent.parent)
    environment = {**os.environ, "PYTHONPATH": package_root, "MUJOCO_GL": "egl"}
    figure = tmp_path / "walk.png"
    command = [sys.executable, str(EXAMPLES / "mpc_trot.py"), str(figure), "--plant", "mujoco", "--seconds", "1.0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment)
    if done.returncode == 2 and "MuJoCo cannot render here" in done.stderr:
        assert done.stderr.strip().splitlines()[-1].count("error") == 1
        pytest.skip(f"MuJoCo cannot render offscreen with EGL here: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stdout + done.stderr
    animation = tmp_path / "walk.gif"
    assert f"animation: {animation} (11 images)" in done.stdout and figure.stat().st_size > 10_000
    with Image.open(animation) as gif:
        assert gif.n_frames == 11 and gif.info["duration"] == 100 and gif.info["loop"] == 0
        first = np.asarray(gif.convert("RGB"), dtype=float)
        gif.seek(10)
        last = np.asarray(gif.convert("RGB"), dtype=float)
    assert first.shape == (240, 320, 3) and np.abs(last - first).mean() > 1.0  # (it walked: the images differ)
    assert oct(animation.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    before = animation.read_bytes()
    figure.unlink()
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment)
    assert again.returncode == 2 and "walk.gif (the animation beside the figure) exists" in again.stderr
    assert again.stderr.strip().splitlines()[-1].count("error") == 1 and animation.read_bytes() == before
    assert not figure.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["walk.gif"]


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def test_mpc_trot_plans_at_the_control_period_asked_for_and_refuses_one_that_is_no_whole_millisecond(tmp_path):
    package_root = str(Path(robot_linearization.__file__).resolve().parent.parent)
    environment = {**os.environ, "PYTHONPATH": package_root}
    done = subprocess.run([sys.executable, str(EXAMPLES / "mpc_trot.py"), "--control-period", "0.002", "--seconds",
                           "0.1"], capture_output=True, text=True, timeout=600, env=environment)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "walked 0.10 s" in done.stdout and " of 50 cycles over 2 ms " in done.stdout, done.stdout
    for bad in ("0.0025", "0", "0.1", "nan", "fast"):
        refused = subprocess.run([sys.executable, str(EXAMPLES / "mpc_trot.py"), "--control-period", bad],
                                 capture_output=True, text=True, timeout=600, env=environment)
        assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].count("error") == 1, refused.stderr
        assert "--control-period" in refused.stderr.strip().splitlines()[-1]
