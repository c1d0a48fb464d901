"""The bags we write, read by ROS 2's own rosbag2 (rosbag2_py and `ros2 bag info`).
Needs a ROS 2 installation with rosbag2; skipped elsewhere — test_bag_replay.py
checks the same bags through rosbags without ROS."""

import shutil
import time
import subprocess

import numpy as np
import pytest

import robot_linearization as rl
from robot_linearization.robots import bundled_urdf_path
from robot_linearization.ros.bag import replay, write_simulation_bag
from robot_linearization.ros.messages import matrix_from_message, odometry_base_state
from robot_linearization.ros.pipeline import PipelineConfig
from robot_linearization.ros.simulation import Simulation

# (each test skipped, not the module: under ROS 2, launch_testing's collection hook turns a module-level
# skip into no test collected at all, in every file of the run)
try:
    import rosbag2_py
    from rclpy.serialization import deserialize_message
    from rosidl_runtime_py.utilities import get_message
except ImportError:
    rosbag2_py = None
pytestmark = pytest.mark.skipif(rosbag2_py is None, reason="rosbag2_py is not installed: needs ROS 2 with rosbag2")


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


def typed_bag_linearizations(path):
    """The replay's ~/linearization messages read back through rosbag2 with the overlay's typesupport."""
    return [message for _, message in read_with_rosbag2(path, "mcap")["/robot_linearization/linearization"]]


@pytest.mark.skipif(shutil.which("ros2") is None, reason="the ros2 command is not on PATH")
def test_ros2_bag_info_and_play_read_the_typed_linearization(tmp_path):
    """The typed message the replay writes from the .msg text (rosbags) is the one rosidl generated:
    rosbag2 reads it with the overlay's typesupport, `ros2 bag info` names its type, and `ros2 bag
    play` publishes it to a subscriber, whose A is rl.linearize's at the message's point."""
    from rclpy.executors import SingleThreadedExecutor

    from robot_linearization.msg import Linearization
    from robot_linearization.ros.interfaces import linearization_matrices

    write_simulation_bag(tmp_path / "in", Simulation(MODEL, dt=0.01, seed=3), URDF, 0.1)
    replay(tmp_path / "in", tmp_path / "out", progress=False)
    info = subprocess.run(["ros2", "bag", "info", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=60)
    assert info.returncode == 0, info.stderr
    assert "/robot_linearization/linearization" in info.stdout
    assert "robot_linearization/msg/Linearization" in info.stdout
    assert len(typed_bag_linearizations(tmp_path / "out")) == 10

    rclpy = pytest.importorskip("rclpy")
    rclpy.init()
    try:
        node = rclpy.create_node("typed_bag_listener")
        received = []
        node.create_subscription(Linearization, "/robot_linearization/linearization", received.append, 100)
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        with open(tmp_path / "play.log", "w") as log:
            play = subprocess.Popen(["ros2", "bag", "play", "--loop", str(tmp_path / "out")], stdout=log,
                                    stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + 60.0
                while len(received) < 3 and time.monotonic() < deadline and play.poll() is None:
                    executor.spin_once(timeout_sec=0.05)
            finally:
                play.terminate()
                play.wait(timeout=20)
        assert len(received) >= 3, (tmp_path / "play.log").read_text()[-2000:]
        message = received[-1]
        H = np.eye(4)
        p, q = message.base_pose.position, message.base_pose.orientation
        H[:3, 3] = p.x, p.y, p.z
        H[:3, :3] = quaternion_matrix(q.w, q.x, q.y, q.z)
        t = message.base_twist
        state = rl.State(base_pose=H, joint_positions=np.array(message.joint_positions),
                         base_twist=np.array([t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y,
                                              t.angular.z]),
                         joint_velocities=np.array(message.joint_velocities))
        expected = rl.linearize(MODEL, state, np.array(message.joint_efforts))
        np.testing.assert_allclose(linearization_matrices(message)["state_matrix"], expected.A, rtol=1e-12,
                                   atol=1e-12 * np.abs(expected.A).max())
        node.destroy_node()
    finally:
        rclpy.try_shutdown()


def quaternion_matrix(w, x, y, z):
    """The rotation of a unit quaternion, written out here (not the package's conversion)."""
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


@pytest.mark.skipif(shutil.which("ros2") is None, reason="the ros2 command is not on PATH")
def test_a_bag_played_in_a_loop_with_its_clock_is_served_in_every_loop(tmp_path):
    """`ros2 bag play --loop --clock` (its /clock at the default 40 Hz) of a bag of 3 s at 100 Hz — longer
    than max_input_age — beside a node on sim time: /clock and the stamps jump back at every loop.  Each
    loop after the first (whose start may meet discovery) has ≥ 99 % of its joint states linearized, and
    each jump back is said once (the node's WARN, time_jumps_back in /diagnostics)."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.parameter import Parameter

    from robot_linearization.ros.node import LinearizationNode
    from test_node_rclpy import Graph, header_stamp_ns

    steps = write_simulation_bag(tmp_path / "in", Simulation(MODEL, dt=0.01, seed=4), URDF, 3.0,
                                 start_ns=100_000_000_000)
    rclpy.init()
    graph = None
    try:
        graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path()),
                                                             Parameter("use_sim_time", value=True),
                                                             Parameter("publish_heatmaps", value=False)]))
        pipeline, notices = graph.node.pipeline, []
        warn = pipeline.on_notice
        pipeline.on_notice = lambda text: (notices.append(text), warn(text))
        taken, values = graph.take_linearizations(), []

        def loops():  # the output stamps, split where they go back
            values.extend(header_stamp_ns(raw) for raw in taken)
            taken.clear()
            starts = [0] + [i for i in range(1, len(values)) if values[i] < values[i - 1]] + [len(values)]
            return [values[a:b] for a, b in zip(starts, starts[1:])]

        with open(tmp_path / "play.log", "w") as log:
            play = subprocess.Popen(["ros2", "bag", "play", "--loop", "--clock", "--", str(tmp_path / "in")],
                                    stdout=log, stderr=subprocess.STDOUT)
            try:
                graph.spin_until(lambda: len(loops()) >= 4, timeout=90.0)  # three loops after the first, begun
            finally:
                play.terminate()
                play.wait(timeout=20)
            graph.spin_until(lambda: False, timeout=0.5)
        served = loops()
        assert len(served) >= 4, f"{[len(loop) for loop in served]} outputs per loop; " \
            + (tmp_path / "play.log").read_text()[-1000:]
        for loop in served[1:-1]:  # the whole loops
            assert len(set(loop)) >= 0.99 * steps, (f"{[len(loop) for loop in served]} of {steps} per loop; "
                                                   f"{pipeline.diagnostics(0)}")
        jumps = [text for text in notices if "jump back in time" in text]
        assert len(served) - 1 <= len(jumps) <= len(served), notices  # (the player may have begun one more)
        assert pipeline.diagnostics(0)[0][3]["time_jumps_back"] == len(jumps)
    finally:
        if graph is not None:
            graph.close()
        rclpy.try_shutdown()
