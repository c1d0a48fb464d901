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
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "mpc.py"), "--seconds", "1.3", "--at", "1.2",
                           "--solver", "daqp"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "QP solver daqp" in out
    for solver in ("ProxSuite", "DAQP", "OSQP"):
        assert re.search(rf"^  {solver} .* +\d+\.\d\d +\d+\.\d\d", out, re.MULTILINE), (solver, out)
    costs = re.search(r"started from ([\d.]+) \(ours\) ([\d.]+) \(Crocoddyl's; its barrier [\d.e+-]+\), its new plan "
                      r"([\d.]+) ([\d.]+) ", out)
    assert costs, out
    ours_start, theirs_start, ours_plan, theirs_plan = map(float, costs.groups())
    assert ours_start == pytest.approx(theirs_start, rel=1e-5) and ours_plan == pytest.approx(theirs_plan, rel=1e-5)
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
