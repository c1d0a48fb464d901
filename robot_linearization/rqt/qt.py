"""The Qt binding: rqt's (python_qt_binding, PyQt5 on Humble and Jazzy) inside rqt,
else PySide6 (the test extra: the widgets are tested offscreen without ROS).
Only the API the two share is used (no QAction, no exec_, Qt5-style enums)."""

try:
    from python_qt_binding import QtCore, QtGui, QtWidgets
except ImportError:
    from PySide6 import QtCore, QtGui, QtWidgets

__all__ = ["QtCore", "QtGui", "QtWidgets"]
