"""Generic Slang functions called from Python (specialize.py): the specialization is picked from
the arguments (a struct's `_type`, a tensor's element type), each specialization its own kernel;
methods of a struct type (`find_function_in_struct`, `this` first) and constructors called per
element. Values against numpy; the backward call's gradient against float64 central differences."""

from __future__ import annotations

import numpy as np
import pytest

import diffc.slangpy as spy
from diffc.runtime.errors import CallError

SRC = """
interface IWarp { [Differentiable] float warp(float x); }
struct Poly<int N> : IWarp
{
    float c[N];
    [Differentiable] float warp(float x) { float y = 0.0; float p = 1.0; for (int i = 0; i < N; i++) { y += c[i] * p; p *= x; } return y; }
}
struct Wave : IWarp { float a; float f; [Differentiable] float warp(float x) { return a * sin(f * x); } }

[Differentiable]
float applyWarp<W : IWarp>(W w, float x) { return w.warp(x); }

T twiceOf<T : IFloat>(T x) { return x + x; }

struct Counter
{
    float total;
    int hits;
    __init(float start) { total = start; hits = 0; }
    void addTo(inout Counter c, float v) { c.total += v * total; c.hits += 1; }
}
"""


@pytest.fixture(scope="module")
def m():
    return spy.Module.load_from_source(None, "generic_calls", SRC)


def test_the_specialization_follows_the_struct_argument(m):
    x = np.linspace(-1, 1, 7).astype(np.float32)
    poly = {"_type": "Poly<3>", "c": [0.5, -1.0, 2.0]}
    wave = {"_type": "Wave", "a": 1.5, "f": 3.0}
    assert m.applyWarp(poly, x, _result="numpy") == pytest.approx(0.5 - x + 2 * x * x, abs=1e-6)
    assert m.applyWarp(wave, x, _result="numpy") == pytest.approx(1.5 * np.sin(3 * x), abs=1e-6)

    class Quartic:  # an object standing for a struct value, as SlangPy's models do
        def get_this(self):
            return {"_type": "Poly<5>", "c": [0, 0, 0, 0, 1.0]}

    assert m.applyWarp(Quartic(), x, _result="numpy") == pytest.approx(x**4, abs=1e-6)


def test_backward_of_a_generic_function(m):
    x0 = np.array([0.3, -0.7, 1.1], dtype=np.float64)
    wave = {"_type": "Wave", "a": 1.5, "f": 3.0}
    x = spy.Tensor.from_numpy(None, x0.astype(np.float32)).with_grads()
    out = spy.Tensor.from_numpy(None, np.zeros(3, np.float32)).with_grads()
    out.grad.copy_from_numpy(np.ones(3, np.float32))
    m.applyWarp.bwds(wave, x, _result=out)
    h = 1e-6
    fd = (1.5 * np.sin(3 * (x0 + h)) - 1.5 * np.sin(3 * (x0 - h))) / (2 * h)
    assert x.grad.to_numpy() == pytest.approx(fd, rel=1e-4, abs=1e-5)


def test_a_type_parameter_from_a_tensor_element_type(m):
    xd = np.array([1.25, -3.0], dtype=np.float64)
    assert m.twiceOf(spy.Tensor.from_numpy(None, xd), _result="numpy") == pytest.approx(2 * xd)
    assert m.twiceOf(spy.Tensor.from_numpy(None, xd.astype(np.float32)), _result="numpy").dtype == np.float32


def test_an_unknown_struct_type_is_a_call_error(m):
    with pytest.raises(CallError, match="cannot tell generic parameter 'W'"):
        m.applyWarp({"_type": "Nowhere", "a": 1.0}, np.zeros(2, np.float32))
    with pytest.raises(CallError, match="int does not conform to 'IFloat'"):
        m.twiceOf(spy.Tensor.from_numpy(None, np.array([1, 2], np.int32)))


def test_constructors_and_methods_of_a_struct(m):
    counter = m.find_struct("Counter")
    made = counter(spy.Tensor.from_numpy(None, np.array([1.0, 2.0, 4.0], np.float32)))
    got = made.to_numpy()
    assert list(got["total"]) == [1.0, 2.0, 4.0] and list(got["hits"]) == [0, 0, 0]
    add = m.find_function_in_struct(counter, "addTo")
    add({"total": 0.5, "hits": 0}, made, np.array([2.0, 4.0, 8.0], np.float32))  # this = Counter{0.5}
    got = made.to_numpy()
    assert list(got["total"]) == [2.0, 4.0, 8.0] and list(got["hits"]) == [1, 1, 1]
    assert m.find_function_in_struct(counter, "nothing") is None
    assert m.find_struct("Nowhere") is None
