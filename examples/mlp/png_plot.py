"""A small line plot written as a PNG with zlib and struct alone (matplotlib is not a diffc
dependency): one colored polyline per series on a log-scale y axis, a frame, and light grid lines
at the powers of ten. No text: the caller names the colors (COLORS) where it reports the file.
"""

from __future__ import annotations

import math
import struct
import zlib

import numpy as np

COLORS = {"blue": (31, 119, 180), "orange": (255, 127, 14), "green": (44, 160, 44), "red": (214, 39, 40)}
FRAME, GRID, BACKGROUND = (60, 60, 60), (225, 225, 225), (255, 255, 255)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path, rgb: np.ndarray) -> None:
    """Writes an h x w x 3 uint8 image as an 8-bit RGB PNG."""
    h, w, _ = rgb.shape
    rows = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))  # filter type 0 on every row
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)))
        f.write(_chunk(b"IDAT", zlib.compress(rows, 9)))
        f.write(_chunk(b"IEND", b""))


def _line(img: np.ndarray, x0: int, y0: int, x1: int, y1: int, color, thick: int = 1) -> None:
    """Bresenham's line, `thick` pixels square brush, clipped to the image."""
    h, w, _ = img.shape
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    err = dx + dy
    r = thick // 2
    while True:
        img[max(0, y0 - r):min(h, y0 + r + 1), max(0, x0 - r):min(w, x0 + r + 1)] = color
        if x0 == x1 and y0 == y1:
            return
        e2 = 2 * err
        if e2 >= dy:
            err += dy
            x0 += sx
        if e2 <= dx:
            err += dx
            y0 += sy


def line_plot(path, series: list[tuple[list, list, str]], width: int = 640, height: int = 400, margin: int = 20) -> None:
    """Plots each (xs, ys, color name) of `series` (ys > 0, log scale) into one PNG."""
    xs_all = [float(x) for xs, _, _ in series for x in xs]
    ys_all = [math.log10(y) for _, ys, _ in series for y in ys if y > 0]
    if not xs_all or not ys_all:
        raise ValueError("line_plot: nothing to plot (no positive values)")
    x_lo, x_hi = min(xs_all), max(xs_all)
    y_lo, y_hi = math.floor(min(ys_all)), math.ceil(max(ys_all))
    x_hi, y_hi = (x_hi if x_hi > x_lo else x_lo + 1), (y_hi if y_hi > y_lo else y_lo + 1)
    img = np.empty((height, width, 3), np.uint8)
    img[:] = BACKGROUND
    left, right, top, bottom = margin, width - 1 - margin, margin, height - 1 - margin

    def px(x: float, y: float) -> tuple[int, int]:
        u = (x - x_lo) / (x_hi - x_lo)
        v = (math.log10(y) - y_lo) / (y_hi - y_lo)
        return round(left + u * (right - left)), round(bottom - v * (bottom - top))

    for decade in range(y_lo, y_hi + 1):
        _, y = px(x_lo, 10.0**decade)
        _line(img, left, y, right, y, GRID)
    for a, b in (((left, top), (right, top)), ((right, top), (right, bottom)),
                 ((right, bottom), (left, bottom)), ((left, bottom), (left, top))):
        _line(img, *a, *b, FRAME)
    for i, (xs, ys, color) in enumerate(series):
        thick = 4 if i == 0 and len(series) > 1 else 2  # the first one wider, so that it shows beneath the others
        points = [px(float(x), float(y)) for x, y in zip(xs, ys) if y > 0]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            _line(img, x0, y0, x1, y1, COLORS[color], thick=thick)
        if len(points) == 1:
            _line(img, *points[0], *points[0], COLORS[color], thick=3)
    write_png(path, img)
