"""The torch call path's ordering and caches (runtime/torch_bridge.py, Function._start_host):
the device's work is enqueued before the torch result (and autograd graph) is made, and waited
for before or after it (torch_bridge.OVERLAP); a torch or numpy call replays its launch from
the device tensors staging.py keeps. What could go wrong: a result read before the device wrote
it, a replay of a kernel whose arguments another kind of call changed, a backward that reads
stale data after a change of shape, dtype, requires_grad mask or values. Every value and
gradient is compared with torch's autograd of the same function written in torch, with both
orderings."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch bridge needs PyTorch")

import diffc  # noqa: E402
from diffc.runtime.errors import CallError  # noqa: E402
from diffc.runtime import staging, torch_bridge  # noqa: E402

from test_call_staging import SRC  # noqa: E402 (wave and wave64, the functions staging is tested on)


def wave_torch(a, x, y):
    return a * torch.sin(x) * y + torch.exp(0.5 * x) - y * y / (1.0 + x * x)


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("order") / "wave.slang"
    path.write_text(SRC)
    return diffc.load_module(path)


@pytest.fixture(params=[False, True], ids=["wait-first", "overlapped"])
def overlap(request, monkeypatch):
    monkeypatch.setattr(torch_bridge, "OVERLAP", [request.param])
    return request.param


def check_against_torch(fn, a, x, y, w, tol):
    """fn's result and the gradients of every input that requires grad, against torch's."""
    for t in (a, x, y):
        t.grad = None
    out = fn(a=a, x=x, y=y)
    (out * w).sum().backward()
    ref = [t.detach().clone().requires_grad_(t.requires_grad) for t in (a, x, y)]
    want = wave_torch(*ref)
    (want * w).sum().backward()
    torch.testing.assert_close(out.detach(), want.detach(), **tol)
    for got, r in zip((a, x, y), ref):
        if r.requires_grad:
            torch.testing.assert_close(got.grad, r.grad, **tol)
        else:
            assert got.grad is None


@pytest.mark.parametrize("n", [1 << 17, 1 << 19], ids=["kept", "not-kept"])
def test_large_results_are_complete(m, overlap, n):
    """A result of 2^17 / 2^19 elements (the device is busy for a while; the larger is beyond
    staging.KEEP_BYTES, so its backward copies the inputs again): every element is the device's,
    in both orderings, and without grad too."""
    gen = torch.Generator().manual_seed(n)
    a = torch.tensor(0.75, requires_grad=True)
    x, y = (torch.randn(n, generator=gen).requires_grad_() for _ in range(2))
    w = torch.randn(n, generator=gen)
    check_against_torch(m.wave, a, x, y, w, dict(rtol=2e-5, atol=2e-5))
    with torch.no_grad():
        got = m.wave(a=a, x=x, y=y)
    torch.testing.assert_close(got, wave_torch(a, x, y).detach(), rtol=2e-5, atol=2e-5)
    assert n * 4 > staging.KEEP_BYTES or 1 in m.wave.staging.slots


def test_changed_shape_dtype_and_grad_mask_between_calls(m, overlap):
    """Calls in a row that change what the kept device tensors and replayed launches were made
    for: the shapes (and a broadcast), the dtype of an input (float64 into a float parameter:
    converted), which inputs require grad."""
    gen = torch.Generator().manual_seed(3)
    tol = dict(rtol=2e-5, atol=2e-5)
    steps = [
        ((), (6,), (6,), torch.float32, (True, True, True)),
        ((), (6,), (6,), torch.float32, (True, True, True)),  # the same again: replayed
        ((), (6,), (6,), torch.float32, (False, True, False)),  # another requires_grad mask
        ((1,), (4, 6), (6,), torch.float32, (True, False, True)),  # other shapes, broadcast
        ((), (6,), (6,), torch.float64, (True, True, True)),  # float64 data into float params
        ((), (6,), (6,), torch.float32, (True, True, False)),
    ]
    for a_shape, x_shape, y_shape, dtype, mask in steps:
        a, x, y = (torch.randn(s, generator=gen, dtype=dtype).requires_grad_(g)
                   for s, g in zip((a_shape, x_shape, y_shape), mask))
        w = torch.randn(torch.broadcast_shapes(a_shape, x_shape, y_shape), generator=gen, dtype=dtype)
        if dtype == torch.float32:
            check_against_torch(m.wave, a, x, y, w, tol)
            continue
        with pytest.raises(CallError, match=r"wave\(\): argument 'a' is a float64 torch tensor"):
            m.wave(a=a, x=x, y=y)


def test_in_place_change_before_backward(m, overlap):
    """An input changed in place between the forward and its backward: torch refuses the
    backward (its saved-tensor check), rather than a gradient of other values; and a call after
    the change reads the new values, through the same kept tensors."""
    x = torch.linspace(-1, 1, 8, requires_grad=True)
    y = torch.linspace(0.5, 2, 8)
    out = m.wave(a=1.25, x=x, y=y)
    with torch.no_grad():
        x.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    x.grad = None
    check_against_torch(m.wave, torch.tensor(1.25), x, y.requires_grad_(), torch.ones(8), dict(rtol=2e-5, atol=2e-5))


def test_torch_numpy_and_tensor_calls_interleaved(m, overlap):
    """Calls of the three kinds in turn, each with new values, through the one kernel: each
    reads its own arguments (a replayed launch reuses the kernel's arguments as the last launch
    set them, so a torch or numpy call after a diffc.Tensor call must not replay its own older
    launch; keeping a plan per kind of call did, and this caught it)."""
    rng = np.random.default_rng(5)
    for step in range(3):
        xs, ys = rng.standard_normal(10), rng.standard_normal(10)
        want = wave_torch(torch.tensor(0.5, dtype=torch.float64), torch.from_numpy(xs), torch.from_numpy(ys))
        got_np = m.wave64(a=0.5, x=xs, y=ys, _result="numpy")
        xt = diffc.Tensor.from_numpy(xs)
        yt = diffc.Tensor.from_numpy(ys)
        got_tensor = m.wave64(a=0.5, x=xt, y=yt).to_numpy()
        xg = torch.from_numpy(xs.copy()).requires_grad_()
        got_torch = m.wave64(a=0.5, x=xg, y=torch.from_numpy(ys))
        got_torch.sum().backward()
        xr = torch.from_numpy(xs.copy()).requires_grad_()
        wave_torch(torch.tensor(0.5, dtype=torch.float64), xr, torch.from_numpy(ys)).sum().backward()
        for got in (torch.from_numpy(got_np), torch.from_numpy(got_tensor), got_torch.detach()):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(xg.grad, xr.grad, rtol=1e-12, atol=1e-12)


def test_a_second_backward_needs_retain_graph(m, overlap):
    """The graph's inputs are kept on the autograd context, not saved tensors: a second backward
    through a freed graph must still raise as torch's own nodes do, and with retain_graph it
    adds the same gradient again."""
    x = torch.linspace(-1, 1, 6, requires_grad=True)
    y = torch.linspace(0.5, 2, 6)
    out = m.wave(a=0.5, x=x, y=y)
    out.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.sum().backward()
    x.grad = None
    out = m.wave(a=0.5, x=x, y=y)
    out.sum().backward(retain_graph=True)
    first = x.grad.clone()
    out.sum().backward()
    xr = x.detach().clone().requires_grad_()
    wave_torch(torch.tensor(0.5), xr, y).sum().backward()
    torch.testing.assert_close(first, xr.grad, rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(x.grad, 2 * xr.grad, rtol=2e-5, atol=2e-5)
