"""The shown matrix as text to paste elsewhere: CSV with the names, or NumPy source.

Both round-trip every float64 exactly (17 significant digits)."""

from __future__ import annotations

import csv
import io

import numpy as np


def _number(x: float) -> str:
    return repr(float(x))  # shortest text that reads back to the same double


def csv_text(matrix: np.ndarray, row_labels, col_labels, corner: str = "") -> str:
    """CSV: a header row (``corner``, then the column names), then one row per matrix
    row (its name, then its entries)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([corner, *col_labels])
    for label, row in zip(row_labels, np.asarray(matrix, dtype=float)):
        writer.writerow([label, *map(_number, row)])
    return buffer.getvalue()


def numpy_text(name: str, matrix: np.ndarray, row_labels, col_labels) -> str:
    """Python source that rebuilds the matrix: ``import numpy as np``, the names as
    lists, then ``name = np.array([[…], …])`` (``name`` must be an identifier)."""
    if not name.isidentifier():
        raise ValueError(f"numpy_text: {name!r} is not a Python identifier")
    rows = ",\n    ".join("[" + ", ".join(map(_number, row)) + "]" for row in np.asarray(matrix, dtype=float))
    return (f"import numpy as np\n"
            f"{name}_rows = {list(row_labels)!r}\n"
            f"{name}_cols = {list(col_labels)!r}\n"
            f"{name} = np.array([\n    {rows}\n]).reshape({len(row_labels)}, {len(col_labels)})\n")
