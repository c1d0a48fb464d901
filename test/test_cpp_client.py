"""Proof from the other language: a C++ (rclcpp) client, test/cpp_client, built by scripts/test.sh
into the ROS overlay, takes one robot_linearization/Linearization from ~/linearization and asks
~/linearize at that message's own point.  Its A, B and M⁻¹ must be the Python API's at the state
this test sent, to 1e-12.  Needs a ROS 2 installation; skipped elsewhere."""

import json
import subprocess
import tempfile

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed: the C++ client runs on a ROS 2 machine")

from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

import robot_linearization as rl  # noqa: E402
from robot_linearization.robots import bundled_urdf_path  # noqa: E402
from robot_linearization.ros.messages import joint_state_message, odometry_message  # noqa: E402
from robot_linearization.ros.node import LinearizationNode  # noqa: E402
from robot_linearization.spatial import se3_exp  # noqa: E402

from test_node_rclpy import MODEL, NS, Graph  # noqa: E402


@pytest.fixture
def ros():
    rclpy.init()
    yield
    rclpy.try_shutdown()


def client_executable() -> str:
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    try:
        return f"{get_package_prefix('robot_linearization_test_client')}/lib/robot_linearization_test_client/" \
               "linearization_client"
    except PackageNotFoundError:
        pytest.fail("robot_linearization_test_client is not in the sourced overlay: scripts/test.sh builds it "
                    "from test/cpp_client")


def test_a_cpp_client_reads_the_stream_and_the_service_equal_to_the_python_api(ros):
    executable = client_executable()
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path()),
                                                         Parameter("use_effort", value=True)]))
    js_pub = graph.client.create_publisher(JointState, "/joint_states", 10)
    odom_pub = graph.client.create_publisher(Odometry, "/odom", 10)
    rng = np.random.default_rng(29)
    s, r, tau = rng.normal(size=12), rng.normal(size=12), rng.normal(size=12)
    H, v = se3_exp(rng.normal(size=6)), rng.normal(size=6)

    def publish_inputs():  # until the client has its message
        now = graph.node.get_clock().now().nanoseconds
        odom_pub.publish(odometry_message(graph.factory, now, "odom", "base_link", H, v))
        js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names, s, r, tau))

    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        process = subprocess.Popen([executable, NS, "60"], stdout=out, stderr=err, text=True)
        finished = graph.spin_until(lambda: process.poll() is not None, timeout=120.0, each=publish_inputs)
        if not finished:
            process.kill()
            process.wait()
        out.seek(0)
        err.seek(0)
        output, errors = out.read(), err.read()
    assert finished and process.returncode == 0, f"exit {process.returncode}: {errors[-2000:]}"
    answer = json.loads(output)
    expected = rl.linearize(MODEL, rl.State(base_pose=H, joint_positions=s, base_twist=v, joint_velocities=r), tau)
    for origin, message in (("topic", answer["topic"]), ("service", answer["service"]["linearization"])):
        assert message["joint_names"] == list(MODEL.joint_names) and message["frame_id"] == "base_link", origin
        np.testing.assert_allclose(message["joint_efforts"], tau, rtol=0, atol=0, err_msg=origin)
        for name, field in (("A", "state_matrix"), ("B", "input_matrix"), ("M_inv", "inverse_mass_matrix")):
            reference = getattr(expected, name)
            got = np.array(message[field]).reshape(reference.shape)  # row-major, as the .msg documents
            np.testing.assert_allclose(got, reference, rtol=1e-12, atol=1e-12 * np.abs(reference).max(),
                                       err_msg=f"{origin}: {name}")
    assert answer["service"]["success"], answer["service"]["message"]
    assert answer["service"]["linearization"]["stamp_ns"] == answer["topic"]["stamp_ns"]
    graph.close()


def test_the_cpp_client_refuses_wrong_arguments_in_one_line(ros):
    process = subprocess.run([client_executable()], capture_output=True, text=True, timeout=60)
    assert process.returncode == 2 and process.stderr.count("\n") == 1 and "usage:" in process.stderr
