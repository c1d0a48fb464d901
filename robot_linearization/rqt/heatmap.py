"""A matrix as a readable heatmap: colour scale, colours, the visible window, the
cell under the mouse and its text (Qt-free; :mod:`.widgets` paints what this decides).

Colours are those of the node's heatmap images (ros/images.py): red positive, blue
negative, white zero, the strength of the colour the entry's *level* in [−1, 1] —
on the signed log scale ``sign(x)·(log10(|x|/peak) + decades)/decades`` (entries
more than ``decades`` below the largest |entry|, the peak, are white), or linear,
``x/peak``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ros.images import signed_log_scale

SCALES = ("log", "linear")
DECADES = 8.0


def levels(matrix: np.ndarray, scale: str = "log", decades: float = DECADES) -> tuple[np.ndarray, float]:
    """(level of each entry in [−1, 1], peak = the largest |entry|) on ``scale``."""
    if scale == "log":
        return signed_log_scale(matrix, decades)
    if scale != "linear":
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    m = np.asarray(matrix, dtype=float)
    peak = float(np.abs(m).max(initial=0.0))
    return (m / peak if peak > 0 else np.zeros_like(m)), peak


def colours(level: np.ndarray) -> np.ndarray:
    """(…, 3) uint8 RGB of levels in [−1, 1]: (255, f, f) above zero, (f, f, 255)
    below, white at zero, f = ⌊255·(1 − |level|)⌋ (as the node's images)."""
    level = np.asarray(level, dtype=float)
    fade = (255.0 * (1.0 - np.abs(level))).astype(np.uint8)
    full = np.full_like(fade, 255)
    red = np.where(level < 0, fade, full)
    blue = np.where(level > 0, fade, full)
    green = np.where(level != 0, fade, full)
    return np.stack([red, green, blue], axis=-1)


def colour_bar_ticks(peak: float, scale: str = "log", decades: float = DECADES) -> list[tuple[float, str]]:
    """(level, text) of the ticks beside the colour bar: ±peak, the middle of each
    half (±peak·10^(−decades/2) on the log scale, ±peak/2 linear) and zero."""
    if peak == 0.0:
        return [(0.0, "0 (all entries zero)")]
    middle = peak * 10.0 ** (-decades / 2) if scale == "log" else peak / 2
    zero = f"0, < {peak * 10.0 ** -decades:.1e}" if scale == "log" else "0"
    return [(1.0, f"+{peak:.3g}"), (0.5, f"+{middle:.3g}"), (0.0, zero), (-0.5, f"−{middle:.3g}"),
            (-1.0, f"−{peak:.3g}")]


@dataclass(frozen=True)
class Window:
    """The part of a rows×cols matrix on screen: rows [row0, row1), cols [col0, col1)
    (None: to the end), moved inside the matrix."""

    rows: int
    cols: int
    row0: int = 0
    row1: int | None = None
    col0: int = 0
    col1: int | None = None

    def __post_init__(self):
        row1, col1 = _end(self.row1, self.rows), _end(self.col1, self.cols)
        row0, row1 = _clamped(self.row0, row1, self.rows)
        col0, col1 = _clamped(self.col0, col1, self.cols)
        object.__setattr__(self, "row0", row0)
        object.__setattr__(self, "row1", row1)
        object.__setattr__(self, "col0", col0)
        object.__setattr__(self, "col1", col1)

    @property
    def shape(self) -> tuple[int, int]:
        return _end(self.row1, self.rows) - self.row0, _end(self.col1, self.cols) - self.col0

    def zoomed(self, factor: float, about_row: float, about_col: float) -> "Window":
        """Zoomed in (factor < 1: fewer entries shown) or out about a point in entries."""
        def one(first, end, size, about):
            span = max(1, min(size, round((end - first) * factor)))
            start = round(about - (about - first) * span / max(end - first, 1))
            return start, start + span
        row0, row1 = one(self.row0, self.row1, self.rows, about_row)
        col0, col1 = one(self.col0, self.col1, self.cols, about_col)
        return Window(self.rows, self.cols, row0, row1, col0, col1)

    def panned(self, rows: int, cols: int) -> "Window":
        """Moved by whole entries, kept inside the matrix."""
        return Window(self.rows, self.cols, self.row0 + rows, _end(self.row1, self.rows) + rows, self.col0 + cols,
                      _end(self.col1, self.cols) + cols)


def _end(end: int | None, size: int) -> int:
    return size if end is None else end  # (None: to the end)


def _clamped(first: int, end: int, size: int) -> tuple[int, int]:
    """[first, end) inside [0, size), its length kept where it fits."""
    span = max(0, min(end - first, size))
    first = min(max(first, 0), size - span)
    return first, first + span


@dataclass(frozen=True)
class Geometry:
    """Where a Window's cells are on screen: a left margin for the row names, a top
    margin for the column names, then square cells as large as the area allows."""

    window: Window
    width: int  # of the whole picture [px]
    height: int
    left: int  # margin of the row names [px]
    top: int  # margin of the column names [px]

    @property
    def cell(self) -> float:
        rows, cols = self.window.shape
        if rows == 0 or cols == 0:
            return 0.0
        return max(0.0, min((self.width - self.left) / cols, (self.height - self.top) / rows))

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """(row, col) of the matrix entry drawn at pixel (x, y), or None off the cells."""
        cell = self.cell
        if cell <= 0:
            return None
        j, i = math.floor((x - self.left) / cell), math.floor((y - self.top) / cell)
        rows, cols = self.window.shape
        if not (0 <= i < rows and 0 <= j < cols):
            return None
        return self.window.row0 + i, self.window.col0 + j

    def cell_rect(self, row: int, col: int) -> tuple[float, float, float, float]:
        """(x, y, width, height) of entry (row, col) of the matrix on screen."""
        cell = self.cell
        return (self.left + (col - self.window.col0) * cell, self.top + (row - self.window.row0) * cell, cell, cell)

    def label_stride(self, text_height: float) -> int:
        """Name every k-th row/column so that names do not overlap (k ≥ 1)."""
        cell = self.cell
        return 1 if cell >= text_height or cell <= 0 else math.ceil(text_height / cell)


def describe(symbol: str, matrix: np.ndarray, row_labels, col_labels, row: int, col: int) -> str:
    """The text of one entry: ``A[r:knee, v:x] = -1.23457e-03``."""
    return f"{symbol}[{row_labels[row]}, {col_labels[col]}] = {matrix[row, col]:.6e}"
