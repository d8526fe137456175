"""`cbuffer Name { ... }` (frontend/features/cbuffers.py): its members are globals of their own
names: a buffer in one is bound by name as any global buffer is, a uniform value passed by name
(tests/test_uniform_globals.py); a struct of mixed scalar types in one is a located E0008."""

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


def test_a_mixed_struct_in_a_cbuffer_is_located():
    expect_error("struct P { float a; int b; };\ncbuffer U\n{\n    P p;\n}\nRWStructuredBuffer<float> o;\n"
                 "[numthreads(1, 1, 1)] void computeMain(uint3 t : SV_DispatchThreadID) { o[0] = p.a; }",
                 "E0008", 4, 5, "uniform value")
