"""Buffers of structs whose fields mix 32-bit kinds (`struct { float m; float v; int it; }`):
one memref of words, a float's bits stored as they are (types.word_scalar). Read, updated and
written back element by element at run-time indices, through an array of structs holding the
buffers; run through `diffc run`, the words compared with the same update done in numpy."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from diffc.cli import main
from slang_harness import compile_error

SRC = """
struct Moments { float m; uint seen; float v; int it; };
struct Slot { RWStructuredBuffer<float> grads; RWStructuredBuffer<Moments> states; };
//TEST_INPUT: ubuffer(data=[0.5 -2.0 4.0], stride=4):name=G
RWStructuredBuffer<float> G;
//TEST_INPUT: ubuffer(data=[WORDS], stride=4):out,name=W
RWStructuredBuffer<Moments> W;

void update(Slot[1] slots, int2 at)
{
    Slot s = slots[at.x];
    Moments k = s.states[at.y];
    float g = s.grads[at.y];
    k.it++;
    k.seen += 2u;
    k.m = 0.9 * k.m + 0.1 * g;
    k.v = k.v + g * g;
    s.states[at.y] = k;
}

[numthreads(3, 1, 1)]
void computeMain(uint3 t : SV_DispatchThreadID)
{
    Slot slots[1];
    slots[0].grads = G;
    slots[0].states = W;
    update(slots, int2(0, int(t.x)));
    update(slots, int2(0, int(t.x)));
}
"""


def word(x: float) -> int:
    return struct.unpack("<i", struct.pack("<f", x))[0]


def test_mixed_word_struct_buffer_updates_in_place(tmp_path, capsys):
    start = [(1.0, 5, 0.25, 3), (-0.5, 0, 1.5, -1), (0.0, 7, 0.0, 0)]
    words = [v for m, seen, var, it in start for v in (word(m), seen, word(var), it)]
    path = tmp_path / "moments.slang"
    path.write_text(SRC.replace("WORDS", " ".join(map(str, words))))
    assert main(["run", str(path)]) == 0
    out = np.array([int(v) for v in capsys.readouterr().out.split()[2:]], dtype=np.int64)
    got = out.astype(np.uint32).view(np.int32).reshape(3, 4)
    g = np.array([0.5, -2.0, 4.0], dtype=np.float32)
    for i, (m, seen, var, it) in enumerate(start):
        m, var = np.float32(m), np.float32(var)
        for _ in range(2):
            m = np.float32(0.9) * m + np.float32(0.1) * g[i]
            var = var + g[i] * g[i]
        assert got[i, 0].view(np.float32) == pytest.approx(float(m), rel=1e-6)
        assert got[i, 1] == seen + 4
        assert got[i, 2].view(np.float32) == pytest.approx(float(var), rel=1e-6)
        assert got[i, 3] == it + 2


def test_a_buffer_of_structs_mixing_widths_is_refused():
    src = "struct H { half a; int b; };\nRWStructuredBuffer<H> hs;\n[numthreads(1, 1, 1)] void main() {}\n"
    msg = compile_error(src)
    assert "prog.slang:2:1: error[E0008]: a buffer of H is not supported" in msg and "all 32-bit" in msg
