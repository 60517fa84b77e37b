"""PNG images with the standard library alone (no imaging package in the pinned stack): the
confusion matrix beside a deploy report, and the images of a `--calibration` folder."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# PNG colour type -> channels (0 gray, 2 RGB, 4 gray + alpha, 6 RGBA; 3, a palette, is not read).
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


class PngError(ValueError):
    """A file this reader does not take (not a PNG, or a kind of PNG it does not decode)."""


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def write_png(path: Path, image: np.ndarray) -> Path:
    """`image`: uint8, (H, W) gray or (H, W, C) with C channels of CHANNELS (0 black, 255
    white), rows top to bottom."""
    image = np.ascontiguousarray(image, dtype=np.uint8)
    height, width = image.shape[:2]
    channels = image.shape[2] if image.ndim == 3 else 1
    colour = {c: t for t, c in CHANNELS.items()}[channels]
    rows = b"".join(b"\x00" + image[y].tobytes() for y in range(height))  # filter 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)  # 8 bits a sample
    data = SIGNATURE + _chunk(b"IHDR", header)
    data += _chunk(b"IDAT", zlib.compress(rows, 9)) + _chunk(b"IEND", b"")
    Path(path).write_bytes(data)
    return Path(path)


def write_gray_png(path: Path, image: np.ndarray) -> Path:
    """`image`: 2-d uint8 (0 black, 255 white), rows top to bottom."""
    return write_png(path, np.asarray(image).reshape(np.shape(image)[:2]))


def read_png(path: Path) -> np.ndarray:
    """(H, W, C) uint8 (uint16 for a 16-bit PNG) of a non-interlaced gray, gray + alpha, RGB or
    RGBA PNG at 8 or 16 bits; anything else is a PngError saying what it is."""
    data = Path(path).read_bytes()
    if not data.startswith(SIGNATURE):
        raise PngError("not a PNG file")
    pos, header, idat = len(SIGNATURE), None, []
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    if header is None or not idat:
        raise PngError("a PNG without its header or image data (truncated?)")
    width, height, depth, colour, _, _, interlace = header
    if colour not in CHANNELS or depth not in (8, 16) or interlace:
        raise PngError(
            f"a PNG of colour type {colour}, {depth} bits{', interlaced' if interlace else ''}; "
            "read are gray, gray + alpha, RGB and RGBA at 8 or 16 bits, not interlaced"
        )
    channels = CHANNELS[colour]
    step = channels * depth // 8  # bytes per pixel: the filters' distance to the left
    stride = width * step
    try:
        raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8)
    except zlib.error as exc:
        raise PngError(f"corrupt PNG image data ({exc})") from None
    if raw.size < height * (stride + 1):
        raise PngError("a PNG with less image data than its size (truncated?)")
    lines = raw[: height * (stride + 1)].reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        kind, line = int(lines[y, 0]), lines[y, 1:]
        if kind == 0:
            row = line
        elif kind == 1:  # sub: a running sum along the row, per byte of a pixel
            row = (np.cumsum(line.reshape(width, step), axis=0, dtype=np.int64) & 0xFF).ravel()
        elif kind == 2:
            row = line + previous  # uint8 wraps as the filter does
        elif kind in (3, 4):
            row = _unfilter_left(kind, line.tolist(), previous.tolist(), step)
        else:
            raise PngError(f"corrupt PNG: row {y} has filter type {kind}")
        out[y] = row
        previous = out[y]
    if depth == 16:
        return out.view(">u2").astype(np.uint16).reshape(height, width, channels)
    return out.reshape(height, width, channels)


def _unfilter_left(kind: int, line: list[int], up: list[int], step: int) -> np.ndarray:
    """PNG's average (3) and Paeth (4) filters, which read the row's own decoded bytes to
    the left: byte by byte."""
    row = [0] * len(line)
    for i, value in enumerate(line):
        a = row[i - step] if i >= step else 0
        b = up[i]
        if kind == 3:
            predicted = (a + b) >> 1
        else:
            c = up[i - step] if i >= step else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            predicted = a if pa <= pb and pa <= pc else b if pb <= pc else c
        row[i] = (value + predicted) & 0xFF
    return np.array(row, dtype=np.uint8)


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
