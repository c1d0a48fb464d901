"""The ROS 2 node: rclpy glue around :class:`~robot_linearization.ros.pipeline.LinearizationPipeline`.

Every decision (checks, pairing, validation, message contents) is made in the
rclpy-free modules; this file only wires parameters, subscriptions, publishers,
services and timers to them.  Run: ``ros2 run robot_linearization linearization_node``.
"""

from __future__ import annotations

import array
import functools
import gc
import importlib
import signal
import sys
import threading
import time

import numpy as np
import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.callback_groups import CallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
from rclpy.serialization import deserialize_message

from .compiled_cycle import CompiledCycle
from .health import health, health_labels
from .images import heatmap_rgb
from .interfaces import LINEARIZATION, LinearizationCdr, linearization_message, validation_fields
from .messages import (CdrInputs, InputError, MessageFactory, contact_labels_message, contact_margin_labels_message,
                       diagnostic_array_message, health_labels_message, health_message, heatmap_messages,
                       output_messages, output_topics, state_labels_message)
from .parameters import PARAMETERS, node_settings
from .pipeline import FREE_FLOATING_UNTIL_FIT, LinearizationPipeline
from .validation_process import ValidationError, ValidationProcess

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
INPUT_QOS = QoSProfile(depth=50, reliability=qos_profile_sensor_data.reliability,
                       durability=qos_profile_sensor_data.durability, history=qos_profile_sensor_data.history)
"""joint_states and odom: the sensor-data QoS (best effort, as drivers publish), keeping the last 50
messages instead of 5: 50 ms at 1 kHz, so that a pause of the input thread (the heatmaps' timer,
a service call) delays inputs rather than losing them."""
WATCH_PERIOD = 0.1
"""[s] how often the input topics are looked at for a silence (pipeline.watch_inputs)."""
GIL_SWITCH_INTERVAL = 0.0005
"""[s] the node process's GIL switch interval (sys.setswitchinterval; Python's default 5 ms)."""


class RclpyFactory(MessageFactory):
    """Builds rclpy message classes, with the array types rclpy accepts fastest."""

    def make(self, type_name: str, **fields):
        # fields set after construction: the generated __init__ copies every array it is given
        # (A: 46 kB for talos) and builds each field's default first
        message = message_class(type_name)()
        for name, value in fields.items():
            setattr(message, name, value)
        return message

    def float64_array(self, values):
        out = array.array("d")
        out.frombytes(memoryview(super().float64_array(values)).cast("B"))  # one copy
        return out

    def uint8_array(self, values):
        return array.array("B", super().uint8_array(values).tobytes())

    def byte(self, value: int):
        return bytes([value])


@functools.lru_cache(maxsize=None)
def message_class(type_name: str):
    """The rclpy class of 'package/msg/Name'."""
    package, _, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


class TakenByTheirOwner(CallbackGroup):
    """A group of subscriptions the executor never waits on (rclpy's executor leaves out
    what cannot execute): their owner takes their messages itself — the node's
    :class:`InputLoop`, the rqt view's draw timer (rqt/plugin.py) — until it hands them
    back (``handed_back``): the executor then runs their callbacks, as it runs the
    node's default group's."""

    handed_back = False

    def can_execute(self, entity) -> bool:
        return self.handed_back

    def beginning_execution(self, entity) -> bool:
        return self.handed_back

    def ending_execution(self, entity) -> None:
        pass


class WaitSetTaker:
    """Messages of a few subscriptions through rclpy's own wait set, the one
    rclpy.wait_for_message uses: a private API (rclpy_implementation), with no
    compatibility promise, hence the self-test :func:`wait_set_problem` before use."""

    def __init__(self, node: Node, subscriptions):
        from rclpy.impl.implementation_singleton import rclpy_implementation

        self.subscriptions = subscriptions
        self.wait_set = rclpy_implementation.WaitSet(len(subscriptions), 0, 0, 0, 0, 0, node.context.handle)

    def take(self, timeout_ns: int, waking=None):
        """Wait up to ``timeout_ns`` for a message of the subscriptions ``waking`` (their indices; default:
        all) and yield (index, message) of everything that arrived, and of what arrives while it is
        taken, one message at a time, each from the first subscription that has one: the first is
        asked again before every message of the others.  (Drained one subscription after the other,
        joint states that keep arriving while a backlog is worked off would race ahead of their
        odometry, which would then come too late to pair with them.)"""
        wait_set, subscriptions = self.wait_set, self.subscriptions
        wait_set.clear_entities()
        for index in range(len(subscriptions)) if waking is None else waking:
            wait_set.add_subscription(subscriptions[index].handle)
        wait_set.wait(timeout_ns)
        while True:
            for index, sub in enumerate(subscriptions):
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
                if taken is not None:
                    break
            else:
                return
            yield index, taken[0]


class ServiceTaker:
    """Calls of a few services through rclpy's own wait set, as :class:`WaitSetTaker` takes
    messages (the same private API, the same self-test)."""

    def __init__(self, node: Node, services):
        from rclpy.impl.implementation_singleton import rclpy_implementation

        self.services = services
        self.wait_set = rclpy_implementation.WaitSet(0, 0, 0, 0, len(services), 0, node.context.handle)

    def take(self, timeout_ns: int):
        """Wait up to ``timeout_ns`` for a call and yield (service, request, header) of every call
        waiting, each service asked in turn until none has one."""
        wait_set, services = self.wait_set, self.services
        wait_set.clear_entities()
        for service in services:
            wait_set.add_service(service.handle)
        wait_set.wait(timeout_ns)
        taken = True
        while taken:
            taken = False
            for service in services:
                with service.handle:
                    request, header = service.handle.service_take_request(service.srv_type.Request) or (None, None)
                if header is not None:
                    taken = True
                    yield service, request, header


def wait_set_problem(node: Node) -> str | None:
    """Why the fast input path cannot be used here, or None: the node publishes to a
    probe subscription of its own and takes the message through :class:`WaitSetTaker`,
    and calls a probe service of its own and answers through :class:`ServiceTaker` (an
    rclpy that renamed or changed those calls fails here, not in the cycle)."""
    from rcl_interfaces.srv import ListParameters
    from std_msgs.msg import Empty

    probe = publisher = service = client = None
    try:
        probe = node.create_subscription(Empty, "~/_input_path_probe", lambda msg: None, 10,
                                         callback_group=TakenByTheirOwner(), raw=True)
        publisher = node.create_publisher(Empty, "~/_input_path_probe", 10)
        service = node.create_service(ListParameters, "~/_input_path_probe", lambda request, response: response,
                                      callback_group=TakenByTheirOwner())
        client = node.create_client(ListParameters, "~/_input_path_probe", callback_group=TakenByTheirOwner())
        taker, service_taker = WaitSetTaker(node, [probe]), ServiceTaker(node, [service])
        deadline, taken, called, answered = time.monotonic() + 2.0, False, False, False
        while time.monotonic() < deadline and not (taken and answered):
            if not taken:
                publisher.publish(Empty())
                taken = any(isinstance(message, bytes) for _, message in taker.take(50_000_000))
            if not called and client.service_is_ready():
                client.call_async(ListParameters.Request())
                called = True
            for _, _, header in service_taker.take(50_000_000 if called else 1_000_000):
                service.send_response(ListParameters.Response(), header)
                answered = True
        if not taken:
            return "rclpy's wait set took nothing from the node's own probe topic in 2 s"
        return None if answered else "rclpy's wait set took no call of the node's own probe service in 2 s"
    except Exception as e:  # noqa: BLE001 - whatever a changed private API raises
        return f"rclpy's private wait-set API failed: {e!r}"
    finally:
        for entity, destroy in ((probe, node.destroy_subscription), (publisher, node.destroy_publisher),
                                (service, node.destroy_service), (client, node.destroy_client)):
            if entity is not None:
                destroy(entity)


class InputLoop(threading.Thread):
    """joint_states and odom on their own thread, outside the executor (the fast path).

    rclpy's executor rebuilds its wait set from every entity of the node for each
    message: ≈ 0.3 ms of CPU per joint state/odometry pair in Jazzy, more than the
    linearization of a humanoid (bench/node_load.py).  This loop waits on the two
    input subscriptions only (:class:`WaitSetTaker`) and hands every message to the
    node under its lock.  It first loads the robot description given as a parameter,
    so the first start's compile happens while the executor already answers services
    and /diagnostics.  With the executor path it only does that first load.
    """

    def __init__(self, node: "LinearizationNode", subscriptions, waking: tuple, first_description: str,
                 serve: bool):
        super().__init__(name="linearization inputs", daemon=True)
        self.node, self.subscriptions, self.first_description = node, subscriptions, first_description
        self.waking = waking  # the indices of the subscriptions that wake the loop while no joint state waits
        self.serve = serve
        self.running = True

    def run(self) -> None:
        try:
            if self.first_description:
                self.node.set_description(self.first_description)
            # Everything alive now (modules, the model, compiled kernels) is never garbage: kept out of
            # the collector's full passes, which would otherwise walk it every few hundred cycles (p99)
            gc.freeze()
            if self.serve:
                self._serve()
        except Exception as e:  # noqa: BLE001 - reported; at shutdown the context going away is expected
            if self.running and self.node.context.ok():
                if self.serve:
                    self.node.hand_to_executor("inputs", f"the input thread stopped: {e!r}")
                else:
                    self.node.get_logger().error(f"input loop stopped: {e!r}")

    def _serve(self) -> None:
        taker = WaitSetTaker(self.node, [sub for sub, _ in self.subscriptions])
        # what queued while the first robot description loaded (each input keeps 50 messages) predates the
        # model: not linearized, rather than found stale one by one
        dropped = sum(1 for _ in taker.take(0)) if self.first_description else 0
        if dropped:
            self.node.get_logger().info(f"{dropped} joint_states and odom messages that arrived while the robot "
                                        "description loaded were not linearized")
        node, pipeline, cycle = self.node, self.node.pipeline, self.node.compiled_cycle
        topics = [topic for _, topic in self.subscriptions]
        next_watch = time.monotonic()
        while self.running and node.context.ok():
            # odometry wakes the loop only while a joint state waits for it; otherwise it is taken, first,
            # when the joint state of its stamp wakes the loop (sent after it): one wake per cycle
            waking = None if pipeline.waiting else self.waking
            quiet = True
            for index, message in taker.take(100_000_000, waking):  # 0.1 s: shutdown is noticed within it
                quiet = False
                with node.lock:  # (the compiled cycle serves a joint state with the odometry before it)
                    actions = cycle.take(topics[index], message, node.now_ns())
                node.act(actions)
                if not self.running:
                    break
            if quiet:  # (an odometry taken last stays held for the joint state sent after it, unless none came)
                with node.lock:
                    actions = cycle.flush()
                node.act(actions)
            if time.monotonic() >= next_watch:
                next_watch = time.monotonic() + WATCH_PERIOD
                node.watch_inputs()


def declare_parameters(node: Node, table: dict) -> dict:
    """Declare {name: (default, description)} and return {name: value}.

    Parameters are read once at start-up: read_only makes `ros2 param set` refuse
    instead of silently doing nothing; dynamic_typing lets `-p rate_hz:=100` (an
    int) through to the rclpy-free checks, which name any bad value.
    """
    for name, (default, description) in table.items():
        if not node.has_parameter(name):  # (declared from its override already: a node that takes any)
            node.declare_parameter(name, default, ParameterDescriptor(
                description=description, read_only=True, dynamic_typing=True))
    return {name: node.get_parameter(name).value for name in table}


class ServiceLoop(threading.Thread):
    """~/linearize and ~/validate on their own thread, outside the executor (the fast path, as
    the inputs' :class:`InputLoop`): on the executor a call cost ≈ 1.6 ms of CPU beside a 1 kHz
    humanoid (bench/node_load.py --requests), of which the call's own work (its linearization, its
    message, their conversions) is 0.22 ms hot; the rest is the executor's, which rebuilds its wait
    set from every entity of the node and runs the call as a task.  Calls are answered one at a time,
    as the executor answered them, each by its service's callback."""

    def __init__(self, node: Node, services):
        super().__init__(name="linearization services", daemon=True)
        self.node, self.services = node, services
        self.running = True

    def run(self) -> None:
        node = self.node
        try:
            taker = ServiceTaker(node, self.services)
            while self.running and node.context.ok():
                for service, request, header in taker.take(100_000_000):  # 0.1 s: shutdown is noticed within it
                    service.send_response(service.callback(request, service.srv_type.Response()), header)
        except Exception as e:  # noqa: BLE001 - reported; at shutdown the context going away is expected
            if self.running and node.context.ok():
                node.hand_to_executor("services", f"the service thread stopped: {e!r}")


class LinearizationNode(Node):
    def __init__(self, **node_options):
        """node_options: rclpy.node.Node keywords (parameter_overrides, namespace …)."""
        super().__init__("robot_linearization", **node_options)
        settings = node_settings(declare_parameters(self, PARAMETERS))
        self.factory = RclpyFactory()
        self.lock = threading.Lock()  # the pipeline, shared by the executor's callbacks and the input loop
        self.pipeline = LinearizationPipeline(settings.pipeline)
        self.pipeline.on_notice = self.get_logger().warning  # e.g. empty velocity arrays: said once
        self.pipeline.on_dropped = self.get_logger().warning  # inputs dropped as stale or late: throttled
        self.publish_heatmaps, self.publish_health = settings.publish_heatmaps, settings.publish_health
        self.matrix_topics = settings.publish_matrix_topics
        self.linearization_pub = self.create_publisher(message_class(LINEARIZATION), "~/linearization", 10)
        self.linearization_cdr = LinearizationCdr()
        self.out = {name: self.create_publisher(message_class(t), f"~/{name}", 10)
                    for name, t in output_topics(self.publish_heatmaps, settings.pipeline.discretization_dt,
                                                 self.publish_health, self.matrix_topics).items()}
        self._heatmap_of = None  # the Output whose heatmaps and health were published last
        self._health_labels = None  # the labels ~/health_labels holds
        from diagnostic_msgs.msg import DiagnosticArray
        from nav_msgs.msg import Odometry
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        if self.matrix_topics:  # (the labels of the per-matrix topics, as latched JSON lists)
            self.labels_pub = self.create_publisher(String, "~/state_labels", LATCHED)
            self.contact_labels_pub = self.create_publisher(String, "~/contact_labels", LATCHED)
            self.contact_labels_pub.publish(contact_labels_message(self.factory, self.pipeline.contacts))
            self.margin_labels_pub = self.create_publisher(String, "~/contact_margin_labels", LATCHED)
        self._margin_labels = None  # the labels ~/contact_margin_labels holds
        if self.publish_health:
            self.health_labels_pub = self.create_publisher(String, "~/health_labels", LATCHED)
        # the active contact set, from a gait scheduler or the command line (same text as the parameter)
        self.create_subscription(String, "contacts", self._guard(self._set_contacts), 10)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        if settings.description:
            self.pipeline.model_error = ("loading the robot description (the first start after an install compiles "
                                         "the kernels first)")
        else:
            subscription = self.create_subscription(String, "robot_description",
                                                    self._guard(lambda m: self.set_description(m.data)), LATCHED)
            self.get_logger().info(f"no robot_description or urdf_path parameter: waiting for a URDF on "
                                   f"{subscription.topic_name}")
        reader = CdrInputs()
        self.input_handlers = {"joint_states": self._input(reader.joint_state, JointState, "joint_states"),
                               "odometry": self._input(reader.odometry, Odometry, "odometry")}
        on_joint_state, on_odometry = self.input_handlers["joint_states"], self.input_handlers["odometry"]
        fast = self._choose_input_path(settings.input_path) == "wait_set"
        # None: the node's default group, the executor; else the input and service threads take them, and hand
        # them back should one stop (hand_to_executor)
        self.owned = {"inputs": TakenByTheirOwner(), "services": TakenByTheirOwner()} if fast else {}
        # taken serialized: read in place by CdrInputs rather than built into Python messages
        unused = lambda msg: None  # noqa: E731 - the input loop takes them
        joint_states = self.create_subscription(JointState, "joint_states", unused if fast else on_joint_state,
                                                INPUT_QOS, callback_group=self.owned.get("inputs"), raw=True)
        odometry = self.create_subscription(Odometry, "odom", unused if fast else on_odometry,
                                            INPUT_QOS, callback_group=self.owned.get("inputs"), raw=True)
        self.input_topics = {"joint_states": joint_states.topic_name, "odometry": odometry.topic_name}
        if not fast:  # (the input thread watches on its own: no wake of the executor ten times a second)
            self.create_timer(WATCH_PERIOD, self.watch_inputs)
        from robot_linearization.srv import Linearize, Validate

        services = [self.create_service(Linearize, "~/linearize", self._service(self._linearize_request),
                                        callback_group=self.owned.get("services")),
                    self.create_service(Validate, "~/validate", self._service(self._validate_request),
                                        callback_group=self.owned.get("services"))]
        self.service_loop = ServiceLoop(self, services) if fast else None
        self.validation_process = ValidationProcess()  # (rl.validate holds the GIL: in a process of its own)
        self.on_input_step = settings.rate_hz == 0.0
        if not self.on_input_step:
            self.create_timer(1.0 / settings.rate_hz, self._step)
        # the steady state's cycle compiled (compiled_cycle.py), on the input thread's path, output per input
        self.compiled_cycle = CompiledCycle(self.pipeline, reader, self.linearization_cdr,
                                            enabled=fast and self.on_input_step and not self.matrix_topics)
        self.compiled_cycle.on_problem = self.get_logger().error
        self._compiled_said = False
        # /diagnostics, the heatmaps and ~/health on the steady clock: under sim time they keep coming while
        # a bag is paused or loops in less than their period
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(settings.diagnostics_period, self._publish_diagnostics, clock=steady)
        if self.publish_heatmaps or self.publish_health:  # for eyes and plots, on their own timer: they never
            self.create_timer(1.0 / settings.heatmap_rate_hz, self._publish_heatmaps_and_health,  # cost a cycle
                              clock=steady)
        # odometry first: of a backlog (the node late by a few cycles), each joint state then finds its own
        # odometry, instead of pairing with an older one while its own waits behind the newer joint states
        self.input_loop = InputLoop(self, [(odometry, "odometry"), (joint_states, "joint_states")], (1,),
                                    settings.description, serve=fast)
        self.input_loop.start()
        if self.service_loop is not None:
            self.service_loop.start()
        self.get_logger().info("ready")

    def destroy_node(self):
        """Stop the input and service loops before the subscriptions and services they wait on go,
        then the validation process."""
        for loop in (self.input_loop, self.service_loop):
            if loop is None:
                continue
            loop.running = False
            if loop.is_alive() and threading.current_thread() is not loop:
                loop.join(timeout=2.0)  # (still compiling at a Ctrl-C during start-up: a daemon, let it go)
        self.validation_process.close()
        return super().destroy_node()

    def hand_to_executor(self, what: str, why: str) -> None:
        """The input thread or the service thread stopped (``what``: "inputs" or "services"; ``why``, said):
        the executor takes over what it took — the input subscriptions with their usual callbacks, the
        odometries the compiled cycle held handed to the usual cycle, the watch for silence on a timer —,
        woken at once so that it waits on them from now on.  Slower (docs/ros.md), never silent."""
        self.get_logger().error(f"{why}: the executor takes the node's {what} from now on (slower)")
        if what == "inputs":
            for subscription, topic in self.input_loop.subscriptions:
                subscription.callback = self.input_handlers[topic]
            with self.lock:
                actions = self.compiled_cycle.flush()
                self.compiled_cycle.enabled = self.compiled_cycle.armed = False
                self.pipeline.input_path = f"executor (fallback: {why})"
            self.act(actions)
            self.create_timer(WATCH_PERIOD, self.watch_inputs)
        self.owned[what].handed_back = True
        executor = self.executor
        if executor is not None:
            executor.wake()

    def _choose_input_path(self, requested: str) -> str:
        """'wait_set' (the fast path) or 'executor', as the input_path parameter asks:
        'auto' takes the wait set if it passes :func:`wait_set_problem`, else falls back;
        a 'wait_set' that fails it is a start-up error.  Logged and in /diagnostics."""
        if requested == "executor":
            path, reason = "executor", "the input_path parameter"
        else:
            problem = wait_set_problem(self)
            if problem is None:
                path = "wait_set"
                reason = "it passed its self-test" if requested == "auto" else "the input_path parameter"
            elif requested == "wait_set":
                raise ValueError(f"parameter 'input_path' is 'wait_set', which cannot be used here: {problem}")
            else:
                path, reason = "executor", f"fallback: {problem}"
                self.get_logger().warning(f"input path: the executor (slower), because {problem}")
        self.pipeline.input_path = f"{path} ({reason})"
        taker = ("an input thread on rclpy's wait set, ~/linearize and ~/validate answered by a thread of their own"
                 if path == "wait_set" else "the executor, as ~/linearize and ~/validate")
        self.get_logger().info(f"joint_states and odom taken by {taker} ({reason})")
        return path

    def watch_inputs(self) -> None:
        """Every WATCH_PERIOD (the input thread, or a timer on the executor's path): an input topic with
        publishers that delivers nothing is reported (pipeline.watch_inputs), in /diagnostics at once."""
        publishers = {name: self.count_publishers(topic) for name, topic in self.input_topics.items()}
        with self.lock:
            appeared = self.pipeline.watch_inputs(self.now_ns(), publishers)
        if appeared:
            self.get_logger().warning(self.pipeline.input_problem)
            self._publish_diagnostics()

    def now_ns(self) -> int:
        """The node's clock [ns] (ROS time under use_sim_time), read as Clock.now() does, without
        building the rclpy Time (≈ 10 µs, twice a cycle)."""
        clock = self.get_clock()
        with clock.handle:
            return clock.handle.get_now().nanoseconds

    def _guard(self, callback):
        """Never let one bad message take the node down: log and carry on."""
        def guarded(*message):
            try:
                callback(*message)
            except Exception as e:  # noqa: BLE001 - reported, the node keeps running
                self.get_logger().error(f"unexpected error handling a message: {e!r}")
        return guarded

    def set_description(self, description: str) -> None:
        """Load a URDF (slow the first time: compiling) without holding the lock, then swap it in."""
        model = self.pipeline.load_model(description)
        heatmap_rgb(np.eye(2))  # its kernel too: compiled here, not at the first picture
        with self.lock:
            if isinstance(model, str):
                self.get_logger().error(self.pipeline.reject_description(model))
                return
            self.pipeline.set_model(model)
            contact_problem = self.pipeline.contact_problem
        if contact_problem:
            self.get_logger().warning(f"{contact_problem}: {FREE_FLOATING_UNTIL_FIT}")
        if self.matrix_topics:
            self.labels_pub.publish(state_labels_message(self.factory, model))
            self.contact_labels_pub.publish(contact_labels_message(self.factory, self.pipeline.contacts))
        self.get_logger().info(f"model '{model.name}': {model.n_joints} joints, "
                               f"{'floating' if model.floating_base else 'fixed'} base")

    def _set_contacts(self, msg) -> None:
        with self.lock:
            error = self.pipeline.set_contacts(msg.data)
        if error:
            self.get_logger().error(error)
            return
        if self.matrix_topics:
            self.contact_labels_pub.publish(contact_labels_message(self.factory, self.pipeline.contacts))

    def _input(self, read, message_type, topic: str):
        """Input loop's handler of a serialized message of ``topic``: read it (``read``, or rclpy's
        deserializer for an encoding ``read`` does not know), hand it to the pipeline at the node's
        clock (pipeline.receive: a jump back in time is noticed at once), then (without rate_hz)
        publish whatever it has made ready — a joint state waiting for its odometry is completed
        by the odometry message."""
        def on_message(raw, now_ns: int | None = None):
            try:
                message = read(raw)
                if message is None:
                    message = deserialize_message(raw, message_type)
            except InputError as e:
                message = e
            with self.lock:
                outputs = self.pipeline.receive(topic, message, self.now_ns() if now_ns is None else now_ns,
                                                step=self.on_input_step)
            self._publish(outputs)
        return self._guard(on_message)

    def act(self, actions: list) -> None:
        """Do what the compiled cycle said (CompiledCycle.take): publish its ~/linearization (bytes), or
        hand a message to the usual cycle ((topic, serialized message, its arrival on the node's clock))."""
        for action in actions:
            if type(action) is bytes:
                try:
                    self.linearization_pub.publish(action)
                except Exception as e:  # noqa: BLE001
                    self.get_logger().error(f"linearization cycle failed: {e!r}")
            else:
                self.input_handlers[action[0]](action[1], action[2])

    def _step(self) -> None:
        """The rate_hz timer."""
        with self.lock:
            outputs = self.pipeline.step(self.now_ns(), newest_only=True)
        self._publish(outputs)

    def _publish(self, outputs) -> None:
        """Publish each output: ~/linearization, and the per-matrix topics when they are on."""
        try:
            for out in outputs:
                # serialized by the node (interfaces.LinearizationCdr): rclpy's conversion of the Python
                # message costs more than the linearization itself
                self.linearization_pub.publish(self.linearization_cdr(out, self.pipeline.base_frame))
                if self.compiled_cycle.enabled:
                    self._note_output(out)
                if not self.matrix_topics:
                    continue
                if out.margins is not None and out.margins.labels != self._margin_labels:  # a new contact set
                    self._margin_labels = out.margins.labels
                    self.margin_labels_pub.publish(contact_margin_labels_message(self.factory, out.margins.labels))
                # the matrices as CDR bytes: rclpy publishes them as they are (messages.matrix_cdr)
                for name, message in output_messages(self.factory, out, self.pipeline.base_frame,
                                                     serialized=True).items():
                    self.out[name].publish(message)
        except Exception as e:  # noqa: BLE001
            self.get_logger().error(f"linearization cycle failed: {e!r}")

    def _note_output(self, out) -> None:
        """The compiled cycle told of an output of the usual one (its layout, its kernel); said once
        when it serves."""
        with self.lock:
            self.compiled_cycle.note_output(out)
        if self.compiled_cycle.armed and not self._compiled_said:
            self._compiled_said = True
            paired = " with the odometry before them" if out.model.floating_base else ""
            self.get_logger().info(f"the compiled cycle serves joint_states{paired} from now on (the generated "
                                   "kernel's, in one call from the serialized inputs to the serialized "
                                   "~/linearization)")

    def _publish_heatmaps_and_health(self) -> None:
        """The heatmap_rate_hz timer: the heatmaps, then the health vector (health.py; its labels
        first when they change), of the latest Output, once per Output; each only while something
        subscribes to it (a few ms of the executor's time at each tick, a humanoid's eigenvalues among
        them, for nobody): the images while one of them has a subscriber, the health vector while it
        has one, its latched labels while it or they have one."""
        heatmaps = self.publish_heatmaps and any(publisher.get_subscription_count() for name, publisher
                                                 in self.out.items() if "heatmap" in name)
        values_wanted = self.publish_health and self.out["health"].get_subscription_count() > 0
        health_wanted = values_wanted or (self.publish_health and self.health_labels_pub.get_subscription_count())
        if not (heatmaps or health_wanted):
            return
        with self.lock:  # (after a compiled cycle, built from what it keeps)
            latest = self.pipeline.latest
        if latest is None or latest is self._heatmap_of:
            return
        self._heatmap_of = latest
        if heatmaps:
            try:
                for name, message in heatmap_messages(self.factory, latest, self.pipeline.base_frame,
                                                      latest.model).items():
                    self.out[name].publish(message)
            except Exception as e:  # noqa: BLE001
                self.get_logger().error(f"heatmap failed: {e!r}")
        if health_wanted:
            try:
                lin = latest.linearization
                labels = health_labels(lin.A_d is not None, bool(lin.contacts))
                if labels != self._health_labels:  # contacts on or off: the entries after the first ones change
                    self.health_labels_pub.publish(health_labels_message(self.factory, labels))
                    self._health_labels = labels
                if values_wanted:  # (the eigenvalues only for a subscriber to the values, not to their names)
                    self.out["health"].publish(health_message(self.factory, health(latest)[1]))
            except Exception as e:  # noqa: BLE001
                self.get_logger().error(f"health vector failed: {e!r}")

    def _publish_diagnostics(self) -> None:
        now = self.now_ns()
        with self.lock:
            statuses = self.pipeline.diagnostics(now, f"{self.get_name()}: linearization")
            statuses[0][3].update(self.compiled_cycle.diagnostics())
        self.diagnostics_pub.publish(diagnostic_array_message(self.factory, statuses, now))

    def _linearize_request(self, request, response) -> None:
        """~/linearize: the typed linearization at the request's state (pipeline.Snapshot.linearize_request),
        computed on a snapshot of the pipeline, outside the lock: the inputs never wait on it."""
        with self.lock:
            snapshot = self.pipeline.snapshot()
        out = snapshot.linearize_request(request)
        if isinstance(out, str):
            response.success, response.message = False, out
            return
        response.linearization = linearization_message(self.factory, out, snapshot.base_frame)
        response.success, response.message = True, f"linearized at the joint state of {out.stamp_ns * 1e-9:.9f} s"

    def _validate_request(self, request, response) -> None:
        """~/validate: the typed report of rl.validate, of the latest output or at the request's state,
        on a snapshot of the pipeline, outside the lock, in the validation process (a validation takes
        tens to hundreds of ms of Python, which would take the GIL from the input thread)."""
        with self.lock:
            snapshot = self.pipeline.snapshot()
        out = snapshot.linearize_request(request) if request.at_state else None
        if isinstance(out, str):
            response.success, response.message = False, out
            return
        try:
            report, summary = snapshot.validate_output(out, validator=self.validation_process.validate)
        except ValidationError as error:
            response.success, response.message = False, str(error)
            return
        tolerance = snapshot.config.validation_tolerance
        if report is not None and out is None:  # the stream's latest output: shown in /diagnostics
            with self.lock:
                self.pipeline.record_validation(summary, report.passed(tolerance))
        response.success, response.message = report is not None, summary
        if report is not None:
            for name, value in validation_fields(report, tolerance).items():
                setattr(response, name, value)

    def _service(self, handler):
        def serve(request, response):
            try:
                handler(request, response)
            except Exception as e:  # noqa: BLE001 - answered, the node keeps running
                self.get_logger().error(f"service failed: {e!r}")
                response.success, response.message = False, f"internal error: {e!r}"
            return response
        return serve


def run(node_class, args=None) -> int:
    """Spin one node until shutdown; the exit status (1 when it cannot start).

    rclpy.init … try … finally: the context-manager form of rclpy.init does not
    exist on Humble/Jazzy.  Ctrl-C in a terminal reaches the whole process group
    and `ros2 launch` forwards one more: a second SIGINT while shutting down is
    ignored, so the node still ends cleanly (status 0, no traceback).
    """
    rclpy.init(args=args)
    # the input thread waits for the GIL behind the executor's callbacks (the heatmaps, ~/health, a
    # ~/linearize call) at most this long, not Python's default 5 ms: five cycles of a 1 kHz robot
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    node = None
    # made before the node: a Ctrl-C that lands while rclpy.spin would build its own executor
    # leaves a half-made one whose __del__ prints a traceback
    executor = SingleThreadedExecutor()
    try:
        try:
            node = node_class()
        except (ValueError, OSError) as e:  # an invalid parameter or an unreadable URDF, named
            rclpy.logging.get_logger(node_class.__name__).fatal(str(e))
            return 1
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:  # noqa: BLE001
        if rclpy.ok():
            raise
        # Ctrl-C before spinning (while starting, e.g. during the first compile): rclpy's signal
        # handler shut the context down under us, and the next rcl call failed: a clean exit
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # shutting down already: more Ctrl-C changes nothing
        executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


def main(args=None) -> None:
    raise SystemExit(run(LinearizationNode, args))
