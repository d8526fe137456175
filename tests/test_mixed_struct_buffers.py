"""Buffers of structs whose fields mix scalar kinds (`struct { float m; uint seen; float v; int it; }`):
memory of bytes in Slang's natural layout (features/byte_pointers.py). Read, updated and written
back element by element at run-time indices, through an array of structs holding the buffers;
dispatched with the elements as numpy's aligned dtype of that layout, compared with the same
update done in numpy."""

from __future__ import annotations

import numpy as np
import pytest

import diffc

SRC = """
struct Moments { float m; uint seen; float v; int it; };
struct Slot { RWStructuredBuffer<float> grads; RWStructuredBuffer<Moments> states; };
RWStructuredBuffer<float> G;
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



def test_mixed_struct_buffer_updates_in_place(tmp_path):
    path = tmp_path / "moments.slang"
    path.write_text(SRC)
    m = diffc.load_module(path)
    dt = m.byte_layout("Moments")
    assert dt == np.dtype([("m", "<f4"), ("seen", "<u4"), ("v", "<f4"), ("it", "<i4")], align=True)
    start = np.array([(1.0, 5, 0.25, 3), (-0.5, 0, 1.5, -1), (0.0, 7, 0.0, 0)], dt)
    g = np.array([0.5, -2.0, 4.0], dtype=np.float32)
    W = diffc.Tensor.from_numpy(start.view(np.uint8).copy())
    m.computeMain.dispatch(thread_count=3, G=diffc.Tensor.from_numpy(g), W=W)
    got = W.to_numpy().view(dt)
    for i, (m0, seen, var, it) in enumerate(start):
        for _ in range(2):
            m0 = np.float32(0.9) * m0 + np.float32(0.1) * g[i]
            var = var + g[i] * g[i]
        assert got["m"][i] == pytest.approx(float(m0), rel=1e-6)
        assert got["seen"][i] == seen + 4
        assert got["v"][i] == pytest.approx(float(var), rel=1e-6)
        assert got["it"][i] == it + 2
