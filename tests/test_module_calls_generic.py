"""Calls over tensors of generic functions, specialized from the arguments (runtime/generic_calls.py):
a type parameter from the arguments' dtype, an int parameter from a vector's or matrix's trailing
dimensions. Values against numpy; `.fwds` and `.bwds` of each instance against float64 central
differences and each other (call_harness); the generic's three call modes against its instance's;
torch gradients against torch's autograd; the refusals name what is missing or disagrees."""

from __future__ import annotations

import numpy as np
import pytest
from call_harness import check_call_derivatives

import diffc
from diffc.runtime.errors import CallError

SRC = """
[Differentiable]
double norm2<let N : int>(vector<double, N> v, double s)
{
    double acc = 0.0;
    for (int i = 0; i < N; i++)
        acc += s * v[i] * v[i] * double(i + 1);
    return acc;
}

[Differentiable]
T cube<T : __BuiltinFloatingPointType>(T x, T y) { return x * x * x * y + y; }

[Differentiable]
double frob<let R : int, let C : int>(matrix<double, R, C> a)
{
    double acc = 0.0;
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++)
            acc += a[i][j] * a[i][j] * double(i + 2 * j + 1);
    return acc;
}

float scaled<let N : int>(float x) { return x * float(N); }

void twice<T : __BuiltinFloatingPointType>(T x, out T y) { y = x + x; }

float plain(float x) { return x + 1.0; }
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("generic") / "generic.slang"
    path.write_text(SRC)
    return diffc.load_module(path)


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def norm2_np(v, s):
    return (np.asarray(s)[..., None] * v * v * np.arange(1, v.shape[-1] + 1)).sum(-1)


def test_int_parameter_from_the_vector_dimension(m):
    for n in (2, 3, 4):
        v = rand(5, n, seed=n)
        np.testing.assert_allclose(m.norm2(v=v, s=1.5, _result="numpy"), norm2_np(v, 1.5), rtol=1e-12)
    assert m.norm2.instance((), {"v": rand(1, 3), "s": 1.0}).name == "norm2_3"


def test_type_parameter_from_the_dtype(m):
    x, y = rand(6), rand(6, seed=1)
    got64 = m.cube(x=x, y=y, _result="numpy")
    assert got64.dtype == np.float64
    np.testing.assert_allclose(got64, x**3 * y + y, rtol=1e-12)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    got32 = m.cube(x=x32, y=y32, _result="numpy")
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, x32**3 * y32 + y32, rtol=1e-5, atol=1e-6)
    # a Python number takes the type its array arguments say
    np.testing.assert_allclose(m.cube(x=x, y=2.0, _result="numpy"), x**3 * 2.0 + 2.0, rtol=1e-12)


def test_matrix_dimensions(m):
    a = rand(3, 2, 4)
    w = np.add.outer(np.arange(2), 2 * np.arange(4)) + 1
    np.testing.assert_allclose(m.frob(a=a, _result="numpy"), (a * a * w).sum((-2, -1)), rtol=1e-12)


@pytest.mark.parametrize("fn, args", [
    ("norm2", {"v": rand(3, 3, seed=5), "s": rand(3, seed=6)}),
    ("norm2", {"v": rand(2, 2, seed=7), "s": 0.75}),
    ("cube", {"x": rand(4, seed=8), "y": rand(4, seed=9)}),
    ("frob", {"a": rand(2, 2, 3, seed=10)}),
])
def test_derivatives_of_each_instance(m, fn, args):
    """.fwds and .bwds of the instance the arguments pick, against central differences."""
    check_call_derivatives(getattr(m, fn).instance((), args), args)


def test_three_modes_through_the_generic_are_the_instances(m):
    v, s = rand(4, 3, seed=11), rand(4, seed=12)
    g = m.norm2
    inst = g.instance((), {"v": v, "s": s})
    np.testing.assert_array_equal(g(v=v, s=s, _result="numpy"), inst(v=v, s=s, _result="numpy"))
    tangents = []
    for f in (g, inst):
        vt = diffc.Tensor.from_numpy(v).with_grads(diffc.Tensor.from_numpy(np.ones_like(v)), zero=False)
        st = diffc.Tensor.from_numpy(s).with_grads(zero=True)
        tangents.append(f.fwds(v=vt, s=st).grad.to_numpy())
    np.testing.assert_array_equal(*tangents)
    grads = []
    for f in (g, inst):
        vt = diffc.Tensor.from_numpy(v).with_grads(zero=True)
        st = diffc.Tensor.from_numpy(s).with_grads(zero=True)
        y = diffc.Tensor((4,), np.float64).with_grads(diffc.Tensor.from_numpy(rand(4, seed=13)), zero=False)
        f.bwds(v=vt, s=st, _result=y)
        grads.append((vt.grad.to_numpy(), st.grad.to_numpy()))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)
    # and the bwds gradient is the central difference's
    h = 1e-6
    w = rand(4, seed=13)
    dv = np.zeros_like(v)
    for idx in np.ndindex(v.shape):
        e = np.zeros_like(v)
        e[idx] = h
        dv[idx] = (w * (norm2_np(v + e, s) - norm2_np(v - e, s))).sum() / (2 * h)
    np.testing.assert_allclose(grads[0][0], dv, rtol=1e-6, atol=1e-8)


def test_torch_gradients(m):
    torch = pytest.importorskip("torch", reason="the torch path needs PyTorch")
    x = torch.tensor(rand(5, seed=14), requires_grad=True)
    y = torch.tensor(rand(5, seed=15), requires_grad=True)
    w = torch.tensor(rand(5, seed=16))
    (m.cube(x=x, y=y) * w).sum().backward()
    xr, yr = (t.detach().clone().requires_grad_() for t in (x, y))
    ((xr**3 * yr + yr) * w).sum().backward()
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(y.grad, yr.grad, rtol=1e-12, atol=1e-12)
    v = torch.tensor(rand(3, 4, seed=17), requires_grad=True)
    (m.norm2(v=v, s=0.5) * w[:3]).sum().backward()
    vr = v.detach().clone().requires_grad_()
    ((0.5 * vr * vr * torch.arange(1, 5)).sum(-1) * w[:3]).sum().backward()
    torch.testing.assert_close(v.grad, vr.grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda m: m.scaled(x=np.ones(3, np.float32)), "no argument determines generic parameter"),
    (lambda m: m.cube(x=np.ones(3), y=np.ones(3, np.float32)), "generic parameter T is double"),
    (lambda m: m.norm2(v=2.0, s=1.0), "whose size N comes from its last"),
    (lambda m: m.twice(x=np.ones(3)), "out or inout parameters"),
    (lambda m: m.cube(x=np.ones(3, np.int64), y=np.ones(3, np.int64)), "dtype int64"),
])
def test_refusals_say_why(m, call, message):
    with pytest.raises(CallError, match=message):
        call(m)


def test_non_generic_functions_and_unknown_names_are_as_before(m):
    np.testing.assert_allclose(m.plain(x=np.ones(2, np.float32), _result="numpy"), [2.0, 2.0])
    with pytest.raises(AttributeError, match="no function 'nothing'"):
        m.nothing


def test_an_instance_the_source_uses_is_the_modules_own(tmp_path):
    path = tmp_path / "used.slang"
    path.write_text(SRC + "\ndouble use3(vector<double, 3> v) { return norm2<3>(v, 2.0); }\n")
    m = diffc.load_module(path)
    v = rand(2, 3, seed=20)
    assert m.norm2.instance((), {"v": v, "s": 2.0}) is m.norm2_3
    np.testing.assert_allclose(m.norm2(v=v, s=2.0, _result="numpy"), m.use3(v=v, _result="numpy"), rtol=1e-12)
