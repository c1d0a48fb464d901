"""The rqt plugin (rqt_gui_py): rclpy glue between a linearization node's topics and
:class:`~robot_linearization.rqt.widgets.LinearizationView`.

It finds the nodes by their topics (matrices.linearization_nodes, every second) and
subscribes to what the view shows: the chosen matrix, A (or A_d) for the eigenvalues,
λ for the contact forces (matrices.topics_to_follow), and the two latched label lists.
The matrices' subscriptions keep only the newest message (depth 1, best effort) and
are not served by rqt's executor (ros/node.TakenByTheirOwner): every DRAW_PERIOD_S
(10 Hz) the draw timer takes the newest of each, serialized, and decodes and draws it.
A 1 kHz node's messages in between are replaced unread in the middleware and never
wake Python: the view costs the node nothing and itself little.  Taking a message
outside the executor uses rclpy's subscription handle (the call the node's input loop
makes, not a documented API): should it fail, the view says so and falls back to
executor callbacks, which keep the newest (inputs.LatestMessages).
Run: ``rqt --standalone robot_linearization/Linearization`` or Plugins ▸
Visualization ▸ Linearization (A, B, M⁻¹).  Arguments (``--args``): ``--node
NAMESPACE --matrix TOPIC --scale log|linear``.
"""

from __future__ import annotations

import json

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rqt_gui_py.plugin import Plugin
from std_msgs.msg import Float64MultiArray, String

from ..ros.messages import InputError, matrix_from_message
from ..ros.node import TakenByTheirOwner
from .heatmap import SCALES
from .inputs import DRAW_PERIOD_S, LatestMessages, plugin_arguments
from .matrices import BY_TOPIC, linearization_nodes, topics_to_follow
from .qt import QtCore
from .widgets import LinearizationView

LABELS = ("state_labels", "contact_labels", "contact_margin_labels")
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)  # as the node publishes the labels
NEWEST_ONLY = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)  # the matrices: what is drawn


class LinearizationPlugin(Plugin):
    def __init__(self, context):
        super().__init__(context)
        self.setObjectName("LinearizationPlugin")
        self.node = context.node
        self.view = LinearizationView()
        self.argument_problem = None
        try:
            self.arguments = plugin_arguments(context.argv())
        except ValueError as e:  # said, and the defaults used: rqt itself keeps running
            self.arguments, self.argument_problem = plugin_arguments([]), str(e)
            self.node.get_logger().error(self.argument_problem)
        title = "Linearization (A, B, M⁻¹)"
        self.view.setWindowTitle(title if context.serial_number() < 2 else f"{title} ({context.serial_number()})")
        context.add_widget(self.view)
        self.feed = LatestMessages()
        self.subscriptions = []
        self.polled = {}  # matrix topic -> its subscription, taken by the draw timer
        self.owner = TakenByTheirOwner()  # None after a fallback to executor callbacks
        self.subscribed = None  # (namespace, topics) subscribed to
        self.nodes: dict = {}
        self.announced = None  # (namespace, topic) whose first drawing was logged
        self.view.select(topic=self.arguments.matrix)
        self.view.scale_box.setCurrentIndex(self.view.scale_box.findData(self.arguments.scale))
        self.view.on_selection = lambda namespace, topic: self.subscribe()
        self.discovery = QtCore.QTimer(self.view)
        self.discovery.timeout.connect(self.discover)
        self.discovery.start(1000)
        self.draw_timer = QtCore.QTimer(self.view)
        self.draw_timer.timeout.connect(self.draw)
        self.draw_timer.start(int(DRAW_PERIOD_S * 1000))
        self.discover()
        if self.argument_problem:
            self.view.status.setText(self.argument_problem)

    def discover(self) -> None:
        """Look for linearization nodes; follow the one asked for (--node) once it appears."""
        if not self.node.context.ok():  # rqt shutting down: its timers may still fire once
            return
        self.nodes = linearization_nodes(self.node.get_topic_names_and_types())
        self.view.set_nodes(self.nodes)
        if self.arguments.node in self.nodes and self.view.namespace != self.arguments.node:
            self.view.select(namespace=self.arguments.node)
        self.subscribe()

    def subscribe(self) -> None:
        """(Re)subscribe when the node, the matrix or the node's topics changed."""
        namespace = self.view.namespace
        wanted = None
        if namespace:
            wanted = (namespace, topics_to_follow(self.nodes.get(namespace, ()), self.view.topic) + LABELS)
        if wanted == self.subscribed:
            return
        for subscription in self.subscriptions:
            self.node.destroy_subscription(subscription)
        self.subscriptions, self.subscribed, self.polled = [], wanted, {}
        self.feed.clear()
        if wanted is None:
            return
        for topic in wanted[1]:
            latched = topic in LABELS
            subscription = self.node.create_subscription(
                String if latched else Float64MultiArray, f"{namespace}/{topic}",
                lambda raw, topic=topic: self.feed.put(topic, raw), LATCHED if latched else NEWEST_ONLY,
                callback_group=None if latched else self.owner, raw=True)
            self.subscriptions.append(subscription)
            if not latched and self.owner is not None:
                self.polled[topic] = subscription

    def take_newest(self) -> None:
        """The newest message of each polled subscription into the feed (depth 1: one at most)."""
        for topic, subscription in self.polled.items():
            try:
                taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
            except Exception as e:  # noqa: BLE001 - whatever a changed rclpy raises: fall back, said once
                self.node.get_logger().warning(f"taking messages outside rqt's executor failed ({e!r}): "
                                               f"falling back to its callbacks")
                self.owner, self.subscribed = None, None
                self.subscribe()
                return
            if taken is not None:
                self.feed.put(topic, taken[0])

    def draw(self) -> None:
        """Decode the newest of each topic and draw (the draw timer, ≤ 10 Hz)."""
        self.take_newest()
        new = self.feed.take()
        if not new:
            return
        matrices, labels = {}, {}
        try:
            for topic, raw in new.items():
                if topic in LABELS:
                    labels[topic] = json.loads(deserialize_message(raw, String).data)
                else:
                    matrices[topic] = matrix_from_message(deserialize_message(raw, Float64MultiArray))
        except (InputError, ValueError) as e:
            self.view.status.setText(f"cannot read {self.view.namespace}/{topic}: {e}")
            return
        drawn = self.view.show_data(matrices, labels.get("state_labels"), labels.get("contact_labels"),
                                    labels.get("contact_margin_labels"))
        shown = (self.view.namespace, self.view.topic)
        if drawn and self.view.heatmap.matrix is not None and self.announced != shown:
            self.announced = shown
            rows, cols = self.view.heatmap.matrix.shape
            self.node.get_logger().info(f"drawing {shown[0]}/{shown[1]}: {rows}×{cols}, "
                                        f"largest |entry| {self.view.heatmap.peak:.6g}")

    def shutdown_plugin(self) -> None:
        self.discovery.stop()
        self.draw_timer.stop()
        for subscription in self.subscriptions:
            self.node.destroy_subscription(subscription)
        self.subscriptions = []

    def save_settings(self, plugin_settings, instance_settings) -> None:
        instance_settings.set_value("node", self.view.namespace or "")
        instance_settings.set_value("matrix", self.view.topic)
        instance_settings.set_value("scale", self.view.scale_box.currentData())

    def restore_settings(self, plugin_settings, instance_settings) -> None:
        if self.arguments.node is None and instance_settings.value("node"):
            self.arguments.node = instance_settings.value("node")
        matrix, scale = instance_settings.value("matrix"), instance_settings.value("scale")
        if matrix in BY_TOPIC:
            self.view.select(topic=matrix)
        if scale in SCALES:
            self.view.scale_box.setCurrentIndex(self.view.scale_box.findData(scale))
