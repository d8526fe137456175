"""`cbuffer Name { ... }` (frontend/features/cbuffers.py): its members are globals of their own
names: a buffer in one is bound by name as any global buffer is; a uniform value in one is the
located E0008 of every global uniform value."""

from __future__ import annotations

import numpy as np
from slang_helpers import expect_error

from diffc.runtime.module import load_module_from_string
from diffc.runtime.tensor import Tensor

SRC = """
cbuffer Params : register(b0)
{
    RWStructuredBuffer<float> data;
    StructuredBuffer<float> scale;
};
[shader("compute")][numthreads(4, 1, 1)]
void computeMain(uint3 t : SV_DispatchThreadID) { data[t.x] = data[t.x] * scale[0]; }
"""


def test_buffers_in_a_cbuffer_are_globals():
    m = load_module_from_string(SRC, "cbuffer.slang")
    data = Tensor.from_numpy(np.arange(4, dtype=np.float32))
    m.computeMain.dispatch(4, data=data, scale=Tensor.from_numpy(np.array([2.5], np.float32)))
    assert np.allclose(data.to_numpy(), 2.5 * np.arange(4))


def test_a_uniform_value_in_a_cbuffer_is_located():
    expect_error("cbuffer U\n{\n    uint width;\n}\nRWStructuredBuffer<uint> o;\n"
                 "[numthreads(1, 1, 1)] void computeMain(uint3 t : SV_DispatchThreadID) { o[0] = width; }",
                 "E0008", 3, 5, "uniform value")
