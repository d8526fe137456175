"""A repeated call replays its last launch (launch_plan.py): every change that the full path
would see must give the full path's result. Expected numbers come from numpy."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import diffc
from diffc.runtime import module as runtime_module
from diffc.runtime.errors import CallError
from conftest import POLYNOMIAL_IR

XS = np.array([1, 2, 3, 4, 5], np.float32)


@pytest.fixture
def m(tmp_path):
    path = tmp_path / "poly.mlir"
    path.write_text(POLYNOMIAL_IR)
    return diffc.load_module(path)


def poly(a, b, c, x):
    return a * x * x + b * x + c


def tensor(values) -> diffc.Tensor:
    return diffc.Tensor.from_numpy(np.asarray(values, np.float32))


def test_a_repeated_call_is_replayed(m):
    x, out = tensor(XS), diffc.Tensor.zeros((5,), np.float32)
    m.polynomial(a=2.0, b=8.0, c=-1.0, x=x, _result=out)
    plan = m.polynomial._plans["call"]
    assert plan is not None
    x.copy_from_numpy(XS + 1)  # new contents, same tensor: the plan holds
    assert m.polynomial(a=2.0, b=8.0, c=-1.0, x=x, _result=out) is out
    assert m.polynomial._plans["call"] is plan  # replayed, not rebuilt
    np.testing.assert_array_equal(out.to_numpy(), poly(2, 8, -1, XS + 1))


def test_changed_scalars_are_used(m):
    x, out = tensor(XS), diffc.Tensor.zeros((5,), np.float32)
    for a, b, c in [(2.0, 8.0, -1.0), (3.0, 8.0, -1.0), (3.0, 8.0, 5), (3, 8, 5), (True, 8, 5), (1, 8, 5)]:
        m.polynomial(a=a, b=b, c=c, x=x, _result=out)
        np.testing.assert_array_equal(out.to_numpy(), poly(float(a), b, c, XS))


def test_the_sign_of_zero_is_kept(m):
    x = tensor([1.0])
    for a, c, negative in [(-0.0, -0.0, True), (-0.0, 0.0, False), (-0.0, -0.0, True), (0.0, -0.0, False)]:
        got = m.polynomial(a=a, b=-0.0, c=c, x=x, _result="numpy")  # a*x*x + b*x + c, all zeros
        assert bool(np.signbit(got[0])) == negative, (a, c)


def test_positional_and_keyword_calls_bind_alike(m):
    x = tensor(XS)
    want = poly(2, 8, -1, XS)
    np.testing.assert_array_equal(m.polynomial(2.0, 8.0, -1.0, x, _result="numpy"), want)
    np.testing.assert_array_equal(m.polynomial(2.0, 8.0, -1.0, x, _result="numpy"), want)
    np.testing.assert_array_equal(m.polynomial(x=x, c=-1.0, b=8.0, a=2.0, _result="numpy"), want)
    np.testing.assert_array_equal(m.polynomial(2.0, 8.0, x=x, c=-1.0, _result="numpy"), want)
    np.testing.assert_array_equal(m.polynomial(2.0, 8.0, x=x, c=-1.0, _result="numpy"), want)
    # a scalar where the plan had a tensor, and the reverse
    np.testing.assert_array_equal(m.polynomial(2.0, 8.0, x=3.0, c=tensor(XS), _result="numpy"), poly(2, 8, XS, 3))
    np.testing.assert_array_equal(m.polynomial(2.0, 8.0, x=x, c=-1.0, _result="numpy"), want)
    with pytest.raises(CallError, match="unknown argument 'd'"):
        m.polynomial(2.0, 8.0, x=x, d=-1.0)
    with pytest.raises(CallError, match="got argument 'x' twice"):
        m.polynomial(2.0, 8.0, -1.0, x, x=x)


def test_each_new_result_is_a_new_tensor(m):
    x = tensor(XS)
    results = [m.polynomial(a=float(k), b=8.0, c=-1.0, x=x) for k in range(3)]
    results += [m.polynomial(a=2.0, b=8.0, c=-1.0, x=x) for _ in range(3)]
    assert len({id(r.buffer) for r in results}) == 6
    for k, r in enumerate(results):
        np.testing.assert_array_equal(r.to_numpy(), poly(k if k < 3 else 2, 8, -1, XS))


def test_a_recycled_buffer_in_a_new_tensor_is_read_right(m):
    x = tensor(XS)
    out = diffc.Tensor.zeros((5,), np.float32)
    m.polynomial(a=2.0, b=8.0, c=-1.0, x=x, _result=out)
    dead = weakref.ref(x)
    del x
    gc.collect()
    assert dead() is None  # the plan does not keep its arguments alive
    y = tensor(XS * 10)  # may get the old x's buffer from the pool
    m.polynomial(a=2.0, b=8.0, c=-1.0, x=y, _result=out)
    np.testing.assert_array_equal(out.to_numpy(), poly(2, 8, -1, XS * 10))


def test_a_changed_shape_or_dtype_takes_the_full_path(m):
    out = m.polynomial(a=2.0, b=8.0, c=-1.0, x=tensor(XS))
    np.testing.assert_array_equal(out.to_numpy(), poly(2, 8, -1, XS))
    out = m.polynomial(a=2.0, b=8.0, c=-1.0, x=tensor(np.arange(12).reshape(3, 4)))
    assert out.shape == (3, 4)
    np.testing.assert_array_equal(out.to_numpy(), poly(2, 8, -1, np.arange(12, dtype=np.float32).reshape(3, 4)))
    x = tensor(XS)
    m.polynomial(a=2.0, b=8.0, c=-1.0, x=x)
    with pytest.raises(CallError, match="is a int32 Tensor"):
        m.polynomial(a=2.0, b=8.0, c=-1.0, x=diffc.Tensor.from_numpy(np.arange(5, dtype=np.int32)))
    with pytest.raises(CallError, match="'_result' has shape"):
        m.polynomial(a=2.0, b=8.0, c=-1.0, x=x, _result=diffc.Tensor.zeros((4,), np.float32))


def test_arrays_are_read_on_every_call(m):
    xs = XS.copy()
    out = diffc.Tensor.zeros((5,), np.float32)
    m.polynomial(a=2.0, b=8.0, c=-1.0, x=xs, _result=out)
    xs += 1  # the same array object, new contents
    m.polynomial(a=2.0, b=8.0, c=-1.0, x=xs, _result=out)
    np.testing.assert_array_equal(out.to_numpy(), poly(2, 8, -1, XS + 1))


def test_broadcast_then_elementwise(m):
    x = tensor(XS)
    a = tensor([3.0])
    for _ in range(2):
        np.testing.assert_array_equal(m.polynomial(a=a, b=8.0, c=-1.0, x=x, _result="numpy"), poly(3, 8, -1, XS))
    np.testing.assert_array_equal(m.polynomial(a=tensor(XS), b=8.0, c=-1.0, x=x, _result="numpy"), poly(XS, 8, -1, XS))


def test_bwds_follows_a_changed_grad(m):
    x = tensor(XS).with_grads(zero=True)
    out = m.polynomial(a=2.0, b=8.0, c=-1.0, x=x).with_grads()
    out.grad.fill(1.0)
    m.polynomial.bwds(a=2.0, b=8.0, c=-1.0, x=x, _result=out)
    m.polynomial.bwds(a=2.0, b=8.0, c=-1.0, x=x, _result=out)  # replayed: accumulates
    np.testing.assert_array_equal(x.grad.to_numpy(), 2 * (4 * XS + 8))
    old = x.grad
    x.with_grads(diffc.Tensor.zeros((5,), np.float32))  # a new grad tensor
    out.grad.fill(2.0)
    m.polynomial.bwds(a=2.0, b=8.0, c=-1.0, x=x, _result=out)
    np.testing.assert_array_equal(x.grad.to_numpy(), 2 * (4 * XS + 8))
    np.testing.assert_array_equal(old.to_numpy(), 2 * (4 * XS + 8))  # left alone
    new_out_grad = diffc.Tensor.from_numpy(np.full(5, 3.0, np.float32))
    out.with_grads(new_out_grad, zero=False)
    m.polynomial.bwds(a=2.0, b=8.0, c=-1.0, x=x, _result=out)
    np.testing.assert_array_equal(x.grad.to_numpy(), 5 * (4 * XS + 8))
    x.grad = None  # no gradient wanted: the kernel changes, x.grad stays None
    m.polynomial.bwds(a=2.0, b=8.0, c=-1.0, x=x, _result=out)
    assert x.grad is None
    with pytest.raises(CallError, match="has no .grad"):
        out.grad = None
        m.polynomial.bwds(a=2.0, b=8.0, c=-1.0, x=x, _result=out)


def test_fwds_tangents_follow_the_inputs(m):
    x = tensor(XS).with_grads()
    x.grad.fill(1.0)
    for _ in range(2):
        t = m.polynomial.fwds(a=2.0, b=8.0, c=-1.0, x=x)
        np.testing.assert_array_equal(t.to_numpy(), poly(2, 8, -1, XS))
        np.testing.assert_array_equal(t.grad.to_numpy(), 4 * XS + 8)
    first = t
    t = m.polynomial.fwds(a=2.0, b=8.0, c=-1.0, x=x)
    assert t is not first and t.grad.buffer is not first.grad.buffer
    x.grad = None  # tangent zero
    np.testing.assert_array_equal(m.polynomial.fwds(a=2.0, b=8.0, c=-1.0, x=x).grad.to_numpy(), np.zeros(5))
    out = diffc.Tensor.zeros((5,), np.float32)  # no grad yet: fwds attaches one
    x.with_grads().grad.fill(2.0)
    for _ in range(2):
        assert m.polynomial.fwds(a=2.0, b=8.0, c=-1.0, x=x, _result=out) is out
        np.testing.assert_array_equal(out.grad.to_numpy(), 2 * (4 * XS + 8))
    value, tangent = m.polynomial.fwds(a=2.0, b=8.0, c=-1.0, x=x, _result="numpy")
    np.testing.assert_array_equal(tangent, 2 * (4 * XS + 8))


def test_changed_settings_take_the_full_path(m, monkeypatch):
    x = tensor(np.arange(1, 34, dtype=np.float32))
    m.polynomial(a=2.0, b=8.0, c=-1.0, x=x, _result="numpy")
    monkeypatch.setattr(runtime_module, "VECTORIZE", not runtime_module.VECTORIZE)
    got = m.polynomial(a=2.0, b=8.0, c=-1.0, x=x, _result="numpy")
    np.testing.assert_array_equal(got, poly(2, 8, -1, np.arange(1, 34, dtype=np.float32)))
    assert {s.vectorized for s in m.polynomial._kernels} == {True, False}


def test_a_call_into_a_new_result_each_time_is_replayed(m, monkeypatch):
    """`_run_into` (the shared-memory path's launch, cuda_shared.py: each result a new block)
    replays the last launch into another result Tensor of the same shape and dtype; another
    argument, shape or dtype takes the full path. Every result holds its own call's values."""
    fn = m.polynomial
    x = tensor(XS)
    outs = [diffc.Tensor.zeros((5,), np.float32) for _ in range(3)]
    fn._run_into([2.0, 8.0, -1.0, x], outs[0])
    full = []
    real_run = fn._run
    monkeypatch.setattr(fn, "_run", lambda *a, **k: full.append(a[0]) or real_run(*a, **k))
    fn._run_into([2.0, 8.0, -1.0, x], outs[1])  # replayed, into outs[1]
    x.copy_from_numpy(XS * 2)
    fn._run_into([2.0, 8.0, -1.0, x], outs[2])  # replayed: the same tensor, new contents
    assert full == []
    np.testing.assert_allclose(outs[0].to_numpy(), poly(2, 8, -1, XS), rtol=1e-6)
    np.testing.assert_allclose(outs[1].to_numpy(), poly(2, 8, -1, XS), rtol=1e-6)
    np.testing.assert_allclose(outs[2].to_numpy(), poly(2, 8, -1, XS * 2), rtol=1e-6)
    fn._run_into([3.0, 8.0, -1.0, x], outs[0])  # another number: the full path
    np.testing.assert_allclose(outs[0].to_numpy(), poly(3, 8, -1, XS * 2), rtol=1e-6)
    wide = diffc.Tensor.zeros((2, 5), np.float32)
    fn._run_into([3.0, 8.0, -1.0, x], wide)  # another result shape (x broadcast): the full path
    np.testing.assert_allclose(wide.to_numpy(), np.broadcast_to(poly(3, 8, -1, XS * 2), (2, 5)), rtol=1e-6)
    assert full == ["call", "call"]
    out = diffc.Tensor.zeros((5,), np.float32)
    fn(2.0, 8.0, -1.0, x, _result=out)  # and the ordinary replay still sees the last plan right
    np.testing.assert_allclose(out.to_numpy(), poly(2, 8, -1, XS * 2), rtol=1e-6)
