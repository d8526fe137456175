"""SlangPy-style calls on PoCL (or whatever device DIFFC_DEVICE picks): seed 003's polynomial,
broadcasting, forward and backward modes. Expected numbers come from numpy or by hand."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.runtime import module as runtime_module
from conftest import POLYNOMIAL_IR

POLY = POLYNOMIAL_IR + """
func.func @poly64(%a: f64, %x: f64) -> f64 attributes {diff.differentiable} {
  %ax = arith.mulf %a, %x : f64
  %r = arith.mulf %ax, %x : f64
  func.return %r : f64
}
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("mods") / "poly.mlir"
    path.write_text(POLY)
    return diffc.load_module(path)


@pytest.fixture(params=[True, False], ids=["vector", "scalar"])
def vectorize(request, monkeypatch):
    monkeypatch.setattr(runtime_module, "VECTORIZE", request.param)
    return request.param


def poly(a, b, c, x):
    return a * x * x + b * x + c


def test_seed_003_forward_backward(m, vectorize):
    x = diffc.Tensor.from_numpy(np.array([1, 2, 3, 4], dtype=np.float32)).with_grads(zero=True)
    result = m.polynomial(a=2, b=8, c=-1, x=x, _result="tensor")
    assert isinstance(result, diffc.Tensor)
    assert result.shape == (4,) and result.dtype == np.float32
    np.testing.assert_array_equal(result.to_numpy(), [9, 23, 41, 63])

    result = result.with_grads()
    result.grad.copy_from_numpy(np.array([1, 1, 1, 1], dtype=np.float32))
    m.polynomial.bwds(a=2, b=8, c=-1, x=x, _result=result)
    np.testing.assert_array_equal(x.grad.to_numpy(), [12, 16, 20, 24])  # 4x + 8
    m.polynomial.bwds(a=2, b=8, c=-1, x=x, _result=result)
    np.testing.assert_array_equal(x.grad.to_numpy(), [24, 32, 40, 48])  # accumulated


def test_result_into_existing_tensor_and_numpy(m, vectorize):
    x = diffc.Tensor.from_numpy(np.array([1, 2, 3, 4, 5, 6, 7], dtype=np.float32))
    out = diffc.Tensor.zeros((7,), np.float32)
    assert m.polynomial(a=2, b=8, c=-1, x=x, _result=out) is out
    want = poly(2, 8, -1, np.arange(1, 8, dtype=np.float32))
    np.testing.assert_array_equal(out.to_numpy(), want)
    got = m.polynomial(2, 8, -1, x, _result="numpy")
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, want)


def test_fwds_tangents(m, vectorize):
    xs = np.array([1, 2, 3, 4, 5], dtype=np.float32)
    x = diffc.Tensor.from_numpy(xs).with_grads()
    x.grad.copy_from_numpy(np.array([1, 0, 2, 1, -1], dtype=np.float32))
    t = m.polynomial.fwds(a=2, b=8, c=-1, x=x, _result="tensor")
    np.testing.assert_array_equal(t.to_numpy(), poly(2, 8, -1, xs))
    np.testing.assert_array_equal(t.grad.to_numpy(), (4 * xs + 8) * np.array([1, 0, 2, 1, -1]))
    # a tensor without .grad has a zero tangent; its partner carries one
    a = diffc.Tensor.from_numpy(np.full(5, 2, np.float32)).with_grads()
    a.grad.copy_from_numpy(np.ones(5, np.float32))
    t2 = m.polynomial.fwds(a=a, b=8, c=-1, x=diffc.Tensor.from_numpy(xs))
    np.testing.assert_array_equal(t2.grad.to_numpy(), xs * xs)


def test_million_elements_agree_with_numpy(m, vectorize):
    rng = np.random.default_rng(3)
    xs = rng.standard_normal(1_000_003).astype(np.float32)
    x = diffc.Tensor.from_numpy(xs).with_grads(zero=True)
    r = m.polynomial(a=2.5, b=-1.25, c=0.5, x=x)
    want = (np.float32(2.5) * xs * xs + np.float32(-1.25) * xs) + np.float32(0.5)
    np.testing.assert_allclose(r.to_numpy(), want, rtol=1e-6, atol=1e-6)
    r.with_grads()
    g = rng.standard_normal(xs.size).astype(np.float32)
    r.grad.copy_from_numpy(g)
    m.polynomial.bwds(a=2.5, b=-1.25, c=0.5, x=x, _result=r)
    np.testing.assert_allclose(x.grad.to_numpy(), (5.0 * xs - 1.25) * g, rtol=1e-5, atol=1e-5)


def test_broadcasting_matches_numpy(m):
    xs = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
    bs = np.array([1, -2, 0.5, 3], dtype=np.float32)  # (4,) over rows
    cs = np.array([[1], [2], [3]], dtype=np.float32)  # (3, 1) over columns
    r = m.polynomial(a=2, b=diffc.Tensor.from_numpy(bs), c=diffc.Tensor.from_numpy(cs), x=diffc.Tensor.from_numpy(xs))
    assert r.shape == (3, 4)
    np.testing.assert_allclose(r.to_numpy(), poly(np.float32(2), bs, cs, xs), rtol=1e-6)
    # numpy arrays are accepted and uploaded; a (2,1)x(3,) call grows to (2,3)
    got = m.polynomial(a=1, b=0, c=0, x=np.array([[1], [2]], np.float32), _result="numpy")
    np.testing.assert_array_equal(got, [[1], [4]])
    out = diffc.Tensor.zeros((2, 3))
    m.polynomial(a=np.float32(1), b=diffc.Tensor.from_numpy(np.array([0, 1, 2], np.float32)), c=0,
                 x=diffc.Tensor.from_numpy(np.array([[1], [2]], np.float32)), _result=out)
    np.testing.assert_array_equal(out.to_numpy(), [[1, 2, 3], [4, 6, 8]])


def test_scalars_fill_a_given_result(m):
    out = diffc.Tensor.zeros((5,))
    m.polynomial(a=1, b=1, c=1, x=2, _result=out)
    np.testing.assert_array_equal(out.to_numpy(), np.full(5, 7))


def test_bwds_broadcast_inputs_sum_their_gradients(m):
    xs = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    x = diffc.Tensor.from_numpy(xs).with_grads(zero=True)
    a = diffc.Tensor.from_numpy(np.array([2], np.float32)).with_grads(zero=True)  # shape (1,)
    b = diffc.Tensor.from_numpy(np.array([8, 8, 8], np.float32)).with_grads(zero=True)  # over rows
    c = diffc.Tensor.from_numpy(np.array([[-1], [-1]], np.float32)).with_grads(zero=True)  # over cols
    r = m.polynomial(a=a, b=b, c=c, x=x).with_grads()
    dout = np.array([[1, 2, 1], [0.5, 1, -1]], dtype=np.float32)
    r.grad.copy_from_numpy(dout)
    m.polynomial.bwds(a=a, b=b, c=c, x=x, _result=r)
    np.testing.assert_allclose(x.grad.to_numpy(), (4 * xs + 8) * dout)
    np.testing.assert_allclose(a.grad.to_numpy(), [np.sum(xs * xs * dout)])
    np.testing.assert_allclose(b.grad.to_numpy(), np.sum(xs * dout, axis=0))
    np.testing.assert_allclose(c.grad.to_numpy(), np.sum(dout, axis=1, keepdims=True))


def test_float64(m, vectorize):
    if not diffc.device().has_fp64:
        pytest.skip("device without fp64")
    xs = np.array([0.1, 0.2, 0.3, 0.7, 1.1], dtype=np.float64)
    x = diffc.Tensor.from_numpy(xs).with_grads()
    r = m.poly64(a=3.0, x=x).with_grads()
    np.testing.assert_allclose(r.to_numpy(), 3.0 * xs * xs, rtol=1e-15)
    r.grad.copy_from_numpy(np.ones(5))
    m.poly64.bwds(a=3.0, x=x, _result=r)
    np.testing.assert_allclose(x.grad.to_numpy(), 6.0 * xs, rtol=1e-15)


def test_programs_are_cached_per_kind(m):
    x = diffc.Tensor.from_numpy(np.ones(9, np.float32))
    m.polynomial(a=1, b=2, c=3, x=x)
    n = len(m.polynomial._kernels)
    m.polynomial(a=4, b=5, c=6, x=diffc.Tensor.from_numpy(np.ones(17, np.float32)))
    assert len(m.polynomial._kernels) == n
    m.polynomial(a=4, b=5, c=diffc.Tensor.from_numpy(np.ones(17, np.float32)), x=x.__class__.zeros((17,)))
    assert len(m.polynomial._kernels) == n + 1


def test_empty_tensor(m):
    r = m.polynomial(a=1, b=2, c=3, x=diffc.Tensor.zeros((0,)))
    assert r.shape == (0,) and r.to_numpy().size == 0
