"""The benchmarks run: bench/mpc.py on the bundled robot, briefly, prints every solver's time on the same QPs
and Crocoddyl's cost of the MPC's plans equal to the MPC's own (the check that the two problems it times
are the same one)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_mpc_benchmark_runs_and_times_the_same_problem_in_crocoddyl():
    pytest.importorskip("crocoddyl", reason="crocoddyl is not installed (pip install .[test])")
    # (at 2.0 s the plan the MPC starts from has forces past their pyramids: Crocoddyl's barrier counts them)
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "mpc.py"), "--seconds", "2.1", "--at", "2.0",
                           "--solver", "daqp"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "QP solver daqp" in out
    for solver in ("ProxSuite", "DAQP", "OSQP", "the MPC's own: daqp, rows screened where many"):
        assert re.search(rf"^  {solver} .* +\d+\.\d\d +\d+\.\d\d", out, re.MULTILINE), (solver, out)
    # the cycle split into its compiled calls with the solver, and the Python between them
    parts = re.search(r"of a cycle \(median ms\): the knots' kernels ([\d.]+), condensing ([\d.]+), cost ([\d.]+), "
                      r"constraint rows ([\d.]+), solver ([\d.]+); these compiled calls and the solver ([\d.]+) of "
                      r"([\d.]+), the Python between them ([\d.]+)", out)
    assert parts, out
    _, condensing, cost, _, solver, compiled, cycle, python = map(float, parts.groups())
    assert min(condensing, cost, solver) > 0.0 and 0.0 < compiled < cycle and 0.0 < python < cycle
    costs = re.search(r"started from ([\d.]+) \(ours\) ([\d.]+) \(Crocoddyl's; its barrier ([\d.e+-]+)\), its new "
                      r"plan ([\d.]+) ([\d.]+) ", out)
    assert costs, out
    ours_start, theirs_start, barrier, ours_plan, theirs_plan = map(float, costs.groups())
    assert ours_start == pytest.approx(theirs_start, rel=1e-5) and ours_plan == pytest.approx(theirs_plan, rel=1e-5)
    assert barrier > 1.0  # (the barrier taken out of Crocoddyl's measure is weighted as Crocoddyl weighs it)
    assert ours_plan != pytest.approx(ours_start, rel=1e-3)  # (the plan moved: the two costs compare two plans)
    assert "Crocoddyl FDDP (the pyramid as a barrier)" in out
    # CSQP on the same problem with the pyramids and torque limits as constraints: the MPC's plan costs there
    # what it costs in ours, and solved to convergence the constraints hold
    csqp = re.search(r"CSQP \(the pyramid and the torque limits as constraints\), \d+ iterations .*: cost ([\d.]+) "
                     r"\(the MPC's plan ([\d.]+) in it\), largest violation ([\d.e+-]+),", out)
    assert csqp, out
    rows = re.search(r"CSQP's problem: (\d+) rows of the pyramids and (\d+) torque limits", out)
    assert rows and int(rows.group(1)) > 0 and int(rows.group(2)) > 0, out  # (the cones are constraints there)
    assert float(csqp.group(2)) == pytest.approx(ours_plan, rel=1e-5) and float(csqp.group(3)) < 1e-4


def test_the_mpc_benchmark_reports_a_cold_start_and_leaves_no_cache_behind(tmp_path):
    """--cold: the walk from an empty kernel cache, its table per ten seconds of the wall clock (with the
    generic kernel as the default here, no build: 0 kernels generated), the temporary cache removed; a
    --cold that is no positive duration is refused in one line."""
    pytest.importorskip("crocoddyl", reason="crocoddyl is not installed (pip install .[test])")
    import os

    environment = {**os.environ, "TMPDIR": str(tmp_path), "ROBOT_LINEARIZATION_KERNEL": "generic"}
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "mpc.py"), "--cold", "0.5", "--seconds", "0.3",
                           "--at", "0.1"], capture_output=True, text=True, timeout=600, cwd=ROOT, env=environment)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert out.startswith("cold start: bundled walks 0.5 s from an empty kernel cache"), out[:500]
    # (51 cycles: the first plan, at rest before the start, and 50 of 10 ms)
    assert re.search(r"^     0-10  +51 +\d+\.\d\d +\d+\.\d\d +0 of 14$", out, re.MULTILINE), out[:800]
    assert "nothing built: the generic kernel is the default here" in out and "one cycle (median ms)" in out
    assert list(tmp_path.iterdir()) == []  # (the temporary cache gone)
    refused = subprocess.run([sys.executable, str(ROOT / "bench" / "mpc.py"), "--cold", "0"], capture_output=True,
                             text=True, timeout=120, cwd=ROOT, env=environment)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].endswith(
        "--cold 0: expected a positive duration")
