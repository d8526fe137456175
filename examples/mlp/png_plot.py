"""A small line plot written as a PNG with zlib and struct alone (matplotlib is not a diffc
dependency): one colored polyline per series on a log-scale y axis, a frame, light grid lines at
the powers of ten, tick labels on both axes, axis labels and a legend, in a 5x7 pixel font.
"""

from __future__ import annotations

import math
import struct
import zlib

import numpy as np

COLORS = {"blue": (31, 119, 180), "orange": (255, 127, 14), "green": (44, 160, 44), "red": (214, 39, 40)}
FRAME, GRID, BACKGROUND = (60, 60, 60), (225, 225, 225), (255, 255, 255)


# A 5 x 7 pixel font: each glyph is 7 rows, top first, of 5 bits (the leftmost pixel the highest);
# g, j, p, q and y have an eighth, their descenders below the line.
FONT = {
    "0": (0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E), "1": (0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "2": (0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F), "3": (0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E),
    "4": (0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02), "5": (0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E),
    "6": (0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E), "7": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08),
    "8": (0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E), "9": (0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C),
    "a": (0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F), "b": (0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E),
    "c": (0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E), "d": (0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F),
    "e": (0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E), "f": (0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08),
    "g": (0x00, 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E), "h": (0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11),
    "i": (0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E), "j": (0x02, 0x00, 0x06, 0x02, 0x02, 0x02, 0x12, 0x0C),
    "k": (0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12), "l": (0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E),
    "m": (0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11), "n": (0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11),
    "o": (0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E), "p": (0x00, 0x00, 0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10),
    "q": (0x00, 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x01), "r": (0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10),
    "s": (0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E), "t": (0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06),
    "u": (0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D), "v": (0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04),
    "w": (0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A), "x": (0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11),
    "y": (0x00, 0x00, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x0E), "z": (0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F),
    " ": (0, 0, 0, 0, 0, 0, 0), ".": (0, 0, 0, 0, 0, 0x0C, 0x0C), ",": (0, 0, 0, 0, 0x0C, 0x04, 0x08),
    "-": (0, 0, 0, 0x1F, 0, 0, 0), "+": (0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0), ":": (0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0),
    "(": (0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02), ")": (0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08),
    "%": (0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03), "/": (0, 0x01, 0x02, 0x04, 0x08, 0x10, 0),
}
SCALE = 2  # font pixels per glyph pixel
ADVANCE = 6 * SCALE  # a glyph and one column of space
LINE = 9 * SCALE  # a line of text and its spacing
TEXT = (30, 30, 30)


def text_width(text: str) -> int:
    return len(text) * ADVANCE - SCALE if text else 0


def draw_text(img: np.ndarray, x: int, y: int, text: str, color=TEXT) -> None:
    """Draws `text` (lower case, digits and FONT's signs; others as a space) with its top left
    corner at (x, y), clipped to the image."""
    h, w, _ = img.shape
    for k, ch in enumerate(text.lower()):
        for row, bits in enumerate(FONT.get(ch, FONT[" "])):
            for col in range(5):
                if bits & (0x10 >> col):
                    x0, y0 = x + k * ADVANCE + col * SCALE, y + row * SCALE
                    img[max(0, y0):min(h, y0 + SCALE), max(0, x0):min(w, x0 + SCALE)] = color


def _decade_label(d: int) -> str:
    return f"1e{d}"



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


def line_plot(path, series: list[tuple], width: int = 640, height: int = 400, margin: int = 20,
              xlabel: str = "", ylabel: str = "") -> tuple[int, int, int, int]:
    """Plots each (xs, ys, color name) or (xs, ys, color name, legend label) of `series` (ys > 0,
    log scale) into one PNG, with tick labels, the axis labels given and a legend of the labelled
    series; returns the plotting area (left, top, right, bottom), in pixels."""
    xs_all = [float(x) for xs, *_ in series for x in xs]
    ys_all = [math.log10(y) for _, ys, *_ in series for y in ys if y > 0]
    if not xs_all or not ys_all:
        raise ValueError("line_plot: nothing to plot (no positive values)")
    x_lo, x_hi = min(xs_all), max(xs_all)
    y_lo, y_hi = math.floor(min(ys_all)), math.ceil(max(ys_all))
    x_hi, y_hi = (x_hi if x_hi > x_lo else x_lo + 1), (y_hi if y_hi > y_lo else y_lo + 1)
    img = np.empty((height, width, 3), np.uint8)
    img[:] = BACKGROUND
    tick = 7 * SCALE  # the height of a line of text
    left = margin + max(text_width(_decade_label(d)) for d in range(y_lo, y_hi + 1)) + 2 * SCALE
    top = margin + (LINE + tick // 2 if ylabel else tick // 2)
    right = width - 1 - margin
    bottom = height - 1 - margin - LINE - (LINE if xlabel else 0)
    if right - left < 20 or bottom - top < 20:
        raise ValueError(f"line_plot: {width} x {height} pixels leave no room to plot beside the labels")

    def px(x: float, y: float) -> tuple[int, int]:
        u = (x - x_lo) / (x_hi - x_lo)
        v = (math.log10(y) - y_lo) / (y_hi - y_lo)
        return round(left + u * (right - left)), round(bottom - v * (bottom - top))

    for decade in range(y_lo, y_hi + 1):
        _, y = px(x_lo, 10.0**decade)
        _line(img, left, y, right, y, GRID)
        label = _decade_label(decade)
        draw_text(img, left - 2 * SCALE - text_width(label), y - tick // 2, label)
    for x, align in ((x_lo, 0), ((x_lo + x_hi) / 2, 1), (x_hi, 2)):  # (the ends' labels inside the frame)
        at, _ = px(x, 10.0**y_lo)
        _line(img, at, bottom, at, bottom + SCALE, FRAME)
        label = _x_label(x)
        draw_text(img, at - align * text_width(label) // 2, bottom + 2 * SCALE, label)
    if xlabel:
        draw_text(img, (left + right - text_width(xlabel)) // 2, bottom + 2 * SCALE + LINE, xlabel)
    if ylabel:
        draw_text(img, margin, margin, ylabel)
    for a, b in (((left, top), (right, top)), ((right, top), (right, bottom)),
                 ((right, bottom), (left, bottom)), ((left, bottom), (left, top))):
        _line(img, *a, *b, FRAME)
    for i, (xs, ys, color, *_) in enumerate(series):
        thick = 4 if i == 0 and len(series) > 1 else 2  # the first one wider, so that it shows beneath the others
        points = [px(float(x), float(y)) for x, y in zip(xs, ys) if y > 0]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            _line(img, x0, y0, x1, y1, COLORS[color], thick=thick)
        if len(points) == 1:
            _line(img, *points[0], *points[0], COLORS[color], thick=3)
    _legend(img, [(color, label[0]) for _, _, color, *label in series if label], right, top)
    write_png(path, img)
    return left, top, right, bottom


def _x_label(x: float) -> str:
    return f"{x:g}" if abs(x) < 1e6 else f"{x:.0e}"


def _legend(img: np.ndarray, entries: list[tuple[str, str]], right: int, top: int) -> None:
    """A framed box in the top right corner of the plotting area: a short line in each color,
    then its label."""
    if not entries:
        return
    sample = 8 * SCALE
    w = sample + 3 * SCALE + max(text_width(t) for _, t in entries) + 4 * SCALE
    h = len(entries) * LINE + 3 * SCALE
    x0, y0 = right - 3 * SCALE - w, top + 3 * SCALE
    img[y0:y0 + h, x0:x0 + w] = BACKGROUND
    for a, b in (((x0, y0), (x0 + w, y0)), ((x0 + w, y0), (x0 + w, y0 + h)),
                 ((x0 + w, y0 + h), (x0, y0 + h)), ((x0, y0 + h), (x0, y0))):
        _line(img, *a, *b, FRAME)
    for k, (color, label) in enumerate(entries):
        y = y0 + 2 * SCALE + k * LINE
        mid = y + 7 * SCALE // 2
        _line(img, x0 + 2 * SCALE, mid, x0 + 2 * SCALE + sample, mid, COLORS[color], thick=3)
        draw_text(img, x0 + 5 * SCALE + sample, y, label)
