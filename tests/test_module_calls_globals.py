"""A module that declares global buffers still calls its other functions over tensors (issue 22,
B4): the kernels keep only what they reach (runtime/kernel_scope.py). A function that uses a
global is a CallError naming it, and a generic struct's `T*` field points at T (B3's pointer
case, which the Slang `slangpy` module's tensors rely on)."""

from __future__ import annotations

import numpy as np
import pytest

from diffc.runtime.module import load_module_from_string
from diffc.runtime.errors import CallError
from diffc.runtime.tensor import Tensor

SRC = """
RWStructuredBuffer<float> G;
RWStructuredBuffer<double> H;
[Differentiable] double cube(double x, double k) { return k * x * x * x + sin(x); }
float fromG(float x) { return G[0] + x; }
[numthreads(1, 1, 1)] void fill(uint3 t : SV_DispatchThreadID) { G[t.x] = 2.0; }
"""


def test_functions_of_a_module_with_globals_are_called():
    m = load_module_from_string(SRC, "globals.slang")
    x = np.array([0.5, -1.25, 2.0])
    got = m.cube(x=x, k=3.0, _result="numpy")
    assert np.allclose(got, 3.0 * x**3 + np.sin(x), rtol=1e-12)
    # its reverse mode too, against float64 central differences
    xt = Tensor.from_numpy(x).with_grads()
    out = m.cube(x=xt, k=3.0)
    out.with_grads()
    out.grad.copy_from_numpy(np.ones(3))
    m.cube.bwds(x=xt, k=3.0, _result=out)
    h = 1e-6
    fd = ((3.0 * (x + h) ** 3 + np.sin(x + h)) - (3.0 * (x - h) ** 3 + np.sin(x - h))) / (2 * h)
    assert np.allclose(xt.grad.to_numpy(), fd, rtol=1e-7)


def test_a_function_that_uses_a_global_names_it():
    m = load_module_from_string(SRC, "globals.slang")
    with pytest.raises(CallError, match="global 'G'"):
        m.fromG(np.ones(2, np.float32))


def test_entry_points_still_bind_the_globals():
    m = load_module_from_string(SRC, "globals.slang")
    g = Tensor.from_numpy(np.zeros(3, np.float32))
    m.fill.dispatch(3, G=g)
    assert g.to_numpy().tolist() == [2.0, 2.0, 2.0]


def test_a_generic_structs_pointer_field_points_at_its_type_parameter():
    src = """
    struct View<T, let D : int> { T* data; int[D] strides; int offset;
        T at(int[D] i) { int k = offset; for (int d = 0; d < D; d++) k += i[d] * strides[d]; return data[k]; } };
    [numthreads(4, 1, 1)] void sums(uint3 t : SV_DispatchThreadID, uniform View<float3, 2> v, uniform float* r) {
        int[2] i = { int(t.x), 1 }; float3 e = v.at(i); r[t.x] = e.x + 10.0 * e.y + 100.0 * e.z; }
    """
    m = load_module_from_string(src, "view.slang")
    a = np.arange(4 * 2 * 3, dtype=np.float32)
    r = Tensor.from_numpy(np.zeros(4, np.float32))
    m.sums.dispatch(4, v={"data": Tensor.from_numpy(a), "strides": [2, 1], "offset": 0}, r=r)
    e = a.reshape(4, 2, 3)[:, 1]
    assert np.allclose(r.to_numpy(), e[:, 0] + 10 * e[:, 1] + 100 * e[:, 2])
