"""Pictures of matrices: the colour map for the heatmap topics and PNG files."""

from __future__ import annotations

import struct
import zlib

import numpy as np


def heatmap_rgb(matrix: np.ndarray, cell: int = 0) -> np.ndarray:
    """(H, W, 3) uint8 picture of a matrix: red positive, blue negative, white
    zero, on a log scale spanning 8 decades below the largest |entry|, so both
    the big and the small couplings stay visible.  Each entry is a cell×cell block
    (cell 0: chosen to make the long side at least 400 px)."""
    m = np.asarray(matrix, dtype=float)
    peak = np.abs(m).max() if m.size else 0.0
    with np.errstate(divide="ignore"):
        level = np.where(m != 0, np.clip((np.log10(np.abs(m) / peak) + 8.0) / 8.0, 0.0, 1.0), 0.0) if peak > 0 \
            else np.zeros_like(m)
    fade = (255 * (1.0 - level)).astype(np.uint8)
    rgb = np.full(m.shape + (3,), 255, dtype=np.uint8)
    positive, negative = m > 0, m < 0
    rgb[positive, 1] = fade[positive]
    rgb[positive, 2] = fade[positive]
    rgb[negative, 0] = fade[negative]
    rgb[negative, 1] = fade[negative]
    cell = cell or max(1, -(-400 // max(1, max(m.shape))))  # ceil: at least 400 px along the long side
    return np.repeat(np.repeat(rgb, cell, axis=0), cell, axis=1)


def side_by_side(*images: np.ndarray, gap: int = 16) -> np.ndarray:
    """Place RGB images left to right on white, top-aligned."""
    height = max(im.shape[0] for im in images)
    width = sum(im.shape[1] for im in images) + gap * (len(images) - 1)
    canvas = np.full((height, width, 3), 255, dtype=np.uint8)
    x = 0
    for im in images:
        canvas[:im.shape[0], x:x + im.shape[1]] = im
        x += im.shape[1] + gap
    return canvas


def write_png(path, rgb: np.ndarray) -> None:
    """Write an (H, W, 3) uint8 array as an 8-bit RGB PNG (zlib, no filters)."""
    height, width, _ = rgb.shape
    raw = b"".join(b"\x00" + np.ascontiguousarray(rgb[y]).tobytes() for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 6)))
        f.write(chunk(b"IEND", b""))
