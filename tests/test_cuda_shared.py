"""torch CUDA tensors in calls through memory CUDA and diffc's OpenCL share
(diffc/runtime/cuda_shared.py): results and gradients against torch's own autograd of the same
function on CUDA, no byte through the host, the pool's tensors passed with no copy, and the
order of torch's stream and diffc's queue kept without host waits. Runs where torch has CUDA
and diffc runs on that GPU through NVIDIA's OpenCL (DIFFC_DEVICE=gpu) with the CUDA bindings
installed; elsewhere each test is skipped with the reason."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import diffc  # noqa: E402
from diffc.runtime import cuda_kernels, cuda_shared, torch_bridge  # noqa: E402


def _why_not() -> str | None:
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    return cuda_shared.unavailable()


WHY = _why_not()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"shared CUDA memory unavailable: {WHY}")

SRC = """
[Differentiable]
float wave(float a, float x, float y) { return a * sin(x) * y + exp(0.5 * x) - y * y / (1.0 + x * x); }

[Differentiable]
double wave64(double a, double x, double y) { return a * sin(x) * y + exp(0.5 * x) - y * y / (1.0 + x * x); }

[Differentiable]
float affine(float x, float s) { return s * x + 1.0; }
"""


def wave_torch(a, x, y):
    return a * torch.sin(x) * y + torch.exp(0.5 * x) - y * y / (1.0 + x * x)


@pytest.fixture(autouse=True)
def shared_path(monkeypatch):
    """These tests are about the path over shared memory: the CUDA kernels' path (which calls
    take first where it runs: cuda_kernels.py) is off. (ENABLED is a list: monkeypatch.setitem
    wants a mapping, so the module's list is replaced, as test_torch_bridge.py does.)"""
    monkeypatch.setattr(cuda_kernels, "ENABLED", [False])


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("cuda_shared") / "funcs.slang"
    path.write_text(SRC)
    return diffc.load_module(path)


@pytest.fixture
def no_host(monkeypatch):
    """Any trip of a torch tensor's data through the host fails the test."""
    def refuse(t):
        raise AssertionError(f"a torch tensor went through the host: {t.device} {tuple(t.shape)}")

    monkeypatch.setattr(torch_bridge, "_host", refuse)


def test_pool_tensors_pass_with_no_copy_and_others_with_one():
    sh = cuda_shared.shared()
    x = cuda_shared.empty((1000,))
    x.copy_(torch.linspace(-1, 1, 1000, device=x.device))
    keep: list = []
    t = cuda_shared.diffc_tensor(x, np.dtype(np.float32), sh, keep)
    assert keep == [x] and t.buffer.int_ptr != 0  # the torch tensor's own memory, no block
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.to_numpy(), x.cpu().numpy())
    x.mul_(3.0)  # written by torch, read by diffc where it is
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.to_numpy(), x.cpu().numpy())
    plain = torch.randn(7, 3, device=x.device).t()  # not in the pool, not contiguous: copied once
    c = cuda_shared.diffc_tensor(plain, np.dtype(np.float32), sh, keep)
    assert isinstance(keep[1], cuda_shared.Block) and c.shape == (3, 7)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(c.to_numpy(), plain.cpu().numpy())


@pytest.mark.parametrize("pooled", [False, True], ids=["copied", "pool"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_matches_torch_autograd_on_cuda(m, no_host, pooled, dtype):
    fn = m.wave if dtype == torch.float32 else m.wave64
    gen = torch.Generator().manual_seed(11)
    dev = cuda_shared.shared().device

    def make(shape):
        v = torch.randn(shape, dtype=dtype, generator=gen).to(dev)
        if pooled:
            p = cuda_shared.empty(shape, dtype)
            p.copy_(v)
            return p
        return v

    a = make(()).requires_grad_()  # broadcast: its gradient is summed
    x = make((64, 33)).requires_grad_()
    y = make((64, 33))  # takes no gradient
    w = torch.randn(64, 33, dtype=dtype, generator=gen).to(dev)
    out = fn(a=a, x=x, y=y)
    assert out.device == x.device and out.dtype == dtype and out.requires_grad
    (out * w).sum().backward()
    ra, rx = a.detach().clone().requires_grad_(), x.detach().clone().requires_grad_()
    ref = wave_torch(ra, rx, y)
    (ref * w).sum().backward()
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out.detach(), ref.detach(), **tol)
    torch.testing.assert_close(a.grad, ra.grad, **(tol if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-3)))
    torch.testing.assert_close(x.grad, rx.grad, **tol)
    assert y.grad is None and a.grad.shape == () and a.grad.device == x.device
    with torch.no_grad():
        plain = fn(a=a, x=x, y=y)
    assert plain.grad_fn is None
    torch.testing.assert_close(plain, ref.detach(), **tol)


def test_order_without_host_waits(m, no_host):
    """Twenty calls, each reading what torch wrote just before on its stream and each result
    read by torch right after, with no synchronize in between: large enough tensors that a
    missing order would show (the values are checked at the end)."""
    dev = cuda_shared.shared().device
    n = 1 << 22
    x = cuda_shared.empty((n,))
    base = torch.linspace(-2, 2, n, device=dev)
    totals = []
    for k in range(20):
        torch.add(base, float(k), out=x)  # torch writes x ...
        y = m.affine(x=x, s=float(k % 3))  # ... diffc reads it ...
        totals.append((y - (float(k % 3) * (base + k) + 1.0)).abs().max())  # ... torch reads y
    worst = torch.stack(totals).max().item()
    assert worst < 1e-4


def test_result_into_a_torch_tensor_and_numpy(m, no_host):
    dev = cuda_shared.shared().device
    x = torch.arange(10, dtype=torch.float32, device=dev)
    into = torch.empty(10, device=dev)
    assert m.affine(x=x, s=2.0, _result=into) is into
    torch.testing.assert_close(into, 2 * x + 1)
    np.testing.assert_allclose(m.affine(x=x, s=2.0, _result="numpy"), (2 * x + 1).cpu().numpy())


def test_torch_compile_on_cuda_tensors_no_host(m, no_host):
    """A step compiled with fullgraph=True on CUDA tensors: the diffc::call node and its
    backward run through shared memory (no byte through the host), with eager's numbers."""
    torch.manual_seed(1)
    x = torch.randn(1000, device="cuda", requires_grad=True)
    y = torch.randn(1000, device="cuda", requires_grad=True)

    def loss_of(x, y):
        return (m.wave(1.5, torch.tanh(x), y) ** 2).mean()

    loss = torch.compile(loss_of, fullgraph=True, backend="aot_eager")(x, y)
    gx, gy = torch.autograd.grad(loss, (x, y))
    xe, ye = x.detach().requires_grad_(), y.detach().requires_grad_()
    ref = (wave_torch(1.5, torch.tanh(xe), ye) ** 2).mean()
    rx, ry = torch.autograd.grad(ref, (xe, ye))
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gx, rx, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(gy, ry, rtol=1e-4, atol=1e-6)
