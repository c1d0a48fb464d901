"""The bags we write, read by ROS 2's own rosbag2 (rosbag2_py and `ros2 bag info`).
Needs a ROS 2 installation with rosbag2; skipped elsewhere — test_bag_replay.py
checks the same bags through rosbags without ROS."""

import shutil
import subprocess

import numpy as np
import pytest

rosbag2_py = pytest.importorskip("rosbag2_py", reason="rosbag2_py is not installed: needs ROS 2 with rosbag2")

from rclpy.serialization import deserialize_message  # noqa: E402
from rosidl_runtime_py.utilities import get_message  # noqa: E402

import robot_linearization as rl  # noqa: E402
from robot_linearization.robots import bundled_urdf_path  # noqa: E402
from robot_linearization.ros.bag import replay, write_simulation_bag  # noqa: E402
from robot_linearization.ros.messages import matrix_from_message, odometry_base_state  # noqa: E402
from robot_linearization.ros.pipeline import PipelineConfig  # noqa: E402
from robot_linearization.ros.simulation import Simulation  # noqa: E402


def replay_with_matrix_topics(*arguments, **options):
    """The replay with the per-matrix topics too (publish_matrix_topics), which these tests read."""
    return replay(*arguments, matrix_topics=True, **options)

URDF = open(bundled_urdf_path()).read()
MODEL = rl.load_urdf(URDF)


def read_with_rosbag2(path, storage):
    """{topic: [(log time, message)]} through rosbag2's SequentialReader and rclpy's CDR."""
    reader = rosbag2_py.SequentialReader()
    reader.open(rosbag2_py.StorageOptions(uri=str(path), storage_id=storage),
                rosbag2_py.ConverterOptions(input_serialization_format="cdr", output_serialization_format="cdr"))
    types = {t.name: get_message(t.type) for t in reader.get_all_topics_and_types()}
    out = {}
    while reader.has_next():
        topic, data, t = reader.read_next()
        out.setdefault(topic, []).append((t, deserialize_message(data, types[topic])))
    return out


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_rosbag2_reads_the_recorded_and_the_replayed_bag(tmp_path, storage):
    steps = write_simulation_bag(tmp_path / "in", Simulation(MODEL, dt=0.01, seed=2), URDF, 0.2, storage=storage)
    replay_with_matrix_topics(tmp_path / "in", tmp_path / "out", config=PipelineConfig(use_effort=True),
                              progress=False, storage=storage)
    inputs, outputs = read_with_rosbag2(tmp_path / "in", storage), read_with_rosbag2(tmp_path / "out", storage)
    assert len(inputs["/joint_states"]) == len(outputs["/robot_linearization/A"]) == steps
    odometry = dict(inputs["/odom"])
    (t, js), (t_out, A) = inputs["/joint_states"][-1], outputs["/robot_linearization/A"][-1]
    assert t == t_out
    H, v = odometry_base_state(odometry[t], "base_link")
    expected = rl.linearize(MODEL, rl.State(base_pose=H, joint_positions=np.array(js.position), base_twist=v,
                                            joint_velocities=np.array(js.velocity)), np.array(js.effort))
    np.testing.assert_allclose(matrix_from_message(A), expected.A, rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(shutil.which("ros2") is None, reason="the ros2 command is not on PATH")
def test_ros2_bag_info_reads_the_replayed_bag(tmp_path):
    write_simulation_bag(tmp_path / "in", Simulation(MODEL, dt=0.01, seed=2), URDF, 0.1)
    replay_with_matrix_topics(tmp_path / "in", tmp_path / "out", progress=False)
    info = subprocess.run(["ros2", "bag", "info", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=60)
    assert info.returncode == 0, info.stderr
    assert "/robot_linearization/A" in info.stdout and "std_msgs/msg/Float64MultiArray" in info.stdout
