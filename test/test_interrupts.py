"""Interrupted runs leave nothing half-written: `replay` and `demo` stopped by a signal
(SIGTERM as `timeout`, systemd or a launch shutdown send, SIGHUP, Ctrl-C) or by a closed
stdout, in a real subprocess."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import robot_linearization as rl
from robot_linearization.cli import DEMO_MARKER
from robot_linearization.robots import bundled_urdf_path
from robot_linearization.ros.bag import write_simulation_bag
from robot_linearization.ros.simulation import Simulation

URDF = open(bundled_urdf_path()).read()


def start(arguments, cwd, **options):
    """The CLI in a new process; run from ``cwd`` so that `-m` imports the package these
    tests import (the installation under scripts/test.sh), not a checkout's sources."""
    return subprocess.Popen([sys.executable, "-m", "robot_linearization", *arguments], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)


def signal_when_written(process, path, signum):
    """Send ``signum`` as soon as ``path`` exists (the run has started writing it); None: only wait."""
    deadline = time.monotonic() + 120
    while not os.path.exists(path):
        assert process.poll() is None, f"finished before writing {path}: {process.communicate()}"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.002)
    if signum is None:
        return None
    process.send_signal(signum)
    return process.communicate(timeout=120)


@pytest.fixture(scope="module")
def long_bag(tmp_path_factory):
    """3 s of the bundled quadruped at 500 Hz: its replay takes long enough to be stopped midway."""
    path = tmp_path_factory.mktemp("bags") / "in"
    write_simulation_bag(path, Simulation(rl.load_urdf(URDF), dt=0.002, seed=1), URDF, 3.0)
    return path


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_replay_stopped_by_a_signal_removes_its_bag_and_exits_128_plus_the_signal(long_bag, tmp_path, signum):
    out = tmp_path / "out"
    process = start(["replay", str(long_bag), "-o", str(out)], tmp_path)
    _, err = signal_when_written(process, out, signum)
    assert process.returncode == 128 + signum, err
    assert not out.exists()
    assert "Traceback" not in err and err.strip().count("\n") == 0, err
    assert f"interrupted by {signal.Signals(signum).name}" in err
    assert (long_bag / "metadata.yaml").is_file()  # the input is untouched


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_many_bags_on_two_processes_stopped_by_a_signal_leave_no_bag_half_written(long_bag, tmp_path, signum):
    """The workers replaying two bags at once stop with the program; the bag being written is
    removed (the first is too, unless it was finished before the signal: then it is whole)."""
    bags = [tmp_path / "a", tmp_path / "b"]
    for bag in bags:
        shutil.copytree(long_bag, bag)
    process = start(["replay", *map(str, bags), "--jobs", "2"], tmp_path)
    signal_when_written(process, f"{bags[0]}_linearized", None)
    _, err = signal_when_written(process, f"{bags[1]}_linearized", signum)  # it has just begun
    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err and err.strip().count("\n") == 0, err
    assert f"interrupted by {signal.Signals(signum).name}" in err
    assert_only_whole_outputs(tmp_path)


def test_a_worker_killed_fails_the_bags_not_finished_and_leaves_none_half_written(long_bag, tmp_path):
    """SIGKILL (as the out-of-memory killer sends) to a worker of `--jobs 2`: the program lists the
    bags not replayed and removes the ones that were being written."""
    import psutil  # (dask's distributed's dependency, in the test extra)

    bags = [tmp_path / "a", tmp_path / "b"]
    for bag in bags:
        shutil.copytree(long_bag, bag)
    process = start(["replay", *map(str, bags), "--jobs", "2"], tmp_path)
    signal_when_written(process, f"{bags[0]}_linearized", None)
    signal_when_written(process, f"{bags[1]}_linearized", None)
    workers = [p for p in psutil.Process(process.pid).children() if "spawn_main" in " ".join(p.cmdline())]
    assert len(workers) == 2
    workers[0].kill()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1 and "Traceback" not in err, err
    lines = out.splitlines()
    assert lines[0].endswith("; 2 failed:") or lines[0].endswith("; 1 failed:"), out
    assert f"  {bags[1]}: not replayed: a worker process died (killed, or out of memory) while this or another " \
           "bag was being replayed" in lines
    assert_only_whole_outputs(tmp_path)


def earlier_output(path):
    """A finished output of an earlier run at ``path`` (a directory with metadata.yaml); what it holds,
    to compare with after the run: {file: (bytes, mtime)}."""
    path.mkdir()
    (path / "metadata.yaml").write_text("rosbag2_bagfile_information: {version: 8}\n")
    (path / "earlier_0.mcap").write_bytes(b"an earlier run's bag")
    return contents(path)


def contents(path):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in path.iterdir()} if path.exists() else None


def replaying_on_two_workers(long_bag, directory, names: str) -> tuple:
    """`replay --jobs 2` of copies of ``long_bag`` named by the letters of ``names`` in ``directory``, c's
    output a finished one of an earlier run, once the first two bags' outputs are being written: (the
    bags, what c's earlier output holds, the process, its two workers)."""
    import psutil

    bags = [directory / name for name in names]
    for bag in bags:
        shutil.copytree(long_bag, bag)
    earlier = earlier_output(directory / "c_linearized")
    process = start(["replay", *map(str, bags), "--jobs", "2"], directory)
    signal_when_written(process, f"{bags[0]}_linearized", None)
    signal_when_written(process, f"{bags[1]}_linearized", None)
    workers = [p for p in psutil.Process(process.pid).children() if "spawn_main" in " ".join(p.cmdline())]
    assert len(workers) == 2
    return bags, earlier, process, workers


def test_a_worker_killed_leaves_every_output_that_was_there_before_the_run(long_bag, tmp_path):
    """Bags a and b being replayed, d queued, then c with a finished output of an earlier run: a worker
    killed fails those not finished, and c's earlier output stays as it was, byte for byte; nothing of d
    is made."""
    bags, earlier, process, workers = replaying_on_two_workers(long_bag, tmp_path, "abdc")
    workers[0].kill()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1 and "Traceback" not in err, err
    assert f"  {bags[3]}: not replayed: a worker process died (killed, or out of memory) while this or another " \
           "bag was being replayed" in out.splitlines(), out
    assert contents(tmp_path / "c_linearized") == earlier
    assert not (tmp_path / "d_linearized").exists()
    assert_only_whole_outputs(tmp_path, also=["c", "c_linearized", "d"])


def test_a_replay_whose_parent_is_killed_stops_its_workers_which_remove_only_their_own_bags(long_bag, tmp_path):
    """SIGKILL to `replay --jobs 2` itself (nothing of it runs after): its workers see it gone, stop,
    and remove the bags they were writing; c's earlier output stays; no worker is left behind."""
    import psutil

    _, earlier, process, workers = replaying_on_two_workers(long_bag, tmp_path, "abc")
    process.kill()
    try:  # (the workers hold its stdout and stderr: they end when the workers end)
        process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the workers went on after their parent died, holding its output open")
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, f"workers left running after their parent died: {alive}"
    assert contents(tmp_path / "c_linearized") == earlier
    assert_only_whole_outputs(tmp_path, also=["c", "c_linearized"])


def assert_only_whole_outputs(directory, also=()):
    """Bags a and b in ``directory`` (and the names ``also``), and a's output only if it was finished (a
    slow start of the second worker can leave the first time to finish before the second begins)."""
    from rosbags.highlevel import AnyReader

    left = sorted(p.name for p in directory.iterdir())
    assert left in (sorted(["a", "b", *also]), sorted(["a", "a_linearized", "b", *also])), left
    if "a_linearized" in left:
        with AnyReader([directory / "a_linearized"]) as reader:
            assert reader.topics["/robot_linearization/linearization"].msgcount == 1500


def test_a_demo_stopped_by_sigterm_removes_the_directory_it_created(tmp_path):
    out = tmp_path / "demo"
    process = start(["demo", "--duration", "1", "--samples", "1", "--repeat", "1", "--output-dir", str(out)],
                    tmp_path)
    _, err = signal_when_written(process, out / "input_bag", signal.SIGTERM)
    assert process.returncode == 143, err
    assert not out.exists()
    assert "Traceback" not in err and "interrupted by SIGTERM" in err, err


def test_a_demo_stopped_in_a_previous_demo_directory_leaves_only_its_marker_and_the_users_files(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    (out / DEMO_MARKER).write_text("")  # as a previous demo left it
    (out / "notes.txt").write_text("mine")
    process = start(["demo", "--duration", "1", "--samples", "1", "--repeat", "1", "--output-dir", str(out)],
                    tmp_path)
    _, err = signal_when_written(process, out / "input_bag", signal.SIGINT)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert sorted(p.name for p in out.iterdir()) == [DEMO_MARKER, "notes.txt"]
    assert (out / "notes.txt").read_text() == "mine"


def test_a_closed_stdout_ends_the_demo_quietly(tmp_path):
    """`robot-linearization demo | head -0`: the reader is gone before the first line."""
    process = start(["demo", "--duration", "0.05", "--samples", "1", "--repeat", "1", "--output-dir",
                     str(tmp_path / "out")], tmp_path)
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=300) == 128 + signal.SIGPIPE, err
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err


SWALLOWED = """
import signal, sys, time, weakref
from argparse import Namespace
from robot_linearization import cli

class Thing:
    pass

def run(args):
    thing = Thing()
    # the signal lands in a weakref callback, where Python reports an exception and goes on
    reference = weakref.ref(thing, lambda ref: (signal.raise_signal(signal.SIGTERM), sum(range(1000))))
    del thing
    for _ in range(2000):  # the run's work goes on (2 s)
        time.sleep(0.001)
    print("finished")
    return 0

cli.command_line_parser = lambda: Namespace(parse_args=lambda argv: Namespace(run=run))
sys.exit(cli.main([]))
"""


def test_a_stop_signal_that_lands_where_python_swallows_exceptions_still_stops_the_run(tmp_path):
    """A signal handled inside a weakref callback (as importlib's module locks have): the Interrupted
    raised there is only reported by Python, so it is delivered again and stops the run where it is
    then, exit 128 + SIGTERM, instead of letting it finish as if nothing had come."""
    process = subprocess.run([sys.executable, "-c", SWALLOWED], cwd=tmp_path, capture_output=True, text=True,
                             timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, (process.stdout, process.stderr)
    assert "finished" not in process.stdout
    assert "interrupted by SIGTERM" in process.stderr


SWALLOWED_IN_A_WORKER = """
import os, signal, time, weakref
from robot_linearization.ros import fleet

class Thing:
    pass

class Begun:  # (the pool's queue of the bags begun)
    def put(self, index):
        pass

def replay_bag(bag, progress, **options):
    thing = Thing()
    # the pool's SIGTERM lands in a weakref callback (as in numba's compiler's ctypes callbacks), where
    # Python reports an exception and goes on
    reference = weakref.ref(thing, lambda ref: (signal.raise_signal(signal.SIGTERM), sum(range(1000))))
    del thing
    for _ in range(2000):  # (the bag's replay goes on: 2 s)
        time.sleep(0.001)
    print("finished")

fleet.replay_bag = replay_bag
fleet._start_worker(Begun(), os.getppid())
fleet._pool_task("a bag", None, 0, {})
print("returned")
"""


def test_a_pool_workers_stop_signal_that_lands_where_python_swallows_exceptions_still_stops_it(tmp_path):
    """The SIGTERM a broken pool sends its other workers, landing in a callback whose exception Python only
    reports: the worker stops all the same (after its bag's clean-up), exit 128 + SIGTERM, and says nothing
    on the stderr it shares with the command line."""
    process = subprocess.run([sys.executable, "-c", SWALLOWED_IN_A_WORKER], cwd=tmp_path, capture_output=True,
                             text=True, timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, (process.stdout, process.stderr)
    assert "finished" not in process.stdout and "returned" not in process.stdout
    assert process.stderr == ""
