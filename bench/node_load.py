"""Load test of the linearization node in a real ROS 2 graph (needs ROS 2; not a test).

    source /opt/ros2/setup_env.sh        # or /opt/ros/<distro>/setup.bash
    .venv-ros-<distro>/bin/python bench/node_load.py [--robots talos solo12] [--rate 1000] [--seconds 10] \
        [--input-path auto|wait_set|executor] [--requests 100] [--with-rqt] [--step DT] \
        [--floor | --kernel-floor | --lean-floor | --pipeline-floor | --against-floor ROUNDS]

(.venv-ros-<distro> is the virtualenv scripts/test.sh makes over that ROS's Python, with this package.)
For each robot: starts the node in its own process (heatmaps on, at their default
rate), publishes sensor_msgs/JointState and nav_msgs/Odometry with one stamp at a fixed
rate (sensor-data QoS, as a robot driver does; an arm on a fixed base, ur5: joint states
only, the node with floating_base:=false), and records when each cycle's
~/linearization arrives (taken serialized: its header's stamp is the input's).
Prints the share of joint states linearized, the latency from the input stamp to the
arrival of the output (p50, p99; its histogram, and how the outputs over 1 ms bunch: in runs of
consecutive inputs, a stall of a process or of the machine, or one by one, a cost of some
cycles), the node process's CPU time per cycle (and each of its threads'), and the
seconds from starting the node's process to its first output (the first start); then,
by the node's own counters in /diagnostics (read while no input flows, before and after
the window), how many outputs it made and inputs it rejected, so that a cycle lost in the
node is told apart from an output lost on its way to this client (the CPU per cycle is
per output the node made).
--requests N: N ~/linearize calls at other states (the robot's joints perturbed), one
after the other, during the measured window; prints how many were answered with success
and their round-trip time (p50, max).  Their computation runs in the node's process: the
CPU per cycle then includes it.
--floor: instead of the node, a bare rclpy process with the same inputs and output (serve_floor);
--kernel-floor: that process calling the robot's generated kernel once per joint state too (the
cost of any node with this interface and this kernel);
--lean-floor: that process doing the least any node with this interface must do per joint state, with
none of the node's checks, pairing or bookkeeping: a Python cycle with nothing but the necessary;
--against-floor ROUNDS: ROUNDS rounds of the floor, the node and the kernel floor, one after the other
(the machine's speed drifts within minutes: a ratio is only meaningful within one round), then each
round's node / floor and kernel floor / floor, their medians, and in how many runs the node
linearized every joint state (--requests go to the node's runs);
--pipeline-floor: that process's single thread running the node's own cycle, which prints the
cycle's CPU by part: what the node's threads and timers add is the node's cost above it.
--with-rqt: rqt with this package's view (robot_linearization/rqt) runs beside it on a
virtual display (Xvfb), following the node's A (and λ, A_d where published) and drawing
at its 10 Hz; the measured window starts once it has drawn, and its CPU share is printed.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import struct
import subprocess
import sys
import sysconfig
import threading
import time

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import JointState

import robot_linearization as rl
from robot_linearization.msg import Linearization
from robot_linearization.robots import bundled_urdf_path
from robot_linearization.ros.messages import joint_state_message, odometry_message
from robot_linearization.srv import Linearize
from robot_linearization.ros.node import RclpyFactory
from robot_linearization.spatial import se3_exp

ROBOTS_DIR = os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix", "share", "example-robot-data", "robots")
ROBOTS = {
    "talos": os.path.join(ROBOTS_DIR, "talos_data/robots/talos_reduced.urdf"),
    "solo12": os.path.join(ROBOTS_DIR, "solo_description/robots/solo12.urdf"),
    "rl_quadruped": bundled_urdf_path(),
    "ur5": os.path.join(ROBOTS_DIR, "ur_description/urdf/ur5_robot.urdf"),
}
FIXED_BASE = frozenset({"ur5"})
"""The robots on a fixed base (an arm): the node runs with floating_base:=false and gets joint states only."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PHASES = ("reading both inputs", "pairing and linearizing", "writing the message's CDR", "publishing it")
"""--pipeline-floor's parts of a cycle, in the order serve_floor times them."""
ROUND = ("floor", "", "kernel")
"""--against-floor's round: the floor, the node, the kernel floor, one after the other."""
ROUND_LABELS = {"floor": "floor", "": "node", "kernel": "kernel floor"}
STAMP = struct.Struct("<iI")
"""A header's stamp in little-endian CDR: sec (int32), nanosec (uint32)."""


def _stat_cpu(path: str) -> tuple[str, float]:
    """(name, user + system CPU seconds so far) of a process or thread, from its /proc stat file."""
    with open(path) as f:
        head, tail = f.read().rsplit(")", 1)
    fields = tail.split()
    return head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc)."""
    return _stat_cpu(f"/proc/{pid}/stat")[1]


def thread_cpu(pid: int) -> dict:
    """{thread id: (its name, user + system CPU seconds so far)} of each thread of a process (/proc)."""
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            threads[int(tid)] = _stat_cpu(f"/proc/{pid}/task/{tid}/stat")
        except OSError:  # (a thread that ended meanwhile)
            continue
    return threads


def threads_per_cycle(pid: int, before: dict, after: dict, cycles: int) -> list[tuple[str, float]]:
    """[(thread, its CPU per cycle [µs])] over a window, busiest first, from two :func:`thread_cpu`
    snapshots; the process's main thread is named "main" (the node's executor, the floors' loop)."""
    spent = [("main" if tid == pid else name, (seconds - before.get(tid, (name, 0.0))[1]) / max(cycles, 1) * 1e6)
             for tid, (name, seconds) in after.items()]
    return sorted((item for item in spent if item[1] > 0.0), key=lambda item: -item[1])


class LoadClient:
    """Publishes the inputs at a fixed rate on one thread; records the outputs on another."""

    def __init__(self, model, namespace: str):
        self.node = rclpy.create_node("node_load_client")
        self.factory = RclpyFactory()
        self.model, self.namespace = model, namespace
        rng = np.random.default_rng(0)
        H = se3_exp(np.r_[0.0, 0.0, 1.0, 0.1 * rng.normal(size=3)])
        base_frame = model.body_names[0]
        self.joint_state = joint_state_message(self.factory, 0, model.joint_names,
                                               0.3 * rng.normal(size=model.n_joints),
                                               rng.normal(size=model.n_joints), np.zeros(model.n_joints))
        self.odometry = odometry_message(self.factory, 0, "odom", base_frame, H, 0.1 * rng.normal(size=6))
        self.inputs = (self.odometry, self.joint_state) if model.floating_base else (self.joint_state,)
        self.js_pub = self.node.create_publisher(JointState, f"/{namespace}/joint_states", qos_profile_sensor_data)
        self.odom_pub = self.node.create_publisher(Odometry, f"/{namespace}/odom", qos_profile_sensor_data)
        self.arrivals = {}  # input stamp (ns) -> arrival (ns)
        self.counters: list = []  # (receipt (ns), the node's /diagnostics values) of each of its reports
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 100)
        # taken serialized, so that the client's own Python stays out of the latencies
        self.node.create_subscription(Linearization, f"/{namespace}/robot_linearization/linearization",
                                      self._on_linearization, 100, raw=True)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.spinner = threading.Thread(target=self.executor.spin, daemon=True)
        self.spinner.start()

    def _on_linearization(self, raw: bytes) -> None:
        # little-endian CDR: 4 bytes of encapsulation, then header.stamp's sec (int32) and nanosec (uint32)
        sec, nanosec = int.from_bytes(raw[4:8], "little", signed=True), int.from_bytes(raw[8:12], "little")
        self.arrivals[sec * 1_000_000_000 + nanosec] = time.time_ns()

    def _on_diagnostics(self, msg) -> None:
        for status in msg.status:
            if status.name.endswith(": linearization"):
                self.counters.append((time.time_ns(), {kv.key: kv.value for kv in status.values}))

    def settled_counters(self, timeout: float = 5.0) -> dict:
        """The node's counters (outputs, rejected_*) from its first report received from now on: taken
        while no input is sent, they count every input sent before.  {} without a report (the floor)."""
        since = time.time_ns()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            fresh = [values for received, values in list(self.counters) if received > since]
            if fresh:
                return {k: v if k == "compiled_cycle_declined" else int(v) for k, v in fresh[0].items()
                        if k in ("outputs", "compiled_cycle_outputs", "compiled_cycle_declined")
                        or k.startswith("rejected_")}
            time.sleep(0.02)
        return {}

    def requests(self, count: int, seconds: float, answers: list) -> None:
        """``count`` ~/linearize calls over ``seconds``, each waiting for its answer: appends
        (success, round trip [s]) to ``answers``, or (False, nan) for one unanswered in 10 s."""
        client = self.node.create_client(Linearize, f"/{self.namespace}/robot_linearization/linearize")
        if not client.wait_for_service(timeout_sec=10.0):
            answers.extend([(False, float("nan"))] * count)
            return
        rng = np.random.default_rng(1)
        start = time.perf_counter()
        for k in range(count):
            delay = start + k * seconds / count - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            request = Linearize.Request(joint_state=joint_state_message(
                self.factory, 0, self.model.joint_names, np.array(self.joint_state.position)
                + 0.05 * rng.normal(size=self.model.n_joints), self.joint_state.velocity, self.joint_state.effort),
                odometry=self.odometry)
            sent = time.perf_counter()
            future = client.call_async(request)
            done = threading.Event()
            future.add_done_callback(lambda _: done.set())
            if done.wait(10.0):
                answers.append((future.result().success, time.perf_counter() - sent))
            else:
                answers.append((False, float("nan")))

    def publish(self) -> int:
        now = time.time_ns()
        for msg in self.inputs:
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 1_000_000_000)
        if self.model.floating_base:
            self.odom_pub.publish(self.odometry)
        self.js_pub.publish(self.joint_state)
        return now

    def run(self, rate: float, seconds: float) -> list[int]:
        """Publish at ``rate`` Hz for ``seconds`` (absolute-time pacing); the stamps sent."""
        period = 1e9 / rate
        start, sent = time.perf_counter_ns(), []
        for k in range(int(rate * seconds)):
            delay = start + k * period - time.perf_counter_ns()
            if delay > 0:
                time.sleep(delay * 1e-9)
            sent.append(self.publish())
        return sent

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()


def _header_of(raw: bytes) -> bytes:
    """The serialized std_msgs/Header at the start of a serialized message (little-endian CDR)."""
    size = int.from_bytes(raw[12:16], "little")  # header.frame_id's length, NUL included
    return raw[:16 + size]


def serve_floor(namespace: str, nv: int, n: int, mode: str, urdf_path: str, floating_base: bool = True) -> None:
    """The floor of any rclpy node with this interface (--floor): the node's input loop
    (a wait set on joint_states and odom, taken serialized), and for each joint state
    one ~/linearization published serialized — prebuilt, with A, B, M⁻¹ of the robot's
    sizes, the joint state's header spliced in — with no linearization, reading or
    conversion at all (``mode`` "floor").

    ``mode`` "kernel" (--kernel-floor): before each publication, the generated kernel of the robot
    at ``urdf_path`` (an rl.Linearizer with kernel="generated", its arrays allocated once; its base
    fixed unless ``floating_base``) is called at one random state, the same every time: what no node can
    save.

    ``mode`` "lean" (--lean-floor): each joint state goes through the least any node with this
    interface must do (serve_lean).

    ``mode`` "pipeline" (--pipeline-floor): each input goes through the node's own cycle
    instead — messages.CdrInputs, pipeline.LinearizationPipeline (the node's defaults, this
    robot), interfaces.LinearizationCdr — on this one thread, with no executor, timers,
    services, heatmaps or health; at exit (SIGTERM) it writes the thread's CPU per output
    in each of PHASES to stderr, as one line of four numbers [µs]."""
    from rclpy._rclpy_pybind11 import WaitSet
    from rclpy.serialization import serialize_message

    rclpy.init()
    node = rclpy.create_node("robot_linearization", namespace=f"/{namespace}")
    if mode == "pipeline":
        serve_pipeline(node, urdf_path)
        return
    if mode == "lean":
        serve_lean(node, urdf_path)
        return
    kernel = (lambda: None) if mode == "floor" else kernel_call(urdf_path, floating_base)
    prebuilt = Linearization(state_matrix=np.zeros(4 * nv * nv), input_matrix=np.zeros(2 * nv * n),
                             inverse_mass_matrix=np.zeros(nv * nv))
    publisher = node.create_publisher(Linearization, "~/linearization", 10)
    subscriptions = [node.create_subscription(t, topic, lambda m: None, qos_profile_sensor_data, raw=True)
                     for t, topic in ((JointState, "joint_states"), (Odometry, "odom"))]
    wait_set = WaitSet(2, 0, 0, 0, 0, 0, node.context.handle)
    bodies = {}  # header length -> the prebuilt message after its header (a frame_id that long: the same alignment)
    while rclpy.ok():
        wait_set.clear_entities()
        for sub in subscriptions:
            wait_set.add_subscription(sub.handle)
        wait_set.wait(100_000_000)
        ready = wait_set.get_ready_entities("subscription")
        for sub in subscriptions:
            if sub.handle.pointer not in ready:
                continue
            while (taken := sub.handle.take_message(sub.msg_type, sub.raw)) is not None:
                if sub.msg_type is JointState:
                    header = _header_of(taken[0])
                    if len(header) not in bodies:
                        prebuilt.header.frame_id = "x" * (len(header) - 17)
                        raw = serialize_message(prebuilt)
                        bodies[len(header)] = raw[len(_header_of(raw)):]
                    kernel()
                    publisher.publish(header + bodies[len(header)])


def kernel_call(urdf_path: str, floating_base: bool = True):
    """serve_floor's --kernel-floor: a call of the robot's generated kernel at one random state."""
    model = rl.load_urdf(urdf_path, floating_base=floating_base)
    linearizer = rl.Linearizer(model, kernel="generated")
    rng, n = np.random.default_rng(0), model.n_joints
    H, twist = (se3_exp(0.1 * rng.normal(size=6)), rng.normal(size=6)) if floating_base else (None, None)
    state = rl.State(base_pose=H, joint_positions=0.3 * rng.normal(size=n), base_twist=twist,
                     joint_velocities=rng.normal(size=n))
    torques = rng.normal(size=n)
    return lambda: linearizer.linearize(state, torques)


def node_cycle_parts(urdf_path: str) -> tuple:
    """The node's own cycle for the robot at ``urdf_path``, as --pipeline-floor and --lean-floor run it:
    (pipeline.LinearizationPipeline with the node's defaults and this robot, messages.CdrInputs,
    interfaces.LinearizationCdr); SystemExit with the reason for a robot it cannot load."""
    from robot_linearization.ros.interfaces import LinearizationCdr
    from robot_linearization.ros.messages import CdrInputs
    from robot_linearization.ros.pipeline import LinearizationPipeline

    pipeline = LinearizationPipeline()
    with open(urdf_path) as f:
        problem = pipeline.set_description(f.read())
    if problem:
        raise SystemExit(problem)
    return pipeline, CdrInputs(), LinearizationCdr()


def serve_pipeline(node, urdf_path: str) -> None:
    """serve_floor's --pipeline-floor: the floor's loop running the node's cycle (see there)."""
    import gc

    pipeline, reader, writer = node_cycle_parts(urdf_path)
    gc.freeze()  # (as the node's input loop does)
    publisher = node.create_publisher(Linearization, "~/linearization", 10)
    # odometry first, as the node's input loop takes them
    inputs = [(node.create_subscription(t, topic, lambda m: None, qos_profile_sensor_data, raw=True), read, name)
              for t, topic, read, name in ((Odometry, "odom", reader.odometry, "odometry"),
                                           (JointState, "joint_states", reader.joint_state, "joint_states"))]
    from rclpy._rclpy_pybind11 import WaitSet

    wait_set = WaitSet(2, 0, 0, 0, 0, 0, node.context.handle)
    spent, outputs = [0] * len(PHASES), 0
    clock = time.thread_time_ns
    while rclpy.ok():
        wait_set.clear_entities()
        wait_set.add_subscription(inputs[1][0].handle)  # (a joint state wakes the loop; its odometry came first)
        wait_set.wait(100_000_000)
        for sub, read, name in inputs:
            while (taken := sub.handle.take_message(sub.msg_type, sub.raw)) is not None:
                start = clock()
                fields = read(taken[0])
                read_at = clock()
                made = pipeline.receive(name, fields, time.time_ns())
                linearized_at = clock()
                spent[0] += read_at - start
                spent[1] += linearized_at - read_at
                for out in made:
                    data = writer(out, pipeline.base_frame)
                    written_at = clock()
                    publisher.publish(data)
                    spent[2] += written_at - linearized_at
                    linearized_at = clock()
                    spent[3] += linearized_at - written_at
                    outputs += 1
    print(" ".join(f"{t / max(outputs, 1) * 1e-3:.1f}" for t in spent), file=sys.stderr, flush=True)


def serve_lean(node, urdf_path: str) -> None:
    """serve_floor's --lean-floor: the floor's loop doing, for each joint state, the least any node
    with this interface must do, and nothing the node does besides (no checks, pairing, stale or
    time-jump handling, counters, diagnostics, heatmaps or services): the joint positions and
    velocities read out of the serialized joint state (messages.CdrInputs, the joint order looked up
    once) and the pose and twist out of the latest odometry, the robot's generated kernel called
    through a Linearizer at that 7-number pose, and A, B, M⁻¹ and the joint state written into the
    message's CDR (interfaces.LinearizationCdr, laid out once by the node's own cycle), stamped with
    the joint state's stamp.  A Python cycle with nothing but the necessary, to hold the node's against."""
    import gc

    from rclpy._rclpy_pybind11 import WaitSet

    pipeline, reader, writer = node_cycle_parts(urdf_path)
    model = pipeline.model
    linearizer = rl.Linearizer(model, kernel="generated")
    publisher = node.create_publisher(Linearization, "~/linearization", 10)
    odometry_sub, joint_state_sub = (
        node.create_subscription(t, topic, lambda m: None, qos_profile_sensor_data, raw=True)
        for t, topic in ((Odometry, "odom"), (JointState, "joint_states")))
    wait_set = WaitSet(2, 0, 0, 0, 0, 0, node.context.handle)
    gc.freeze()  # (as the node's input loop does)
    odometry = views = order = None
    while rclpy.ok():
        wait_set.clear_entities()
        wait_set.add_subscription(joint_state_sub.handle)  # (its odometry came first)
        wait_set.wait(100_000_000)
        while (taken := odometry_sub.handle.take_message(Odometry, True)) is not None:
            odometry = reader.odometry(taken[0])
        while (taken := joint_state_sub.handle.take_message(JointState, True)) is not None:
            joint_state = reader.joint_state(taken[0])
            if odometry is None:
                continue
            if views is None:  # the message laid out by the node's own cycle, once
                pipeline.receive("odometry", odometry, time.time_ns())
                writer(pipeline.receive("joint_states", joint_state, time.time_ns())[0], pipeline.base_frame)
                message, places = writer.layout()
                raw = np.empty(len(message) + 8, np.uint8)
                start = (4 - raw.ctypes.data) % 8  # (the CDR's doubles are 8-aligned counted from byte 4)
                buffer = raw[start:start + len(message)]
                buffer[:] = np.frombuffer(message, np.uint8)
                views = {name: buffer[offset:offset + 8 * count].view(np.float64)
                         for name, (offset, count) in places.items()}
                stamp_at = places["header.stamp"][0]
                order = np.array([joint_state.name.index(name) for name in model.joint_names])
            positions, velocities = joint_state.position[order], joint_state.velocity[order]
            linearizer.linearize_arrays(positions, velocities, base_pose=np.array(odometry.position
                                                                                  + odometry.orientation),
                                        base_twist=np.array(odometry.twist))
            for name, values in (("state_matrix", linearizer.A), ("input_matrix", linearizer.B),
                                 ("inverse_mass_matrix", linearizer.M_inv), ("joint_positions", positions),
                                 ("joint_velocities", velocities)):
                views[name][:] = values.reshape(-1)
            STAMP.pack_into(buffer, stamp_at, *divmod(joint_state.stamp_ns, 1_000_000_000))
            publisher.publish(buffer.tobytes())


class RqtView:
    """rqt with the linearization view of ``namespace``, standalone on its own Xvfb display."""

    def __init__(self, namespace: str):
        display = f":{60 + os.getpid() % 30}"
        self.xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1400x900x24", "-nolisten", "tcp"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        self.rqt = subprocess.Popen(  # rqt's script under this Python, which has the package's dependencies
            [sys.executable, shutil.which("rqt") or "rqt", "--standalone", "robot_linearization/Linearization",
             "--args", "--node", f"/{namespace}/robot_linearization", "--matrix", "A"],
            env=dict(os.environ, DISPLAY=display), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.said = []

    def wait_until_drawn(self, keep_inputs, timeout: float = 60.0) -> None:
        """Until the view logs its first drawing of A; ``keep_inputs()`` meanwhile (the node needs input)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            keep_inputs()
            if select.select([self.rqt.stdout], [], [], 0.05)[0]:
                line = self.rqt.stdout.readline()
                self.said.append(line)
                if "drawing " in line and "/A:" in line:
                    return
            if self.rqt.poll() is not None:
                break
        raise RuntimeError("rqt's view did not draw A: " + "".join(self.said[-20:]))

    def close(self) -> None:
        for process in (self.rqt, self.xvfb):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def measure(name: str, path: str, rate: float, seconds: float, extra: list[str], floor: str = "",
            with_rqt: bool = False, requests: int = 0) -> dict:
    """One robot's run; ``floor``: "" (the node), or serve_floor's mode: "floor", "kernel", "lean" or
    "pipeline"."""
    namespace = f"load_{name}"
    model = rl.load_urdf(path, floating_base=name not in FIXED_BASE)
    started = time.monotonic()
    command = ([os.path.abspath(__file__), "--serve-floor", namespace, str(model.n_velocities), str(model.n_joints),
                floor, path, "floating" if model.floating_base else "fixed"]
               if floor else ["-c", "from robot_linearization.ros.node import main; main()", "--ros-args",
                              "-r", f"__ns:=/{namespace}", "-p", f"urdf_path:={path}", *extra,
                              *([] if model.floating_base else ["-p", "floating_base:=false"])])
    # from /: `-c` puts the working directory first on sys.path, and a checkout's sources lack the
    # overlay's generated interfaces (robot_linearization.msg)
    node = subprocess.Popen([sys.executable, *command], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            cwd="/")
    client = LoadClient(model, namespace)
    view = None
    try:
        deadline = time.monotonic() + 120.0  # the first start may compile
        while not client.arrivals:
            if time.monotonic() > deadline or node.poll() is not None:
                raise RuntimeError(f"the node gave no output: {node.stderr.read() if node.poll() is not None else ''}")
            client.publish()
            time.sleep(0.01)
        first_output = time.monotonic() - started
        if with_rqt:
            view = RqtView(namespace)
            view.wait_until_drawn(lambda: client.run(100.0, 0.05))
        client.run(rate, 2.0)  # warm-up: discovery settled, caches hot
        time.sleep(0.5)
        counters_before = {} if floor else client.settled_counters()
        client.arrivals.clear()
        cpu_before, threads_before = cpu_seconds(node.pid), thread_cpu(node.pid)
        rqt_cpu_before = cpu_seconds(view.rqt.pid) if view else 0.0
        answers = []
        caller = threading.Thread(target=client.requests, args=(requests, seconds * 0.9, answers), daemon=True)
        if requests:
            caller.start()
        sent = client.run(rate, seconds)
        if requests:
            caller.join(timeout=30.0)
        cpu, threads_after = cpu_seconds(node.pid) - cpu_before, thread_cpu(node.pid)
        rqt_cpu = cpu_seconds(view.rqt.pid) - rqt_cpu_before if view else float("nan")
        time.sleep(0.5)  # the last outputs in flight
        counters_after = {} if floor else client.settled_counters()
    finally:
        if view is not None:
            view.close()
        client.close()
        node.terminate()
        node.wait(timeout=30)
    phases = None  # --pipeline-floor: its CPU per output in each of PHASES [µs], its last line on stderr
    if floor == "pipeline":
        said = node.stderr.read().split()
        phases = [float(x) for x in said[-len(PHASES):]] if len(said) >= len(PHASES) else None
    sent_set = set(sent)
    latencies = np.array([client.arrivals[s] - s for s in sent if s in client.arrivals]) * 1e-6
    linearized = sum(1 for s in client.arrivals if s in sent_set)
    # the node's own count of its outputs and rejections over the window (None for the floor)
    node_outputs = counters_after.get("outputs", 0) - counters_before.get("outputs", 0) if counters_after else None
    node_rejected = {k[len("rejected_"):]: v - counters_before.get(k, 0) for k, v in counters_after.items()
                     if k.startswith("rejected_") and v > counters_before.get(k, 0)}
    compiled = (counters_after.get("compiled_cycle_outputs", 0) - counters_before.get("compiled_cycle_outputs", 0)
                if counters_after else None)
    declined = counters_after.get("compiled_cycle_declined", "")  # (since the node started)
    cycles = linearized if node_outputs is None else node_outputs
    return {"robot": name, "nv": model.n_velocities, "rate": rate, "sent": len(sent), "linearized": linearized,
            "share": linearized / len(sent), "p50": float(np.percentile(latencies, 50)) if len(latencies) else np.nan,
            "p99": float(np.percentile(latencies, 99)) if len(latencies) else np.nan,
            "cpu_per_cycle": cpu / max(cycles, 1) * 1e3,
            "cpu_share": cpu / seconds, "first_output": first_output,
            "rqt_cpu_share": rqt_cpu / seconds, "answered": sum(ok for ok, _ in answers),
            "round_trips": [t for _, t in answers], "node_outputs": node_outputs, "node_rejected": node_rejected,
            "compiled_outputs": compiled, "compiled_declined": declined,
            "phases": phases, "threads": threads_per_cycle(node.pid, threads_before, threads_after, cycles),
            "histogram": np.histogram(latencies, LATENCY_BINS)[0].tolist(), "slow": slow_bursts(latencies)}


LATENCY_BINS = [0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 5.0, np.inf]
"""The latency histogram's bin edges [ms] (print_run)."""


def slow_bursts(latencies: np.ndarray, over: float = 1.0) -> tuple[int, int, int]:
    """(the outputs later than ``over``, the runs of consecutive inputs they form, the longest run) of
    ``latencies`` [ms] in the order the inputs were sent: a stall of the node's process or of the machine
    delays several inputs in a row, a cost of some cycles (a timer, a collection) one here and there."""
    slow = np.flatnonzero(latencies > over)
    if not len(slow):
        return 0, 0, 0
    starts = np.flatnonzero(np.diff(slow) > 1) + 1
    lengths = np.diff(np.concatenate([[0], starts, [len(slow)]]))
    return len(slow), len(lengths), int(lengths.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", nargs="*", default=["talos", "solo12"], choices=list(ROBOTS))
    parser.add_argument("--rate", type=float, default=1000.0, help="input rate [Hz]")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window [s]")
    parser.add_argument("--no-heatmaps", action="store_true", help="publish_heatmaps:=false")
    parser.add_argument("--step", type=float, default=0.0, metavar="DT",
                        help="discretization_dt:=DT: the node also publishes the Euler step's A_d, B_d")
    parser.add_argument("--input-path", choices=["auto", "wait_set", "executor"], default="auto",
                        help="the node's input_path parameter (default: auto, the wait set where it works)")
    floors = parser.add_mutually_exclusive_group()
    floors.add_argument("--floor", action="store_true",
                        help="instead of the node, a bare rclpy process that takes the inputs and publishes "
                             "prebuilt matrices of the same sizes: the floor of rclpy and DDS")
    floors.add_argument("--kernel-floor", action="store_true",
                        help="that floor calling the robot's generated kernel once per joint state too: the cost "
                             "of any node with this interface and this kernel")
    floors.add_argument("--lean-floor", action="store_true",
                        help="instead of the node, that floor doing per joint state only what any node with this "
                             "interface must: read the arrays, call the generated kernel, write A, B, M⁻¹ into the "
                             "message; no checks, pairing or bookkeeping")
    floors.add_argument("--pipeline-floor", action="store_true",
                        help="instead of the node, that floor's single thread running the node's own cycle "
                             "(reading the inputs, the pipeline, the message's CDR) with no executor, timers, "
                             "services or heatmaps; prints the cycle's CPU by part")
    floors.add_argument("--against-floor", type=int, default=0, metavar="ROUNDS",
                        help="ROUNDS rounds of the floor, the node and the kernel floor, one after the other, for "
                             "each robot; then each round's node / floor and kernel floor / floor, and their medians")
    parser.add_argument("--requests", type=int, default=0,
                        help="~/linearize calls at other states during the measured window, one after the other")
    parser.add_argument("--with-rqt", action="store_true",
                        help="rqt with the linearization view running beside the node, on Xvfb")
    if sys.argv[1:2] == ["--serve-floor"]:
        namespace, nv, n, mode, urdf_path, base = sys.argv[2:8]
        serve_floor(namespace, int(nv), int(n), mode, urdf_path, base == "floating")
        return
    args = parser.parse_args()
    if args.against_floor < 0:
        parser.error(f"--against-floor: a number of rounds, >= 1 (got {args.against_floor})")
    if (args.lean_floor or args.pipeline_floor) and FIXED_BASE.intersection(args.robots):
        parser.error(f"--lean-floor and --pipeline-floor run a floating base's cycle: not for "
                     f"{', '.join(sorted(FIXED_BASE.intersection(args.robots)))}")
    if not (args.step >= 0.0 and np.isfinite(args.step)):
        parser.error(f"--step: a step in seconds, > 0 (got {args.step})")
    extra = ["-p", f"input_path:={args.input_path}"] \
        + (["-p", "publish_heatmaps:=false"] if args.no_heatmaps else []) \
        + (["-p", f"discretization_dt:={args.step!r}"] if args.step else [])
    floor = ("floor" if args.floor else "kernel" if args.kernel_floor else "lean" if args.lean_floor
             else "pipeline" if args.pipeline_floor else "")
    rclpy.init()
    try:
        print(f"machine: {os.cpu_count()} cores; input {args.rate:g} Hz for {args.seconds:g} s; "
              + (f"{args.against_floor} rounds of the rclpy floor, the node (heatmaps "
                 f"{'off' if args.no_heatmaps else 'on (default rate)'}, input path {args.input_path}) and the "
                 "floor calling the generated kernel, one after the other" if args.against_floor else
                 "the rclpy floor (--floor), not the node" if floor == "floor" else
                 "the rclpy floor calling the generated kernel (--kernel-floor), not the node" if floor == "kernel"
                 else "the rclpy floor doing only what any node must (--lean-floor), not the node" if floor == "lean"
                 else "the rclpy floor running the node's cycle on one thread (--pipeline-floor), not the node" if floor
                 else f"heatmaps {'off' if args.no_heatmaps else 'on (default rate)'}, input path {args.input_path}")
              + ("; rqt's linearization view running beside it" if args.with_rqt else "")
              + (f"; {args.requests} ~/linearize calls during the window" if args.requests else ""))
        width = max(13, max(map(len, args.robots), default=0) + (len(" kernel floor") if args.against_floor else 0) + 2)
        print(f"{'robot':<{width}}{'nv':>4}{'sent':>7}{'linearized':>12}{'p50 ms':>9}{'p99 ms':>9}{'CPU ms/cycle':>14}"
              f"{'node CPU':>10}{'first output s':>16}" + (f"{'rqt CPU':>9}" if args.with_rqt else ""))
        modes = [mode for _ in range(args.against_floor) for mode in ROUND] if args.against_floor else [floor]
        calls = {mode: args.requests if mode == floor else 0 for mode in modes}  # (in rounds, the node's only)
        for name in args.robots:
            runs = []
            for mode in modes:
                label = f"{name} {ROUND_LABELS[mode]}" if args.against_floor else name
                r = measure(name, ROBOTS[name], args.rate, args.seconds, extra, mode, args.with_rqt and not mode,
                            calls[mode])
                print_run(label, width, r, mode, calls[mode], args.with_rqt)
                runs.append((mode, r))
            if args.against_floor:
                print_ratios(name, runs)
    finally:
        rclpy.try_shutdown()


def print_run(label: str, width: int, r: dict, floor: str, requests: int, with_rqt: bool) -> None:
    """One run's lines: the table's row (its first column ``width`` wide), then what the node (or the
    floor) said of itself."""
    print(f"{label:<{width}}{r['nv']:>4}{r['sent']:>7}{r['share'] * 100:>11.1f}%{r['p50']:>9.2f}"
          f"{r['p99']:>9.2f}{r['cpu_per_cycle']:>14.3f}{r['cpu_share'] * 100:>9.0f}%{r['first_output']:>16.1f}"
          + (f"{r['rqt_cpu_share'] * 100:>8.0f}%" if with_rqt and not floor else ""))
    if r["node_outputs"] is not None:  # where a cycle was lost: in the node, or on the way to this client
        rejected = ", ".join(f"{k} {v}" for k, v in r["node_rejected"].items()) or "none"
        print(f"{'':<{width}}by the node's own count (/diagnostics): {r['node_outputs']} outputs "
              f"({r['node_outputs'] / r['sent'] * 100:.1f}% of the joint states sent; "
              f"{r['compiled_outputs']} by its compiled cycle), rejected: {rejected}; "
              f"{r['node_outputs'] - r['linearized']} of its outputs did not reach this client")
    edges = [f"{a:g}" for a in LATENCY_BINS[1:-1]]
    names = [f"<{edges[0]}"] + [f"{a}–{b}" for a, b in zip(edges, edges[1:])] + [f">{edges[-1]}"]
    count, bursts, longest = r["slow"]
    print(f"{'':<{width}}latency histogram (ms): " + ", ".join(f"{name} {n}" for name, n in zip(names, r["histogram"]))
          + f"; over 1 ms: {count} outputs in {bursts} runs of consecutive inputs (the longest {longest})")
    print(f"{'':<{width}}its threads' CPU per cycle (µs): "
          + ", ".join(f"{thread} {value:.0f}" for thread, value in r["threads"]))
    if r["compiled_declined"]:
        print(f"{'':<{width}}pairs its compiled cycle handed to the usual one since the start, by reason: "
              f"{r['compiled_declined']}")
    if r["phases"] is not None:
        print(f"{'':<{width}}its thread's CPU per output (µs): "
              + ", ".join(f"{part} {value:.1f}" for part, value in zip(PHASES, r["phases"])))
    elif floor == "pipeline":
        print(f"{'':<{width}}(its CPU by part was not reported: it did not end on SIGTERM)")
    if requests:
        trips = np.array(r["round_trips"]) * 1e3
        print(f"{'':<{width}}~/linearize: {r['answered']}/{requests} answered with success, round trip "
              f"p50 {np.nanpercentile(trips, 50):.1f} ms, max {np.nanmax(trips):.1f} ms")


def print_ratios(name: str, runs: list) -> None:
    """--against-floor: each round's node and kernel floor over that round's floor, and their medians."""
    floors = [r["cpu_per_cycle"] for mode, r in runs if mode == "floor"]
    for mode in ("", "kernel"):
        ratios = [r["cpu_per_cycle"] / floor for (_, r), floor in zip([run for run in runs if run[0] == mode], floors)]
        print(f"{name}: {ROUND_LABELS[mode]} / floor, round by round: " + ", ".join(f"{x:.2f}" for x in ratios)
              + f" (median {np.median(ratios):.2f})")
    served = [r["node_outputs"] >= r["sent"] for mode, r in runs if mode == ""]
    print(f"{name}: every joint state linearized by the node in {sum(served)} of its {len(served)} runs")


if __name__ == "__main__":
    main()
