"""The Qt widgets of the rqt view: the heatmap with its names, the colour bar, the
eigenvalue plane, the contact-force table, and the view that holds them.

They paint what :mod:`.heatmap`, :mod:`.matrices` and :mod:`.spectrum` decide and
know nothing of ROS: :class:`LinearizationView` is fed matrices and label lists
(:meth:`LinearizationView.show_data`), by the rqt plugin or by a test.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .export import csv_text, numpy_text
from .heatmap import SCALES, Geometry, Window, colour_bar_ticks, colours, describe, levels
from .matrices import BY_TOPIC, MATRICES, Axis, axes_problem, matrix_axes, topics_to_follow
from .qt import QtCore, QtGui, QtWidgets
from .spectrum import contact_forces, spectrum

Qt = QtCore.Qt
GREY = QtGui.QColor(90, 90, 90)  # the block lines, as the node's images (ros/images.py BOUNDARY)
MAX_MARGIN = 0.35  # the names take at most this fraction of the width (rows) and height (columns)


def _image(rgb: np.ndarray) -> QtGui.QImage:
    """A QImage owning a copy of an (H, W, 3) uint8 array."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    height, width = rgb.shape[:2]
    return QtGui.QImage(rgb.tobytes(), width, height, 3 * width, QtGui.QImage.Format_RGB888).copy()


def _position(event) -> QtCore.QPointF:
    """A mouse event's position in the widget (Qt 6: position(), Qt 5: localPos())."""
    return event.position() if hasattr(event, "position") else event.localPos()


class HeatmapWidget(QtWidgets.QWidget):
    """A matrix as coloured cells with its row names on the left and its column names
    on top, grey lines between blocks, the hovered cell outlined.  Wheel: zoom about
    the cursor; drag: pan; double click: the whole matrix."""

    def __init__(self, parent=None, on_hover=None):
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setMinimumSize(240, 240)
        self.on_hover = on_hover  # callable(text): the hovered entry's description ("" off the cells)
        self.matrix = None
        self.symbol = ""
        self.rows = self.cols = Axis((), ())
        self.scale = "log"
        self.peak = 0.0
        self.window = Window(0, 0)
        self.hovered = None  # (row, col) of the matrix
        self._rgb = np.zeros((0, 0, 3), np.uint8)
        self._drag = None  # (x, y, window) where a drag started

    # ---- what is shown -----------------------------------------------------------
    def set_matrix(self, matrix: np.ndarray, symbol: str, rows: Axis, cols: Axis) -> None:
        """Show ``matrix`` (rows × cols entries, named by the two axes).  The zoom stays
        while the matrix keeps its shape and names."""
        same = (self.matrix is not None and self.matrix.shape == matrix.shape and self.rows == rows
                and self.cols == cols)
        self.matrix, self.symbol, self.rows, self.cols = np.asarray(matrix, dtype=float), symbol, rows, cols
        if not same:
            self.window, self.hovered = Window(*self.matrix.shape), None
        self._recolour()

    def clear(self) -> None:
        """Show nothing (until the next set_matrix)."""
        self.matrix, self.hovered, self.peak = None, None, 0.0
        self._report_hover()
        self.update()

    def set_scale(self, scale: str) -> None:
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
        self.scale = scale
        self._recolour()

    def set_window(self, window: Window) -> None:
        self.window = window
        self.update()

    def _recolour(self) -> None:
        if self.matrix is None:
            return
        level, self.peak = levels(self.matrix, self.scale)
        self._rgb = colours(level)
        self._report_hover()
        self.update()

    # ---- geometry ----------------------------------------------------------------
    def geometry_of_cells(self) -> Geometry:
        metrics = QtGui.QFontMetricsF(self.font())
        widest = max((metrics.horizontalAdvance(label) for label in self.rows.labels + self.cols.labels),
                     default=0.0)
        left = int(min(widest + 8, MAX_MARGIN * self.width()))
        top = int(min(widest + 8, MAX_MARGIN * self.height()))
        return Geometry(self.window, self.width(), self.height(), left, top)

    # ---- painting ----------------------------------------------------------------
    def paintEvent(self, event):  # noqa: N802 - Qt's name
        painter = QtGui.QPainter(self)
        painter.fillRect(self.rect(), QtGui.QColor(255, 255, 255))
        if self.matrix is None or self.matrix.size == 0:
            painter.drawText(self.rect(), Qt.AlignCenter, "no matrix yet" if self.matrix is None else
                             f"{self.symbol} is {self.matrix.shape[0]}×{self.matrix.shape[1]}: nothing to draw")
            return
        g = self.geometry_of_cells()
        w = self.window
        cell = g.cell
        x0, y0 = g.left, g.top
        rows, cols = w.shape
        painter.drawImage(QtCore.QRectF(x0, y0, cols * cell, rows * cell),
                          _image(self._rgb[w.row0:w.row1, w.col0:w.col1]))
        painter.setPen(QtGui.QPen(GREY, 1))
        painter.drawRect(QtCore.QRectF(x0, y0, cols * cell, rows * cell))
        for first in self.rows.boundaries:
            if w.row0 < first < w.row1:
                y = y0 + (first - w.row0) * cell
                painter.drawLine(QtCore.QPointF(x0, y), QtCore.QPointF(x0 + cols * cell, y))
        for first in self.cols.boundaries:
            if w.col0 < first < w.col1:
                x = x0 + (first - w.col0) * cell
                painter.drawLine(QtCore.QPointF(x, y0), QtCore.QPointF(x, y0 + rows * cell))
        metrics = QtGui.QFontMetricsF(self.font())
        stride = g.label_stride(metrics.height())
        painter.setPen(QtGui.QColor(0, 0, 0))
        for i in range(w.row0, w.row1):
            if (i - w.row0) % stride == 0:
                _, y, _, _ = g.cell_rect(i, w.col0)
                painter.drawText(QtCore.QRectF(0, y + cell / 2 - metrics.height() / 2, x0 - 4, metrics.height()),
                                 int(Qt.AlignRight | Qt.AlignVCenter), self.rows.labels[i])
        for j in range(w.col0, w.col1):
            if (j - w.col0) % stride == 0:
                x, _, _, _ = g.cell_rect(w.row0, j)
                painter.save()
                painter.translate(x + cell / 2 + metrics.ascent() / 2 - 1, y0 - 4)
                painter.rotate(-90)
                painter.drawText(QtCore.QPointF(0, 0), self.cols.labels[j])
                painter.restore()
        if self.hovered is not None:
            painter.setPen(QtGui.QPen(QtGui.QColor(0, 0, 0), 2))
            painter.drawRect(QtCore.QRectF(*g.cell_rect(*self.hovered)))
        painter.end()

    # ---- the mouse ---------------------------------------------------------------
    def hover_text(self) -> str:
        if self.hovered is None or self.matrix is None:
            return ""
        return describe(self.symbol, self.matrix, self.rows.labels, self.cols.labels, *self.hovered)

    def _report_hover(self) -> None:
        if self.hovered is not None and self.matrix is not None and not (
                self.hovered[0] < self.matrix.shape[0] and self.hovered[1] < self.matrix.shape[1]):
            self.hovered = None
        text = self.hover_text()
        self.setToolTip(text)
        if self.on_hover is not None:
            self.on_hover(text)

    def mouseMoveEvent(self, event):  # noqa: N802
        point = _position(event)
        if self._drag is not None:
            x, y, window = self._drag
            cell = self.geometry_of_cells().cell or 1.0
            self.set_window(window.panned(round((y - point.y()) / cell), round((x - point.x()) / cell)))
        hovered = self.geometry_of_cells().cell_at(point.x(), point.y()) if self.matrix is not None else None
        if hovered != self.hovered:
            self.hovered = hovered
            self._report_hover()
            self.update()

    def leaveEvent(self, event):  # noqa: N802
        self.hovered = None
        self._report_hover()
        self.update()

    def mousePressEvent(self, event):  # noqa: N802
        if event.button() == Qt.LeftButton:
            point = _position(event)
            self._drag = (point.x(), point.y(), self.window)

    def mouseReleaseEvent(self, event):  # noqa: N802
        self._drag = None

    def mouseDoubleClickEvent(self, event):  # noqa: N802
        if self.matrix is not None:
            self.set_window(Window(*self.matrix.shape))

    def wheelEvent(self, event):  # noqa: N802
        if self.matrix is None or self.matrix.size == 0:
            return
        point = _position(event)
        g = self.geometry_of_cells()
        cell = g.cell or 1.0
        about_row = self.window.row0 + (point.y() - g.top) / cell
        about_col = self.window.col0 + (point.x() - g.left) / cell
        factor = 0.8 if event.angleDelta().y() > 0 else 1.25
        self.set_window(self.window.zoomed(factor, about_row, about_col))


class ColourBar(QtWidgets.QWidget):
    """The colour scale beside the heatmap, with its values."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.peak, self.scale = 0.0, "log"
        self.setMinimumWidth(130)

    def set_scale(self, peak: float, scale: str) -> None:
        self.peak, self.scale = peak, scale
        self.update()

    def paintEvent(self, event):  # noqa: N802
        painter = QtGui.QPainter(self)
        painter.fillRect(self.rect(), QtGui.QColor(255, 255, 255))
        metrics = QtGui.QFontMetricsF(self.font())
        top, bottom = metrics.height(), self.height() - metrics.height()
        bar = QtCore.QRectF(4, top, 16, max(bottom - top, 1))
        painter.drawImage(bar, _image(colours(np.linspace(1.0, -1.0, 256))[:, None, :]))
        painter.setPen(QtGui.QPen(GREY, 1))
        painter.drawRect(bar)
        painter.setPen(QtGui.QColor(0, 0, 0))
        for level, text in colour_bar_ticks(self.peak, self.scale):
            y = top + (1.0 - level) / 2.0 * bar.height()
            painter.drawLine(QtCore.QPointF(20, y), QtCore.QPointF(24, y))
            painter.drawText(QtCore.QPointF(27, y + metrics.ascent() / 2 - 1), text)
        painter.drawText(QtCore.QPointF(2, self.height() - 3), f"{self.scale} scale")
        painter.end()


class SpectrumWidget(QtWidgets.QWidget):
    """The eigenvalues in the complex plane, equal axes; the unit circle for A_d.
    Eigenvalues past the stability boundary are red."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.spectrum = None
        self.setMinimumSize(200, 200)

    def set_spectrum(self, value) -> None:
        self.spectrum = value
        self.update()

    def paintEvent(self, event):  # noqa: N802
        painter = QtGui.QPainter(self)
        painter.fillRect(self.rect(), QtGui.QColor(255, 255, 255))
        if self.spectrum is None:
            painter.drawText(self.rect(), Qt.AlignCenter, "no A yet")
            return
        re_min, re_max, im_min, im_max = self.spectrum.bounds()
        metrics = QtGui.QFontMetricsF(self.font())
        margin = metrics.height() + 4
        scale = min((self.width() - 2 * margin) / (re_max - re_min), (self.height() - 2 * margin) / (im_max - im_min))
        cx = margin + (-re_min) * scale + ((self.width() - 2 * margin) - (re_max - re_min) * scale) / 2
        cy = margin + im_max * scale + ((self.height() - 2 * margin) - (im_max - im_min) * scale) / 2

        def at(z):
            return QtCore.QPointF(cx + z.real * scale, cy - z.imag * scale)
        painter.setRenderHint(QtGui.QPainter.Antialiasing)
        painter.setPen(QtGui.QPen(QtGui.QColor(170, 170, 170), 1))
        painter.drawLine(QtCore.QPointF(margin, cy), QtCore.QPointF(self.width() - margin, cy))
        painter.drawLine(QtCore.QPointF(cx, margin), QtCore.QPointF(cx, self.height() - margin))
        if self.spectrum.discrete:
            painter.drawEllipse(at(0j), scale, scale)
        painter.setPen(QtGui.QColor(0, 0, 0))
        painter.drawText(QtCore.QPointF(self.width() - margin - metrics.horizontalAdvance("Re"), cy - 3), "Re")
        painter.drawText(QtCore.QPointF(cx + 3, margin - 2), "Im")
        unstable = self.spectrum.distances > 0
        for z, bad in zip(self.spectrum.eigenvalues, unstable):
            colour = QtGui.QColor(220, 0, 0) if bad else QtGui.QColor(0, 0, 160)
            painter.setPen(colour)
            painter.setBrush(colour)
            painter.drawEllipse(at(z), 3, 3)
        painter.end()


class LinearizationView(QtWidgets.QWidget):
    """The whole view: which node and matrix, the scale and block selectors, pause
    and copy; the heatmap and its colour bar; tabs with the eigenvalues of A (or A_d)
    and the contact forces.  ``on_selection(namespace, topic)`` is called when the
    user picks another node or matrix (the plugin subscribes to it)."""

    def __init__(self, parent: QtWidgets.QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("LinearizationView")
        self.on_selection: Callable[[str, str], None] | None = None
        self.paused = False
        self.matrices: dict = {}  # topic -> the newest matrix received
        self.state_labels: tuple = ()
        self.contact_labels: tuple = ()
        self.margin_labels: tuple = ()
        self.available: tuple = ()  # the matrix topics of the chosen node
        self.followed: tuple = ()  # those the plugin follows for the current choice
        self.followed_node: str | None = None

        self.node_box = QtWidgets.QComboBox()
        self.node_box.setSizeAdjustPolicy(QtWidgets.QComboBox.AdjustToContents)
        self.node_box.setToolTip("linearization nodes in the ROS graph (their namespace)")
        self.matrix_box = QtWidgets.QComboBox()
        for kind in MATRICES:
            self.matrix_box.addItem(f"{kind.symbol}  ({kind.meaning})", kind.topic)
        self.scale_box = QtWidgets.QComboBox()
        for scale in SCALES:
            self.scale_box.addItem(f"{scale} scale", scale)
        self.row_block_box, self.col_block_box = QtWidgets.QComboBox(), QtWidgets.QComboBox()
        self.row_block_box.setToolTip("rows shown: a block of the matrix")
        self.col_block_box.setToolTip("columns shown: a block of the matrix")
        self.pause_button = QtWidgets.QPushButton("Pause")
        self.pause_button.setCheckable(True)
        self.copy_csv_button = QtWidgets.QPushButton("Copy CSV")
        self.copy_csv_button.setToolTip("the shown matrix with its row and column names, as CSV")
        self.copy_numpy_button = QtWidgets.QPushButton("Copy NumPy")
        self.copy_numpy_button.setToolTip("the shown matrix as Python source: np.array([...]) and the names")
        self.status = QtWidgets.QLabel("waiting for a linearization node")
        self.hover_label = QtWidgets.QLabel(" ")
        self.hover_label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.heatmap = HeatmapWidget(on_hover=self.hover_label.setText)
        self.colour_bar = ColourBar()
        self.spectrum_widget = SpectrumWidget()
        self.spectrum_label = QtWidgets.QLabel("")
        self.spectrum_label.setWordWrap(True)
        self.forces_table = QtWidgets.QTableWidget(0, 8)
        self.forces_table.setHorizontalHeaderLabels(["contact", "fx", "fy", "fz", "mx", "my", "mz", "|f|"])

        bar = QtWidgets.QHBoxLayout()
        for label, widget in (("node", self.node_box), ("matrix", self.matrix_box), (None, self.scale_box),
                              ("rows", self.row_block_box), ("cols", self.col_block_box)):
            if label:
                bar.addWidget(QtWidgets.QLabel(label))
            bar.addWidget(widget)
        bar.addStretch(1)
        for widget in (self.pause_button, self.copy_csv_button, self.copy_numpy_button):
            bar.addWidget(widget)
        spectrum_page = QtWidgets.QWidget()
        spectrum_layout = QtWidgets.QVBoxLayout(spectrum_page)
        spectrum_layout.addWidget(self.spectrum_label)
        spectrum_layout.addWidget(self.spectrum_widget, 1)
        self.tabs = QtWidgets.QTabWidget()
        self.tabs.addTab(spectrum_page, "eigenvalues")
        self.tabs.addTab(self.forces_table, "contact forces")
        picture = QtWidgets.QWidget()
        picture_layout = QtWidgets.QHBoxLayout(picture)
        picture_layout.setContentsMargins(0, 0, 0, 0)
        picture_layout.addWidget(self.heatmap, 1)
        picture_layout.addWidget(self.colour_bar)
        splitter = QtWidgets.QSplitter(Qt.Horizontal)
        splitter.addWidget(picture)
        splitter.addWidget(self.tabs)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.hover_label)
        layout.addWidget(self.status)

        self.node_box.currentIndexChanged.connect(self._selection_changed)
        self.matrix_box.currentIndexChanged.connect(self._selection_changed)
        self.scale_box.currentIndexChanged.connect(lambda _: self._rescale())
        self.row_block_box.currentIndexChanged.connect(lambda _: self._block_changed())
        self.col_block_box.currentIndexChanged.connect(lambda _: self._block_changed())
        self.pause_button.toggled.connect(self._pause)
        self.copy_csv_button.clicked.connect(lambda: self.copy("csv"))
        self.copy_numpy_button.clicked.connect(lambda: self.copy("numpy"))

    def sizeHint(self):  # noqa: N802 - Qt's name; rqt opens a standalone plugin at this size
        return QtCore.QSize(1280, 800)

    # ---- selection -----------------------------------------------------------------
    @property
    def namespace(self) -> str | None:
        return self.node_box.currentData()

    @property
    def topic(self) -> str:
        return self.matrix_box.currentData()

    def set_nodes(self, nodes: dict) -> None:
        """The linearization nodes found ({namespace: their matrix topics}, matrices.
        linearization_nodes); the current choice stays while it is there."""
        current = self.namespace
        if [self.node_box.itemData(i) for i in range(self.node_box.count())] != list(nodes):
            self.node_box.blockSignals(True)
            self.node_box.clear()
            for namespace in nodes:
                self.node_box.addItem(namespace, namespace)
            if current in nodes:
                self.node_box.setCurrentIndex(list(nodes).index(current))
            self.node_box.blockSignals(False)
            if self.namespace != current:
                self._selection_changed()
        self.available = nodes.get(self.namespace, ())
        self.followed, self.followed_node = topics_to_follow(self.available, self.topic), self.namespace
        model = self.matrix_box.model()
        for i in range(self.matrix_box.count()):  # matrices the node does not publish are greyed out
            model.item(i).setEnabled(self.matrix_box.itemData(i) in self.available)
        if not nodes:
            self.status.setText("no linearization node in the graph (looking for <namespace>/linearization, "
                                "robot_linearization/msg/Linearization)")

    def select(self, namespace: str | None = None, topic: str | None = None) -> None:
        if namespace is not None:
            self.node_box.setCurrentIndex(self.node_box.findData(namespace))
        if topic is not None:
            self.matrix_box.setCurrentIndex(self.matrix_box.findData(topic))

    def _selection_changed(self, *_):
        # keep only what stays followed (matrices.topics_to_follow): nothing of another node, and
        # no matrix that was not followed a moment ago (it would be old)
        followed = topics_to_follow(self.available, self.topic)
        self.matrices = {topic: matrix for topic, matrix in self.matrices.items()
                         if topic in followed and topic in self.followed and self.namespace == self.followed_node}
        self.followed, self.followed_node = followed, self.namespace
        if self.on_selection is not None and self.namespace is not None:
            self.on_selection(self.namespace, self.topic)
        self.redraw()

    def _pause(self, paused: bool) -> None:
        self.paused = paused
        self.pause_button.setText("Paused" if paused else "Pause")

    # ---- data ----------------------------------------------------------------------
    def show_data(self, matrices: dict | None = None, state_labels=None, contact_labels=None,
                  margin_labels=None) -> bool:
        """Take newly received matrices ({topic: array}) and label lists, and draw;
        False while paused: the matrices are dropped and nothing changes on screen (the
        labels are kept, they are sent once)."""
        if state_labels is not None:
            self.state_labels = tuple(state_labels)
        if contact_labels is not None:
            self.contact_labels = tuple(contact_labels)
        if margin_labels is not None:
            self.margin_labels = tuple(margin_labels)
        if self.paused:
            return False
        self.matrices.update(matrices or {})
        self.redraw()
        return True

    def redraw(self) -> None:
        kind = BY_TOPIC[self.topic]
        matrix = self.matrices.get(kind.topic)
        if matrix is None:
            self.heatmap.clear()
            self.status.setText(f"waiting for {self.namespace or '<node>'}/{kind.topic}")
        elif not self.state_labels:
            self.status.setText(f"waiting for {self.namespace}/state_labels")
        else:
            rows, cols = matrix_axes(kind, self.state_labels, self.contact_labels, self.margin_labels)
            problem = axes_problem(matrix.shape, rows, cols)
            if problem:
                self.status.setText(problem)
            else:
                blocks_before = (self.heatmap.rows.blocks, self.heatmap.cols.blocks)
                self.heatmap.set_matrix(matrix, kind.symbol, rows, cols)
                if blocks_before != (rows.blocks, cols.blocks):
                    self._fill_blocks()
                self.colour_bar.set_scale(self.heatmap.peak, self.heatmap.scale)
                self.status.setText(f"{self.namespace}/{kind.topic}: {kind.symbol} {matrix.shape[0]}×"
                                    f"{matrix.shape[1]}, largest |entry| {self.heatmap.peak:.4g}")
        self._redraw_spectrum()
        self._redraw_forces()

    def _redraw_spectrum(self) -> None:
        discrete = "A_d" in self.matrices
        source = self.matrices.get("A_d" if discrete else "A")
        if source is None or source.shape[0] != source.shape[1]:
            self.spectrum_widget.set_spectrum(None)
            self.spectrum_label.setText("eigenvalues of A (of A_d when the node publishes it)")
            return
        value = spectrum(source, discrete)
        self.spectrum_widget.set_spectrum(value)
        self.spectrum_label.setText(value.summary)

    def _redraw_forces(self) -> None:
        values = self.matrices.get("contact_forces")
        if values is None or values.size != len(self.contact_labels):
            self.forces_table.setRowCount(0)
            return
        forces = contact_forces(values, self.contact_labels)
        self.forces_table.setRowCount(len(forces))
        columns = {"fx": 1, "fy": 2, "fz": 3, "mx": 4, "my": 5, "mz": 6}
        for i, force in enumerate(forces):
            self.forces_table.setItem(i, 0, QtWidgets.QTableWidgetItem(force.frame))
            for column in range(1, 8):
                self.forces_table.setItem(i, column, QtWidgets.QTableWidgetItem(""))
            for component, value in force.components:
                self.forces_table.item(i, columns[component]).setText(f"{value:.4g}")
            self.forces_table.item(i, 7).setText(f"{force.force:.4g}")

    # ---- scale, blocks ---------------------------------------------------------------
    def _rescale(self) -> None:
        self.heatmap.set_scale(self.scale_box.currentData())
        self.colour_bar.set_scale(self.heatmap.peak, self.heatmap.scale)

    def _fill_blocks(self) -> None:
        for box, axis in ((self.row_block_box, self.heatmap.rows), (self.col_block_box, self.heatmap.cols)):
            box.blockSignals(True)
            box.clear()
            box.addItem("all", None)
            if len(axis.blocks) > 1:
                for name, first, end in axis.blocks:
                    box.addItem(name, (first, end))
            box.blockSignals(False)

    def _block_changed(self) -> None:
        matrix = self.heatmap.matrix
        if matrix is None:
            return
        rows = self.row_block_box.currentData() or (0, matrix.shape[0])
        cols = self.col_block_box.currentData() or (0, matrix.shape[1])
        self.heatmap.set_window(Window(matrix.shape[0], matrix.shape[1], rows[0], rows[1], cols[0], cols[1]))

    # ---- copy ------------------------------------------------------------------------
    def copy_text(self, form: str = "csv") -> str:
        """The shown matrix (what is on screen, paused or not) as 'csv' or 'numpy' text."""
        heatmap = self.heatmap
        if heatmap.matrix is None:
            return ""
        if form == "csv":
            return csv_text(heatmap.matrix, heatmap.rows.labels, heatmap.cols.labels, corner=heatmap.symbol)
        if form == "numpy":
            return numpy_text(BY_TOPIC[self.topic].topic, heatmap.matrix, heatmap.rows.labels, heatmap.cols.labels)
        raise ValueError(f"copy form must be 'csv' or 'numpy', got {form!r}")

    def copy(self, form: str) -> str:
        text = self.copy_text(form)
        QtWidgets.QApplication.clipboard().setText(text)
        self.status.setText(f"copied {self.heatmap.symbol} as {form} ({len(text)} characters)" if text
                            else "nothing to copy yet")
        return text
