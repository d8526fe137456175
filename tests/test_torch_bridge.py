"""torch tensors in module calls (diffc/runtime/torch_bridge.py), on PoCL: results and gradients
against torch's own autograd of the same function written in torch, float32 and float64, and a
small model trained with torch.optim."""

from __future__ import annotations

import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import diffc  # noqa: E402
from diffc.runtime.errors import CallError  # noqa: E402
from diffc.runtime.torch_bridge import _host  # noqa: E402

SRC = """
[Differentiable]
float polynomial(float a, float b, float c, float x) { return a * x * x + b * x + c; }

[Differentiable]
float wave(float a, float x, float y) { return a * sin(x) * y + exp(0.5 * x) - y * y / (1.0 + x * x); }

[Differentiable]
double wave64(double a, double x, double y) { return a * sin(x) * y + exp(0.5 * x) - y * y / (1.0 + x * x); }

[Differentiable]
float scaled(no_diff float s, float x) { return s * x * x; }
"""


def wave_torch(a, x, y):
    return a * torch.sin(x) * y + torch.exp(0.5 * x) - y * y / (1.0 + x * x)


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("torch") / "funcs.slang"
    path.write_text(SRC)
    return diffc.load_module(path)


def test_issue_example_polynomial_gradient(m):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = m.polynomial(a=2.0, b=8.0, c=-1.0, x=x)
    assert isinstance(y, torch.Tensor) and y.requires_grad
    y.sum().backward()
    torch.testing.assert_close(x.grad, 4 * x.detach() + 8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("a_shape", [(), (1,), (7,), (5, 7)], ids=["0d", "1", "row", "full"])
def test_matches_torch_autograd(m, dtype, a_shape):
    gen = torch.Generator().manual_seed(len(a_shape) + (dtype == torch.float64))
    fn = m.wave if dtype == torch.float32 else m.wave64
    a = torch.randn(a_shape, dtype=dtype, generator=gen).requires_grad_()
    x = torch.randn(5, 7, dtype=dtype, generator=gen).requires_grad_()
    y = torch.randn(5, 7, dtype=dtype, generator=gen).requires_grad_()
    w = torch.randn(5, 7, dtype=dtype, generator=gen)  # the output derivative

    out = fn(a=a, x=x, y=y)
    (out * w).sum().backward()
    got = [out.detach(), a.grad, x.grad, y.grad]

    ref_in = [t.detach().clone().requires_grad_() for t in (a, x, y)]
    ref = wave_torch(*ref_in)
    (ref * w).sum().backward()
    want = [ref.detach(), *(t.grad for t in ref_in)]

    tol = dict(rtol=2e-5, atol=2e-5) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    for g, e in zip(got, want):
        assert g.dtype == dtype and g.shape == e.shape
        torch.testing.assert_close(g, e, **tol)


def test_broadcast_scalar_tensors_get_summed_gradients(m):
    x = torch.tensor([1.0, 2.0, 3.0])
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor([8.0], requires_grad=True)
    c = torch.tensor(-1.0, requires_grad=True)
    m.polynomial(a, b, c, x).sum().backward()
    assert a.grad.shape == () and b.grad.shape == (1,) and c.grad.shape == ()
    torch.testing.assert_close(a.grad, (x * x).sum())
    torch.testing.assert_close(b.grad, x.sum().reshape(1))
    torch.testing.assert_close(c.grad, torch.tensor(3.0))


def test_no_grad_and_plain_tensors_give_plain_results(m):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.no_grad():
        y = m.polynomial(a=2.0, b=8.0, c=-1.0, x=x)
    assert y.grad_fn is None and not y.requires_grad
    y = m.polynomial(a=2.0, b=8.0, c=-1.0, x=x.detach())
    assert y.grad_fn is None
    torch.testing.assert_close(y, torch.tensor([9.0, 23.0]))


def test_no_diff_parameter_gets_no_gradient(m):
    s = torch.tensor([3.0], requires_grad=True)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    m.scaled(s, x).sum().backward()
    torch.testing.assert_close(x.grad, 6 * x.detach())
    assert s.grad is None


def test_non_contiguous_and_chained_with_torch_ops(m):
    base = torch.randn(4, 3, dtype=torch.float64)
    x = base.t().requires_grad_()  # a transposed view: not C-contiguous
    z = m.wave64(a=1.5, x=torch.cos(x), y=x * 2.0)
    z.pow(2).mean().backward()
    xr = base.t().clone().requires_grad_()
    wave_torch(1.5, torch.cos(xr), xr * 2.0).pow(2).mean().backward()
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-12, atol=1e-12)


def test_fwds_and_bwds_take_torch_tensors(m):
    gen = torch.Generator().manual_seed(3)
    a, x, y = (torch.randn(6, dtype=torch.float64, generator=gen) for _ in range(3))
    da, dx, dy = (torch.randn(6, dtype=torch.float64, generator=gen) for _ in range(3))
    _, jvp = torch.autograd.functional.jvp(wave_torch, (a, x, y), (da, dx, dy))
    for t, d in ((a, da), (x, dx), (y, dy)):
        t.grad = d
    out = m.wave64.fwds(a=a, x=x, y=y)
    torch.testing.assert_close(out, wave_torch(a, x, y), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out.grad, jvp, rtol=1e-12, atol=1e-12)

    u = torch.randn(6, dtype=torch.float64, generator=gen)
    leaves = [t.detach().clone().requires_grad_() for t in (a, x, y)]
    result = out.detach().clone()
    result.grad = u
    m.wave64.bwds(*leaves, _result=result)
    m.wave64.bwds(*leaves, _result=result)  # accumulates, as backward() does
    _, vjp = torch.autograd.functional.vjp(wave_torch, (a, x, y), u)
    for leaf, g in zip(leaves, vjp):
        torch.testing.assert_close(leaf.grad, 2 * g, rtol=1e-12, atol=1e-12)
    # forward against reverse: <u, J v> = <J^T u, v>
    assert float((u * jvp).sum()) == pytest.approx(float(sum((g * d).sum() for g, d in zip(vjp, (da, dx, dy)))))


def test_result_forms(m):
    x = np.array([1.0, 2.0], np.float32)
    y = m.polynomial(2.0, 8.0, -1.0, x, _result="torch")
    assert isinstance(y, torch.Tensor)
    torch.testing.assert_close(y, torch.tensor([9.0, 23.0]))
    into = torch.zeros(2)
    assert m.polynomial(2.0, 8.0, -1.0, torch.from_numpy(x), _result=into) is into
    torch.testing.assert_close(into, y)
    got = m.polynomial(2.0, 8.0, -1.0, torch.from_numpy(x), _result="numpy")
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, [9.0, 23.0])


def test_a_tensor_passed_again_is_read_anew(m):
    """A call reuses the numpy view it made of the last call's tensor (torch_bridge._view): the
    values must still be the tensor's own after in-place changes of its data, its strides and
    its dtype (the same memory each time)."""

    def poly(x):
        return 2.0 * x * x + 8.0 * x - 1.0

    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    for step in range(3):
        y = m.polynomial(a=2.0, b=8.0, c=-1.0, x=x)
        torch.testing.assert_close(y, poly(x.detach()))
        y.sum().backward()
        torch.testing.assert_close(x.grad, 4 * x.detach() + 8)
        x.grad = None
        with torch.no_grad():
            x.mul_(-0.5)  # new values, same memory
    with torch.no_grad():
        x.t_()  # same memory and shape, other strides
    assert not x.is_contiguous()
    torch.testing.assert_close(m.polynomial(a=2.0, b=8.0, c=-1.0, x=x), poly(x.detach()))
    plain = torch.tensor([1.0, 2.0])
    m.polynomial(a=2.0, b=8.0, c=-1.0, x=plain)
    plain.data = plain.data.view(torch.int32)  # same memory and shape, another dtype
    want = poly(plain.to(torch.float32))
    torch.testing.assert_close(m.polynomial(a=2.0, b=8.0, c=-1.0, x=plain), want)


def test_cpu_tensors_are_read_without_a_copy():
    t = torch.arange(6.0).reshape(2, 3)
    assert np.shares_memory(_host(t), t.numpy())


def test_errors_stay_diffc_errors(m):
    with pytest.raises(CallError, match="does not broadcast"):
        m.polynomial(torch.ones(4), 8.0, -1.0, torch.ones(3, requires_grad=True))
    with pytest.raises(CallError, match="unknown argument 'z'"):
        m.polynomial(a=2.0, b=8.0, c=-1.0, z=torch.ones(2))
    with pytest.raises(CallError, match="has no .grad"):
        m.polynomial.bwds(a=2.0, b=8.0, c=-1.0, x=torch.ones(2), _result=torch.ones(2))


def test_missing_torch_is_a_clear_error(m, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails
    with pytest.raises(CallError, match=r"needs PyTorch.*pip install 'diffc\[torch\]'"):
        m.polynomial(2.0, 8.0, -1.0, np.ones(2, np.float32), _result="torch")


def test_nn_parameters_train_with_torch_optim(m):
    """Fits the polynomial's coefficients (nn.Parameters, broadcast over the data) with Adam."""

    class Poly(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.coef = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(())) for _ in range(3)])

        def forward(self, x):
            a, b, c = self.coef
            return m.polynomial(a=a, b=b, c=c, x=x)

    gen = torch.Generator().manual_seed(0)
    x = torch.rand(256, generator=gen) * 2 - 1
    target = 2.0 * x * x - 3.0 * x + 0.5
    model = Poly()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    first = None
    for _ in range(400):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 1e-3 * first
    got = [float(p.detach()) for p in model.coef]
    assert got == pytest.approx([2.0, -3.0, 0.5], abs=0.05)


def test_tensors_the_host_cannot_read_are_call_errors(m):
    """A tensor whose data cannot come to the host (a meta tensor has none; numpy has no
    bfloat16) is refused with a message naming its device and dtype, not a torch traceback."""
    with pytest.raises(CallError, match=r"torch\.float32 on device 'meta' cannot be read"):
        m.polynomial(a=2.0, b=8.0, c=-1.0, x=torch.ones(3, device="meta"))
    with pytest.raises(CallError, match=r"torch\.bfloat16 on device 'cpu' cannot be read"):
        m.polynomial(a=2.0, b=8.0, c=-1.0, x=torch.ones(3, dtype=torch.bfloat16, requires_grad=True))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (torch.cuda.is_available() is False)")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_cuda_tensors_go_through_the_host(m, dtype, monkeypatch):
    """CUDA tensors round-trip through the host where memory is not shared (cuda_shared.py,
    turned off here; tests/test_cuda_shared.py tests it): results on the inputs' CUDA device in
    their dtype, gradients in the CUDA tensors' .grad (a broadcast one summed), matching torch's
    autograd of the same function on CUDA."""
    from diffc.runtime import cuda_shared

    monkeypatch.setattr(cuda_shared, "ENABLED", [False])
    fn = m.wave if dtype == torch.float32 else m.wave64
    gen = torch.Generator().manual_seed(5)
    a = torch.randn((), dtype=dtype, generator=gen).cuda().requires_grad_()
    x = torch.randn(4, 6, dtype=dtype, generator=gen).cuda().requires_grad_()
    y = torch.randn(4, 6, dtype=dtype, generator=gen).cuda()  # takes no gradient
    w = torch.randn(4, 6, dtype=dtype, generator=gen).cuda()
    out = fn(a=a, x=x, y=y)
    assert out.device == x.device and out.dtype == dtype and out.requires_grad
    (out * w).sum().backward()
    ref_a, ref_x = a.detach().clone().requires_grad_(), x.detach().clone().requires_grad_()
    ref = wave_torch(ref_a, ref_x, y)
    (ref * w).sum().backward()
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out.detach(), ref.detach(), **tol)
    for got, want in ((a.grad, ref_a.grad), (x.grad, ref_x.grad)):
        assert got.device == x.device and got.dtype == dtype and got.shape == want.shape
        torch.testing.assert_close(got, want, **tol)
    assert y.grad is None
    with torch.no_grad():
        plain = fn(a=a, x=x, y=y)
    assert plain.device == x.device and plain.grad_fn is None
    torch.testing.assert_close(plain, ref.detach(), **tol)
    np.testing.assert_allclose(fn(a=a, x=x, y=y, _result="numpy"), ref.detach().cpu().numpy(), **tol)
