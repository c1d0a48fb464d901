"""The rqt view of a running linearization node (issue: monitor it in rqt).

Everything it decides — which node and matrix, the row and column names, the
block lines, the colour scale, the cell under the mouse, the eigenvalues, the
contact forces, the copied text — lives in the Qt- and rclpy-free modules
:mod:`.matrices`, :mod:`.heatmap`, :mod:`.spectrum`, :mod:`.export` and
:mod:`.inputs`;
:mod:`.widgets` draws it with Qt, :mod:`.plugin` is the rqt_gui_py glue that
subscribes to the node's topics.
"""
