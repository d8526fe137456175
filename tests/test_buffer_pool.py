"""The buffer pool behind Tensor allocations: reuse after collection, never while alive."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import diffc
from diffc.runtime.module import load_module_from_string
from diffc.runtime.tensor import BufferPool, buffer_pool, size_class
from conftest import POLYNOMIAL_IR

POLY = POLYNOMIAL_IR


@pytest.fixture
def pool():
    p = buffer_pool()
    saved = (p.enabled, p.limit_bytes, p.limit_count)
    p.enabled = True
    gc.collect()  # tensors earlier tests left in reference cycles return to the pool now, not mid-test
    p.clear()
    p.hits = p.misses = 0
    yield p
    p.enabled, p.limit_bytes, p.limit_count = saved
    p.clear()


def test_size_classes_cover_the_request_and_waste_at_most_a_quarter():
    for n in [1, 255, 256, 257, 1000, 1024, 1025, 4095, 4097, 10**6 + 3, 3 << 20]:
        c = size_class(n)
        assert c >= n
        assert c <= max(256, 1.25 * n)
    assert size_class(1000) == size_class(1010)  # close sizes share a class
    assert size_class(1 << 20) != size_class((1 << 20) + 1)


def test_buffer_is_reused_after_the_tensor_is_collected(pool):
    t = diffc.Tensor.empty((1000,), np.float32)
    buf = t.buffer
    del t
    gc.collect()
    assert pool.cached_count == 1
    u = diffc.Tensor.empty((1001,), np.float32)  # same size class
    assert u.buffer is buf
    assert pool.hits == 1 and pool.cached_count == 0


def test_no_reuse_while_alive(pool):
    live = [diffc.Tensor.zeros((500,), np.float32) for _ in range(8)]
    for k, t in enumerate(live):
        t.fill(float(k))
    more = [diffc.Tensor.zeros((500,), np.float32) for _ in range(8)]
    ids = {id(t.buffer) for t in live + more}
    assert len(ids) == 16
    for k, t in enumerate(live):  # the later tensors did not overwrite the earlier ones
        np.testing.assert_array_equal(t.to_numpy(), np.full(500, k, np.float32))


def test_detached_view_keeps_the_storage(pool):
    t = diffc.Tensor.from_numpy(np.arange(300, dtype=np.float32))
    view = t.detach()
    del t
    gc.collect()
    assert pool.cached_count == 0  # the view still uses the memory
    other = diffc.Tensor.zeros((300,), np.float32)
    assert other.buffer is not view.buffer
    np.testing.assert_array_equal(view.to_numpy(), np.arange(300, dtype=np.float32))
    del view
    gc.collect()
    assert pool.cached_count == 1


def test_results_stay_correct_across_many_pooled_calls(pool):
    m = load_module_from_string(POLY, "poly.mlir")
    rng = np.random.default_rng(0)
    kept = []
    for k in range(60):
        n = int(rng.integers(1, 3000))
        xs = rng.standard_normal(n).astype(np.float32)
        x = diffc.Tensor.from_numpy(xs)
        y = m.polynomial(a=2, b=8, c=float(k), x=x, _result="tensor")
        np.testing.assert_allclose(y.to_numpy(), 2 * xs * xs + 8 * xs + k, rtol=1e-6, atol=1e-4)
        if k % 7 == 0:
            kept.append((y, 2 * xs * xs + 8 * xs + k))  # live results must keep their values
    for y, want in kept:
        np.testing.assert_allclose(y.to_numpy(), want, rtol=1e-6, atol=1e-4)
    assert pool.hits > 0


def test_pool_is_bounded(pool):
    pool.limit_count = 3
    ts = [diffc.Tensor.empty((100 * (k + 1),), np.float32) for k in range(10)]
    del ts
    gc.collect()
    assert pool.cached_count == 3
    pool.limit_count = 1000
    pool.clear()
    pool.limit_bytes = 3 * size_class(4096)
    ts = [diffc.Tensor.empty((1024,), np.float32) for _ in range(10)]
    del ts
    gc.collect()
    assert pool.cached_count == 3 and pool.cached_bytes == 3 * size_class(4096)


def test_disabled_pool_allocates_every_time(pool):
    pool.enabled = False
    t = diffc.Tensor.empty((1000,), np.float32)
    del t
    gc.collect()
    assert pool.cached_count == 0
    u = diffc.Tensor.zeros((1000,), np.float32)
    np.testing.assert_array_equal(u.to_numpy(), np.zeros(1000, np.float32))
    assert pool.hits == 0


def test_environment_switch(monkeypatch):
    monkeypatch.setenv("DIFFC_BUFFER_POOL", "0")
    monkeypatch.setenv("DIFFC_BUFFER_POOL_MB", "8")
    p = BufferPool()
    assert not p.enabled and p.limit_bytes == 8 << 20
    monkeypatch.setenv("DIFFC_BUFFER_POOL", "1")
    assert BufferPool().enabled
