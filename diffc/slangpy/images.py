"""Reading images into tensors (`Tensor.load_from_image`) without an image library: PNG files,
8 or 16 bits per channel, grey, grey + alpha, RGB or RGBA, not interlaced. Other files are a
ValueError that says so."""

from __future__ import annotations

import struct
import zlib

import numpy as np

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # PNG colour type -> channels


def read_png(path) -> np.ndarray:
    """The image as floats in [0, 1], shape (height, width, channels)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"slangpy.Tensor.load_from_image: '{path}' is not a PNG file (only PNG images are read)")
    pos, idat, header = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + n
    if header is None:
        raise ValueError(f"slangpy.Tensor.load_from_image: '{path}' has no PNG header")
    width, height, depth, colour, _, _, interlace = header
    if colour not in _CHANNELS or depth not in (8, 16) or interlace:
        raise ValueError(f"slangpy.Tensor.load_from_image: '{path}': PNG colour type {colour}, {depth} bits, "
                         f"interlace {interlace} is not read (8 or 16 bits, grey/RGB/alpha, not interlaced are)")
    channels = _CHANNELS[colour]
    bpp = channels * depth // 8
    stride = width * bpp
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8).reshape(height, stride + 1)
    rows = np.zeros((height, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        out = np.zeros(stride, np.int32)
        if kind == 0:
            out = line
        elif kind == 2:
            out = (line + prev) & 255
        else:  # Sub, Average, Paeth depend on the pixel to the left: one byte column group at a time
            for x in range(stride):
                a = out[x - bpp] if x >= bpp else 0
                c = prev[x - bpp] if x >= bpp else 0
                b = prev[x]
                if kind == 1:
                    pred = a
                elif kind == 3:
                    pred = (a + b) // 2
                elif kind == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                else:
                    raise ValueError(f"slangpy.Tensor.load_from_image: '{path}': bad PNG filter {kind}")
                out[x] = (line[x] + pred) & 255
        rows[y] = out
        prev = out
    if depth == 16:
        values = (rows[:, 0::2] * 256 + rows[:, 1::2]) / 65535.0
    else:
        values = rows / 255.0
    return values.reshape(height, width, channels)


def srgb_to_linear(v: np.ndarray) -> np.ndarray:
    return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)
