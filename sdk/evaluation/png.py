"""A grayscale PNG from a 2-d array, with the standard library alone (no plotting package in
the pinned stack): the confusion matrix beside a deploy report."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def write_gray_png(path: Path, image: np.ndarray) -> Path:
    """`image`: 2-d uint8 (0 black, 255 white), rows top to bottom."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    height, width = image.shape
    rows = b"".join(b"\x00" + image[y].tobytes() for y in range(height))  # filter 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grayscale
    data = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
    data += _chunk(b"IDAT", zlib.compress(rows, 9)) + _chunk(b"IEND", b"")
    path.write_bytes(data)
    return path


def confusion_png(path: Path, matrix: list[list[int]]) -> Path:
    """Rows: labels, columns: predictions; darker is more (each row scaled to its own count,
    so rare classes show as clearly as common ones). Cells of 16 pixels, smaller for many
    classes (the image stays within about 1024 pixels a side)."""
    counts = np.asarray(matrix, dtype=np.float64)
    cell = max(1, min(16, 1024 // max(len(counts), 1)))
    totals = counts.sum(axis=1, keepdims=True)
    share = np.divide(counts, totals, out=np.zeros_like(counts), where=totals > 0)
    pixels = (255 - np.round(share * 255)).astype(np.uint8)
    return write_gray_png(path, np.kron(pixels, np.ones((cell, cell), dtype=np.uint8)))
