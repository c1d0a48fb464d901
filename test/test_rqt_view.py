"""The rqt view: its rclpy-free logic (names, blocks, discovery, scale, geometry, hover
text, eigenvalues, forces, copy) and its Qt widgets, offscreen, fed real linearizations
and checked through their pixels.  The rqt plugin in a real ROS graph: test_launch_rqt.py."""

import csv
import io
import math
import os

import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import robot_linearization as rl  # noqa: E402
from robot_linearization.ros.images import heatmap_rgb  # noqa: E402
from robot_linearization.rqt.export import csv_text, numpy_text  # noqa: E402
from robot_linearization.rqt.heatmap import (Geometry, Window, colour_bar_ticks, colours, describe,  # noqa: E402
                                             levels)
from robot_linearization.rqt.inputs import LatestMessages, plugin_arguments  # noqa: E402
from robot_linearization.rqt.matrices import (LINEARIZATION, MATRICES, axes_problem, axis,  # noqa: E402
                                              linearization_nodes, matrix_axes, message_data, topics_to_follow)
from robot_linearization.rqt.spectrum import contact_forces, spectrum  # noqa: E402

FEET = "front_left_foot, front_right_foot, hind_left_foot:6d:local, hind_right_foot"
MATRIX = "std_msgs/msg/Float64MultiArray"
MODEL_OF = {}  # id(linearization) -> (its model, [its margins, its impact] once computed)


@pytest.fixture(scope="module")
def quadruped():
    model = rl.load_urdf(rl.robots.bundled_urdf_path(), floating_base=True)
    MODEL_OF.clear()
    rng = np.random.default_rng(3)
    state = rl.State(base_pose=np.eye(4), joint_positions=rng.uniform(-0.5, 0.5, 12), base_twist=rng.normal(size=6),
                     joint_velocities=rng.normal(size=12))
    lin = rl.linearize(model, state, rng.normal(size=12), contacts=FEET, dt=0.002)
    MODEL_OF[id(lin)] = (model, [])
    return model, lin


def _walking(lin):
    """(contact margins, the impact map of the feet closing) at lin's state, once per linearization."""
    model, walking = MODEL_OF[id(lin)]
    if not walking:
        walking.append(rl.contact_margins(model, lin, friction=0.7, sole_size=(0.1, 0.05)))
        walking.append(rl.impact(model, lin.state, FEET))
    return walking


def published(lin) -> dict:
    """{topic: matrix} as the node publishes them (ros/messages.output_messages), the margins
    and a touchdown's impact map included (their labels: margin_labels(lin))."""
    margins, jump = _walking(lin)
    return {"A": lin.A, "B": lin.B, "M_inv": lin.M_inv, "A_d": lin.A_d, "B_d": lin.B_d,
            "contact_forces": lin.contact_forces[:, None],
            "contact_forces_state_jacobian": lin.contact_forces_state_jacobian,
            "contact_forces_input_jacobian": lin.contact_forces_input_jacobian,
            "contact_margins": margins.margins[:, None], "contact_margins_state_jacobian": margins.state_jacobian,
            "contact_margins_input_jacobian": margins.input_jacobian, "impact_map": jump.A,
            "impulses": jump.impulses[:, None]}


def margin_labels(lin) -> tuple:
    return _walking(lin)[0].labels


# ---- names and blocks ---------------------------------------------------------------

def test_every_matrix_gets_names_that_fit_its_shape_and_the_model(quadruped):
    model, lin = quadruped
    for kind in MATRICES:
        matrix = published(lin)[kind.topic]
        rows, cols = matrix_axes(kind, model.state_labels, lin.contact_labels, margin_labels(lin))
        assert axes_problem(matrix.shape, rows, cols) is None, kind.topic
    n = model.n_joints
    state = axis("state", model.state_labels)
    assert state.labels[:6] == ("H:x", "H:y", "H:z", "H:rx", "H:ry", "H:rz")
    assert [name for name, _, _ in state.blocks] == ["z_H", "z_s", "z_v", "z_r"]
    assert state.boundaries == (6, 6 + n, 12 + n)
    assert axis("input", model.state_labels).labels == tuple(f"τ:{j}" for j in model.joint_names)
    velocity = axis("velocity", model.state_labels)
    assert velocity.labels == model.state_labels[6 + n:] and velocity.boundaries == (6,)
    contact = axis("contact", model.state_labels, lin.contact_labels)
    assert [name for name, _, _ in contact.blocks] == [c.strip().split(":")[0] for c in FEET.split(",")]
    assert contact.boundaries == (3, 6, 12)  # point, point, 6d, point
    margin = axis("margin", model.state_labels, lin.contact_labels, margin_labels(lin))
    assert [name for name, _, _ in margin.blocks] == [name for name, _, _ in contact.blocks]
    assert margin.labels[:2] == ("front_left_foot:friction", "front_left_foot:unilateral")


def test_a_fixed_base_has_two_blocks_and_a_wrong_shape_is_named():
    model = rl.load_urdf(rl.robots.bundled_urdf_path(), floating_base=False)
    state = axis("state", model.state_labels)
    assert [name for name, _, _ in state.blocks] == ["z_s", "z_r"] and state.boundaries == (12,)
    rows, cols = matrix_axes(MATRICES[0], model.state_labels)
    assert "36×36" in axes_problem((36, 36), rows, cols) and "24×24" in axes_problem((36, 36), rows, cols)
    with pytest.raises(ValueError, match="axis kind"):
        axis("joints", model.state_labels)


def test_nodes_are_found_by_their_topics():
    graph = [("/robot_linearization/linearization", [LINEARIZATION]), ("/robot_linearization/A", [MATRIX]),
             ("/talos/lin/linearization", [LINEARIZATION]), ("/talos/lin/health", [MATRIX]),
             ("/other/A", [MATRIX]),  # the old per-matrix topics alone: not a node of this version
             ("/impostor/linearization", ["sensor_msgs/msg/Image"])]
    assert linearization_nodes(graph) == {"/robot_linearization": ("A", "B", "M_inv"),
                                          "/talos/lin": ("A", "B", "M_inv")}
    assert linearization_nodes([]) == {}
    assert topics_to_follow(("A", "B", "A_d"), "B") == ("A_d", "B")
    assert topics_to_follow(("A", "contact_forces"), "A") == ("A", "contact_forces")


def test_a_typed_message_gives_the_view_every_matrix_and_label_list(quadruped):
    """The plugin's decoding (matrices.message_data) of the node's ~/linearization: the matrices the
    view draws, the same arrays as the engine's, and the three label lists."""
    from rosbags.typesys import Stores, get_typestore

    from robot_linearization.ros.interfaces import linearization_message, register_interfaces
    from robot_linearization.ros.messages import RosbagsFactory
    from robot_linearization.ros.pipeline import Output

    model, lin = quadruped
    margins, jump = _walking(lin)
    store = get_typestore(Stores.ROS2_HUMBLE)
    register_interfaces(store)
    message = linearization_message(RosbagsFactory(store), Output(5, model, lin.state, lin.joint_torques, lin,
                                                                  1e-4, margins, jump), "base_link")
    raw = store.serialize_cdr(message, message.__msgtype__)
    matrices, state_labels, contact_labels, margin_labels = message_data(
        store.deserialize_cdr(raw, message.__msgtype__))
    expected = published(lin)
    assert set(matrices) == set(expected) == {kind.topic for kind in MATRICES}
    for kind, value in expected.items():
        np.testing.assert_array_equal(matrices[kind], value, err_msg=kind)
    assert state_labels == model.state_labels and contact_labels == lin.contact_labels
    assert margin_labels == margins.labels


# ---- scale, colours, geometry, hover ------------------------------------------------

def test_colours_are_the_node_images_colours_and_the_documented_ones(quadruped):
    _, lin = quadruped
    for matrix in (lin.A, lin.B, lin.contact_forces_state_jacobian):
        # the node's compiled painter (ros/images.py), one pixel per entry inside its frame
        assert np.array_equal(colours(levels(matrix, "log")[0]), heatmap_rgb(matrix, cell=1)[1:-1, 1:-1])
    # by hand: peak red, 1e-4·peak half-strength blue, zero and < 1e-8·peak white; linear: half
    m = np.array([[2.0, -2e-4, 0.0, 1e-9]])
    assert colours(levels(m, "log")[0]).tolist() == [[[255, 0, 0], [127, 127, 255], [255, 255, 255],
                                                      [255, 255, 255]]]
    assert colours(levels(np.array([[2.0, -1.0]]), "linear")[0]).tolist() == [[[255, 0, 0], [127, 127, 255]]]
    with pytest.raises(ValueError, match="scale"):
        levels(m, "sqrt")
    ticks = dict(colour_bar_ticks(2.0, "log"))
    assert ticks[1.0] == "+2" and ticks[-0.5] == "−0.0002"
    assert dict(colour_bar_ticks(2.0, "linear"))[0.5] == "+1"


def test_the_cell_under_a_pixel_is_the_one_drawn_there():
    window = Window(36, 24)
    g = Geometry(window, width=600, height=500, left=100, top=80)
    cell = g.cell
    assert cell == pytest.approx(min(500 / 24, 420 / 36))
    for row, col in ((0, 0), (35, 23), (7, 19)):
        x, y, w, h = g.cell_rect(row, col)
        assert g.cell_at(x + w / 2, y + h / 2) == (row, col)
        assert g.cell_at(x + 0.01, y + 0.01) == (row, col) and g.cell_at(x + w - 0.01, y + h - 0.01) == (row, col)
    assert g.cell_at(99, 200) is None and g.cell_at(300, 79) is None and g.cell_at(100 + 24 * cell + 1, 90) is None
    zoomed = Geometry(Window(36, 24, 10, 20, 5, 15), 600, 500, 100, 80)
    x, y, w, h = zoomed.cell_rect(12, 7)
    assert zoomed.cell_at(x + w / 2, y + h / 2) == (12, 7) and zoomed.cell == pytest.approx(42.0)
    assert Geometry(window, 600, 500, 100, 80).label_stride(12) == math.ceil(12 / cell)


def test_zoom_and_pan_stay_inside_the_matrix():
    window = Window(100, 100)
    zoomed = window.zoomed(0.5, 80, 10)
    # the entry under the cursor stays where it was on screen: 80 % down, 10 % across
    assert (zoomed.row0, zoomed.row1, zoomed.col0, zoomed.col1) == (40, 90, 5, 55)
    panned = zoomed.panned(1000, -1000)
    assert (panned.row0, panned.row1, panned.col0, panned.col1) == (50, 100, 0, 50)
    assert window.zoomed(0.001, 3, 3).shape == (1, 1) and zoomed.zoomed(10, 50, 50).shape == (100, 100)


def test_the_hover_text_names_the_entry():
    labels = ("H:x", "s:knee")
    assert describe("A", np.array([[1.0, -0.00123456789], [0, 0]]), labels, labels, 0, 1) == \
        "A[H:x, s:knee] = -1.234568e-03"


# ---- eigenvalues, forces, copy, inputs ------------------------------------------------

def test_the_spectrum_of_known_systems():
    k, m, c = 9.0, 1.0, 0.2  # a damped oscillator: λ = −c/2 ± i√(k − c²/4)
    oscillator = np.array([[0.0, 1.0], [-k / m, -c]])
    value = spectrum(oscillator)
    assert value.measure == pytest.approx(-0.1) and value.unstable == 0
    assert sorted(value.eigenvalues.imag) == pytest.approx([-math.sqrt(9 - 0.01), math.sqrt(9 - 0.01)])
    unstable = spectrum(np.diag([2.0, 0.0, -1.0]))  # the zero is marginal, not unstable
    assert unstable.measure == 2.0 and unstable.unstable == 1 and "1 of 3 with Re λ > 0" in unstable.summary
    step = spectrum(np.diag([1.0, 0.5, -1.2]), discrete=True)
    assert step.measure == pytest.approx(1.2) and step.unstable == 1 and "|λ| > 1" in step.summary
    re_min, re_max, im_min, im_max = step.bounds()
    assert re_min < -1.2 and re_max > 1 and im_min < 0 < im_max  # every eigenvalue and the point 1
    crowded = spectrum(np.diag([0.999, 1.001]) + np.diag([0.002], 1) - np.diag([0.002], -1), discrete=True)
    re_min, re_max, im_min, im_max = crowded.bounds()  # a short step: about 1, not the whole circle
    assert re_min < 1 < re_max and im_min < crowded.eigenvalues.imag.min() < crowded.eigenvalues.imag.max() < im_max
    assert re_max - re_min < 0.01 and im_max - im_min < 0.01
    # the rounding of a zero eigenvalue beside eigenvalues of 10⁶ is ~10⁻⁵: marginal against the
    # spectrum's own size (MARGIN·max|λ|), not unstable against an unscaled 10⁻⁹
    stiff = spectrum(np.diag([-1e6, 3e-6, -2.0]))
    assert stiff.unstable == 0 and "0 of 3" in stiff.summary
    assert spectrum(np.diag([-1e6, 2e-3, -2.0])).unstable == 1  # beyond it: unstable
    stiff_step = spectrum(np.diag([1e6, 1.0 + 3e-6]), discrete=True)
    assert stiff_step.unstable == 1  # the 10⁶ itself; the other is marginal
    with pytest.raises(ValueError, match="square"):
        spectrum(np.zeros((2, 3)))


def test_the_spectrum_of_a_robot_is_numpys(quadruped):
    _, lin = quadruped
    reference = np.linalg.eigvals(lin.A)
    value = spectrum(lin.A)
    assert value.measure == pytest.approx(reference.real.max(), rel=1e-12)
    assert spectrum(lin.A_d, discrete=True).measure == pytest.approx(np.abs(np.linalg.eigvals(lin.A_d)).max())


def test_contact_forces_are_grouped_per_contact(quadruped):
    _, lin = quadruped
    forces = contact_forces(lin.contact_forces, lin.contact_labels)
    assert [f.frame for f in forces] == ["front_left_foot", "front_right_foot", "hind_left_foot", "hind_right_foot"]
    sole = forces[2]
    assert [axis for axis, _ in sole.components] == ["fx", "fy", "fz", "mx", "my", "mz"]
    assert [value for _, value in sole.components] == list(lin.contact_forces[6:12])
    assert sole.force == pytest.approx(np.linalg.norm(lin.contact_forces[6:9]))
    with pytest.raises(ValueError, match="3 values for 4 labels"):
        contact_forces([1.0, 2.0, 3.0], ["a:fx", "a:fy", "a:fz", "b:fx"])


def test_copied_text_reads_back_exactly(quadruped):
    model, lin = quadruped
    rows, cols = axis("state", model.state_labels), axis("input", model.state_labels)
    table = list(csv.reader(io.StringIO(csv_text(lin.B, rows.labels, cols.labels, corner="B"))))
    assert table[0] == ["B", *cols.labels] and [r[0] for r in table[1:]] == list(rows.labels)
    assert np.array_equal(np.array([[float(x) for x in r[1:]] for r in table[1:]]), lin.B)
    namespace = {}
    exec(numpy_text("B", lin.B, rows.labels, cols.labels), namespace)  # noqa: S102 - our own text
    assert np.array_equal(namespace["B"], lin.B) and namespace["B_rows"] == list(rows.labels)
    assert namespace["B_cols"] == list(cols.labels)
    exec(numpy_text("empty", np.zeros((3, 0)), ["a", "b", "c"], []), namespace)  # noqa: S102
    assert namespace["empty"].shape == (3, 0)
    with pytest.raises(ValueError, match="identifier"):
        numpy_text("M⁻¹ x", lin.M_inv, [], [])


def test_only_the_newest_message_of_each_topic_is_taken():
    feed = LatestMessages()
    for i in range(1000):
        feed.put("A", i)
        feed.put("B", -i)
    assert feed.take() == {"A": 999, "B": -999} and feed.take() == {}


def test_plugin_arguments_and_a_wrong_one_in_one_line():
    arguments = plugin_arguments(["--node", "/talos/lin", "--matrix", "M_inv", "--scale", "linear"])
    assert (arguments.node, arguments.matrix, arguments.scale) == ("/talos/lin", "M_inv", "linear")
    assert plugin_arguments([]).matrix == "A"
    for wrong, said in ((["--matrix", "C"], "invalid choice: 'C'"), (["--colour"], "unrecognized arguments")):
        with pytest.raises(ValueError, match=said) as error:
            plugin_arguments(wrong)
        assert "\n" not in str(error.value)


# ---- the Qt widgets, offscreen ------------------------------------------------------

@pytest.fixture(scope="module")
def qt():
    from robot_linearization.rqt.qt import QtCore, QtGui, QtWidgets

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication([])
    yield QtCore, QtGui, QtWidgets, app


@pytest.fixture
def view(qt, quadruped):
    from robot_linearization.rqt.widgets import LinearizationView

    model, lin = quadruped
    widget = LinearizationView()
    widget.resize(1400, 900)
    widget.set_nodes({"/robot_linearization": tuple(published(lin))})
    widget.show()
    qt[3].processEvents()
    yield widget
    widget.close()
    widget.deleteLater()  # gone now, not when the interpreter ends after the application
    qt[0].QCoreApplication.sendPostedEvents(None, qt[0].QEvent.DeferredDelete)


def pixels(widget):
    """(H, W, 3) uint8 of what the widget shows."""
    image = widget.grab().toImage()
    rows = [[image.pixelColor(x, y).getRgb()[:3] for x in range(image.width())] for y in range(image.height())]
    return np.array(rows, dtype=np.uint8)


def send_mouse(qt, widget, kind, x, y, button=None):
    QtCore, _, _, app = qt
    Qt = QtCore.Qt
    from robot_linearization.rqt.qt import QtGui

    button = button if button is not None else Qt.NoButton
    event = QtGui.QMouseEvent(kind, QtCore.QPointF(x, y), widget.mapToGlobal(QtCore.QPointF(x, y)), button,
                              button, Qt.NoModifier)
    app.sendEvent(widget, event)


def cell_centre(heatmap, row, col):
    x, y, w, h = heatmap.geometry_of_cells().cell_rect(row, col)
    return int(x + w / 2), int(y + h / 2)


def test_the_widget_draws_a_known_entry_in_its_colour_and_the_block_lines(qt, view, quadruped):
    model, lin = quadruped
    assert view.show_data(published(lin), model.state_labels, lin.contact_labels)
    heatmap = view.heatmap
    image = pixels(heatmap)
    peak_row, peak_col = np.unravel_index(np.argmax(np.abs(lin.A)), lin.A.shape)
    expected = (255, 0, 0) if lin.A[peak_row, peak_col] > 0 else (0, 0, 255)
    x, y = cell_centre(heatmap, peak_row, peak_col)
    assert tuple(image[y, x]) == expected
    # an entry chosen near 1e-4 of the largest: half strength (the log scale's middle), by hand
    ratio = np.abs(lin.A) / np.abs(lin.A).max()
    row, col = np.unravel_index(np.argmin(np.abs(np.log10(np.where(ratio > 0, ratio, 1e-30)) + 4)), lin.A.shape)
    fade = int(255 * (1 - (np.log10(ratio[row, col]) + 8) / 8))
    x, y = cell_centre(heatmap, row, col)
    assert tuple(image[y, x]) == ((255, fade, fade) if lin.A[row, col] > 0 else (fade, fade, 255))
    # a zero entry (∂ṡ/∂s) is white; the line before z_v is the node images' grey
    x, y = cell_centre(heatmap, 7, 8)
    assert lin.A[7, 8] == 0 and tuple(image[y, x]) == (255, 255, 255)
    g = heatmap.geometry_of_cells()
    line_y = int(round(g.top + (12 + model.n_joints) * g.cell))
    x, _ = cell_centre(heatmap, 0, 3)
    assert any(tuple(image[yy, x]) == (90, 90, 90) for yy in (line_y - 1, line_y, line_y + 1))


def test_every_row_and_column_has_its_name_drawn(qt, view, quadruped):
    model, lin = quadruped
    view.show_data(published(lin), model.state_labels, lin.contact_labels)
    heatmap = view.heatmap
    g = heatmap.geometry_of_cells()
    assert heatmap.rows.labels == model.state_labels and g.label_stride(heatmap.fontMetrics().height()) == 1
    image = pixels(heatmap)
    dark = image.sum(axis=2) < 300
    for i in range(len(model.state_labels)):
        _, y, _, h = g.cell_rect(i, 0)
        assert dark[int(y):int(y + h), : g.left - 2].any(), f"no name drawn left of row {i}"
        x, _, w, _ = g.cell_rect(0, i)
        assert dark[: g.top - 2, int(x):int(x + w)].any(), f"no name drawn above column {i}"
    # names of blanks (as wide as the real ones): the margins stay white, so the check above can fail
    blank = type(heatmap.rows)((" " * 30,) * len(model.state_labels), heatmap.rows.blocks)
    heatmap.rows = heatmap.cols = blank
    blank_g = heatmap.geometry_of_cells()
    assert blank_g.top > 100 and blank_g.left > 100
    dark = pixels(heatmap).sum(axis=2) < 300
    assert not dark[: blank_g.top - 2, blank_g.left:].any() and not dark[blank_g.top:, : blank_g.left - 2].any()


def test_hovering_a_cell_names_its_row_column_and_value(qt, view, quadruped):
    QtCore = qt[0]
    model, lin = quadruped
    view.show_data(published(lin), model.state_labels, lin.contact_labels)
    heatmap = view.heatmap
    n = model.n_joints
    row, col = 12 + n + 2, 6 + 1  # r:<third joint> against s:<second joint>
    x, y = cell_centre(heatmap, row, col)
    send_mouse(qt, heatmap, QtCore.QEvent.MouseMove, x, y)
    expected = f"A[r:{model.joint_names[2]}, s:{model.joint_names[1]}] = {lin.A[row, col]:.6e}"
    assert view.hover_label.text() == expected and heatmap.toolTip() == expected
    image = pixels(heatmap)
    cx, cy, w, h = heatmap.geometry_of_cells().cell_rect(row, col)
    assert tuple(image[int(cy), int(cx + w / 2)]) == (0, 0, 0)  # the hovered cell is outlined
    send_mouse(qt, heatmap, QtCore.QEvent.MouseMove, 2, 2)  # off the cells
    assert view.hover_label.text() == ""


def test_blocks_zoom_pan_and_the_other_matrices(qt, view, quadruped):
    QtCore = qt[0]
    model, lin = quadruped
    n = model.n_joints
    view.show_data(published(lin), model.state_labels, lin.contact_labels)
    view.row_block_box.setCurrentIndex(view.row_block_box.findText("z_v"))
    view.col_block_box.setCurrentIndex(view.col_block_box.findText("z_s"))
    window = view.heatmap.window
    assert (window.row0, window.row1, window.col0, window.col1) == (6 + n, 12 + n, 6, 6 + n)
    x, y = cell_centre(view.heatmap, 6 + n, 6)
    send_mouse(qt, view.heatmap, QtCore.QEvent.MouseMove, x, y)
    assert view.hover_label.text().startswith(f"A[v:x, s:{model.joint_names[0]}] = ")
    send_mouse(qt, view.heatmap, QtCore.QEvent.MouseButtonDblClick, x, y, QtCore.Qt.LeftButton)
    assert view.heatmap.window.shape == lin.A.shape
    for topic, matrix in published(lin).items():
        view.select(topic=topic)
        view.show_data(published(lin), margin_labels=margin_labels(lin))  # (what the subscriptions then bring)
        assert view.heatmap.matrix is not None and np.array_equal(view.heatmap.matrix, matrix), topic
        assert view.status.text().startswith(f"/robot_linearization/{topic}:")
    view.select(topic="M_inv")
    assert view.heatmap.matrix is None and view.status.text() == "waiting for /robot_linearization/M_inv"
    view.show_data(published(lin))
    assert view.heatmap.rows.labels[:6] == ("v:x", "v:y", "v:z", "v:rx", "v:ry", "v:rz")
    view.scale_box.setCurrentIndex(view.scale_box.findData("linear"))
    assert view.heatmap.scale == "linear" and view.colour_bar.scale == "linear"


def test_pause_keeps_the_picture_and_copy_gives_the_shown_matrix(qt, view, quadruped):
    model, lin = quadruped
    view.show_data(published(lin), model.state_labels, lin.contact_labels)
    before = pixels(view.heatmap)
    view.pause_button.setChecked(True)
    assert not view.show_data({"A": -lin.A})
    assert np.array_equal(pixels(view.heatmap), before) and np.array_equal(view.heatmap.matrix, lin.A)
    table = list(csv.reader(io.StringIO(view.copy("csv"))))
    assert np.array_equal(np.array([[float(x) for x in r[1:]] for r in table[1:]]), lin.A)
    assert qt[2].QApplication.clipboard().text() == view.copy_text("csv")
    view.pause_button.setChecked(False)
    assert view.show_data({"A": -lin.A}) and not np.array_equal(pixels(view.heatmap), before)
    namespace = {}
    exec(view.copy_text("numpy"), namespace)  # noqa: S102
    assert np.array_equal(namespace["A"], -lin.A)


def test_the_eigenvalue_pane_and_the_force_table(qt, view, quadruped):
    model, lin = quadruped
    view.show_data(published(lin), model.state_labels, lin.contact_labels)
    radius = np.abs(np.linalg.eigvals(lin.A_d)).max()
    assert view.spectrum_widget.spectrum.discrete and f"{radius:.4g}" in view.spectrum_label.text()
    image = pixels(view.spectrum_widget)
    unstable = (np.abs(np.linalg.eigvals(lin.A_d)) > 1).any()
    red = ((image[..., 0] > 200) & (image[..., 1] < 40) & (image[..., 2] < 40)).any()
    assert red == unstable  # eigenvalues outside the unit circle are red
    table = view.forces_table
    assert table.rowCount() == 4 and table.item(2, 0).text() == "hind_left_foot"
    assert table.item(2, 6).text() == f"{lin.contact_forces[11]:.4g}"  # mz of the 6d sole
    assert table.item(0, 4).text() == ""  # a point contact has no moment
    without_step = {k: v for k, v in published(lin).items() if k not in ("A_d", "B_d")}
    view.matrices = {}
    view.show_data(without_step)
    assert not view.spectrum_widget.spectrum.discrete
    assert f"{np.linalg.eigvals(lin.A).real.max():.4g}" in view.spectrum_label.text()


def test_a_matrix_that_does_not_fit_its_names_is_not_drawn(qt, view, quadruped):
    model, lin = quadruped
    view.show_data({"A": np.zeros((10, 10))}, model.state_labels, lin.contact_labels)
    assert "10×10" in view.status.text() and view.heatmap.matrix is None
    assert "waiting" in view.status.text()


def test_each_name_is_drawn_beside_its_own_row_and_column(qt, view, quadruped):
    """One name at a time (the others blank): its ink lies within its own row's (column's) band of
    cells, not the next one's — a drawing shifted by one row would put it one cell away."""
    model, lin = quadruped
    view.show_data(published(lin), model.state_labels, lin.contact_labels)
    heatmap = view.heatmap
    count = len(model.state_labels)
    for index in (0, 7, count // 2, count - 1):
        names = tuple("H:x" if k == index else " " for k in range(count))
        heatmap.rows = heatmap.cols = type(heatmap.rows)(names, heatmap.rows.blocks)
        g = heatmap.geometry_of_cells()
        assert g.label_stride(heatmap.fontMetrics().height()) == 1
        dark = pixels(heatmap).sum(axis=2) < 300
        ink_rows = np.flatnonzero(dark[g.top:, : g.left - 2].any(axis=1)) + g.top
        ink_cols = np.flatnonzero(dark[: g.top - 2, g.left:].any(axis=0)) + g.left
        _, y, _, h = g.cell_rect(index, 0)
        x, _, w, _ = g.cell_rect(0, index)
        assert ink_rows.size and y - 1 <= ink_rows.min() and ink_rows.max() <= y + h + 1, (index, ink_rows, y, h)
        assert ink_cols.size and x - 1 <= ink_cols.min() and ink_cols.max() <= x + w + 1, (index, ink_cols, x, w)


def test_rqt_is_closed_once_whichever_paths_ask_and_not_while_it_closes_itself(qt, monkeypatch):
    """closing.close_rqt, asked by the signal's path and by the context's path in one turn of the event
    loop, closes the main window once (a second close let qt_gui unload the plugin twice); a window whose
    first close event has run (qt_gui's MainWindow marks it: it is closing itself) is left to it."""
    from robot_linearization.rqt import closing

    QtWidgets = qt[2]

    class Window(QtWidgets.QMainWindow):
        """Closes as qt_gui's MainWindow does: its first close event only marks it and starts the
        plugins' shutdown (the window stays), the next one closes it."""

        def __init__(self):
            super().__init__()
            self.close_events = 0
            self._save_on_close_signaled = False

        def closeEvent(self, event):  # noqa: N802 (Qt's name)
            self.close_events += 1
            if self._save_on_close_signaled:
                event.accept()
            else:
                self._save_on_close_signaled = True
                event.ignore()

    monkeypatch.setattr(closing, "_closed_by_us", False)
    window = Window()
    window.show()
    closing.close_rqt()  # the signal's path
    closing.close_rqt()  # the context's path, in the same turn
    assert window.close_events == 1 and window.isVisible()  # (the rest is qt_gui's: the plugins, then close)
    monkeypatch.setattr(closing, "_closed_by_us", False)
    closing_itself = Window()
    closing_itself.show()
    closing_itself.close()  # rqt's own close (its button): its first close event has run
    closing.close_rqt()  # then a signal
    assert closing_itself.close_events == 1
    for each in (window, closing_itself):
        each.deleteLater()
    qt[0].QCoreApplication.sendPostedEvents(None, qt[0].QEvent.DeferredDelete)


HAND_OVER = """
import os, signal, sys
from robot_linearization.rqt.qt import QtCore, QtWidgets
from robot_linearization.rqt import closing

when, number = sys.argv[1], getattr(signal, sys.argv[2])
app = QtWidgets.QApplication([])
window = QtWidgets.QMainWindow()  # rqt's main window
window.show()
found = {n: signal.getsignal(n) for n in closing.CloseOnSignal.SIGNALS}
# as robot_linearization_rqt does, before it imports the view
received = []
previous = {n: signal.signal(n, lambda n, frame: received.append(n)) for n in closing.CloseOnSignal.SIGNALS}
if when == "import":
    os.kill(os.getpid(), number)
closing.CLOSE_ON_SIGNAL.take_over(previous, received)
if when == "load":
    os.kill(os.getpid(), number)


class Logger:
    def info(self, text):
        print(text, flush=True)


class View(QtWidgets.QWidget):  # what CloseOnSignal uses of the plugin: its node's logger, shutdown_plugin
    def __init__(self):
        super().__init__()
        self.node = type("Node", (), {"get_logger": staticmethod(Logger)})()

    def shutdown_plugin(self):
        print("shut down", flush=True)
        closing.CLOSE_ON_SIGNAL.remove(self)


closing.CLOSE_ON_SIGNAL.add(View())
if when == "view":
    os.kill(os.getpid(), number)
QtCore.QTimer.singleShot(5000, lambda: (print("still open", flush=True), app.quit()))
app.exec()
print("window closed" if not window.isVisible() else "window open")
print("handlers put back" if {n: signal.getsignal(n) for n in found} == found else "handlers not put back")
"""


@pytest.mark.parametrize("when, name", [("import", "SIGTERM"), ("import", "SIGINT"), ("load", "SIGINT"),
                                        ("view", "SIGINT"), ("view", "SIGTERM")])
def test_a_signal_while_rqt_imports_or_makes_the_view_closes_rqt_once_the_view_is_there(when, name):
    """rqt's entry takes the signals before it imports the view (robot_linearization_rqt: rclcpp's
    handler, which logs inside the signal handler, can hang rqt): a signal while the view is imported
    (kept by the entry's handler), while it is made (kept by closing.CloseOnSignal) or once it is there
    shuts the view down and closes rqt's window, once, on the event loop; the handlers found are put
    back.  (Offscreen, in a process of its own: its signal handlers are not pytest's.)"""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", HAND_OVER, when, name], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    lines = done.stdout.splitlines()
    said = (f"{name} while rqt was loading the view: closing the view and rqt" if when != "view"
            else f"{name}: closing the view and rqt")
    assert done.returncode == 0, done.stderr[-2000:]
    assert lines == [said, "shut down", "window closed", "handlers put back"], (lines, done.stderr[-2000:])
