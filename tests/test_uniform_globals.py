"""Global uniform values (`uniform int shift;`, the members of a cbuffer): the host passes each
value by name to dispatch; the kernel reads it from a buffer of its scalars (`#diff.abi<uniform>`),
in any function it calls. Values checked against numpy; a wrong value is a CallError naming it,
and writing to one is a located error."""

from __future__ import annotations

import numpy as np
import pytest
from slang_helpers import expect_error

from diffc.runtime.errors import CallError
from diffc.runtime.module import load_module_from_string
from diffc.runtime.tensor import Tensor

SRC = """
cbuffer U { uint width; float rate; uint4 offs[2]; float2x2 m; };
uniform int shift;
RWStructuredBuffer<float> o;
float scaled(uint i) { return float(offs[i / 4][i % 4]) * rate; }
[numthreads(4, 1, 1)]
void computeMain(uint3 t : SV_DispatchThreadID)
{
    if (t.x >= width) return;
    o[t.x] = scaled(t.x) + float(shift) + m[1][0];
}
"""


@pytest.fixture(scope="module")
def m():
    return load_module_from_string(SRC, "uniforms.slang")


def test_uniform_values_reach_the_kernel_and_its_callees(m):
    o = Tensor.from_numpy(np.zeros(8, np.float32))
    offs = np.arange(1, 9)
    m.computeMain.dispatch(8, o=o, width=6, rate=0.5, offs=offs.reshape(2, 4).tolist(), m=[[0, 0], [100, 0]], shift=-3)
    want = np.where(np.arange(8) < 6, offs * 0.5 - 3 + 100, 0.0)
    assert np.allclose(o.to_numpy(), want)
    # new values, the same kernel (a uniform is an argument, not part of the program)
    m.computeMain.dispatch(8, o=o, width=8, rate=2.0, offs=offs, m=np.zeros((2, 2)), shift=1)
    assert np.allclose(o.to_numpy(), offs * 2.0 + 1)


def test_a_uniform_of_the_wrong_size_names_it(m):
    o = Tensor.from_numpy(np.zeros(8, np.float32))
    with pytest.raises(CallError, match="'offs' is a uniform value of 8"):
        m.computeMain.dispatch(8, o=o, width=6, rate=0.5, offs=[1, 2, 3], m=np.zeros((2, 2)), shift=0)
    with pytest.raises(CallError, match="missing argument 'rate'"):
        m.computeMain.dispatch(8, o=o, width=6, offs=np.zeros(8), m=np.zeros((2, 2)), shift=0)


def test_writing_a_uniform_is_located():
    expect_error("uniform float k;\nvoid f() { k = 1.0; }", "E0003", 2, 12, "k")
