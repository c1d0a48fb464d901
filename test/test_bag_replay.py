"""Offline pipeline on real ROS 2 bags written and read by rosbags (mcap and sqlite3)."""

import json
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

import robot_linearization as rl
from robot_linearization.cli import main
from robot_linearization.robots import bundled_urdf_path
from robot_linearization.ros.bag import replay, write_simulation_bag
from robot_linearization.ros.messages import (RosbagsFactory, joint_state_message, matrix_from_message,
                                              odometry_base_state, odometry_message)
from robot_linearization.ros.pipeline import PipelineConfig
from robot_linearization.ros.simulation import Simulation

from conftest import write_bag


def replay_with_matrix_topics(*arguments, **options):
    """The replay with the per-matrix topics too (publish_matrix_topics), which these tests read."""
    return replay(*arguments, matrix_topics=True, **options)

TYPESTORE = get_typestore(Stores.ROS2_HUMBLE)
URDF = open(bundled_urdf_path()).read()
MODEL = rl.load_urdf(URDF)


def read_bag(path):
    """{topic: [(log time, message)]}"""
    out = {}
    with AnyReader([Path(path)], default_typestore=TYPESTORE) as reader:
        for conn, t, raw in reader.messages():
            out.setdefault(conn.topic, []).append((t, reader.deserialize(raw, conn.msgtype)))
    return out


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_replay_writes_the_linearization_of_every_recorded_state(tmp_path, storage):
    simulation = Simulation(MODEL, dt=0.01, seed=1)
    steps = write_simulation_bag(tmp_path / "in", simulation, URDF, 0.3, storage=storage)
    summary = replay_with_matrix_topics(tmp_path / "in", tmp_path / "out", config=PipelineConfig(use_effort=True),
                                        progress=False,
                     storage=storage)
    assert summary.outputs == steps == 30
    inputs, outputs = read_bag(tmp_path / "in"), read_bag(tmp_path / "out")
    for topic in ("/robot_linearization/A", "/robot_linearization/B", "/robot_linearization/M_inv",
                  "/robot_linearization/stamp"):
        assert len(outputs[topic]) == steps, topic
    assert len(outputs["/robot_linearization/A_heatmap"]) == 1  # 2 Hz over 0.3 s: heatmaps are for eyes
    labels = json.loads(outputs["/robot_linearization/state_labels"][0][1].data)
    assert labels == list(MODEL.state_labels)
    (t_health, health), = outputs["/robot_linearization/health"]  # at the heatmaps' rate, with its labels
    assert json.loads(outputs["/robot_linearization/health_labels"][0][1].data) == [
        "compute_time_ms", "spectral_abscissa_A", "cond_M"]
    A = matrix_from_message(dict(outputs["/robot_linearization/A"])[t_health])
    assert health.data[1] == np.max(np.linalg.eigvals(A).real)
    assert outputs["/diagnostics"]
    odometry = {t: m for t, m in inputs["/odom"]}
    for k, (t, js) in enumerate(inputs["/joint_states"][::7]):
        H, v = odometry_base_state(odometry[t], "base_link")
        state = rl.State(base_pose=H, joint_positions=js.position, base_twist=v, joint_velocities=js.velocity)
        expected = rl.linearize(MODEL, state, js.effort)
        index = [tt for tt, _ in outputs["/robot_linearization/A"]].index(t)
        A = matrix_from_message(outputs["/robot_linearization/A"][index][1])
        np.testing.assert_allclose(A, expected.A, rtol=1e-12, atol=1e-12)
        stamp = outputs["/robot_linearization/stamp"][index][1].stamp
        assert stamp.sec * 1_000_000_000 + stamp.nanosec == t


@pytest.mark.parametrize("distro", ["jazzy", "humble"])
@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_replay_of_bags_recorded_by_ros2_bag_record(tmp_path, storage, distro):
    """Bags written by rosbag2 (Jazzy: metadata version 9; Humble: 5; test/data/README.md):
    the model comes from the recorded /robot_description, every joint state is linearized
    with the odometry of its own stamp, although that odometry is recorded just after it."""
    recorded = Path(__file__).parent / "data" / f"{distro}_{storage}"
    summary = replay_with_matrix_topics(recorded, tmp_path / "out", progress=False, storage=storage)
    inputs, outputs = read_bag(recorded), read_bag(tmp_path / "out")
    assert summary.outputs == len(inputs["/joint_states"]) > 40 and not summary.problems
    odometry = {stamp_ns(m.header.stamp): m for _, m in inputs["/odom"]}
    stamps = [stamp_ns(m.stamp) for _, m in outputs["/robot_linearization/stamp"]]
    for (_, js), A in zip(inputs["/joint_states"], outputs["/robot_linearization/A"]):
        stamp = stamps.pop(0)
        assert stamp == stamp_ns(js.header.stamp)
        H, v = odometry_base_state(odometry[stamp], "base_link")
        state = rl.State(base_pose=H, joint_positions=js.position, base_twist=v, joint_velocities=js.velocity)
        np.testing.assert_allclose(matrix_from_message(A[1]), rl.linearize(MODEL, state).A, rtol=1e-12, atol=1e-12)


def stamp_ns(stamp):
    return stamp.sec * 1_000_000_000 + stamp.nanosec


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_written_bags_have_metadata_that_humble_can_parse(tmp_path, storage):
    """Humble's rosbag2 (metadata_io.cpp) reads offered_qos_profiles as a string for
    versions >= 4; from version 9 the field is a YAML list, which it rejects."""
    from ruamel.yaml import YAML  # rosbags' own YAML dependency

    write_simulation_bag(tmp_path / "in", Simulation(MODEL, dt=0.01, seed=1), URDF, 0.05, storage=storage)
    replay_with_matrix_topics(tmp_path / "in", tmp_path / "out", progress=False, storage=storage)
    for bag in ("in", "out"):
        info = YAML(typ="safe").load((tmp_path / bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
        assert 4 <= info["version"] <= 8
        topics = info["topics_with_message_count"]
        assert topics and all(isinstance(t["topic_metadata"]["offered_qos_profiles"], str) for t in topics)


def test_replay_survives_bad_messages_and_never_writes_nan(tmp_path):
    factory = RosbagsFactory(TYPESTORE)
    js, odom = "/joint_states", "/odom"
    n = MODEL.n_joints
    good_odom = lambda t: odometry_message(factory, t, "odom", "base_link", np.eye(4), np.zeros(6))  # noqa: E731
    zero_q = odometry_message(factory, 50, "odom", "base_link", np.eye(4), np.zeros(6))
    zero_q.pose.pose.orientation.w = 0.0
    events = [
        (10, odom, good_odom(10)),
        (11, js, joint_state_message(factory, 11, MODEL.joint_names, np.zeros(n), np.zeros(n))),
        (20, js, joint_state_message(factory, 20, MODEL.joint_names, np.full(n, np.nan), np.zeros(n))),
        (30, js, joint_state_message(factory, 5, MODEL.joint_names, np.ones(n), np.zeros(n))),  # out of order
        (40, js, joint_state_message(factory, 40, MODEL.joint_names[:3], np.ones(3), np.zeros(3))),  # missing
        (50, odom, zero_q),
        (60, js, joint_state_message(factory, 60, MODEL.joint_names, np.ones(n), np.ones(n))),
    ]
    write_bag(tmp_path / "in", events, version=9)
    summary = replay_with_matrix_topics(tmp_path / "in", tmp_path / "out", urdf=bundled_urdf_path(),
                                        progress=False, heatmap_rate_hz=0)
    assert summary.outputs == 2  # t=11 and t=60 (paired with the odometry of t=10)
    outputs = read_bag(tmp_path / "out")
    for _, msg in outputs["/robot_linearization/A"]:
        assert np.isfinite(np.asarray(msg.data)).all()
    assert "/robot_linearization/A_heatmap" not in outputs
    counts = summary.pipeline.diagnostics(60)[0][3]
    assert counts["rejected_joint_states"] == 2  # NaN, missing joints
    assert counts["rejected_out_of_order"] == 1
    assert counts["rejected_odometry"] == 1  # zero quaternion
    assert any("NaN" in p for p in summary.problems) and any("zero quaternion" in p for p in summary.problems)


def test_cli_replay_and_its_errors(tmp_path, capsys):
    write_simulation_bag(tmp_path / "in", Simulation(MODEL, dt=0.01), URDF, 0.1)
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "--effort"]) == 0
    assert "wrote 10 linearizations" in capsys.readouterr().out
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "out")]) == 2  # exists
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "o2"),
                 "--joint-states-topic", "/js"]) == 2
    assert "no topic /js" in capsys.readouterr().err
    assert main(["replay", "--matrix-topics", str(tmp_path / "nope"), "-o", str(tmp_path / "o3")]) == 2


def test_cli_demo_writes_bags_png_and_passes(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--duration", "0.2", "--samples", "2", "--repeat", "5", "--output-dir", str(out)]) == 0
    text = capsys.readouterr().out
    assert "PASS" in text and "A: (36, 36)" in text and "time per linearization" in text
    png = (out / "heatmap_A_B.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    assert len(read_bag(out / "output_bag")["/robot_linearization/linearization"]) == 100


DEMO_QUICK = ["demo", "--duration", "0.05", "--samples", "1", "--repeat", "2"]


def test_demo_refuses_a_directory_it_did_not_create_and_deletes_nothing(tmp_path, capsys):
    users = tmp_path / "my_project"
    users.mkdir()
    (users / "notes.txt").write_text("three weeks of lab notes")
    (users / "input_bag").mkdir()  # even a name the demo uses is the user's here
    assert main(DEMO_QUICK + ["--output-dir", str(users)]) == 2
    assert "is not empty and is not a previous demo output" in capsys.readouterr().err
    assert (users / "notes.txt").read_text() == "three weeks of lab notes"
    assert sorted(p.name for p in users.iterdir()) == ["input_bag", "notes.txt"]
    a_file = tmp_path / "results.csv"
    a_file.write_text("1,2,3")
    assert main(DEMO_QUICK + ["--output-dir", str(a_file)]) == 2
    assert a_file.read_text() == "1,2,3"


def test_demo_rerun_replaces_only_its_own_outputs(tmp_path):
    out = tmp_path / "demo"
    assert main(DEMO_QUICK + ["--output-dir", str(out)]) == 0
    first = (out / "output_bag" / "metadata.yaml").stat().st_mtime_ns
    (out / "my_plot.py").write_text("print('mine')")
    assert main(DEMO_QUICK + ["--output-dir", str(out)]) == 0
    assert (out / "my_plot.py").read_text() == "print('mine')"
    assert (out / "output_bag" / "metadata.yaml").stat().st_mtime_ns != first  # a new bag
    assert {"input_bag", "output_bag", "heatmap_A_B.png", "my_plot.py"} <= {p.name for p in out.iterdir()}


def test_an_interrupted_replay_leaves_no_half_written_bag(tmp_path, monkeypatch):
    """Ctrl-C (or an error) in the middle of a replay removes the bag it was writing,
    so the re-run is not refused because of it; the input bag is untouched."""
    from robot_linearization.ros import pipeline as pipeline_module

    write_simulation_bag(tmp_path / "in", Simulation(MODEL, dt=0.01, seed=2), URDF, 0.2)
    real_step, calls = pipeline_module.LinearizationPipeline.step, []

    def interrupted(self, now_ns, newest_only=False):
        calls.append(now_ns)
        if len(calls) == 15:
            raise KeyboardInterrupt
        return real_step(self, now_ns, newest_only)

    monkeypatch.setattr(pipeline_module.LinearizationPipeline, "step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        replay_with_matrix_topics(tmp_path / "in", tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(pipeline_module.LinearizationPipeline, "step", real_step)
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "out")]) == 0
    assert len(read_bag(tmp_path / "out")["/robot_linearization/A"]) == 20
    assert len(read_bag(tmp_path / "in")["/joint_states"]) == 20


FEET = rl.robots.BUNDLED_FEET


def test_replay_with_contacts_records_the_constrained_linearization_and_forces(tmp_path, capsys):
    simulation = Simulation(MODEL, dt=0.01, seed=3, contacts=FEET)  # standing on its four feet
    write_simulation_bag(tmp_path / "in", simulation, URDF, 0.1)
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "--effort",
                 "--contacts", ",".join(FEET)]) == 0
    inputs, outputs = read_bag(tmp_path / "in"), read_bag(tmp_path / "out")
    assert json.loads(outputs["/robot_linearization/contact_labels"][0][1].data)[:3] == [
        "front_left_foot:fx", "front_left_foot:fy", "front_left_foot:fz"]
    forces = outputs["/robot_linearization/contact_forces"]
    assert len(forces) == len(outputs["/robot_linearization/A"]) == 10
    odometry = {t: m for t, m in inputs["/odom"]}
    for (t, js), (_, f), (_, A) in zip(inputs["/joint_states"], forces, outputs["/robot_linearization/A"]):
        H, v = odometry_base_state(odometry[t], "base_link")
        state = rl.State(base_pose=H, joint_positions=js.position, base_twist=v, joint_velocities=js.velocity)
        expected = rl.linearize(MODEL, state, js.effort, contacts=FEET)
        np.testing.assert_allclose(matrix_from_message(f)[:, 0], expected.contact_forces, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(matrix_from_message(A), expected.A, rtol=1e-12, atol=1e-9)
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "o2"), "--contacts",
                 "paw"]) == 2
    assert "not a link of model" in capsys.readouterr().err and not (tmp_path / "o2").exists()
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "o3"), "--contacts",
                 "a:b:c:d"]) == 2


def test_replay_writes_the_step_jacobians_with_discretization_dt(tmp_path, capsys):
    simulation = Simulation(MODEL, dt=0.01, seed=4)
    write_simulation_bag(tmp_path / "in", simulation, URDF, 0.05)
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "--effort",
                 "--no-heatmaps",
                 "--discretization-dt", "0.001", "--discretization", "zoh"]) == 0
    inputs, outputs = read_bag(tmp_path / "in"), read_bag(tmp_path / "out")
    odometry = {t: m for t, m in inputs["/odom"]}
    A_d, B_d = outputs["/robot_linearization/A_d"], outputs["/robot_linearization/B_d"]
    assert len(A_d) == len(B_d) == len(outputs["/robot_linearization/A"]) == 5
    for (t, js), (t_out, a), (_, b) in zip(inputs["/joint_states"], A_d, B_d):
        H, v = odometry_base_state(odometry[t], "base_link")
        state = rl.State(base_pose=H, joint_positions=js.position, base_twist=v, joint_velocities=js.velocity)
        expected = rl.linearize(MODEL, state, js.effort, dt=1e-3, discretization="zoh")
        assert t_out == t
        np.testing.assert_array_equal(matrix_from_message(a), expected.A_d)
        np.testing.assert_array_equal(matrix_from_message(b), expected.B_d)
    with pytest.raises(SystemExit):
        main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "o2"), "--discretization-dt",
              "-1"])
    assert "--discretization-dt: -1 is outside [0.0, inf] s" in capsys.readouterr().err
    assert not (tmp_path / "o2").exists()


def test_replay_follows_a_contacts_topic_in_the_bag(tmp_path):
    """A gait scheduler's std_msgs/String on a contacts topic changes the set mid-bag."""
    factory = RosbagsFactory(TYPESTORE)
    n = MODEL.n_joints
    posture = np.tile([0.0, 0.8, -1.5], 4)
    sets = {0: ",".join(FEET), 3: "front_left_foot, hind_right_foot", 6: "none"}
    events = []
    for k in range(9):
        t = (k + 1) * 10_000_000
        if k in sets:
            events.append((t - 1, "/contact_schedule", factory.make("std_msgs/msg/String", data=sets[k])))
        events += [(t, "/odom", odometry_message(factory, t, "odom", "base_link", np.eye(4), np.zeros(6))),
                   (t, "/joint_states", joint_state_message(factory, t, MODEL.joint_names, posture, np.zeros(n)))]
    write_bag(tmp_path / "in", events)
    summary = replay_with_matrix_topics(tmp_path / "in", tmp_path / "out", urdf=bundled_urdf_path(),
                                        progress=False, heatmap_rate_hz=0,
                     contacts_topic="/contact_schedule", health_rate_hz=1000.0)
    assert summary.outputs == 9 and not summary.problems
    outputs = read_bag(tmp_path / "out")
    rows = [matrix_from_message(m).shape[0] for _, m in outputs["/robot_linearization/contact_forces"]]
    assert rows == [12, 12, 12, 6, 6, 6]  # four feet, then a trot's diagonal pair, then flight (none)
    labels = [json.loads(m.data) for _, m in outputs["/robot_linearization/contact_labels"]]
    assert len(labels) == 2 and labels[1][3] == "hind_right_foot:fx"
    # ~/health_labels again when the contact entries go (flight), before the first vector without them
    health = [(t, "labels", json.loads(m.data)) for t, m in outputs["/robot_linearization/health_labels"]]
    health += [(t, "values", np.asarray(m.data)) for t, m in outputs["/robot_linearization/health"]]
    health.sort(key=lambda item: (item[0], item[1]))  # ("labels" < "values" at one time)
    assert [len(labels) for _, kind, labels in health if kind == "labels"] == [5, 3]
    current = None
    for _, kind, item in health:
        if kind == "labels":
            current = item
        else:
            assert len(item) == len(current) and np.isfinite(item).all()
    assert sum(kind == "values" for _, kind, _ in health) == 9


@pytest.mark.parametrize("arguments, message", [
    (["--dt", "0"], "argument --dt: 0 is outside (0.0, 0.01] s"),
    (["--dt", "0.1"], "argument --dt: 0.1 is outside (0.0, 0.01] s"),
    (["--dt", "nan"], "argument --dt: nan is outside"),
    (["--duration", "-1"], "argument --duration: -1 is outside (0.0, 600.0] s"),
    (["--samples", "0"], "argument --samples: 0 is outside [1, inf]"),
    (["--repeat", "two"], "argument --repeat: 'two' is not an integer"),
])
def test_demo_arguments_out_of_range_get_one_line_errors(arguments, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["demo", "--output-dir", str(tmp_path / "d")] + arguments)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "d").exists()
    assert main(["demo", "--duration", "0.001", "--output-dir", str(tmp_path / "e")]) == 2
    assert "shorter than one step" in capsys.readouterr().err


def test_a_diverging_simulation_restarts_without_warnings():
    """At the largest step the demo allows, nothing overflows; and a state that
    diverges anyway is restarted, not recorded."""
    import warnings

    simulation = Simulation(MODEL, dt=0.01, seed=0, gains=(500.0, 0.0))  # stiff: explodes at this step
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(300):
            state, _ = simulation.step()
            assert np.abs(state.joint_velocities).max() < 1e4 and np.isfinite(state.base_pose).all()


def test_huge_velocities_give_an_error_not_a_matrix_of_nan():
    state = rl.State(base_pose=np.eye(4), joint_positions=np.zeros(12), base_twist=np.zeros(6),
                     joint_velocities=np.full(12, 1e200))
    with pytest.raises(ValueError, match="overflows at this state.*largest position, velocity or torque is 1e"):
        rl.linearize(MODEL, state)
    with pytest.raises(ValueError, match=r"overflows at this state \(state 1\)"):
        rl.linearize_trajectory(MODEL, [rl.State(base_pose=np.eye(4), joint_positions=np.zeros(12),
                                                 base_twist=np.zeros(6), joint_velocities=np.zeros(12)), state])


def test_replay_checks_every_argument_before_reading_the_bag(tmp_path, capsys):
    write_simulation_bag(tmp_path / "in", Simulation(MODEL, dt=0.01), URDF, 0.05)
    cases = [
        (["--odom-topic", "/base_odometry"], "bag has no topic /base_odometry (see --odom-topic (or --fixed-base))"),
        (["--contacts-topic", "/gait"], "bag has no topic /gait (see --contacts-topic)"),
    ]
    for extra, message in cases:
        assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "out")] + extra) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and not (tmp_path / "out").exists()
    assert main(["replay", "--matrix-topics", str(tmp_path / "missing"), "-o", str(tmp_path / "out")]) == 2
    assert f"no bag at {tmp_path / 'missing'}" in capsys.readouterr().err
    assert main(["replay", "--matrix-topics", str(tmp_path), "-o", str(tmp_path / "out")]) == 2
    assert "is not a ROS 2 bag (a directory with metadata.yaml" in capsys.readouterr().err
    # a bag without /robot_description needs --urdf
    factory = RosbagsFactory(TYPESTORE)
    write_bag(tmp_path / "bare", [(1, "/joint_states", joint_state_message(factory, 1, MODEL.joint_names,
                                                                            np.zeros(12), np.zeros(12)))])
    assert main(["replay", "--matrix-topics", str(tmp_path / "bare"), "-o", str(tmp_path / "out"), "--fixed-base"]) == 2
    assert "bag has no topic /robot_description (see --urdf)" in capsys.readouterr().err
    for option in ("--pairing-tolerance", "--max-input-age"):
        with pytest.raises(SystemExit):
            main(["replay", "--matrix-topics", str(tmp_path / "in"), option, "-1"])
        assert f"argument {option}: -1 is outside (0.0, inf] s" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["demo", "replay"])
def test_help_says_what_every_option_is_and_its_default(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert "``" not in text and ":class:" not in text  # no RST markup
    options = [line.split()[0] for line in text.splitlines() if line.lstrip().startswith("--")]
    assert len(options) >= 9
    # every option's help (joined lines up to the next option) names its default
    blocks = text.split("\n  -")[1:]
    for block in blocks:
        if block.startswith("h, --help"):
            continue
        assert "(default:" in " ".join(block.split()), block


def test_replay_prints_no_progress_bar_when_not_on_a_terminal(tmp_path, capsys):
    write_simulation_bag(tmp_path / "in", Simulation(MODEL, dt=0.01), URDF, 0.05)
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "out")]) == 0
    assert "messages" not in capsys.readouterr().err  # pytest's stderr is not a terminal


def test_heatmaps_are_rate_limited_so_bags_stay_near_the_size_of_the_matrices(tmp_path, capsys):
    """3 s at 500 Hz: every linearization's A, B, M⁻¹ but heatmaps at 2 Hz of bag time,
    so the bag is within a few times its matrices (it was a hundred times: 1.1 GB)."""
    write_simulation_bag(tmp_path / "in", Simulation(MODEL, dt=0.002, seed=4), URDF, 3.0)
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "out")]) == 0
    text = capsys.readouterr().out
    outputs = read_bag(tmp_path / "out")
    assert len(outputs["/robot_linearization/A"]) == 1500
    stamps = [t for t, _ in outputs["/robot_linearization/A_heatmap"]]
    assert len(stamps) == 6 and min(np.diff(stamps)) >= 500_000_000
    matrices = 1500 * 8 * (36 * 36 + 36 * 12 + 18 * 18)
    size = sum(f.stat().st_size for f in (tmp_path / "out").rglob("*") if f.is_file())
    assert size < 3 * matrices, (size, matrices)
    assert f"({size / 2**20:.1f} MiB on disk)" in text
    assert main(["replay", "--matrix-topics", str(tmp_path / "in"), "-o", str(tmp_path / "none"), "--heatmap-rate",
                 "0"]) == 0
    assert "/robot_linearization/A_heatmap" not in read_bag(tmp_path / "none")


def test_demo_figure_has_titles_state_labels_block_lines_and_a_colour_bar(tmp_path):
    from robot_linearization.ros.images import write_linearization_figure

    state = rl.State(base_pose=np.eye(4), joint_positions=np.full(12, 0.3), base_twist=np.ones(6),
                     joint_velocities=np.ones(12))
    lin = rl.linearize(MODEL, state, contacts=FEET)
    figure = write_linearization_figure(tmp_path / "f.png", lin.A, lin.B, MODEL)
    png = (tmp_path / "f.png").read_bytes()
    assert png.startswith(b"\x89PNG") and 20_000 < len(png) < 2_000_000
    ax_A, ax_B, bar = figure.axes
    assert ax_A.get_title().startswith("A (36×36)") and ax_B.get_title().startswith("B (36×12)")
    assert [t.get_text() for t in ax_A.get_yticklabels()] == list(MODEL.state_labels)
    assert [t.get_text() for t in ax_A.get_xticklabels()][:7] == ["H:x", "H:y", "H:z", "H:rx", "H:ry", "H:rz",
                                                                  "s:front_left_hip_abduction"]
    assert [t.get_text() for t in ax_B.get_xticklabels()][0] == "τ:front_left_hip_abduction"
    assert len(ax_A.lines) == 6 and len(ax_B.lines) == 3  # block boundaries 6 | 18 | 24 on both axes of A
    assert "log10" in bar.get_ylabel() and "[z_H | z_s | z_v | z_r]" in ax_A.get_xlabel()


def test_demo_with_a_contact_frame_the_robot_lacks_is_a_one_line_error(tmp_path, capsys):
    assert main(DEMO_QUICK + ["--contacts", "paw", "--output-dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: contact frame 'paw' is not a link") and err.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_replayed_odometry_orientation_against_an_independent_quaternion_oracle(tmp_path, rng):
    """The odometry quaternion is written from scipy (x, y, z, w, as ROS stores it) and the
    expected A is built from scipy's rotation matrix: no function of ours on either side."""
    from scipy.spatial.transform import Rotation

    factory = RosbagsFactory(TYPESTORE)
    events, expected = [], []
    for k in range(3):
        t = (k + 1) * 10_000_000
        rotation = Rotation.from_rotvec(rng.normal(size=3))
        x, y, z, w = rotation.as_quat()  # scipy: scalar last, as geometry_msgs/Quaternion's field order
        position, twist = rng.normal(size=3), rng.normal(size=6)
        s, r = rng.normal(size=12), rng.normal(size=12)
        msg = odometry_message(factory, t, "odom", "base_link", np.eye(4), twist)
        msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = position
        q = msg.pose.pose.orientation
        q.x, q.y, q.z, q.w = x, y, z, w
        events += [(t, "/odom", msg), (t, "/joint_states", joint_state_message(factory, t, MODEL.joint_names, s, r))]
        H = np.eye(4)
        H[:3, :3], H[:3, 3] = rotation.as_matrix(), position
        expected.append(rl.linearize(MODEL, rl.State(base_pose=H, joint_positions=s, base_twist=twist,
                                                     joint_velocities=r)).A)
    write_bag(tmp_path / "in", events)
    replay_with_matrix_topics(tmp_path / "in", tmp_path / "out", urdf=bundled_urdf_path(), progress=False,
                              heatmap_rate_hz=0)
    outputs = read_bag(tmp_path / "out")["/robot_linearization/A"]
    assert len(outputs) == 3
    for (_, A), A_expected in zip(outputs, expected):
        np.testing.assert_allclose(matrix_from_message(A), A_expected, rtol=1e-10, atol=1e-10)
