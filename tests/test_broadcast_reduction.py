"""Gradients of broadcast arguments in bwds: summed per work-group (the reduce form of the
bwds kernel) and checked against numpy sums and against forward mode."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.runtime import module as runtime_module
from diffc.runtime.kernels import broadcast_period
from diffc.runtime.module import _broadcast_strides, _reduce_groups, load_module_from_string
from conftest import POLYNOMIAL_IR

POLY = POLYNOMIAL_IR

SIZES = [1, 255, 256, 257, 10**5 + 3]


@pytest.fixture(scope="module")
def m():
    return load_module_from_string(POLY, "poly.mlir")


@pytest.fixture(params=[True, False], ids=["vector", "scalar"])
def vectorize(request, monkeypatch):
    monkeypatch.setattr(runtime_module, "VECTORIZE", request.param)
    return request.param


@pytest.fixture(params=[False, True], ids=["strided", "blocked"], autouse=True)
def blocked(request, monkeypatch):
    """Both walks of the reduce form, whatever the device would choose."""
    monkeypatch.setattr(runtime_module, "_reduce_blocked", lambda: request.param)
    return request.param


def tensor(a, grad=True):
    t = diffc.Tensor.from_numpy(np.asarray(a, np.float32))
    return t.with_grads(zero=True) if grad else t


def run_bwds(m, a, b, c, xs, dout):
    """bwds of polynomial with the given arguments (Tensors or numbers); returns the result."""
    x = tensor(xs)
    r = m.polynomial(a=a, b=b, c=c, x=x).with_grads()
    r.grad.copy_from_numpy(dout)
    m.polynomial.bwds(a=a, b=b, c=c, x=x, _result=r)
    return x


@pytest.mark.parametrize("n", SIZES)
def test_scalar_broadcast_sums_exactly_with_integer_data(m, vectorize, n):
    # Integer data whose partial sums stay below 2^24 are exact in float32 in any order: a lost
    # or doubled element shows as an exact mismatch.
    rng = np.random.default_rng(n)
    xs = rng.integers(-3, 4, n).astype(np.float32)
    dout = rng.integers(-2, 3, n).astype(np.float32)
    a, b, c = tensor([2.0]), tensor([8.0]), tensor([-1.0])
    x = run_bwds(m, a, b, c, xs, dout)
    x64, d64 = xs.astype(np.float64), dout.astype(np.float64)
    assert a.grad.to_numpy()[0] == np.sum(x64 * x64 * d64)
    assert b.grad.to_numpy()[0] == np.sum(x64 * d64)
    assert c.grad.to_numpy()[0] == np.sum(d64)
    np.testing.assert_array_equal(x.grad.to_numpy(), (4 * x64 + 8) * d64)


@pytest.mark.parametrize("n", SIZES)
def test_scalar_broadcast_with_random_data(m, vectorize, n):
    rng = np.random.default_rng(1000 + n)
    xs = rng.standard_normal(n).astype(np.float32)
    dout = rng.standard_normal(n).astype(np.float32)
    a = tensor([0.75])
    x = run_bwds(m, a, 8, -1, xs, dout)
    terms = xs.astype(np.float64) ** 2 * dout
    # float32 sums in another order: bounded by a few ulps of the sum of magnitudes per level
    tol = 64 * np.finfo(np.float32).eps * np.sum(np.abs(terms))
    assert abs(a.grad.to_numpy()[0] - np.sum(terms)) <= tol
    np.testing.assert_allclose(x.grad.to_numpy(), (1.5 * xs.astype(np.float64) + 8) * dout, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 255), (2, 257), (257, 3), (20000, 3), (200, 1000), (401, 256)])
def test_row_and_column_broadcasts(m, vectorize, rows, cols):
    rng = np.random.default_rng(rows * 7919 + cols)
    xs = rng.integers(-3, 4, (rows, cols)).astype(np.float32)
    dout = rng.integers(-2, 3, (rows, cols)).astype(np.float32)
    b_row = tensor(np.full(cols, 8.0))  # (cols,) against (rows, cols)
    c_col = tensor(np.full((rows, 1), -1.0))  # (rows, 1) against (rows, cols)
    a = tensor([2.0])
    x = run_bwds(m, a, b_row, c_col, xs, dout)
    x64, d64 = xs.astype(np.float64), dout.astype(np.float64)
    np.testing.assert_array_equal(b_row.grad.to_numpy(), np.sum(x64 * d64, axis=0))
    np.testing.assert_array_equal(c_col.grad.to_numpy(), np.sum(d64, axis=1, keepdims=True))
    assert a.grad.to_numpy()[0] == np.sum(x64 * x64 * d64)
    np.testing.assert_array_equal(x.grad.to_numpy(), (4 * x64 + 8) * d64)


def test_gradients_accumulate_over_calls(m):
    xs = np.arange(1000, dtype=np.float32) % 5
    dout = np.ones(1000, np.float32)
    a = tensor([2.0])
    for _ in range(3):
        run_bwds(m, a, 8, -1, xs, dout)
    assert a.grad.to_numpy()[0] == 3 * np.sum(xs.astype(np.float64) ** 2)


@pytest.mark.parametrize("n", [257, 10**5 + 3])
def test_reverse_agrees_with_forward_mode(m, n):
    # <u, J v> = <J^T u, v> for v = (da = 1, dx = 0) and u = the output weights
    rng = np.random.default_rng(n)
    xs = rng.standard_normal(n).astype(np.float32)
    u = rng.standard_normal(n).astype(np.float32)
    a = tensor([1.5])
    run_bwds(m, a, 8, -1, xs, u)
    ta = diffc.Tensor.from_numpy(np.array([1.5], np.float32)).with_grads(zero=False)
    ta.grad.fill(1.0)
    t = m.polynomial.fwds(a=ta, b=8, c=-1, x=diffc.Tensor.from_numpy(xs))
    forward = np.dot(u.astype(np.float64), t.grad.to_numpy().astype(np.float64))
    terms = xs.astype(np.float64) ** 2 * u
    tol = 64 * np.finfo(np.float32).eps * np.sum(np.abs(terms))
    assert abs(a.grad.to_numpy()[0] - forward) <= tol


def test_reduce_kernel_is_used_and_sums_in_local_memory(m, blocked):
    a = tensor([2.0])
    run_bwds(m, a, 8, -1, np.ones(300, np.float32), np.ones(300, np.float32))
    sources = [src for spec, src in m.polynomial.sources.items() if spec.mode == "bwds" and spec.reduces]
    assert sources and all("__local" in s and "barrier(" in s for s in sources)
    assert any(spec.reduces and spec.blocked == blocked for spec in m.polynomial.sources)


def test_broadcast_periods():
    assert broadcast_period((1000,), _broadcast_strides((1,), (1000,))) == 1
    assert broadcast_period((7, 5), _broadcast_strides((5,), (7, 5))) == 5
    assert broadcast_period((7, 5), _broadcast_strides((1, 5), (7, 5))) == 5
    assert broadcast_period((7, 5), _broadcast_strides((7, 1), (7, 5))) == 35
    assert broadcast_period((2, 3, 4), _broadcast_strides((3, 1), (2, 3, 4))) == 12


@pytest.mark.parametrize("size, period", [(10**6, 1), (10**6, 3), (10**6, 1000), (10**6, 10**6), (100, 1), (5000, 7)])
def test_reduce_launch_sizes(size, period):
    wg, units = 256, 4
    groups = _reduce_groups(size, wg, period, units)
    every = -(-size // wg)
    assert 1 <= groups <= every
    if groups < every:  # a strided walk: its stride keeps each work-item on one target
        assert (groups * wg) % period == 0


@pytest.mark.parametrize("groups", [1, 3])
def test_any_global_size_gives_the_same_sums(m, monkeypatch, groups):
    # A global size that is no multiple of the period makes work-items change targets inside
    # their strided walk (each change flushes the running sum): still exact.
    monkeypatch.setattr(runtime_module, "_reduce_groups", lambda size, wg, period, units: groups)
    rng = np.random.default_rng(groups)
    rows, cols = 300, 7
    xs = rng.integers(-3, 4, (rows, cols)).astype(np.float32)
    dout = rng.integers(-2, 3, (rows, cols)).astype(np.float32)
    a, b_row, c_col = tensor([2.0]), tensor(np.full(cols, 8.0)), tensor(np.full((rows, 1), -1.0))
    run_bwds(m, a, b_row, c_col, xs, dout)
    x64, d64 = xs.astype(np.float64), dout.astype(np.float64)
    assert a.grad.to_numpy()[0] == np.sum(x64 * x64 * d64)
    np.testing.assert_array_equal(b_row.grad.to_numpy(), np.sum(x64 * d64, axis=0))
    np.testing.assert_array_equal(c_col.grad.to_numpy(), np.sum(d64, axis=1, keepdims=True))


class _Device:
    """A device that takes groups of 1024 and has `local` bytes of work-group memory."""

    def __init__(self, local: int):
        self.max_work_group_size = 1024
        self.cl_device = type("ClDevice", (), {"local_mem_size": local})()


@pytest.mark.parametrize("local, reduced, group", [
    (49152, 1, 256),  # WORK_GROUP
    (49152, 12, 256),  # 12 x 16 x 256 = 48 KiB: fits exactly
    (49152, 17, 128),  # 17 scalar gradients (a 17-parameter model): 256 would take 68 KiB
    (49152, 100, 16),
    (32768, 3000, 1),
])
def test_reduce_groups_fit_the_device_work_group_memory(monkeypatch, local, reduced, group):
    monkeypatch.setattr(runtime_module, "device", lambda: _Device(local))
    got = runtime_module._reduce_group_size(reduced)
    assert got == group
    assert got * reduced * runtime_module.REDUCE_BYTES_PER_ITEM <= local or got == 1


def test_many_broadcast_gradients_sum_to_finite_differences():
    """17 scalar parameters, each broadcast over the batch, take their gradients in one bwds."""
    params = ", ".join(f"float p{j}" for j in range(17))
    terms = " + ".join(f"p{j} * sin({j + 1}.0 * x)" for j in range(17))
    m = load_module_from_string(f"[Differentiable]\nfloat f(float x, {params}) {{ return ({terms}) * x; }}\n", "many.slang")
    x = np.linspace(-1, 1, 1000)
    p = np.linspace(0.1, 0.5, 17)
    out = diffc.Tensor.zeros(x.size, np.float32)
    out.grad = diffc.Tensor.from_numpy(np.ones(x.size, np.float32))
    ps = [diffc.Tensor.from_numpy(np.array(v, np.float32)) for v in p]
    for t in ps:
        t.grad = diffc.Tensor.zeros((), np.float32)
    m.f.bwds(diffc.Tensor.from_numpy(x.astype(np.float32)), *ps, _result=out)

    def loss(q):  # float64
        return sum(q[j] * np.sin((j + 1) * x) for j in range(17)).dot(x)

    h = 1e-6
    for j in range(17):
        e = np.zeros(17)
        e[j] = h
        fd = (loss(p + e) - loss(p - e)) / (2 * h)
        assert float(ps[j].grad.numpy()) == pytest.approx(fd, rel=1e-4, abs=1e-3), j
