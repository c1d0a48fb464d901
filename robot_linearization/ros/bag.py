"""Offline pipeline on real ROS 2 bags (rosbags): replay recorded joint states and
odometry through exactly the node's pipeline and record its outputs."""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Final

import numpy as np

from .health import health
from .interfaces import LINEARIZATION, linearization_message, typestore_with_interfaces
from .messages import (OUTPUT_TYPES, RateLimit, RosbagsFactory, contact_labels_message, contact_margin_labels_message,
                       diagnostic_array_message, health_labels_message, health_message, heatmap_messages,
                       joint_state_message, odometry_message, output_messages, state_labels_message, string_message)
from .pipeline import LinearizationPipeline, Output, PipelineConfig

DEFAULT_NAMESPACE = "/robot_linearization"
DIAGNOSTICS_PERIOD_NS = 1_000_000_000
# rosbag2 metadata version of written bags. Version 9 stores offered_qos_profiles
# as a YAML list, which Humble's reader (it parses a string, format <= 8) rejects;
# version 8 is read by Humble, Jazzy and newer.
BAG_FORMAT_VERSION: Final = 8


@dataclass
class ReplaySummary:
    messages_read: int = 0
    outputs: int = 0
    compute_times: list = field(default_factory=list)
    problems: dict = field(default_factory=dict)
    last_output: Output | None = None
    pipeline: LinearizationPipeline | None = None
    bag_bytes: int = 0  # size of the bag written
    impacts: int = 0  # touchdowns, each with its impact_map and impulses

    def count(self, problem: str) -> None:
        self.problems[problem] = self.problems.get(problem, 0) + 1

    def text(self) -> str:
        lines = [f"read {self.messages_read} messages, wrote {self.outputs} linearizations"
                 + (f" ({_size(self.bag_bytes)} on disk)" if self.bag_bytes else "")]
        if self.compute_times:
            t = np.array(self.compute_times) * 1e6
            lines.append(f"compute time per linearization: median {np.median(t):.0f} µs, max {t.max():.0f} µs")
        if self.impacts:
            lines.append(f"{self.impacts} touchdown{'s' * (self.impacts > 1)}: impact_map and impulses written")
        for problem, count in sorted(self.problems.items(), key=lambda kv: -kv[1])[:5]:
            lines.append(f"  {count}× {problem}")
        return "\n".join(lines)


@contextlib.contextmanager
def _new_bag(path, storage: str):
    """An open rosbags Writer for a bag that must not exist yet.  If anything stops
    the block before the bag is closed (an error, Ctrl-C, a stop signal, even while
    opening or closing), the half-written bag is removed — it was created here — so
    a re-run is not blocked by it; an existing path is never touched."""
    from rosbags.rosbag2 import StoragePlugin, Writer, WriterError

    plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
    writer = Writer(Path(path), version=BAG_FORMAT_VERSION, storage_plugin=plugin)  # refuses an existing path
    try:
        writer.open()
        yield writer
        writer.close()
    except BaseException as e:
        if isinstance(e, WriterError) and writer.storage is None:
            raise  # open() refused a directory made since the check above: not ours
        with contextlib.suppress(Exception):
            writer.close()
        shutil.rmtree(path, ignore_errors=True)
        raise


def _progress(done: int, total: int, last: list, show) -> None:
    """``show(done, total)`` at the last message and at most five times a second before it."""
    now = time.monotonic()
    if done == total or now - last[0] > 0.2:
        last[0] = now
        show(done, total)


def draw_progress(fraction: float, text: str, final: bool = False) -> None:
    """Draw a progress bar on stderr in place: ``fraction`` (float in [0, 1]) of it filled,
    then ``text`` (str); ``final`` (bool) ends the line.  Returns None; raises nothing of its own."""
    width = 30
    filled = int(width * min(max(fraction, 0.0), 1.0))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {text}\033[K" + ("\n" if final else ""))
    sys.stderr.flush()


def _message_bar(done: int, total: int) -> None:
    draw_progress(done / max(total, 1), f"{done}/{total} messages", done == total)


def _size(n_bytes: float) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n_bytes < 1024:
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    return f"{n_bytes:.1f} GiB"


def _check_bag_path(path) -> None:
    """ValueError in one line unless ``path`` is a ROS 2 bag directory."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"no bag at {path}")
    if not path.is_dir() or not (path / "metadata.yaml").is_file():
        raise ValueError(f"{path} is not a ROS 2 bag (a directory with metadata.yaml, as ros2 bag record writes)")


def replay(in_bag, out_bag, *, urdf: str | None = None, joint_states_topic: str = "/joint_states",
           odom_topic: str = "/odom", description_topic: str = "/robot_description",
           config: PipelineConfig | None = None, heatmap_rate_hz: float = 2.0, storage: str = "mcap",
           namespace: str = DEFAULT_NAMESPACE, progress: bool | Callable[[int, int], None] = True,
           contacts_topic: str | None = None, health_rate_hz: float = 2.0,
           matrix_topics: bool = False) -> ReplaySummary:
    """Run the node's pipeline over IN_BAG (sqlite3 or mcap) and write its outputs
    to OUT_BAG, at the log time of the message that completed them (the joint
    state, or the odometry it waited for; see LinearizationPipeline.step): one
    robot_linearization/msg/Linearization per cycle on ``<namespace>/linearization``
    (its definition from msg/Linearization.msg, in the bag), and with matrix_topics
    also the per-matrix Float64MultiArray topics, ``stamp`` and the JSON label lists
    (the node's publish_matrix_topics).

    urdf: XML or path; without it the bag's ``description_topic`` is used (a new
    description there rebuilds the model, as in the node).  The contact set is
    config.contacts, changed by std_msgs/String messages on ``contacts_topic``
    (as the node's 'contacts' topic) when given: a set that closes a contact is a
    touchdown, whose impact_map and impulses are written with the next linearization,
    and the contact margins come with every linearization that has contacts
    (config's friction_coefficient, friction_facets, sole_size, restitution).  Heatmap images are written at most
    heatmap_rate_hz times per second of log time (0: none): they are for eyes, and at
    every cycle they would make the bag a hundred times the size of the matrices.
    The health vector (``health``, health.py, named by ``health_labels``, written
    before it whenever its entries change) likewise at most health_rate_hz times
    per second (0: none), as the node publishes it at its heatmap rate.
    progress: True draws a bar of the messages read on stderr; a callable instead is
    called as progress(messages read, messages to read), at most five times a second
    and at the last message.
    """
    from rosbags.highlevel import AnyReader

    factory = RosbagsFactory(typestore_with_interfaces())
    typestore = factory.typestore
    pipeline = LinearizationPipeline(config or PipelineConfig())
    summary = ReplaySummary()
    pipeline.on_problem = summary.count
    if urdf is not None:
        error = pipeline.set_description(urdf) or pipeline.contact_problem
        if error:
            raise ValueError(error)
    _check_bag_path(in_bag)
    with AnyReader([Path(in_bag)], default_typestore=typestore) as reader:
        wanted = {joint_states_topic, odom_topic} | ({description_topic} if urdf is None else set()) \
            | ({contacts_topic} if contacts_topic else set())
        connections = [c for c in reader.connections if c.topic in wanted]
        needed = [(joint_states_topic, "--joint-states-topic")]
        if pipeline.config.floating_base:
            needed.append((odom_topic, "--odom-topic (or --fixed-base)"))
        if urdf is None:
            needed.append((description_topic, "--urdf"))
        if contacts_topic:
            needed.append((contacts_topic, "--contacts-topic"))
        for topic, option in needed:
            if topic not in reader.topics:
                raise ValueError(f"bag has no topic {topic} (see {option}); its topics: {sorted(reader.topics)}")
        total = sum(c.msgcount for c in connections)
        with _new_bag(out_bag, storage) as writer:
            connections_out = {}

            def connection(name, msgtype):  # added on first use: no empty contact topics in a bag without them
                if name not in connections_out:
                    connections_out[name] = writer.add_connection(f"{namespace}/{name}" if "/" not in name else name,
                                                                  msgtype, typestore=typestore)
                return connections_out[name]

            linearization_conn = connection("linearization", LINEARIZATION)
            diagnostics_conn = connection("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray")
            labels_model, contact_labels, health_labels, next_diagnostics, tick = None, None, None, None, [0.0]
            margin_labels = None
            heatmap_limit, health_limit = RateLimit(heatmap_rate_hz), RateLimit(health_rate_hz)

            def write(conn, t, msg):
                writer.write(conn, t, typestore.serialize_cdr(msg, conn.msgtype))

            def emit(t, now):
                nonlocal labels_model, contact_labels, health_labels, margin_labels
                for out in pipeline.step(now):
                    write(linearization_conn, t, linearization_message(factory, out, pipeline.base_frame))
                    messages = output_messages(factory, out, pipeline.base_frame) if matrix_topics else {}
                    if matrix_topics and labels_model is not pipeline.model:
                        labels_model = pipeline.model
                        write(connection("state_labels", "std_msgs/msg/String"), t,
                              state_labels_message(factory, labels_model))
                    if matrix_topics and out.linearization.contacts \
                            and contact_labels != out.linearization.contact_labels:
                        contact_labels = out.linearization.contact_labels
                        write(connection("contact_labels", "std_msgs/msg/String"), t,
                              contact_labels_message(factory, out.linearization.contacts))
                    if matrix_topics and out.margins is not None and margin_labels != out.margins.labels:
                        margin_labels = out.margins.labels
                        write(connection("contact_margin_labels", "std_msgs/msg/String"), t,
                              contact_margin_labels_message(factory, margin_labels))
                    if heatmap_limit.due(t):
                        messages.update(heatmap_messages(factory, out, pipeline.base_frame, pipeline.model))
                    if health_limit.due(t):
                        labels, values = health(out)
                        if labels != health_labels:
                            health_labels = labels
                            write(connection("health_labels", "std_msgs/msg/String"), t,
                                  health_labels_message(factory, labels))
                        messages["health"] = health_message(factory, values)
                    for name, message in messages.items():
                        write(connection(name, OUTPUT_TYPES[name]), t, message)
                    summary.outputs += 1
                    summary.impacts += out.impact is not None
                    summary.compute_times.append(out.compute_time)
                    summary.last_output = out

            for conn, t, raw in reader.messages(connections=connections):
                summary.messages_read += 1
                msg: Any = reader.deserialize(raw, conn.msgtype)  # (a message class the typestore makes at run time)
                if conn.topic == description_topic:
                    first = pipeline.model is None
                    pipeline.set_description(msg.data)
                    if first and pipeline.contact_problem:  # --contacts not links of the recorded robot: an error;
                        raise ValueError(pipeline.contact_problem)  # a later robot without them: as the node
                elif conn.topic == contacts_topic:
                    pipeline.set_contacts(msg.data)
                else:  # (as the node takes its inputs, the bag's log time as its clock)
                    pipeline.receive("odometry" if conn.topic == odom_topic else "joint_states", msg, t, step=False)
                emit(t, t)
                if next_diagnostics is None or t >= next_diagnostics:
                    next_diagnostics = t + DIAGNOSTICS_PERIOD_NS
                    write(diagnostics_conn, t, diagnostic_array_message(factory, pipeline.diagnostics(t), t))
                if progress:
                    _progress(summary.messages_read, total, tick, progress if callable(progress) else _message_bar)
            if summary.messages_read:  # the last joint state may still wait for odometry that never comes
                emit(t, t + int(pipeline.config.pairing_tolerance * 1e9) + 1)
    summary.pipeline = pipeline
    summary.bag_bytes = sum(f.stat().st_size for f in Path(out_bag).rglob("*") if f.is_file())
    return summary


def write_simulation_bag(path, simulation, description: str, duration: float, *, start_ns: int = 1_000_000_000,
                         world_frame: str = "odom", storage: str = "mcap") -> int:
    """Record a :class:`~robot_linearization.ros.simulation.Simulation` as a robot
    would publish it: /robot_description once, /joint_states (with effort) and
    /odom every step.  A simulation that walks a gait also records its schedule on
    /contacts (std_msgs/String, the text of the node's ``contacts`` topic): the set it
    starts with, and each new one 1 ns before the first joint state linearized with it
    (at a touchdown: the pre-impact state, docs/impacts.md).  Returns the number of steps."""
    factory = RosbagsFactory(typestore_with_interfaces())
    typestore = factory.typestore
    model = simulation.model
    steps = int(round(duration / simulation.dt))
    with _new_bag(path, storage) as writer:
        desc = writer.add_connection("/robot_description", "std_msgs/msg/String", typestore=typestore)
        js = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=typestore)
        odom = writer.add_connection("/odom", "nav_msgs/msg/Odometry", typestore=typestore) \
            if model.floating_base else None
        schedule = writer.add_connection("/contacts", "std_msgs/msg/String", typestore=typestore) \
            if simulation.gait is not None else None
        writer.write(desc, start_ns, typestore.serialize_cdr(string_message(factory, description), desc.msgtype))
        held = None
        for k in range(steps):
            state, torques = simulation.step()
            t = start_ns + int(round(k * simulation.dt * 1e9)) + 1
            if schedule is not None and simulation.contacts != held:
                held = simulation.contacts
                msg = string_message(factory, simulation.contacts_text())
                writer.write(schedule, t - 1, typestore.serialize_cdr(msg, schedule.msgtype))
            if odom is not None:
                msg = odometry_message(factory, t, world_frame, model.body_names[0], state.base_pose, state.base_twist)
                writer.write(odom, t, typestore.serialize_cdr(msg, odom.msgtype))
            msg = joint_state_message(factory, t, model.joint_names, state.joint_positions, state.joint_velocities,
                                      torques)
            writer.write(js, t, typestore.serialize_cdr(msg, js.msgtype))
    return steps
