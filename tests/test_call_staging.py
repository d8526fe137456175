"""Calls that read their result back at once (`_result="numpy"`, torch tensors) copy their arrays
into device tensors each Function keeps, and replay their launch (runtime/staging.py). What
could go wrong: a replay reading the last call's data, a backward reading a kept tensor a later
call refilled, a kept tensor of the wrong shape. Results against numpy/torch computations of
the same function."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.runtime import staging
from diffc.runtime.errors import CallError

SRC = """
[Differentiable]
float wave(float a, float x, float y) { return a * sin(x) * y + exp(0.5 * x) - y * y / (1.0 + x * x); }

[Differentiable]
double wave64(double a, double x, double y) { return a * sin(x) * y + exp(0.5 * x) - y * y / (1.0 + x * x); }
"""


def wave_np(a, x, y):
    return a * np.sin(x) * y + np.exp(0.5 * x) - y * y / (1.0 + x * x)


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("staging") / "wave.slang"
    path.write_text(SRC)
    return diffc.load_module(path)


def test_repeated_numpy_calls_read_each_calls_arrays(m):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(37)
    y = rng.standard_normal(37)
    for step in range(4):  # the same shapes: kept tensors, replayed launch
        x32, y32 = x.astype(np.float32), y.astype(np.float32)
        got = m.wave(a=1.5, x=x32, y=y32, _result="numpy")
        np.testing.assert_allclose(got, wave_np(1.5, x32.astype(np.float64), y32.astype(np.float64)), rtol=1e-5, atol=1e-5)
        x += 0.25 * step + 0.1  # changed in place: the next call must see it
        y[::3] = -y[::3]
    got = m.wave64(a=-0.5, x=x[:5], y=y[:1], _result="numpy")  # new shapes, broadcast
    np.testing.assert_allclose(got, wave_np(-0.5, x[:5], y[:1]), rtol=1e-12)


def test_large_arrays_are_not_kept(m, monkeypatch):
    monkeypatch.setattr(staging, "KEEP_BYTES", 64)
    x = np.linspace(-2, 2, 100)
    for k in range(2):
        got = m.wave64(a=2.0, x=x + k, y=x, _result="numpy")
        np.testing.assert_allclose(got, wave_np(2.0, x + k, x), rtol=1e-12)
    assert 1 not in m.wave64.staging.slots


torch = pytest.importorskip("torch", reason="the torch bridge's kept tensors need PyTorch")


def wave_torch(a, x, y):
    return a * torch.sin(x) * y + torch.exp(0.5 * x) - y * y / (1.0 + x * x)


def reference_grads(inputs, w):
    ref = [t.detach().clone().requires_grad_() for t in inputs]
    (wave_torch(*ref) * w).sum().backward()
    return [t.grad for t in ref]


def test_backward_after_a_later_call_refilled_the_kept_tensors(m):
    """Two forwards of the same shapes before either backward: the first graph's kept device
    tensors hold the second call's data by then, so its backward must not read them."""
    gen = torch.Generator().manual_seed(1)
    x1, y1, x2, y2 = (torch.randn(9, dtype=torch.float64, generator=gen).requires_grad_() for _ in range(4))
    w1, w2 = (torch.randn(9, dtype=torch.float64, generator=gen) for _ in range(2))
    out1 = m.wave64(a=0.7, x=x1, y=y1)
    out2 = m.wave64(a=0.7, x=x2, y=y2)
    (out1 * w1).sum().backward()
    (out2 * w2).sum().backward()
    a = torch.tensor(0.7, dtype=torch.float64)
    want = reference_grads([a, x1, y1], w1)[1:] + reference_grads([a, x2, y2], w2)[1:]
    for got, expected in zip([x1.grad, y1.grad, x2.grad, y2.grad], want):
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def test_repeated_training_steps_match_torch(m):
    """The same shapes step after step (kept tensors and replayed launches, forward and
    backward) with values changing in place, as an optimizer changes them."""
    gen = torch.Generator().manual_seed(2)
    a = torch.randn(1, generator=gen).requires_grad_()
    x = torch.randn(4, 8, generator=gen).requires_grad_()
    y = torch.randn(8, generator=gen)  # broadcast data, no gradient
    for _ in range(3):
        w = torch.randn(4, 8, generator=gen)
        a.grad = x.grad = None
        out = m.wave(a=a, x=x, y=y)
        (out * w).sum().backward()
        want = reference_grads([a, x, y], w)
        torch.testing.assert_close(out, wave_torch(a, x, y).detach(), rtol=2e-5, atol=2e-5)
        torch.testing.assert_close(a.grad, want[0], rtol=2e-4, atol=2e-4)
        torch.testing.assert_close(x.grad, want[1], rtol=2e-5, atol=2e-5)
        with torch.no_grad():
            a -= 0.1 * a.grad
            x -= 0.1 * x.grad


def test_retained_graph_backward_twice_accumulates(m):
    x = torch.linspace(-1, 1, 6, dtype=torch.float64, requires_grad=True)
    y = torch.linspace(0.5, 2, 6, dtype=torch.float64)
    out = m.wave64(a=1.25, x=x, y=y)
    out.sum().backward(retain_graph=True)
    once = x.grad.clone()
    out.sum().backward()
    torch.testing.assert_close(x.grad, 2 * once, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(once, reference_grads([torch.tensor(1.25), x, y], torch.ones(6, dtype=torch.float64))[1],
                               rtol=1e-12, atol=1e-12)


def test_input_changed_in_place_before_backward_is_refused(m):
    x = torch.linspace(-1, 1, 5, requires_grad=True)
    h = x * 1.0
    out = m.wave(a=1.0, x=h, y=torch.ones(5))
    with torch.no_grad():
        h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_second_order_backward_is_refused(m):
    x = torch.linspace(-1, 1, 5, dtype=torch.float64, requires_grad=True)
    out = m.wave64(a=1.0, x=x, y=torch.ones(5, dtype=torch.float64))
    w = torch.ones(5, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(out, x, grad_outputs=w, create_graph=True)
    torch.testing.assert_close(g, reference_grads([torch.tensor(1.0), x, torch.ones(5, dtype=torch.float64)],
                                                  torch.ones(5, dtype=torch.float64))[1], rtol=1e-12, atol=1e-12)
    with pytest.raises(CallError, match=r"wave64\(\): second derivatives through a diffc function are not supported"):
        g.sum().backward()


def test_graphs_hold_no_device_copies_of_large_inputs(m, monkeypatch):
    monkeypatch.setattr(staging, "KEEP_BYTES", 64)
    gen = torch.Generator().manual_seed(4)
    x, y = (torch.randn(40, dtype=torch.float64, generator=gen).requires_grad_() for _ in range(2))
    out = m.wave64(a=0.3, x=x, y=y)
    assert out.grad_fn.state[3] == {}  # (fn, host, idx, kept copies): none kept for 320 bytes
    w = torch.randn(40, dtype=torch.float64, generator=gen)
    (out * w).sum().backward()
    want = reference_grads([torch.tensor(0.3, dtype=torch.float64), x, y], w)
    torch.testing.assert_close(x.grad, want[1], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(y.grad, want[2], rtol=1e-12, atol=1e-12)
