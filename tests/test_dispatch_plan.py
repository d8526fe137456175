"""Replayed dispatches (runtime/dispatch_plan.py): a dispatch with the same arguments as a recent
one reuses its bound kernels; any changed argument (a tensor in a nested struct dict, a number,
the mode) takes the full path; deferred bounds checks raise a recorded violation at a later
dispatch or at check_pending, never lose it."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.runtime import dispatch_plan
from diffc.runtime.bounds import BoundsError
from diffc.runtime.dispatch import entry_program
from diffc.runtime.module import load_module_from_string

SRC = """
struct Pair { float* a; float* b; }

[shader("compute")]
[numthreads(32, 1, 1)]
void scale(uint32_t tid : SV_DispatchThreadID, uniform Pair p, uniform float k, uniform uint32_t count)
{
    if (tid >= count) return;
    p.b[tid] = p.a[tid] * k;
}
"""


@pytest.fixture(scope="module")
def m():
    return load_module_from_string(SRC, "plan.slang")


def test_replays_and_misses(m):
    a = diffc.Tensor.from_numpy(np.arange(100, dtype=np.float32))
    b = diffc.Tensor.zeros(100, np.float32)
    pair = {"a": a, "b": b}
    m.scale.dispatch(thread_count=100, p=pair, k=2.0, count=100)
    plans = entry_program(m).plans["scale"]
    first = plans[0]
    m.scale.dispatch(thread_count=100, p=pair, k=2.0, count=100)
    assert entry_program(m).plans["scale"][0] is first  # replayed: no new plan
    np.testing.assert_array_equal(b.to_numpy(), 2 * np.arange(100))
    m.scale.dispatch(thread_count=100, p=pair, k=3.0, count=100)  # another number
    np.testing.assert_array_equal(b.to_numpy(), 3 * np.arange(100))
    c = diffc.Tensor.zeros(100, np.float32)
    pair["b"] = c  # the same dict, another tensor in it
    m.scale.dispatch(thread_count=100, p=pair, k=3.0, count=100)
    np.testing.assert_array_equal(c.to_numpy(), 3 * np.arange(100))
    m.scale.dispatch(thread_count=50, p=pair, k=4.0, count=50)  # another size
    np.testing.assert_array_equal(c.to_numpy(), np.r_[4 * np.arange(50), 3 * np.arange(50, 100)])
    assert len(entry_program(m).plans["scale"]) <= 4


def test_deferred_checks_raise_later_and_never_lose_a_violation(m):
    short = diffc.Tensor.from_numpy(np.arange(10, dtype=np.float32))
    out = diffc.Tensor.zeros(100, np.float32)
    with pytest.raises(BoundsError, match="'p_a'"):
        m.scale.dispatch(thread_count=100, p={"a": short, "b": out}, k=1.0, count=100)
        diffc.synchronize()  # (without deferred checks: raised at the next synchronizing point)
    # deferred: the launch does not raise; check_pending (or a later dispatch) does, once
    m.scale.dispatch(thread_count=100, p={"a": short, "b": out}, k=1.0, count=100, deferred_checks=True)
    with pytest.raises(BoundsError, match="'p_a'"):
        dispatch_plan.check_pending(m)
    dispatch_plan.check_pending(m)  # raised once: nothing left
    good = diffc.Tensor.from_numpy(np.ones(100, np.float32))
    with pytest.raises(BoundsError):
        for _ in range(50):  # some later dispatch sees the recorded flag
            m.scale.dispatch(thread_count=100, p={"a": short, "b": out}, k=1.0, count=100, deferred_checks=True)
            m.scale.dispatch(thread_count=100, p={"a": good, "b": out}, k=1.0, count=100, deferred_checks=True)
        dispatch_plan.check_pending(m)
    dispatch_plan.check_pending(m)
    m.scale.dispatch(thread_count=100, p={"a": good, "b": out}, k=5.0, count=100, deferred_checks=True)
    dispatch_plan.check_pending(m)  # in bounds: nothing
    np.testing.assert_array_equal(out.to_numpy(), np.full(100, 5.0, np.float32))


def test_a_plan_keeps_no_tensor_alive(m):
    import gc
    import weakref

    a = diffc.Tensor.from_numpy(np.arange(64, dtype=np.float32))
    b = diffc.Tensor.zeros(64, np.float32)
    m.scale.dispatch(thread_count=64, p={"a": a, "b": b}, k=1.0, count=64)
    gone = weakref.ref(a)
    del a
    gc.collect()
    assert gone() is None
    fresh = diffc.Tensor.from_numpy(np.full(64, 2.0, np.float32))  # may reuse the freed buffer
    m.scale.dispatch(thread_count=64, p={"a": fresh, "b": b}, k=1.0, count=64)
    np.testing.assert_array_equal(b.to_numpy(), np.full(64, 2.0, np.float32))
