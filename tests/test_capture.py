"""Captured steps (runtime/capture.py): dispatches recorded once and replayed as they are give what
the same dispatches made again give (bit for bit, the MLP's deterministic training step too),
read the tensors' contents at replay time, keep the tensors alive, and still raise what the
kernels' checks record."""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest

import diffc
from diffc.runtime.bounds import BoundsError
from diffc.runtime.module import load_module_from_string

SRC = """
[shader("compute")]
[numthreads(32, 1, 1)]
void axpy(uint32_t tid : SV_DispatchThreadID, uniform float* x, uniform float* y, uniform float a, uniform uint32_t count)
{
    if (tid >= count) return;
    y[tid] = y[tid] + a * x[tid];
}

[shader("compute")]
[numthreads(32, 1, 1)]
void gather(uint32_t tid : SV_DispatchThreadID, uniform float* src, uniform int* index, uniform float* dst, uniform uint32_t count)
{
    if (tid >= count) return;
    dst[tid] = src[index[tid]];
}
"""


@pytest.fixture(scope="module")
def m():
    return load_module_from_string(SRC, "capture.slang")


def test_replay_runs_the_recorded_dispatches_in_order_on_current_contents(m):
    x = diffc.Tensor.from_numpy(np.arange(100, dtype=np.float32))
    y = diffc.Tensor.zeros(100, np.float32)
    with diffc.capture() as step:
        m.axpy.dispatch(thread_count=100, x=x, y=y, a=2.0, count=100)
        m.axpy.dispatch(thread_count=50, x=y, y=x, a=1.0, count=50)  # reads what the first wrote
    assert len(step) == 2
    xs, ys = np.arange(100, dtype=np.float64), np.zeros(100)
    for _ in range(2):  # the capture ran once; the model runs the same two updates
        ys = ys + 2 * xs
        xs[:50] = xs[:50] + ys[:50]
    step()
    x.copy_from_numpy(x.to_numpy() * 0.5)  # replays read what the tensors hold now
    xs *= 0.5
    step()
    ys = ys + 2 * xs
    xs[:50] = xs[:50] + ys[:50]
    np.testing.assert_array_equal(y.to_numpy(), ys.astype(np.float32))
    np.testing.assert_array_equal(x.to_numpy(), xs.astype(np.float32))


def test_a_step_keeps_its_tensors_alive(m):
    y = diffc.Tensor.zeros(64, np.float32)
    with diffc.capture() as step:
        temp = diffc.Tensor.from_numpy(np.ones(64, np.float32))
        m.axpy.dispatch(thread_count=64, x=y, y=temp, a=1.0, count=64)  # writes temp
    gone = weakref.ref(temp)
    del temp
    gc.collect()
    assert gone() is not None  # the step holds it: its memory cannot go to another tensor
    other = diffc.Tensor.from_numpy(np.full(64, 7.0, np.float32))
    y.copy_from_numpy(np.full(64, 3.0, np.float32))
    step()
    np.testing.assert_array_equal(other.to_numpy(), np.full(64, 7.0, np.float32))
    np.testing.assert_array_equal(gone().to_numpy(), np.full(64, 4.0, np.float32))


def test_replaying_while_recording_is_an_error(m):
    y = diffc.Tensor.zeros(32, np.float32)
    with diffc.capture() as step:
        m.axpy.dispatch(thread_count=32, x=y, y=y, a=1.0, count=32)
        with pytest.raises(RuntimeError, match="being recorded"):
            step()


def test_checks_still_raise_on_replay(m):
    src = diffc.Tensor.from_numpy(np.arange(10, dtype=np.float32))
    index = diffc.Tensor.from_numpy(np.arange(10, dtype=np.int32))
    dst = diffc.Tensor.zeros(10, np.float32)
    with diffc.capture() as step:
        m.gather.dispatch(thread_count=10, src=src, index=index, dst=dst, count=10)
    np.testing.assert_array_equal(dst.to_numpy(), np.arange(10, dtype=np.float32))
    index.copy_from_numpy(np.full(10, 12, np.int32))  # now every read is past src's end
    with pytest.raises(BoundsError, match="'src'"):
        step()
        diffc.synchronize()


def test_captured_mlp_training_steps_match_dispatched_ones_bit_for_bit():
    mlp = Path(__file__).resolve().parent.parent / "examples" / "mlp"
    sys.path.insert(0, str(mlp))
    try:
        from reference import N_PARAMS
        from train import init_params, network_of
    finally:
        sys.path.remove(str(mlp))
    m = diffc.load_module(mlp / "mlp.slang")
    rng = np.random.default_rng(3)
    p0 = init_params(rng).astype(np.float16)
    xy = rng.uniform(-1, 1, (3000, 2)).astype(np.float16).astype(np.float32)

    def trained(captured: bool) -> np.ndarray:
        params = diffc.Tensor.from_numpy(p0)
        grads = diffc.Tensor.zeros(N_PARAMS, np.float16)
        loss = diffc.Tensor.zeros(1, np.uint32)
        inputs = diffc.Tensor.from_numpy(xy.ravel())
        net = network_of(params, grads)

        def dispatch_step():
            m.learnGradient.dispatch(thread_count=len(xy), network=net, lossBuffer=loss, inputs=inputs, count=len(xy))
            m.adjustParameters.dispatch(thread_count=N_PARAMS, params=params, gradients=grads, count=N_PARAMS)

        if captured:
            with diffc.capture() as step:
                dispatch_step()
            for _ in range(3):
                step()
        else:
            for _ in range(4):
                dispatch_step()
        return params.to_numpy()

    once = trained(False)
    assert not np.array_equal(once, p0)  # it trained
    np.testing.assert_array_equal(trained(True), once)
