"""A fleet's bags: `robot-linearization replay` over many bags and globs on several processes,
and its per-bag task on a Dask cluster, which writes what the serial run writes."""

import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

import robot_linearization as rl
from robot_linearization.cli import main
from robot_linearization.robots import bundled_urdf_path
from robot_linearization.ros.bag import write_simulation_bag
from robot_linearization.ros.fleet import BagResult, find_bags, replay_bag, replay_bags
from robot_linearization.ros.interfaces import typestore_with_interfaces
from robot_linearization.ros.messages import RosbagsFactory, joint_state_message
from robot_linearization.ros.pipeline import PipelineConfig
from robot_linearization.ros.simulation import Simulation

from conftest import write_bag

URDF = open(bundled_urdf_path()).read()
MODEL = rl.load_urdf(URDF)


def make_bags(directory: Path, names, duration=0.1, dt=0.01):
    """Short simulated bags (duration / dt linearizations each), a different motion in each."""
    directory.mkdir(parents=True, exist_ok=True)
    for seed, name in enumerate(names):
        write_simulation_bag(directory / name, Simulation(MODEL, dt=dt, seed=seed), URDF, duration)
    return [directory / name for name in names]


def linearizations(path):
    """[(log time, {field: the bytes of its float64 array})] of a replay's /robot_linearization/linearization."""
    out = []
    with AnyReader([Path(path)], default_typestore=typestore_with_interfaces()) as reader:
        connections = [c for c in reader.connections if c.topic == "/robot_linearization/linearization"]
        for conn, t, raw in reader.messages(connections=connections):
            msg = reader.deserialize(raw, conn.msgtype)
            out.append((t, {name: value.tobytes() for name, value in vars(msg).items()
                            if isinstance(value, np.ndarray) and value.dtype == np.float64}))
    return out


def corrupt_the_middle(bag: Path) -> None:
    """Overwrite bytes in the middle of the bag's data: it opens, and fails while being read."""
    (data,) = bag.glob("*.mcap")
    raw = bytearray(data.read_bytes())
    middle = len(raw) // 2
    raw[middle:middle + 2000] = b"\xff" * 2000
    data.write_bytes(bytes(raw))


def a_bag_without_odometry(path: Path) -> None:
    n = MODEL.n_joints
    write_bag(path, [(1, "/joint_states", joint_state_message(RosbagsFactory(typestore_with_interfaces()), 1,
                                                              MODEL.joint_names, np.zeros(n), np.zeros(n)))])


def test_the_task_on_a_dask_cluster_writes_the_serial_runs_matrices_bit_for_bit(tmp_path):
    import distributed  # the test extra's (setup.py)

    bags = make_bags(tmp_path / "logs", ["a", "b", "c", "d"])
    options = dict(config=PipelineConfig(use_effort=True, discretization_dt=0.002), heatmap_rate_hz=0.0,
                   health_rate_hz=0.0)
    serial = [replay_bag(bag, tmp_path / "serial" / bag.name, **options) for bag in bags]
    assert all(r.error is None and r.linearizations == 10 for r in serial), serial
    assert pickle.loads(pickle.dumps(serial[0])) == serial[0]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        # the workers import this copy of the package (the one these tests import), not another
        assert set(client.run(lambda: rl.__file__).values()) == {rl.__file__}
        futures = client.map(replay_bag, [str(b) for b in bags], [str(tmp_path / "dask" / b.name) for b in bags],
                             **options)
        results = client.gather(futures)
    assert [type(r) for r in results] == [BagResult] * 4
    assert [(r.bag, r.error, r.messages_read, r.linearizations) for r in results] == \
        [(str(b), None, s.messages_read, s.linearizations) for b, s in zip(bags, serial)]
    for bag in bags:
        expected, written = linearizations(tmp_path / "serial" / bag.name), linearizations(tmp_path / "dask" / bag.name)
        assert len(written) == len(expected) == 10
        for (t, fields), (t_expected, fields_expected) in zip(written, expected):
            assert t == t_expected
            fields.pop("compute_time", None), fields_expected.pop("compute_time", None)
            assert {"state_matrix", "input_matrix", "inverse_mass_matrix", "discrete_state_matrix"} <= set(fields)
            assert fields == fields_expected  # every matrix, byte for byte


def test_many_bags_on_two_processes_each_written_beside_it(tmp_path, capsys):
    bags = make_bags(tmp_path, ["run1", "run2", "run3"])
    assert main(["replay", *map(str, bags), "--jobs", "2", "--no-heatmaps"]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 bags replayed" in out and "on 2 processes" in out and "30 linearizations" in out
    for bag in bags:
        assert len(linearizations(f"{bag}_linearized")) == 10


def test_jobs_0_is_one_process_per_core_this_process_may_run_on(tmp_path, capsys, monkeypatch):
    bags = make_bags(tmp_path, ["run1", "run2", "run3", "run4"])
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)  # (three of the cores)
    assert main(["replay", *map(str, bags), "-j", "0", "--no-heatmaps"]) == 0
    out = capsys.readouterr().out
    assert "4 of 4 bags replayed" in out and "on 3 processes" in out, out


def test_a_quoted_glob_is_expanded_and_a_rerun_replaces_nothing(tmp_path, capsys):
    make_bags(tmp_path / "logs", ["run1", "run2"])
    (tmp_path / "logs" / "notes.txt").write_text("the user's")
    assert main(["replay", str(tmp_path / "logs" / "*") + "/", "--no-heatmaps", "-j", "2"]) == 0
    assert "2 of 2 bags replayed" in capsys.readouterr().out
    written = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert written == ["notes.txt", "run1", "run1_linearized", "run2", "run2_linearized"]
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "logs").rglob("*")}
    # again: the outputs are not taken for bags, and are not replaced
    assert main(["replay", str(tmp_path / "logs" / "run*"), "--no-heatmaps"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("0 of 2 bags replayed") and lines[0].endswith("; 2 failed:")
    assert lines[1] == f"  {tmp_path}/logs/run1: {tmp_path}/logs/run1_linearized exists; it is not replaced " \
                       "(remove it, or choose another output)"
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "logs").rglob("*")} == before


def test_skip_existing_replays_the_rest_and_refuses_an_unfinished_output(tmp_path, capsys):
    bags = make_bags(tmp_path / "logs", ["run1", "run2", "run3"])
    assert main(["replay", str(bags[0]), "--no-heatmaps"]) == 0
    unfinished = tmp_path / "logs" / "run3_linearized"  # (a replay killed while it wrote: no metadata.yaml)
    unfinished.mkdir()
    (unfinished / "run3_linearized_0.mcap").write_bytes(b"the start of a bag")
    before = {p: (p.stat().st_mtime_ns, p.read_bytes() if p.is_file() else None)
              for p in [*(tmp_path / "logs" / "run1_linearized").rglob("*"), *unfinished.rglob("*")]}
    capsys.readouterr()
    assert main(["replay", str(tmp_path / "logs" / "run*"), "--no-heatmaps", "--skip-existing", "-j", "2"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"1 bag already replayed, skipped (--skip-existing): {bags[0]}"
    assert lines[1].startswith("1 of 2 bags replayed") and lines[1].endswith("; 1 failed:")
    assert lines[2] == f"  {bags[2]}: {unfinished} exists; it is not replaced (remove it, or choose another output)"
    assert len(linearizations(f"{bags[1]}_linearized")) == 10
    assert {p: (p.stat().st_mtime_ns, p.read_bytes() if p.is_file() else None) for p in before} == before
    # one bag left after the skipped ones: still the summary and exit status of many bags
    assert main(["replay", str(tmp_path / "logs" / "run*"), "--no-heatmaps", "--skip-existing"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"2 bags already replayed, skipped (--skip-existing): {bags[0]}, {bags[1]}"
    assert lines[1].startswith("0 of 1 bags replayed") and lines[1].endswith("; 1 failed:")
    # once every output is a finished bag, a rerun has nothing to do, and says so
    (unfinished / "run3_linearized_0.mcap").unlink()
    unfinished.rmdir()
    assert main(["replay", str(bags[2]), "--no-heatmaps"]) == 0
    capsys.readouterr()
    assert main(["replay", str(tmp_path / "logs" / "run*"), "--no-heatmaps", "--skip-existing"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"3 bags already replayed, skipped (--skip-existing): {bags[0]}, {bags[1]}, {bags[2]}"]


def test_bad_bags_among_good_ones_are_named_with_why_and_leave_nothing(tmp_path, capsys):
    good = make_bags(tmp_path, ["good1", "good2"])
    corrupt = make_bags(tmp_path, ["corrupt"], duration=0.3, dt=0.002)[0]
    corrupt_the_middle(corrupt)
    a_bag_without_odometry(tmp_path / "no_odom")
    (tmp_path / "not_a_bag").mkdir()
    arguments = [str(good[0]), str(corrupt), str(tmp_path / "no_odom"), str(tmp_path / "not_a_bag"), str(good[1]),
                 str(tmp_path / "missing")]
    assert main(["replay", *arguments, "--no-heatmaps", "--urdf", bundled_urdf_path(), "--jobs", "2"]) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0].startswith("2 of 6 bags replayed") and lines[0].endswith("20 linearizations from 40 messages; "
                                                                            "4 failed:")
    assert lines[1].startswith(f"  {corrupt}: cannot read {corrupt}: ")
    assert lines[2] == f"  {tmp_path}/no_odom: bag has no topic /odom (see --odom-topic (or --fixed-base)); its " \
                       "topics: ['/joint_states']"
    assert lines[3].startswith(f"  {tmp_path}/not_a_bag: {tmp_path}/not_a_bag is not a ROS 2 bag")
    assert lines[4] == f"  {tmp_path}/missing: no bag at {tmp_path}/missing"
    assert len(lines) == 5 and "Traceback" not in captured.err
    for bag in good:
        assert len(linearizations(f"{bag}_linearized")) == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "corrupt", "good1", "good1_linearized", "good2", "good2_linearized", "no_odom", "not_a_bag"]


def test_an_unknown_urdf_fails_every_bag_in_one_line_each(tmp_path, capsys):
    bags = make_bags(tmp_path, ["a", "b"])
    (tmp_path / "arm.urdf").write_text("<robot name='r'><link name='a'/><joint name='j' type='revolute'>"
                                       "<parent link='a'/><child link='b'/></joint></robot>")
    assert main(["replay", *map(str, bags), "--urdf", str(tmp_path / "arm.urdf")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [f"  {bag}: robot description rejected: joint 'j' refers to link 'b', which does not exist"
                         for bag in bags]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "arm.urdf", "b"]


@pytest.mark.parametrize("arguments, message", [
    (["{a}", "{b}", "-o", "{out}"], "error: -o names the output of one bag, and 2 are given: without it each is "
                                    "written beside its bag as BAG_linearized\n"),
    (["{a}", "{logs}/*.bag"], "error: {logs}/*.bag matches no bag (a directory with metadata.yaml)\n"),
    (["{a}", "{b}", "--contacts", "a:b:c"], "error: --contacts: "),
])
def test_a_wrong_argument_is_one_line_and_exit_2(arguments, message, tmp_path, capsys):
    a, b = make_bags(tmp_path / "logs", ["a", "b"])
    names = dict(a=a, b=b, out=tmp_path / "out", logs=tmp_path / "logs")
    assert main(["replay"] + [argument.format(**names) for argument in arguments]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(message.format(**names)) and captured.err.count("\n") == 1, captured.err
    assert captured.out == "" and sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["a", "b"]
    assert not (tmp_path / "out").exists()


def test_jobs_out_of_range_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["replay", str(tmp_path), "--jobs", "-1"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith("argument -j/--jobs: -1 is outside [0, inf]")


def test_find_bags_expands_globs_skips_outputs_and_takes_a_bag_once(tmp_path):
    make_bags(tmp_path, ["x1", "x2"])
    (tmp_path / "x1_linearized").mkdir()
    (tmp_path / "x1_linearized" / "metadata.yaml").write_text("")
    assert find_bags([str(tmp_path / "x2"), str(tmp_path / "x*"), str(tmp_path / "x1") + "/"]) == [
        str(tmp_path / "x2"), str(tmp_path / "x1")]
    with pytest.raises(ValueError, match="matches no bag"):
        find_bags([str(tmp_path / "y*")])


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_progress_bar_counts_bags_and_messages(jobs, tmp_path, capsys):
    bags = make_bags(tmp_path, ["a", "b"])
    results = replay_bags([str(b) for b in bags], jobs=jobs, progress=True, heatmap_rate_hz=0.0)
    assert [r.linearizations for r in results] == [10, 10]
    err = capsys.readouterr().err
    assert err.endswith("\r[##############################] 2/2 bags, 42 messages\x1b[K\n"), err[-200:]
    assert "] 0/2 bags, 1 messages" in err  # the first message read, reported by the bag's process
    assert "1/2 bags, 21 messages" in err or jobs == 2  # (two at once may finish together)
