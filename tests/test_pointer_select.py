"""A pointer chosen at run time: an array of interface values whose implementations hold
pointers, indexed by a thread-dependent index, selects between buffers (`arith.select` of two
memrefs), which the OpenCL backend declares as a pointer variable."""

from __future__ import annotations

import numpy as np

from diffc.runtime.module import load_module_from_string
from diffc.runtime.tensor import Tensor

SRC = """
interface IRead { float read(int i); }
struct FromA : IRead { float* a; float read(int i) { return a[i]; } };
struct FromB : IRead { float* b; float k; float read(int i) { return b[i] * k; } };
[shader("compute")][numthreads(4, 1, 1)]
void pick(uint3 t : SV_DispatchThreadID, uniform float* a, uniform float* b, uniform float* out)
{
    IRead r[2] = { FromA(a), FromB(b, 10.0) };
    float s = 0.0;
    for (uint k = 0; k < r.getCount(); k++)
        s += r[(k + t.x) % 2].read(int(t.x));
    out[t.x] = s + r[t.x % 2].read(0);
}
"""


def test_an_interface_array_of_pointer_holders_reads_the_chosen_buffer():
    m = load_module_from_string(SRC, "select.slang")
    a = np.arange(4, dtype=np.float32)
    b = a + 100.0
    out = Tensor.from_numpy(np.zeros(4, np.float32))
    m.pick.dispatch(4, a=Tensor.from_numpy(a), b=Tensor.from_numpy(b), out=out)
    t = np.arange(4)
    want = a[t] + 10.0 * b[t] + np.where(t % 2 == 0, a[0], 10.0 * b[0])
    assert np.allclose(out.to_numpy(), want)
