"""The rclpy nodes end to end on a real ROS 2 graph.  Needs a ROS 2 installation
(source its setup.bash); skipped elsewhere — the behaviour itself is tested
without ROS in test_ros_*.py, this checks the glue."""

import json
import struct
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy", reason="rclpy is not installed: ROS 2 node tests run on a ROS 2 machine")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import Image, JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, Header, String  # noqa: E402

from robot_linearization.msg import Linearization  # noqa: E402
from robot_linearization.srv import Linearize, Validate  # noqa: E402

import robot_linearization as rl  # noqa: E402
from robot_linearization.robots import bundled_urdf_path  # noqa: E402
from robot_linearization.ros.health import health as rl_health  # noqa: E402
from robot_linearization.ros.interfaces import linearization_matrices  # noqa: E402
from robot_linearization.ros.messages import heatmap_messages as rl_heatmaps  # noqa: E402
from robot_linearization.ros.messages import joint_state_message, matrix_from_message, odometry_message  # noqa: E402
from robot_linearization.ros import node as node_module  # noqa: E402
from robot_linearization.ros.node import LinearizationNode, RclpyFactory, run  # noqa: E402
from robot_linearization.ros.sim_node import SimulatedRobot  # noqa: E402
from robot_linearization.spatial import se3_exp  # noqa: E402

from conftest import example_robot_path  # noqa: E402

URDF = open(bundled_urdf_path()).read()
MODEL = rl.load_urdf(URDF)
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
NS = "/robot_linearization"


class Graph:
    """One node under test plus a client node that feeds it and records what it publishes (``record``:
    each of its outputs, deserialized as it comes; a load test leaves it False, so that the node
    publishes only what the test takes, and the test process's own work does not load the node's)."""

    open: list = []  # (the graphs not closed yet: the ros fixture closes those a failing test left)

    def __init__(self, node, record=True):
        self.node = node
        Graph.open.append(self)
        self.client = rclpy.create_node("test_client")
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(node)
        self.executor.add_node(self.client)
        self.received = {}
        outputs = [(f"{NS}/A", Float64MultiArray, 10), (f"{NS}/B", Float64MultiArray, 10),
                   (f"{NS}/M_inv", Float64MultiArray, 10), (f"{NS}/stamp", Header, 10),
                   (f"{NS}/A_d", Float64MultiArray, 10), (f"{NS}/B_d", Float64MultiArray, 10),
                   (f"{NS}/A_heatmap", Image, 10), (f"{NS}/state_labels", String, LATCHED),
                   (f"{NS}/health", Float64MultiArray, 10), (f"{NS}/health_labels", String, LATCHED),
                   (f"{NS}/linearization", Linearization, 10),
                   ("/diagnostics", DiagnosticArray, 10), ("/joint_states", JointState, 10),
                   ("/odom", Odometry, 10), ("/robot_description", String, LATCHED)]
        for topic, msg_type, qos in outputs if record else []:
            self.client.create_subscription(msg_type, topic, self._recorder(topic), qos)
        self.factory = RclpyFactory()
        if isinstance(node, LinearizationNode) and node.input_loop.first_description:
            # loaded on the node's input thread; the first start after an install compiles (up to ≈ 40 s)
            assert self.spin_until(lambda: node.pipeline.model is not None, timeout=180.0), node.pipeline.model_error

    def take_linearizations(self):
        """A list the node's ~/linearization outputs are appended to, serialized, all of them kept: a
        client that deserialized each as it came could fall behind on a slow machine and lose some,
        which would say nothing of the node (read the stamps with :func:`header_stamp_ns`)."""
        taken = []
        self.client.create_subscription(Linearization, f"{NS}/linearization", taken.append, 10000, raw=True)
        return taken

    def _recorder(self, topic):
        return lambda msg: self.received.setdefault(topic, []).append(msg)

    def spin_until(self, condition, timeout=20.0, each=None):
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            if each is not None:
                each()
            self.executor.spin_once(timeout_sec=0.02)
        return condition()

    def call(self, service, service_type, request, timeout=60.0):
        client = self.client.create_client(service_type, service)
        assert client.wait_for_service(timeout_sec=10.0)
        future = client.call_async(request)
        assert self.spin_until(future.done, timeout=timeout)
        return future.result()

    def close(self):
        if self in Graph.open:
            Graph.open.remove(self)
            self.node.destroy_node()
            self.client.destroy_node()


def header_stamp_ns(raw):
    """The stamp [ns] of a serialized message that begins with a std_msgs/Header: its first 8 bytes
    after the 4-byte CDR encapsulation."""
    sec, nanosec = struct.unpack_from("<iI", raw, 4)
    return sec * 1_000_000_000 + nanosec


@pytest.fixture
def ros():
    rclpy.init()
    yield
    for graph in list(Graph.open):  # (a test that failed before closing its graph: its node and client would
        graph.close()  # stay in the ROS graph, their subscriptions seen by the next test's node)
    rclpy.try_shutdown()


@pytest.mark.parametrize("input_path", ["auto", "executor", "auto, the wait set failing its self-test"])
def test_linearization_node_round_trip(ros, input_path, monkeypatch):
    """On each input path: the fast wait set (what 'auto' picks where it works), the
    public executor when asked, and the executor as the fallback when the private API
    fails its self-test; /diagnostics says which.  The services are answered on the fast
    path by the node's service thread, otherwise by the executor."""
    if input_path.startswith("auto, "):
        monkeypatch.setattr(node_module, "wait_set_problem", lambda node: "simulated: the private API changed")
    served_by = set()
    linearize_request = LinearizationNode._linearize_request
    monkeypatch.setattr(LinearizationNode, "_linearize_request", lambda self, request, response: (
        served_by.add(threading.current_thread().name), linearize_request(self, request, response)))
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path()),
                                                         Parameter("input_path", value=input_path.split(",")[0])]))
    expected_path = {"auto": "wait_set (it passed its self-test)", "executor": "executor (the input_path parameter)"
                     }.get(input_path, "executor (fallback: simulated: the private API changed)")
    assert graph.node.pipeline.input_path == expected_path
    js_pub = graph.client.create_publisher(JointState, "/joint_states", 10)
    odom_pub = graph.client.create_publisher(Odometry, "/odom", 10)
    rng = np.random.default_rng(0)
    s, r, tau = rng.normal(size=12), rng.normal(size=12), rng.normal(size=12)
    H = se3_exp(rng.normal(size=6))
    v = rng.normal(size=6)
    sent = []

    def publish_inputs():  # until discovery has matched the publishers, messages may be lost
        now = graph.node.get_clock().now().nanoseconds
        sent.append(now)
        odom_pub.publish(odometry_message(graph.factory, now, "odom", "base_link", H, v))
        js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names, s, r, tau))

    assert graph.spin_until(lambda: f"{NS}/linearization" in graph.received, each=publish_inputs)
    message = graph.received[f"{NS}/linearization"][0]
    stamp = message.header.stamp
    assert stamp.sec * 1_000_000_000 + stamp.nanosec in sent and message.header.frame_id == "base_link"
    expected = rl.linearize(MODEL, rl.State(base_pose=H, joint_positions=s, base_twist=v, joint_velocities=r))
    matrices = linearization_matrices(message)
    for name, field in (("A", "state_matrix"), ("B", "input_matrix"), ("M_inv", "inverse_mass_matrix")):
        np.testing.assert_allclose(matrices[field], getattr(expected, name), rtol=1e-12, atol=1e-12, err_msg=name)
    assert list(message.state_labels) == list(MODEL.state_labels) and list(message.joint_efforts) == [0.0] * 12
    assert message.dt == 0.0 and matrices["discrete_state_matrix"] is None  # discretization_dt is off by default
    # one typed message per cycle: the per-matrix topics only with publish_matrix_topics
    assert graph.node.count_publishers(f"{NS}/A") == 0 and graph.node.count_publishers(f"{NS}/stamp") == 0
    graph.spin_until(lambda: graph.received.get(f"{NS}/A_heatmap"))
    image = graph.received[f"{NS}/A_heatmap"][0]
    assert image.encoding == "rgb8" and len(image.data) == image.height * image.step > 0
    # ~/health at the heatmaps' rate, named by the latched ~/health_labels (test_health.py: the entries)
    assert graph.spin_until(lambda: graph.received.get(f"{NS}/health") and graph.received.get(f"{NS}/health_labels"))
    health = graph.received[f"{NS}/health"][0]
    assert json.loads(graph.received[f"{NS}/health_labels"][-1].data) == ["compute_time_ms", "spectral_abscissa_A",
                                                                           "cond_M"]
    assert [(d.label, d.size, d.stride) for d in health.layout.dim] == [("entries", 3, 3)]
    assert np.isfinite(health.data).all() and health.data[2] >= 1.0
    np.testing.assert_allclose(health.data[1], np.max(np.linalg.eigvals(expected.A).real), rtol=1e-6, atol=1e-6)

    # ~/linearize at a state of the caller's, with contacts and a step: rl.linearize's numbers
    request = Linearize.Request()
    request.joint_state = joint_state_message(graph.factory, 42, MODEL.joint_names, s, r, tau)
    request.odometry = odometry_message(graph.factory, 42, "odom", "base_link", H, v)
    request.contacts, request.dt = "front_left_foot, hind_right_foot", 0.002
    answer = graph.call(f"{NS}/linearize", Linearize, request)
    assert answer.success, answer.message
    state = rl.State(base_pose=graph.node.pipeline.linearize_request(request).state.base_pose, joint_positions=s,
                     base_twist=v, joint_velocities=r)
    reference = rl.linearize(MODEL, state, tau, contacts="front_left_foot, hind_right_foot", dt=0.002)
    typed = linearization_matrices(answer.linearization)
    for name, field in (("A", "state_matrix"), ("B", "input_matrix"), ("A_d", "discrete_state_matrix"),
                        ("contact_forces_state_jacobian", "contact_forces_state_jacobian")):
        np.testing.assert_allclose(typed[field], getattr(reference, name), rtol=1e-12,
                                   atol=1e-12 * np.abs(getattr(reference, name)).max(), err_msg=name)
    assert answer.linearization.header.stamp.nanosec == 42
    request.contacts = "front_left_fot"
    answer = graph.call(f"{NS}/linearize", Linearize, request)
    assert not answer.success and answer.message.startswith("contacts: ") and "\n" not in answer.message
    assert served_by == {"linearization services" if input_path == "auto" else threading.current_thread().name}
    # ~/validate: the latest output, then a requested state, as typed reports
    answer = graph.call(f"{NS}/validate", Validate, Validate.Request())
    assert answer.success and answer.passed and "A[rdot,s]" in answer.blocks, answer.message
    assert len(answer.max_rel) == len(answer.blocks) == len(answer.scales) and max(answer.max_rel) < 1e-6
    validate = Validate.Request(at_state=True, joint_state=request.joint_state, odometry=request.odometry,
                                contacts="front_left_foot")
    answer = graph.call(f"{NS}/validate", Validate, validate)
    assert answer.success and answer.passed and "lambda" in answer.blocks, answer.message

    # a joint state missing names: no new output, a diagnostic that names them
    graph.spin_until(lambda: False, timeout=0.5)  # outputs of the inputs still in flight
    outputs = len(graph.received[f"{NS}/linearization"])
    now = graph.node.get_clock().now().nanoseconds
    js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names[1:], s[1:], r[1:]))

    def names_missing_joint():
        return any(MODEL.joint_names[0] in status.message and status.level == DiagnosticStatus.WARN
                   for array in graph.received.get("/diagnostics", []) for status in array.status)
    assert graph.spin_until(names_missing_joint, timeout=5.0)
    assert len(graph.received[f"{NS}/linearization"]) == outputs
    assert any(value.key == "input_path" and value.value == expected_path
               for array in graph.received["/diagnostics"] for status in array.status for value in status.values)
    graph.close()


def test_an_input_path_that_silently_stops_receiving_is_reported_within_a_second(ros, monkeypatch):
    """The private API returning nothing (as a changed rclpy might) must not look like an
    idle robot: /diagnostics says so, naming the path, within a second of the publishers
    appearing."""
    real_take = node_module.WaitSetTaker.take

    def nothing_but_the_probe(self, timeout_ns, waking=None):  # the self-test passes, the inputs never arrive
        if any(sub.topic_name.endswith("_input_path_probe") for sub in self.subscriptions):
            yield from real_take(self, timeout_ns, waking)
        else:
            time.sleep(timeout_ns * 1e-9)
    monkeypatch.setattr(node_module.WaitSetTaker, "take", nothing_but_the_probe)
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path()),
                                                         Parameter("input_path", value="wait_set")]))
    js_pub = graph.client.create_publisher(JointState, "/joint_states", 10)
    rng = np.random.default_rng(0)
    seen = []

    def publish():
        if not seen and graph.node.count_publishers("/joint_states") > 0:
            seen.append(time.monotonic())
        now = graph.node.get_clock().now().nanoseconds
        js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names, rng.normal(size=12),
                                           rng.normal(size=12)))

    def warned():
        return any(status.level == DiagnosticStatus.WARN and "joint_states has 1 publisher but nothing arrived"
                   in status.message and "(input path: wait_set" in status.message
                   for array in graph.received.get("/diagnostics", []) for status in array.status)
    assert graph.spin_until(warned, timeout=10.0, each=publish)
    assert seen and time.monotonic() - seen[0] < 1.0
    assert graph.node.pipeline.latest is None
    graph.close()


def test_an_input_or_service_thread_that_stops_hands_its_work_to_the_executor(ros, monkeypatch):
    """The private wait-set API failing mid-run (as a changed rclpy might): the thread that stopped
    hands its subscriptions or services back to the executor, which serves them from then on, and the
    input path in /diagnostics says why — the node never goes quiet."""
    real_take, real_service_take = node_module.WaitSetTaker.take, node_module.ServiceTaker.take
    taken = []

    def fails_after_ten(self, timeout_ns, waking=None):
        for item in real_take(self, timeout_ns, waking):
            if not any(sub.topic_name.endswith("_input_path_probe") for sub in self.subscriptions):
                taken.append(item)
                if len(taken) > 10:
                    raise RuntimeError("simulated: the wait set broke")
            yield item

    def service_fails(self, timeout_ns):
        if not any(service.srv_name.endswith("_input_path_probe") for service in self.services):
            raise RuntimeError("simulated: the service wait set broke")
        yield from real_service_take(self, timeout_ns)
    monkeypatch.setattr(node_module.WaitSetTaker, "take", fails_after_ten)
    monkeypatch.setattr(node_module.ServiceTaker, "take", service_fails)
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path()),
                                                         Parameter("input_path", value="wait_set")]))
    js_pub = graph.client.create_publisher(JointState, "/joint_states", 10)
    odom_pub = graph.client.create_publisher(Odometry, "/odom", 10)
    rng = np.random.default_rng(0)

    def publish_inputs():
        now = graph.node.get_clock().now().nanoseconds
        odom_pub.publish(odometry_message(graph.factory, now, "odom", "base_link", se3_exp(rng.normal(size=6)),
                                          rng.normal(size=6)))
        js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names, rng.normal(size=12),
                                           rng.normal(size=12)))

    def outputs():
        return len(graph.received.get(f"{NS}/linearization", []))
    assert graph.spin_until(lambda: outputs() >= 40, each=publish_inputs)
    assert len(taken) == 11  # (the thread stopped at its eleventh message; the executor served the rest)
    assert graph.node.pipeline.input_path == ("executor (fallback: the input thread stopped: "
                                              "RuntimeError('simulated: the wait set broke'))")
    assert not graph.node.input_loop.is_alive() and not graph.node.service_loop.is_alive()
    answer = graph.call(f"{NS}/validate", Validate, Validate.Request())  # (the latest output, by the executor)
    assert answer.success and answer.passed, answer.message
    assert graph.spin_until(lambda: any(value.key == "input_path" and value.value.startswith("executor (fallback")
                                        for array in graph.received.get("/diagnostics", [])
                                        for status in array.status for value in status.values), timeout=5.0)
    graph.close()


def test_inputs_stamped_ten_seconds_back_are_said_on_the_console_not_only_in_diagnostics(ros, capfd):
    """A bag played without --clock: every joint state is 10 s old by the node's clock and dropped as
    stale; the node's console says so once at once (then at most every 5 s), not only /diagnostics."""
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path())]))
    js_pub = graph.client.create_publisher(JointState, "/joint_states", 10)
    odom_pub = graph.client.create_publisher(Odometry, "/odom", 10)
    rng = np.random.default_rng(3)

    def publish():
        stamp = graph.node.get_clock().now().nanoseconds - 10 * 10**9
        odom_pub.publish(odometry_message(graph.factory, stamp, "odom", "base_link", se3_exp(0.1 * rng.normal(size=6)),
                                          rng.normal(size=6)))
        js_pub.publish(joint_state_message(graph.factory, stamp, MODEL.joint_names, rng.normal(size=12),
                                           rng.normal(size=12)))

    # (the console is read once each warning has been written, on the node's input thread: reading the capture
    # while that thread writes could lose the line)
    warnings = []
    console = graph.node.pipeline.on_dropped

    def warn(text):
        console(text)
        warnings.append(text)
    graph.node.pipeline.on_dropped = warn
    assert graph.spin_until(lambda: warnings, timeout=20.0, each=publish)
    said = capfd.readouterr().err
    assert "1 input dropped, the latest: joint_states is stale: 10.0" in said, said[-2000:]
    assert graph.node.pipeline.latest is None
    for _ in range(50):  # (1 s more of inputs dropped: not said again before 5 s)
        publish()
        graph.executor.spin_once(timeout_sec=0.02)
    said += capfd.readouterr().err
    assert len(warnings) == 1 and said.count("dropped, the latest: joint_states is stale") == 1, said[-2000:]
    graph.close()


def test_model_from_the_description_topic_and_a_bad_one_keeps_the_old(ros):
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("floating_base", value=False),
                                                         Parameter("publish_matrix_topics", value=True)]))
    description = graph.client.create_publisher(String, "/robot_description", LATCHED)
    description.publish(String(data=URDF))
    assert graph.spin_until(lambda: graph.node.pipeline.model is not None)
    assert graph.node.pipeline.model.n_joints == MODEL.n_joints and not graph.node.pipeline.model.floating_base
    description.publish(String(data="<robot name='broken'><link name='a'/>"))
    graph.spin_until(lambda: False, timeout=1.0)
    assert graph.node.pipeline.model.name == MODEL.name
    js_pub = graph.client.create_publisher(JointState, "/joint_states", 10)
    s = np.linspace(-1.0, 1.0, 12)

    def publish_joint_state():  # fixed base: no odometry needed
        now = graph.node.get_clock().now().nanoseconds
        js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names, s, np.zeros(12)))
    assert graph.spin_until(lambda: f"{NS}/A" in graph.received, each=publish_joint_state)
    fixed = rl.load_urdf(URDF, floating_base=False)
    expected = rl.linearize(fixed, rl.State(joint_positions=s, joint_velocities=np.zeros(12)))
    np.testing.assert_allclose(matrix_from_message(graph.received[f"{NS}/A"][0]), expected.A, rtol=1e-12, atol=1e-12)
    graph.close()


def test_model_from_the_robot_description_parameter_loads_beside_the_executor(ros):
    """The description given as a parameter is loaded (and, the first time, compiled) on the
    input thread: the constructor returns at once and the executor serves meanwhile."""
    node = LinearizationNode(parameter_overrides=[Parameter("robot_description", value=URDF)])
    if node.pipeline.model is None:
        assert "loading the robot description" in node.pipeline.model_error
    graph = Graph(node)  # (waits for the model)
    assert graph.node.pipeline.model.joint_names == MODEL.joint_names
    graph.close()


def test_read_only_parameters_and_bad_values(ros):
    node = LinearizationNode(parameter_overrides=[Parameter("rate_hz", value=50)])  # an int for a double: accepted
    assert not node.set_parameters([Parameter("rate_hz", value=10.0)])[0].successful  # read-only after start-up
    node.destroy_node()
    with pytest.raises(ValueError, match="pairing_tolerance"):
        LinearizationNode(parameter_overrides=[Parameter("pairing_tolerance", value=-1.0)])


def test_run_exits_1_naming_a_bad_parameter(capfd):
    assert run(LinearizationNode, ["--ros-args", "-p", "gravity:=[0.0, 1.0]"]) == 1
    assert "gravity" in capfd.readouterr().err


@pytest.mark.parametrize("program, argument, named", [
    ("controller_node", "robot:=atlas", "parameter 'robot' must be one of"),
    ("controller_node", "perid:=0.01", "unknown parameters: perid"),
    ("controller_node", "mpc.knot:=30", "'mpc.knot': MPCSettings has no such setting (did you mean 'knots'"),
    ("controller_node", "acceleration:=[1.0, 0.0, 1.0]", "parameter 'acceleration' must be 3 numbers > 0"),
    ("mujoco_node", "cone:=round", "parameter 'cone' must be one of"),
    ("mujoco_node", "joints:=a,b", "parameter 'joints' must name each of the 12 joints once"),
])
def test_the_walking_programs_exit_1_naming_a_bad_parameter(program, argument, named, capfd):
    pytest.importorskip("mujoco", reason="the walking programs need mujoco")
    module = __import__(f"robot_linearization.ros.{program}", fromlist=["main"])
    node_class = {"controller_node": "WalkingControllerNode", "mujoco_node": "MuJoCoRobotNode"}[program]
    assert run(getattr(module, node_class), ["--ros-args", "-p", argument]) == 1
    err = capfd.readouterr().err
    assert named in err and "Traceback" not in err, err


def test_simulated_robot_publishes_description_joint_states_and_odometry(ros):
    graph = Graph(SimulatedRobot(parameter_overrides=[Parameter("publish_rate", value=200)]))
    assert graph.spin_until(lambda: all(graph.received.get(t) for t in ("/joint_states", "/odom",
                                                                         "/robot_description")))
    assert graph.received["/robot_description"][0].data == URDF
    js, odom = graph.received["/joint_states"][-1], graph.received["/odom"][-1]
    assert list(js.name) == list(MODEL.joint_names) and np.all(np.isfinite(js.position))
    assert odom.child_frame_id == MODEL.body_names[0] and odom.header.frame_id == "odom"
    q = odom.pose.pose.orientation
    assert abs(np.linalg.norm([q.x, q.y, q.z, q.w]) - 1.0) < 1e-9
    graph.close()


def test_rate_mode_linearizes_on_a_timer_and_discretization_dt_adds_the_step_jacobians(ros):
    graph = Graph(LinearizationNode(parameter_overrides=[
        Parameter("urdf_path", value=bundled_urdf_path()), Parameter("floating_base", value=False),
        Parameter("rate_hz", value=20), Parameter("publish_heatmaps", value=False),
        Parameter("discretization_dt", value=0.001), Parameter("publish_matrix_topics", value=True)]))
    js_pub = graph.client.create_publisher(JointState, "/joint_states", 10)
    published = []

    def publish_fast():  # ≈ 50 Hz of joint states; the node answers at 20 Hz
        now = graph.node.get_clock().now().nanoseconds
        if not published or now - published[-1] > 20_000_000:
            published.append(now)
            js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names, np.zeros(12), np.zeros(12)))
    assert graph.spin_until(lambda: len(graph.received.get(f"{NS}/stamp", [])) >= 10, each=publish_fast)
    stamps = [m.stamp.sec * 1_000_000_000 + m.stamp.nanosec for m in graph.received[f"{NS}/stamp"]]
    assert len(published) > 1.5 * len(stamps)  # not one output per input
    assert all(s in published for s in stamps) and stamps == sorted(set(stamps))
    assert f"{NS}/A_heatmap" not in graph.received  # switched off
    assert graph.spin_until(lambda: graph.received.get(f"{NS}/health") and graph.received.get(f"{NS}/health_labels"))
    assert json.loads(graph.received[f"{NS}/health_labels"][-1].data)[3] == "spectral_radius_A_d"  # (health: on)
    assert len(graph.received[f"{NS}/health"][-1].data) == 4
    fixed = rl.load_urdf(URDF, floating_base=False)
    expected = rl.linearize(fixed, rl.State(joint_positions=np.zeros(12), joint_velocities=np.zeros(12)), dt=1e-3)
    assert graph.spin_until(lambda: graph.received.get(f"{NS}/B_d"))
    np.testing.assert_allclose(matrix_from_message(graph.received[f"{NS}/A_d"][0]), expected.A_d, rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(matrix_from_message(graph.received[f"{NS}/B_d"][0]), expected.B_d, rtol=1e-12,
                               atol=1e-15)
    graph.close()


def test_contacts_parameter_topic_and_contact_forces(ros):
    """A standing quadruped: λ on ~/contact_forces with each cycle, labels latched on
    ~/contact_labels, and a std_msgs/String on 'contacts' changes the set at run time;
    joint_state_publisher-style empty velocity arrays are linearized at zero velocity."""
    feet = rl.robots.BUNDLED_FEET
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path()),
                                                         Parameter("contacts", value=", ".join(feet)),
                                                         Parameter("publish_matrix_topics", value=True)]))
    for topic in ("contact_forces", "contact_labels"):
        graph.client.create_subscription(Float64MultiArray if topic == "contact_forces" else String, f"{NS}/{topic}",
                                         graph._recorder(f"{NS}/{topic}"), LATCHED if topic == "contact_labels" else 10)
    js_pub = graph.client.create_publisher(JointState, "/joint_states", 10)
    odom_pub = graph.client.create_publisher(Odometry, "/odom", 10)
    contacts_pub = graph.client.create_publisher(String, "/contacts", 10)
    s = np.tile([0.0, 0.8, -1.5], 4)

    def publish_inputs():
        now = graph.node.get_clock().now().nanoseconds
        odom_pub.publish(odometry_message(graph.factory, now, "odom", "base_link", np.eye(4), np.zeros(6)))
        js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names, s, []))

    assert graph.spin_until(lambda: f"{NS}/contact_forces" in graph.received, each=publish_inputs)
    forces = matrix_from_message(graph.received[f"{NS}/contact_forces"][0])
    state = rl.State(base_pose=np.eye(4), joint_positions=s, base_twist=np.zeros(6), joint_velocities=np.zeros(12))
    np.testing.assert_allclose(forces[:, 0], rl.linearize(MODEL, state, contacts=feet).contact_forces,
                               rtol=1e-12, atol=1e-9)
    assert graph.spin_until(lambda: f"{NS}/contact_labels" in graph.received)
    assert len(json.loads(graph.received[f"{NS}/contact_labels"][-1].data)) == 12
    assert graph.spin_until(lambda: graph.received.get(f"{NS}/health") and graph.received.get(f"{NS}/health_labels"),
                            each=publish_inputs)
    assert json.loads(graph.received[f"{NS}/health_labels"][-1].data)[3:] == ["min_normal_force",
                                                                               "max_tangential_ratio"]
    health = graph.received[f"{NS}/health"][-1]
    assert len(health.data) == 5 and np.isfinite(health.data).all()

    def two_feet():
        contacts_pub.publish(String(data="front_left_foot, hind_right_foot"))
        publish_inputs()
    assert graph.spin_until(lambda: matrix_from_message(graph.received[f"{NS}/contact_forces"][-1]).shape[0] == 6,
                            each=two_feet)
    assert graph.spin_until(lambda: len(json.loads(graph.received[f"{NS}/contact_labels"][-1].data)) == 6)
    graph.close()


def test_a_gait_schedule_gives_one_impact_map_at_the_touchdown_margins_and_a_pulling_foot_warning(ros):
    """The contacts topic as a gait schedule (test_gait_topics.py has the behaviour): margins with
    each cycle, named on the latched ~/contact_margin_labels; stance → swing → stance gives exactly
    one ~/impact_map and ~/impulses, rl.impact's at the landing state; a knee torque that makes a
    foot pull is a WARN in /diagnostics naming it, and OK once the torque is gone."""
    from test_contact_margins import standing

    feet = rl.robots.BUNDLED_FEET
    graph = Graph(LinearizationNode(parameter_overrides=[
        Parameter("publish_matrix_topics", value=True), Parameter("urdf_path", value=bundled_urdf_path()),
                  Parameter("contacts", value=", ".join(feet)),
        Parameter("use_effort", value=True), Parameter("publish_heatmaps", value=False),
        Parameter("restitution", value=0.5), Parameter("diagnostics_period", value=0.2)]))
    for topic, kind, qos in [("impact_map", Float64MultiArray, 10), ("impulses", Float64MultiArray, 10),
                             ("contact_margins", Float64MultiArray, 10), ("contact_margin_labels", String, LATCHED)]:
        graph.client.create_subscription(kind, f"{NS}/{topic}", graph._recorder(f"{NS}/{topic}"), qos)
    js_pub = graph.client.create_publisher(JointState, "/joint_states", 10)
    odom_pub = graph.client.create_publisher(Odometry, "/odom", 10)
    contacts_pub = graph.client.create_publisher(String, "/contacts", 10)
    H, s = se3_exp(np.array([0.3, -0.2, 0.35, 0.0, 0.0, 0.7])), np.tile([0.1, 0.8, -1.5], 4)
    at_rest = rl.State(base_pose=H, joint_positions=s, base_twist=np.zeros(6), joint_velocities=np.zeros(12))
    tau = standing(MODEL, [rl.Contact(f) for f in feet], at_rest)
    kicked = tau.copy()
    kicked[MODEL.joint_names.index("front_left_knee")] -= 20.0
    landing = (np.random.default_rng(3).normal(scale=0.3, size=12), np.array([0.1, 0.0, -0.4, 0.05, -0.1, 0.2]))

    def publish(effort=tau, velocities=(np.zeros(12), np.zeros(6))):
        now = graph.node.get_clock().now().nanoseconds
        odom_pub.publish(odometry_message(graph.factory, now, "odom", "base_link", H, velocities[1]))
        js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names, s, velocities[0], effort))

    def margin_rows():
        return matrix_from_message(graph.received[f"{NS}/contact_margins"][-1]).shape[0]

    assert graph.spin_until(lambda: f"{NS}/contact_margins" in graph.received, each=publish)
    assert graph.spin_until(lambda: f"{NS}/contact_margin_labels" in graph.received)
    labels = json.loads(graph.received[f"{NS}/contact_margin_labels"][-1].data)
    assert labels[:2] == ["front_left_foot:friction", "front_left_foot:unilateral"] and len(labels) == 8
    assert margin_rows() == 8 and matrix_from_message(graph.received[f"{NS}/contact_margins"][-1]).min() > 0.0

    def swing():
        contacts_pub.publish(String(data="front_left_foot, hind_right_foot"))
        publish()
    assert graph.spin_until(lambda: margin_rows() == 4, each=swing)
    graph.spin_until(lambda: False, timeout=0.3)  # (the swing sets still in flight)
    assert f"{NS}/impact_map" not in graph.received  # a lift-off is no impact
    contacts_pub.publish(String(data=", ".join(feet)))  # touchdown
    assert graph.spin_until(lambda: f"{NS}/impulses" in graph.received and margin_rows() == 8,
                            each=lambda: publish(velocities=landing))
    graph.spin_until(lambda: False, timeout=0.5, each=lambda: publish(velocities=landing))
    assert len(graph.received[f"{NS}/impact_map"]) == 1 and len(graph.received[f"{NS}/impulses"]) == 1
    state = rl.State(base_pose=H, joint_positions=s, base_twist=landing[1], joint_velocities=landing[0])
    expected = rl.impact(MODEL, state, list(feet), restitution=0.5)
    np.testing.assert_allclose(matrix_from_message(graph.received[f"{NS}/impact_map"][0]), expected.A, rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_allclose(matrix_from_message(graph.received[f"{NS}/impulses"][0])[:, 0], expected.impulses,
                               rtol=1e-9, atol=1e-9)

    def diagnostics(level, text):
        return [status for array in graph.received.get("/diagnostics", []) for status in array.status
                if status.level == level and text in status.message]
    assert graph.spin_until(lambda: diagnostics(DiagnosticStatus.WARN, "front_left_foot pulls (unilateral -"),
                            each=lambda: publish(effort=kicked))
    graph.received["/diagnostics"] = []
    assert graph.spin_until(lambda: diagnostics(DiagnosticStatus.OK, "linearizing"), each=publish)
    graph.close()


@pytest.mark.parametrize("signals, when", [(1, "ready"), (2, "ready"), (1, "model"), (2, "model")])
def test_ctrl_c_once_or_twice_ends_the_node_cleanly(signals, when, tmp_path):
    """A terminal's Ctrl-C reaches the process group and ros2 launch forwards another:
    the node exits with status 0 and no traceback either way — also while it is still
    starting (just after loading the model, before its subscriptions exist)."""
    import os
    import select
    import signal
    import subprocess

    from ament_index_python.packages import get_package_prefix

    executable = os.path.join(get_package_prefix("robot_linearization"), "lib", "robot_linearization",
                              "linearization_node")
    process = subprocess.Popen([executable, "--ros-args", "-p", f"urdf_path:={bundled_urdf_path()}"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120.0
        lines = []
        marker = "model 'rl_quadruped'" if when == "model" else "]: ready"
        while time.monotonic() < deadline:  # until that line (the first start compiles)
            if not select.select([process.stdout], [], [], 1.0)[0]:
                continue
            line = process.stdout.readline()
            lines.append(line)
            if marker in line or not line:
                break
        assert any(marker in line for line in lines), "".join(lines)
        for _ in range(signals):
            process.send_signal(signal.SIGINT)
            time.sleep(0.01)
        output, _ = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output


def test_a_launch_arguments_text_becomes_the_parameter_launch_ros_would_make_and_nan_stays_text():
    """launch_value: flags and finite numbers typed, anything else (nan, inf) the text, as YAML reads it:
    the parameters file is JSON that YAML reads back to the same values (a NaN written there was not)."""
    import importlib.util
    import os

    import yaml

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch",
                        "robot_linearization_parameters.py")
    spec = importlib.util.spec_from_file_location("robot_linearization_parameters", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    texts = ["true", "False", "50", "1e3", "0.5", "nan", "NaN", "inf", "-inf", "fast"]
    values = [module.launch_value(text) for text in texts]
    assert values == [True, False, 50, 1000.0, 0.5, "nan", "NaN", "inf", "-inf", "fast"]
    for text, value in zip(texts, values):
        if isinstance(value, str):
            assert yaml.safe_load(text) == text  # (what launch_ros makes of such a text: the text)
    file, _ = module.parameters_file(dict(zip(texts, values)))
    try:
        with open(file) as f:
            assert yaml.safe_load(f)["/**"]["ros__parameters"] == dict(zip(texts, values))
    finally:
        os.remove(file)


@pytest.mark.parametrize("launch_file", ["robot_stack.launch.py", "demo.launch.py", "linearization.launch.py",
                                         "walk.launch.py"])
def test_ctrl_c_on_a_launch_ends_our_programs_cleanly_and_leaves_no_file_behind(launch_file, tmp_path):
    """Ctrl-C in the terminal of `ros2 launch` (SIGINT to the whole process group, and
    launch forwards one more): ros2 launch exits 0 and reports our programs as finished
    cleanly, and the temporary directory is as empty as before (launch_ros leaves a
    launch_params_* file there for every dict of parameters; ours are removed at shutdown).
    (Humble's stock joint_state_publisher 2.4.0 dies there with exit code 1 and a
    traceback: launch reports that one, never ours.)"""
    import os
    import shutil
    import signal
    import subprocess

    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    if launch_file == "robot_stack.launch.py":
        try:
            for package in ("robot_state_publisher", "joint_state_publisher"):
                get_package_prefix(package)
        except PackageNotFoundError as e:
            pytest.skip(f"the robot stack is not installed: {e}")
    if launch_file == "walk.launch.py":
        pytest.importorskip("mujoco", reason="walk.launch.py's robot and controller need mujoco")
    arguments = {"robot_stack.launch.py": [f"urdf_file:={example_robot_path('ur5')}"],
                 "linearization.launch.py": [f"urdf_file:={bundled_urdf_path()}"]}.get(launch_file, [])
    log, temporary = tmp_path / "launch.log", tmp_path / "tmp"
    temporary.mkdir()
    with open(log, "w") as out:
        process = subprocess.Popen([shutil.which("ros2"), "launch", "robot_linearization", launch_file, *arguments],
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                   env={**os.environ, "TMPDIR": str(temporary)})
        try:
            deadline = time.monotonic() + 120.0  # until the node's first output (a fresh install compiles)
            while "linearization cycle" not in log.read_text() and "]: ready" not in log.read_text() \
                    and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.2)
            time.sleep(2.0)
            os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    output = log.read_text()
    ours = ["linearization_node"] + {"demo.launch.py": ["simulated_robot"],
                                     "walk.launch.py": ["mujoco_robot", "walking_controller"]}.get(launch_file, [])
    for program in ours:
        assert any(f"[{program}-" in line and "process has finished cleanly" in line for line in output.splitlines()), \
            output[-3000:]
        assert not any(f"[{program}-" in line and ("process has died" in line or "Traceback" in line)
                       for line in output.splitlines()), output[-3000:]
    assert process.returncode == 0, output[-3000:]
    assert os.listdir(temporary) == [], output[-3000:]


def test_the_readmes_service_call_works_as_written(ros):
    """The README's `ros2 service call …/linearize` (the block after its service-call marker), run as
    written by the ros2 CLI against the node with the bundled quadruped: success, and the A it
    prints is rl.linearize's at that state."""
    import re
    import shlex
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    if shutil.which("ros2") is None:
        pytest.fail("the ros2 command-line tool is not on PATH beside rclpy")
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = text.split("<!-- service-call -->", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    command = shlex.split(block.strip())
    assert command[:3] == ["ros2", "service", "call"] and command[3] == f"{NS}/linearize"
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path())]))
    # ros2's script under this Python: importing robot_linearization.srv imports the package, whose
    # dependencies (numba …) a binary install shares with the system's Python and a venv does not
    with tempfile.TemporaryFile(mode="w+") as log:  # (a pipe would fill with the answer's matrices and block)
        process = subprocess.Popen([sys.executable, shutil.which("ros2")] + command[1:], stdout=log,
                                   stderr=subprocess.STDOUT, text=True)
        returned = graph.spin_until(lambda: process.poll() is not None, timeout=120.0)
        if not returned:
            process.kill()
        log.seek(0)
        output = log.read()
    assert returned, f"ros2 service call did not return: {output[-2000:]}"
    assert process.returncode == 0 and "success=True" in output, output[-3000:]
    printed = re.search(r"state_matrix=(?:array\('d', )?\[([^\]]*)\]", output)
    assert printed, output[-3000:]
    A = np.array([float(x) for x in printed.group(1).split(",")])
    s = np.tile([0.0, 0.8, -1.5], 4)
    state = rl.State(base_pose=np.diag([1.0, 1.0, 1.0, 1.0]) + np.outer([0, 0, 0.35, 0], [0, 0, 0, 1]),
                     joint_positions=s, base_twist=np.zeros(6), joint_velocities=np.zeros(12))
    expected = rl.linearize(MODEL, state, contacts=rl.robots.BUNDLED_FEET, dt=0.002).A
    np.testing.assert_allclose(A.reshape(expected.shape), expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    graph.close()


def test_inputs_queued_while_the_description_loads_are_not_found_stale(ros, monkeypatch):
    """A robot publishing from before the node's first load (here a load that takes 1 s, as a first
    start's compile or a busy machine makes it): what queued meanwhile is dropped once, said in one
    log line, not counted as stale inputs; the inputs after it are linearized."""
    load = LinearizationNode.set_description

    def slow_load(self, description):
        time.sleep(1.0)
        load(self, description)

    monkeypatch.setattr(LinearizationNode, "set_description", slow_load)
    node = LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path()),
                                                  Parameter("publish_heatmaps", value=False)])
    client = rclpy.create_node("test_client")
    executor = SingleThreadedExecutor()
    for each in (node, client):
        executor.add_node(each)
    js_pub = client.create_publisher(JointState, "/joint_states", 10)
    odom_pub = client.create_publisher(Odometry, "/odom", 10)
    outputs = []
    client.create_subscription(Linearization, f"{NS}/linearization", outputs.append, 10)
    factory, rng = RclpyFactory(), np.random.default_rng(4)
    s, r = rng.normal(size=12), rng.normal(size=12)
    deadline = time.monotonic() + 30.0
    while len(outputs) < 10 and time.monotonic() < deadline:  # 20 Hz, from before the model is there
        now = node.get_clock().now().nanoseconds
        odom_pub.publish(odometry_message(factory, now, "odom", "base_link", np.eye(4), np.zeros(6)))
        js_pub.publish(joint_state_message(factory, now, MODEL.joint_names, s, r))
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.01)
    with node.lock:
        values = node.pipeline.diagnostics(node.get_clock().now().nanoseconds)[0][3]
    assert len(outputs) >= 10, values
    assert not [key for key in values if key.startswith("rejected")], values
    node.destroy_node()
    client.destroy_node()


def test_a_backlog_of_inputs_is_paired_stamp_by_stamp_and_kept(ros):
    """The input thread late by 20 cycles (held here on the node's lock) finds 20 odometry messages
    and 20 joint states queued: each joint state is linearized with the odometry of its own stamp
    (odometry k puts the base at x = k), none with an older one, and none is lost (the inputs keep
    the last 50 messages, not sensor-data's 5).  This pins the node's own input order end to end:
    with joint states taken before odometry, none of the 20 is paired (tried by hand)."""
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path()),
                                                         Parameter("publish_heatmaps", value=False)]))
    js_pub = graph.client.create_publisher(JointState, "/joint_states", 50)
    odom_pub = graph.client.create_publisher(Odometry, "/odom", 50)
    arrived = {}  # stamp -> the base's x in its ~/linearization (a history deep enough for the burst of 20)

    def record(message):
        arrived[message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec] = message.base_pose.position.x

    graph.client.create_subscription(Linearization, f"{NS}/linearization", record, 100)
    rng = np.random.default_rng(3)
    s, r = rng.normal(size=12), rng.normal(size=12)

    def publish(stamp, x):
        odom_pub.publish(odometry_message(graph.factory, stamp, "odom", "base_link", se3_exp(np.r_[x, 0, 0, 0, 0, 0]),
                                          np.zeros(6)))
        js_pub.publish(joint_state_message(graph.factory, stamp, MODEL.joint_names, s, r))

    assert graph.spin_until(lambda: arrived, each=lambda: publish(graph.node.get_clock().now().nanoseconds, -1.0))
    graph.spin_until(lambda: False, timeout=0.3)
    start = graph.node.get_clock().now().nanoseconds + 50_000_000
    stamps = [start + k * 1_000_000 for k in range(20)]
    with graph.node.lock:  # the input thread stops at its next message
        for k, stamp in enumerate(stamps):
            publish(stamp, float(k))
            time.sleep(0.001)
        time.sleep(0.3)  # every message in the node's queues
    assert graph.spin_until(lambda: all(stamp in arrived for stamp in stamps), timeout=10.0), \
        f"{sum(stamp in arrived for stamp in stamps)} of 20 linearized: {graph.node.pipeline.diagnostics(0)}"
    assert [arrived[stamp] for stamp in stamps] == [float(k) for k in range(20)]
    graph.close()


PUBLISHER = """
import sys, time
import numpy as np, rclpy
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState
import robot_linearization as rl
from robot_linearization.ros.messages import joint_state_message, odometry_message
from robot_linearization.ros.node import RclpyFactory
from robot_linearization.spatial import se3_exp

model, count, rate = rl.load_urdf(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rclpy.init()
node = rclpy.create_node("robot_driver")
js_pub = node.create_publisher(JointState, "/joint_states", qos_profile_sensor_data)
odom_pub = node.create_publisher(Odometry, "/odom", qos_profile_sensor_data)
factory, n = RclpyFactory(), model.n_joints
s, r = np.full(n, 0.1), np.zeros(n)
while node.count_subscribers("/joint_states") == 0 or node.count_subscribers("/odom") == 0:
    time.sleep(0.05)
time.sleep(0.5)
start = time.monotonic()
for k in range(count):  # odometry k puts the base at x = k, one stamp for both
    time.sleep(max(0.0, start + k / rate - time.monotonic()))  # (asleep: the node's machine keeps its cores)
    stamp = node.get_clock().now().nanoseconds
    odom_pub.publish(odometry_message(factory, stamp, "odom", model.body_names[0],
                                      se3_exp(np.r_[float(k), 0, 1.0, 0, 0, 0]), np.zeros(6)))
    js_pub.publish(joint_state_message(factory, stamp, model.joint_names, s, r))
    print(stamp, flush=True)
node.destroy_node()
rclpy.try_shutdown()
"""


def test_slow_validate_calls_do_not_block_the_inputs_of_a_humanoid_stream(ros, monkeypatch):
    """talos's joint states and odometry at 200 Hz from a driver process; meanwhile three ~/validate
    calls, each held 0.5 s in the service (beside the validation itself): 100 inputs arrive during each,
    twice the 50 the input subscriptions keep.  The services work on a snapshot of the pipeline, never
    on the inputs' lock: the joint states are linearized, each with the odometry of its own stamp
    (odometry k puts the base at x = k), and the validation, in its own process, takes no time of the
    input thread's.  A service that held the inputs' lock loses about half of them (tried by hand:
    628 of 1000); the sensor-data QoS is best effort, so at most 1 % may be missing.  (The rate is one
    any machine carries, the generic kernel serving while the generated one builds beside it; the
    hold, not the rate, is what loses inputs if a service blocks them.)"""
    import subprocess
    import sys

    from robot_linearization.ros import pipeline as pipeline_module
    from robot_linearization.ros.node import INPUT_QOS

    rate, hold = 200, 0.5
    assert hold * rate >= 2 * INPUT_QOS.depth  # a blocked input thread would lose half of each hold's inputs
    validate = pipeline_module.Snapshot.validate_output

    def held(self, out=None, **options):
        time.sleep(hold)
        return validate(self, out, **options)

    monkeypatch.setattr(pipeline_module.Snapshot, "validate_output", held)
    path = example_robot_path("talos")
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=path),
                                                         Parameter("publish_heatmaps", value=False),
                                                         Parameter("publish_health", value=False)]), record=False)
    taken, arrived = graph.take_linearizations(), {}  # stamp -> its serialized output (read after the stream)

    def all_arrived():
        arrived.update((header_stamp_ns(raw), raw) for raw in taken)
        taken.clear()
        return all(stamp in arrived for stamp in stamps)
    count = 1000  # 5 s
    driver = subprocess.Popen([sys.executable, "-c", PUBLISHER, path, str(count), str(rate)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert graph.spin_until(lambda: taken, timeout=60.0), driver.stderr.read() if driver.poll() else ""
        answers = [graph.call(f"{NS}/validate", Validate, Validate.Request()) for _ in range(3)]
        stdout, stderr = driver.communicate(timeout=60)
        assert driver.returncode == 0, stderr
        assert all(answer.success and answer.message.startswith("PASS") for answer in answers), answers
        stamps = [int(line) for line in stdout.split()]
        assert len(stamps) == count
        graph.spin_until(all_arrived, timeout=10.0)
        with graph.node.lock:
            values = graph.node.pipeline.diagnostics(0)[0][3]
        missing = [k for k, stamp in enumerate(stamps) if stamp not in arrived]
        assert len(missing) <= 0.01 * count, f"{len(missing)} of {count} not linearized (first {missing[:5]}): {values}"
        x = [deserialize_message(arrived[stamp], Linearization).base_pose.position.x
             for stamp in stamps if stamp in arrived]
        assert x == [float(k) for k in range(count) if k not in missing]
    finally:
        if driver.poll() is None:
            driver.kill()
        graph.close()


def test_the_generated_kernel_takes_over_the_node_without_a_cycle_missed_or_a_bit_changed(ros, tmp_path,
                                                                                         monkeypatch):
    """kernel 'auto' on a machine whose cache is empty: the node linearizes with the generic kernel from the
    first cycle while the quadruped's kernel is built in another process, then with the generated one.
    A stream at 200 Hz through it all: every joint state has its output, and each A equals the generic
    kernel's at that state bit for bit, before the takeover and after it."""
    from robot_linearization import kernel_choice

    monkeypatch.setenv("ROBOT_LINEARIZATION_CACHE_DIR", str(tmp_path / "cache"))
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path()),
                                                         Parameter("kernel", value="auto"),
                                                         Parameter("publish_heatmaps", value=False)]))
    try:
        js_pub = graph.client.create_publisher(JointState, "/joint_states", 50)
        odom_pub = graph.client.create_publisher(Odometry, "/odom", 50)
        # taken serialized, and read only once the stream is over: reading each as it comes loaded this process,
        # the node's too, so that it fell more than the node's publisher keeps behind and lost outputs
        taken = graph.take_linearizations()

        outputs = {}  # stamp -> its serialized ~/linearization
        rng = np.random.default_rng(5)
        s, r, H, v = rng.normal(size=12), rng.normal(size=12), se3_exp(rng.normal(size=6)), rng.normal(size=6)
        expected = rl.linearize(MODEL, rl.State(base_pose=H, joint_positions=s, base_twist=v, joint_velocities=r),
                                kernel="generic").A
        sent, kinds = [], []
        takeover = kernel_choice.takeover(graph.node.pipeline.model, (), "linearize")

        def publish():
            now = graph.node.get_clock().now().nanoseconds
            odom_pub.publish(odometry_message(graph.factory, now, "odom", "base_link", H, v))
            js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names, s, r))
            sent.append(now)
            kinds.append(takeover.kernel is not None)
            time.sleep(0.005)

        assert graph.spin_until(lambda: taken, each=publish)
        first = len(sent)
        graph.spin_until(lambda: kinds[-1] and kinds.count(True) > 200, timeout=240, each=publish)
        assert takeover.kernel is not None, takeover.problem
        served = sent[first:]  # (after discovery: from the first output on)

        def all_arrived():
            outputs.update((header_stamp_ns(raw), raw) for raw in taken)
            taken.clear()
            return all(stamp in outputs for stamp in served)
        graph.spin_until(all_arrived, timeout=10.0)
        missing = [stamp for stamp in served if stamp not in outputs]
        with graph.node.lock:
            values = graph.node.pipeline.diagnostics(0)[0][3]
        assert not missing, f"{len(missing)} of {len(served)} joint states without an output: {values}"
        assert kinds[first] is False and kinds[-1] is True  # (both kernels served this stream)
        # after the takeover, the compiled cycle (compiled_cycle.py) served the stream
        assert graph.node.compiled_cycle.served > 100, graph.node.compiled_cycle.declined
        assert graph.spin_until(lambda: any(  # (and /diagnostics says so)
            value.key == "compiled_cycle_outputs" and int(value.value) > 100
            for array in graph.received.get("/diagnostics", []) for status in array.status
            for value in status.values), timeout=3.0)
        for stamp in served:
            assert np.array_equal(linearization_matrices(deserialize_message(outputs[stamp], Linearization))[
                "state_matrix"], expected), stamp
    finally:
        graph.close()


def test_a_fixed_base_is_served_by_the_compiled_cycle_each_output_the_generic_kernels_bit_for_bit(ros):
    """An arm's node (floating_base false, the generated kernel, an Euler step): its joint states, alone, are
    served by the compiled cycle, each output's A and A_d the generic kernel's at its state bit for bit, its
    base pose the identity."""
    graph = Graph(LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path()),
                                                         Parameter("floating_base", value=False),
                                                         Parameter("discretization_dt", value=0.002),
                                                         Parameter("kernel", value="generated"),
                                                         Parameter("publish_heatmaps", value=False)]))
    try:
        js_pub = graph.client.create_publisher(JointState, "/joint_states", 50)
        taken = graph.take_linearizations()
        fixed = rl.load_urdf(URDF, floating_base=False)
        rng = np.random.default_rng(8)
        states = [(rng.normal(size=12), rng.normal(size=12)) for _ in range(5)]
        expected = [rl.linearize(fixed, rl.State(joint_positions=s, joint_velocities=r), kernel="generic", dt=0.002)
                    for s, r in states]
        sent = {}  # stamp -> which state

        def publish():
            now = graph.node.get_clock().now().nanoseconds
            sent[now] = len(sent) % len(states)
            js_pub.publish(joint_state_message(graph.factory, now, MODEL.joint_names, *states[sent[now]]))
            time.sleep(0.005)

        assert graph.spin_until(lambda: len(taken) > 150, each=publish, timeout=60)
        graph.spin_until(lambda: False, timeout=0.5)
        assert graph.node.compiled_cycle.served > 100, graph.node.compiled_cycle.declined
        for raw in list(taken):
            k, message = sent[header_stamp_ns(raw)], deserialize_message(raw, Linearization)
            matrices = linearization_matrices(message)
            assert np.array_equal(matrices["state_matrix"], expected[k].A)
            assert np.array_equal(matrices["discrete_state_matrix"], expected[k].A_d)
            assert not message.floating_base and message.base_pose.orientation.w == 1.0
    finally:
        graph.close()


def test_heatmaps_and_health_are_made_only_while_something_subscribes(ros, monkeypatch):
    """Nobody subscribed to ~/A_heatmap, ~/B_heatmap, ~/health or ~/health_labels: over a second of
    outputs (two ticks of their 2 Hz timer) none is made, nor the Output they would be made of; then
    a subscriber to ~/health_labels gets the labels with no health vector computed (no eigenvalues);
    then one to ~/health gets the vector, still with no image made; then one to ~/A_heatmap gets the
    image."""
    made = []
    monkeypatch.setattr(node_module, "health", lambda out: made.append("health") or rl_health(out))
    monkeypatch.setattr(node_module, "heatmap_messages", lambda *a: made.append("heatmaps") or rl_heatmaps(*a))
    node = LinearizationNode(parameter_overrides=[Parameter("urdf_path", value=bundled_urdf_path())])
    client = rclpy.create_node("watcher")
    executor = SingleThreadedExecutor()
    for each in (node, client):
        executor.add_node(each)
    received = {}
    client.create_subscription(Linearization, f"{NS}/linearization",
                               lambda m: received.setdefault("linearization", []).append(m), 10)
    js_pub, odom_pub = client.create_publisher(JointState, "/joint_states", 10), client.create_publisher(Odometry,
                                                                                                        "/odom", 10)
    factory, H, s = RclpyFactory(), se3_exp(np.linspace(-0.2, 0.3, 6)), np.linspace(-0.5, 0.5, 12)

    def spin(seconds, condition=lambda: False):
        deadline = time.monotonic() + seconds
        while not condition() and time.monotonic() < deadline:
            now = node.get_clock().now().nanoseconds
            odom_pub.publish(odometry_message(factory, now, "odom", "base_link", H, np.ones(6)))
            js_pub.publish(joint_state_message(factory, now, MODEL.joint_names, s, s))
            executor.spin_once(timeout_sec=0.01)
        return condition()

    try:
        assert spin(180.0, lambda: node.pipeline.model is not None and received.get("linearization"))
        spin(1.2)
        assert made == [] and node._heatmap_of is None and len(received["linearization"]) > 20
        client.create_subscription(String, f"{NS}/health_labels",
                                   lambda m: received.setdefault("labels", []).append(m), LATCHED)
        assert spin(5.0, lambda: received.get("labels"))
        assert json.loads(received["labels"][-1].data) == ["compute_time_ms", "spectral_abscissa_A", "cond_M"]
        spin(1.2)
        assert made == []
        client.create_subscription(Float64MultiArray, f"{NS}/health",
                                   lambda m: received.setdefault("health", []).append(m), 10)
        assert spin(5.0, lambda: received.get("health"))
        assert "heatmaps" not in made and len(received["health"][-1].data) == 3
        client.create_subscription(Image, f"{NS}/A_heatmap", lambda m: received.setdefault("image", []).append(m), 10)
        assert spin(5.0, lambda: received.get("image")) and "heatmaps" in made
    finally:
        node.destroy_node()
        client.destroy_node()


def _taker_graph(name: str):
    """A node ``name`` with raw subscriptions to its own /name/odom and /name/joint_states (the input
    thread's two, odometry first), publishers to them and a message factory."""
    node = rclpy.create_node(name)
    topics = ((Odometry, f"/{name}/odom"), (JointState, f"/{name}/joint_states"))
    subscriptions = [node.create_subscription(t, topic, lambda _: None, 10, raw=True) for t, topic in topics]
    odometry_pub, joint_state_pub = (node.create_publisher(t, topic, 10) for t, topic in topics)
    return node, subscriptions, odometry_pub, joint_state_pub, RclpyFactory()


def test_the_input_thread_takes_odometry_that_arrives_while_joint_states_are_taken_first(ros):
    """The input thread's taker (node.WaitSetTaker, odometry first): of 3 queued joint states it
    hands over one; 2 odometry messages arrive meanwhile; they come next, before the other joint
    states.  Draining the joint states first let those that kept arriving while a backlog was worked
    off race ahead of their odometry, until they found none within pairing_tolerance (unpaired)."""
    node, (odometry_sub, joint_state_sub), odometry_pub, joint_state_pub, factory = _taker_graph("taker_test")
    for k in range(3):
        joint_state_pub.publish(joint_state_message(factory, k, MODEL.joint_names, np.zeros(12), np.zeros(12)))
    time.sleep(0.2)
    taken = node_module.WaitSetTaker(node, [odometry_sub, joint_state_sub]).take(1_000_000_000)
    order = [next(taken)[0]]
    for k in range(2):
        odometry_pub.publish(odometry_message(factory, k, "odom", "base_link", np.eye(4), np.zeros(6)))
    time.sleep(0.2)
    order += [index for index, _ in taken]
    assert order == [1, 0, 0, 1, 1]  # (0: odometry, 1: joint states)
    node.destroy_node()


def test_the_input_thread_is_woken_by_joint_states_and_takes_the_odometry_queued_before_them(ros):
    """The input thread waits on joint states only while none waits for its odometry (node.InputLoop):
    an odometry message alone does not end the wait (it is taken when the wait ends), a joint state
    does, and the odometry queued before it comes first — one wake per cycle, not one per message."""
    node, (odometry_sub, joint_state_sub), odometry_pub, joint_state_pub, factory = _taker_graph("waking_test")
    taker = node_module.WaitSetTaker(node, [odometry_sub, joint_state_sub])
    odometry_pub.publish(odometry_message(factory, 1, "odom", "base_link", np.eye(4), np.zeros(6)))
    time.sleep(0.2)
    start = time.monotonic()
    assert [index for index, _ in taker.take(500_000_000, waking=(1,))] == [0]
    assert time.monotonic() - start > 0.45  # (not woken by the odometry)
    odometry_pub.publish(odometry_message(factory, 2, "odom", "base_link", np.eye(4), np.zeros(6)))
    joint_state_pub.publish(joint_state_message(factory, 2, MODEL.joint_names, np.zeros(12), np.zeros(12)))
    start = time.monotonic()
    assert [index for index, _ in taker.take(5_000_000_000, waking=(1,))] == [0, 1]
    assert time.monotonic() - start < 1.0
    node.destroy_node()


def test_the_raw_linearization_the_node_publishes_is_rclpys_own_serialization(ros):
    """What the node publishes raw (interfaces.linearization_cdr) is the bytes rclpy serializes the
    message linearization_message builds into (rosidl's typesupport: the other independent serializer)."""
    from types import SimpleNamespace

    from rclpy.serialization import serialize_message

    from robot_linearization.ros.interfaces import linearization_cdr, linearization_message

    rng = np.random.default_rng(5)
    state = rl.State(base_pose=se3_exp(rng.normal(size=6)), joint_positions=rng.normal(size=12),
                     base_twist=rng.normal(size=6), joint_velocities=rng.normal(size=12))
    feet = list(rl.robots.BUNDLED_FEET)
    lin = rl.linearize(MODEL, state, rng.normal(size=12), contacts=feet, dt=0.002, previous_contacts=feet[:2])
    out = SimpleNamespace(linearization=lin, model=MODEL, state=state, joint_torques=lin.joint_torques,
                          margins=rl.contact_margins(MODEL, lin, friction=0.7, facets=4), impact=lin.impact,
                          stamp_ns=12 * 10**9 + 34, compute_time=1e-4)
    assert linearization_cdr(out, "base_link") == bytes(serialize_message(
        linearization_message(RclpyFactory(), out, "base_link")))
