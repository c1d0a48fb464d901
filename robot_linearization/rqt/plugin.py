"""The rqt plugin (rqt_gui_py): rclpy glue between a linearization node's ~/linearization and
:class:`~robot_linearization.rqt.widgets.LinearizationView`.

It finds the nodes by their topics (matrices.linearization_nodes, every second) and
subscribes to the chosen node's ``<namespace>/linearization``.  The subscription keeps only
the newest message (depth 1, best effort) and is not served by rqt's executor
(ros/node.TakenByTheirOwner): every DRAW_PERIOD_S (10 Hz) the draw timer takes the newest,
serialized, and decodes and draws it (matrices.message_data).  A 1 kHz node's messages in
between are replaced unread in the middleware and never wake Python: the view costs the
node nothing and itself little.  Taking a message outside the executor uses rclpy's
subscription handle (the call the node's input loop makes, not a documented API): should
it fail, the view says so and falls back to executor callbacks, which keep the newest
(inputs.LatestMessages).  Ctrl-C and SIGTERM are the view's first (closing.CloseOnSignal, taken
by rqt's entry, robot_linearization_rqt, before this module is imported): it stops its timers,
gives up its subscription and asks rqt to quit, as closing the window does, before rclpy's or
rclcpp's signal handlers end their contexts under rqt's threads; a Ctrl-C that came while rqt
loaded the view closes rqt once the view is there.  Should
rclpy's context end otherwise, the timers notice and do the same; rqt is asked to quit once,
whichever path comes first (closing.close_rqt).
Run: ``rqt --standalone robot_linearization/Linearization`` or Plugins ▸
Visualization ▸ Linearization (A, B, M⁻¹).  Arguments (``--args``): ``--node
NAMESPACE --matrix TOPIC --scale log|linear``.
"""

from __future__ import annotations

from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from robot_linearization.msg import Linearization
from rqt_gui_py.plugin import Plugin

from ..ros.messages import InputError
from ..ros.node import TakenByTheirOwner
from .closing import CLOSE_ON_SIGNAL, close_rqt
from .heatmap import SCALES
from .inputs import DRAW_PERIOD_S, LatestMessages, plugin_arguments
from .matrices import BY_TOPIC, linearization_nodes, message_data
from .qt import QtCore
from .widgets import LinearizationView

TOPIC = "linearization"
NEWEST_ONLY = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)  # what is drawn


class LinearizationPlugin(Plugin):
    def __init__(self, context) -> None:
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
        self.feed = LatestMessages()
        self.subscriptions: list = []
        self.polled: dict = {}  # matrix topic -> its subscription, taken by the draw timer
        self.owner: TakenByTheirOwner | None = TakenByTheirOwner()  # None after a fallback to executor callbacks
        self.subscribed: str | None = None  # the namespace subscribed to
        self.nodes: dict = {}
        self.shown: dict = {}  # namespace -> the matrices its messages hold
        self.announced: tuple[str | None, str] | None = None  # (namespace, topic) whose first drawing was logged
        self.closed = False  # shut down (shutdown_plugin): by rqt, a signal or the context's end
        self.view.select(topic=self.arguments.matrix)
        self.view.scale_box.setCurrentIndex(self.view.scale_box.findData(self.arguments.scale))
        self.view.on_selection = lambda namespace, topic: self.subscribe()
        self.discovery = QtCore.QTimer(self.view)
        self.discovery.timeout.connect(self.discover)
        self.discovery.start(1000)
        self.draw_timer = QtCore.QTimer(self.view)
        self.draw_timer.timeout.connect(self.draw)
        self.draw_timer.start(int(DRAW_PERIOD_S * 1000))
        CLOSE_ON_SIGNAL.add(self)  # before the view's dock widget: qt_gui closing it during the load aborts
        context.add_widget(self.view)
        # on the event loop: a context that ended while rqt loaded the view closes rqt (closing.close_rqt)
        QtCore.QTimer.singleShot(0, self.discover)
        if self.argument_problem:
            self.view.status.setText(self.argument_problem)


    def discover(self) -> None:
        """Look for linearization nodes; follow the one asked for (--node) once it appears."""
        if not self._running():
            return
        self.nodes = {**linearization_nodes(self.node.get_topic_names_and_types()), **{
            namespace: shown for namespace, shown in self.shown.items() if namespace in self.nodes}}
        self.view.set_nodes(self.nodes)
        if self.arguments.node in self.nodes and self.view.namespace != self.arguments.node:
            self.view.select(namespace=self.arguments.node)
        self.subscribe()

    def subscribe(self) -> None:
        """(Re)subscribe when the node changed."""
        namespace = self.view.namespace or None
        if namespace == self.subscribed:
            return
        self._unsubscribe()
        self.subscribed = namespace
        self.feed.clear()
        if namespace is None:
            return
        subscription = self.node.create_subscription(
            Linearization, f"{namespace}/{TOPIC}", lambda raw: self.feed.put(TOPIC, raw), NEWEST_ONLY,
            callback_group=self.owner, raw=True)
        self.subscriptions.append(subscription)
        if self.owner is not None:
            self.polled[TOPIC] = subscription

    def _unsubscribe(self) -> None:
        for subscription in self.subscriptions:
            self.node.destroy_subscription(subscription)
        self.subscriptions, self.polled = [], {}

    def _running(self) -> bool:
        """False once the view is shut down, or rclpy's context has ended (a signal, rqt's shutdown):
        the timers stop, the subscription goes while the node is still there, and rqt is asked to quit
        (once, whichever path comes first: closing.close_rqt)."""
        if self.closed:
            return False
        if self.node.context.ok():
            return True
        self.shutdown_plugin()
        close_rqt()
        return False

    def take_newest(self) -> None:
        """The newest message of the polled subscription into the feed (depth 1: one at most)."""
        for topic, subscription in self.polled.items():
            try:
                taken = subscription.handle.take_message(subscription.msg_type, subscription.raw)
            except Exception as e:  # noqa: BLE001 - whatever a changed rclpy raises: fall back, said once
                if not self._running():
                    return
                self.node.get_logger().warning(f"taking messages outside rqt's executor failed ({e!r}): "
                                               f"falling back to its callbacks")
                self.owner, self.subscribed = None, None
                self.subscribe()
                return
            if taken is not None:
                self.feed.put(topic, taken[0])

    def draw(self) -> None:
        """Decode the newest message and draw (the draw timer, ≤ 10 Hz)."""
        if not self._running():
            return
        self.take_newest()
        raw = self.feed.take().get(TOPIC)
        if raw is None:
            return
        namespace = self.view.namespace
        try:
            matrices, state_labels, contact_labels, margin_labels = message_data(
                deserialize_message(raw, Linearization))
        except (InputError, ValueError) as e:
            self.view.status.setText(f"cannot read {namespace}/{TOPIC}: {e}")
            return
        shown = tuple(kind for kind in BY_TOPIC if kind in matrices)
        if self.shown.get(namespace) != shown:  # the matrix menu: what this node's messages hold
            self.shown[namespace] = self.nodes[namespace] = shown
            self.view.set_nodes(self.nodes)
        drawn = self.view.show_data(matrices, state_labels, contact_labels, margin_labels)
        chosen = (namespace, self.view.topic)
        if drawn and self.view.heatmap.matrix is not None and self.announced != chosen:
            self.announced = chosen
            rows, cols = self.view.heatmap.matrix.shape
            self.node.get_logger().info(f"drawing {chosen[0]}/{TOPIC} {chosen[1]}: {rows}×{cols}, "
                                        f"largest |entry| {self.view.heatmap.peak:.6g}")

    def shutdown_plugin(self) -> None:
        """rqt closing the view, a signal, or the context gone: the timers first, then the subscription
        (once: each of those paths may call it)."""
        if self.closed:
            return
        self.closed = True
        CLOSE_ON_SIGNAL.remove(self)
        self.discovery.stop()
        self.draw_timer.stop()
        try:
            self._unsubscribe()
        except Exception:  # noqa: BLE001 - rclpy's context already gone: its entities go with it
            self.subscriptions, self.polled = [], {}

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
