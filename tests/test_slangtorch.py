"""diffc.slangtorch: slang-torch's API (loadModule, launchRaw, .fwd, .bwd) and its Slang-side
built-ins (TensorView, DiffTensorView, cudaThreadIdx/BlockIdx/BlockDim, reinterpret), on PoCL.
Gradients against float64 central finite differences of the same kernel's primal launches;
forward mode against reverse mode."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import diffc.slangtorch as slangtorch  # noqa: E402
from diffc.diagnostics import DiffcError  # noqa: E402
from diffc.runtime.errors import CallError  # noqa: E402

# A bounded read-modify-write loop (store's gradient clears what load passes on), loads through
# every index form, storeOnce, a 2-D tensor and a TensorView<int> of parameters.
POLY = """
[AutoPyBindCUDA]
[CUDAKernel]
[Differentiable]
void poly(DiffTensorView x, DiffTensorView<float> w, DiffTensorView out, TensorView<int> k)
{
    uint3 g = cudaBlockIdx() * cudaBlockDim() + cudaThreadIdx();
    uint i = g.x;
    [ForceUnroll]
    for (int j = 0; j < 3; j++)
        out[i, 0] = out[i, 0] + w[j] * pow(x[i], float(j)) * float(k[0]);
    out.storeOnce(uint2(i, 1), sin(x.load(i)) * w.load(uint(2)) + x[uint2(i, 0).x]);
}
"""


def _module(tmp_path, text, name="k.slang", **kw):
    p = tmp_path / name
    p.write_text(text)
    return slangtorch.loadModule(str(p), **kw)


def _launch(fn, n, block=4):
    fn.launchRaw(blockSize=(block, 1, 1), gridSize=(-(-n // block), 1, 1))


def _poly_out(m, x, w, k):
    out = torch.zeros(x.shape[0], 2)
    _launch(m.poly(x=x, w=w, out=out, k=k), x.shape[0])
    return out


def test_primal_matches_numpy(tmp_path):
    m = _module(tmp_path, POLY)
    x = torch.tensor([0.5, -1.25, 2.0, 0.1, 1.5])  # 5 elements over 2 blocks of 4: 3 threads past the end
    w = torch.tensor([0.3, -0.7, 1.1])
    k = torch.tensor([2], dtype=torch.int32)
    out = _poly_out(m, x, w, k).numpy()
    xd, wd = x.double().numpy(), w.double().numpy()
    want0 = sum(wd[j] * xd ** j for j in range(3)) * 2
    want1 = np.sin(xd) * wd[2] + xd
    np.testing.assert_allclose(out[:, 0], want0, rtol=1e-5)
    np.testing.assert_allclose(out[:, 1], want1, rtol=1e-5)


def _loss(m, x, w, k, seed):
    """<seed, out> of a primal launch, in float64."""
    return float((_poly_out(m, x.float(), w.float(), k).double() * seed).sum())


def test_bwd_matches_finite_differences(tmp_path):
    m = _module(tmp_path, POLY)
    x = torch.tensor([0.5, -1.25, 2.0, 0.1, 1.5])
    w = torch.tensor([0.3, -0.7, 1.1])
    k = torch.tensor([2], dtype=torch.int32)
    seed = torch.tensor([[1.0, -0.5], [0.25, 2.0], [-1.5, 0.75], [0.5, 0.5], [1.0, -1.0]])
    out = _poly_out(m, x, w, k)
    dx, dw, dout = torch.zeros(5), torch.zeros(3), seed.clone()
    _launch(m.poly.bwd(x=(x, dx), w=(w, dw), out=(out, dout), k=k), 5)
    h = 1e-3
    for t, g in ((x, dx), (w, dw)):
        for i in range(t.shape[0]):
            tp, tm = t.clone().double(), t.clone().double()
            tp[i] += h
            tm[i] -= h
            args_p = (tp, w.double(), k) if t is x else (x.double(), tp, k)
            args_m = (tm, w.double(), k) if t is x else (x.double(), tm, k)
            fd = (_loss(m, *args_p, seed.double()) - _loss(m, *args_m, seed.double())) / (2 * h)
            assert abs(g[i].item() - fd) <= 2e-2 * max(1.0, abs(fd)), (t is x, i, g[i].item(), fd)
    # store takes its gradient out of dout and the first load of out[i, 0] (its initial value, an
    # input with derivative 1) puts it back; storeOnce only reads it
    assert torch.equal(dout, seed)


def test_fwd_agrees_with_bwd(tmp_path):
    m = _module(tmp_path, POLY)
    x = torch.tensor([0.5, -1.25, 2.0, 0.1])
    w = torch.tensor([0.3, -0.7, 1.1])
    k = torch.tensor([3], dtype=torch.int32)
    out = _poly_out(m, x, w, k)
    seed = torch.tensor([[1.0, -0.5], [0.25, 2.0], [-1.5, 0.75], [0.5, 0.5]])
    dx, dw = torch.zeros(4), torch.zeros(3)
    _launch(m.poly.bwd(x=(x, dx), w=(w, dw), out=(out, seed.clone()), k=k), 4)
    tx, tw = torch.tensor([0.2, -1.0, 0.5, 1.5]), torch.tensor([1.0, 0.5, -2.0])
    tout = torch.zeros(4, 2)
    _launch(m.poly.fwd(x=(x, tx), w=(w, tw), out=(torch.zeros(4, 2), tout), k=k), 4)
    # <seed, J t> == <J^T seed, t>
    lhs = float((seed.double() * tout.double()).sum())
    rhs = float((dx.double() * tx.double()).sum() + (dw.double() * tw.double()).sum())
    assert abs(lhs - rhs) <= 1e-4 * max(1.0, abs(lhs))


def test_gradients_accumulate_atomically(tmp_path):
    # every thread loads w[0]: its gradient is the sum over threads, added to what dw held
    m = _module(tmp_path, """
[CUDAKernel] [Differentiable]
void scale(DiffTensorView w, DiffTensorView x, DiffTensorView y)
{
    uint i = (cudaBlockIdx() * cudaBlockDim() + cudaThreadIdx()).x;
    y.storeOnce(i, w[0] * x[i]);
}
""")
    x = torch.arange(10, dtype=torch.float32)
    w = torch.tensor([1.5])
    dw = torch.tensor([100.0])
    dx = torch.zeros(10)
    _launch(m.scale.bwd(w=(w, dw), x=(x, dx), y=(torch.zeros(10), torch.ones(10))), 10, block=3)
    assert dw.item() == pytest.approx(100.0 + x.sum().item())
    np.testing.assert_allclose(dx.numpy(), np.full(10, 1.5))


def test_launch_raw_indexing(tmp_path):
    # blockSize is the work-group (cudaBlockDim, cudaThreadIdx within it), gridSize the number of groups
    m = _module(tmp_path, """
[CUDAKernel]
void ids(TensorView<int> out)
{
    uint3 t = cudaThreadIdx(); uint3 b = cudaBlockIdx(); uint3 d = cudaBlockDim();
    uint3 g = b * d + t;
    out[g.x, g.y, 0] = int(t.x + 10 * t.y);
    out[g.x, g.y, 1] = int(b.x + 10 * b.y);
    out[g.x, g.y, 2] = int(d.x + 10 * d.y + 100 * d.z);
}
""")
    out = torch.full((6, 4, 3), -1, dtype=torch.int32)
    m.ids(out=out).launchRaw(blockSize=(3, 2, 1), gridSize=(2, 2, 1))
    gx, gy = np.meshgrid(np.arange(6), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(out[..., 0].numpy(), gx % 3 + 10 * (gy % 2))
    np.testing.assert_array_equal(out[..., 1].numpy(), gx // 3 + 10 * (gy // 2))
    np.testing.assert_array_equal(out[..., 2].numpy(), np.full((6, 4), 3 + 20 + 100))


def test_vector_views_reinterpret_and_defines(tmp_path):
    m = _module(tmp_path, """
[CUDAKernel]
void swap(TensorView<float2> a, TensorView<int> bits, TensorView<float> out)
{
    uint i = cudaThreadIdx().x;
    float2 v = a[i];
    a[i] = float2(v.y, v.x) * SCALE;
    out[i] = reinterpret<float, int>(bits[i]);
}
""", defines={"SCALE": 2})
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    vals = torch.tensor([1.5, -2.25, 8.0])
    bits = vals.view(torch.int32).clone()
    out = torch.zeros(3)
    m.swap(a=a, bits=bits, out=out).launchRaw(blockSize=(3, 1, 1), gridSize=(1, 1, 1))
    np.testing.assert_allclose(a.numpy(), [[4.0, 2.0], [8.0, 6.0], [12.0, 10.0]])
    np.testing.assert_array_equal(out.numpy(), vals.numpy())


def test_errors(tmp_path):
    m = _module(tmp_path, POLY)
    x, w, k = torch.zeros(2), torch.zeros(3), torch.zeros(1, dtype=torch.int32)
    with pytest.raises(CallError, match="missing arguments \\['k'\\]"):
        m.poly(x=x, w=w, out=torch.zeros(2, 2))
    with pytest.raises(CallError, match="blockSize must be a tuple of 3"):
        m.poly(x=x, w=w, out=torch.zeros(2, 2), k=k).launchRaw(blockSize=(4, 1), gridSize=(1, 1, 1))
    with pytest.raises(AttributeError, match="no \\[CUDAKernel\\] function or struct 'nope'"):
        m.nope
    with pytest.raises(DiffcError, match=r"k\.slang:4:5: error\[E0002\]: undefined function 'undefinedThing'"):
        _module(tmp_path, "[CUDAKernel]\nvoid f(TensorView<float> a)\n{\n    undefinedThing(a);\n}\n")


def test_bool_views_scalar_tensors_and_plain_tensor_in_fwd(tmp_path):
    m = _module(tmp_path, """
[CUDAKernel] [Differentiable]
void f(DiffTensorView x, DiffTensorView s, TensorView<bool> big, DiffTensorView y)
{
    uint i = cudaThreadIdx().x;
    float v = x[i] * s[0];
    big[i] = no_diff(v) > 1.0;
    y[i] = v * v;
}
""")
    x = torch.tensor([0.5, 1.0, 2.0])
    s = torch.tensor(1.5)  # 0-dimensional: one element
    big = torch.zeros(3, dtype=torch.bool)
    y = torch.zeros(3)
    m.f(x=x, s=s, big=big, y=y).launchRaw(blockSize=(3, 1, 1), gridSize=(1, 1, 1))
    assert big.tolist() == [False, True, True]
    np.testing.assert_allclose(y.numpy(), (x * 1.5).numpy() ** 2, rtol=1e-6)
    # s as a plain tensor in fwd: a zero tangent; d y / d x = 2 v s
    ty = torch.zeros(3)
    m.f.fwd(x=(x, torch.ones(3)), s=s, big=big, y=(torch.zeros(3), ty)).launchRaw(
        blockSize=(3, 1, 1), gridSize=(1, 1, 1))
    np.testing.assert_allclose(ty.numpy(), (2 * x * 1.5 * 1.5).numpy(), rtol=1e-6)


def test_refused_launches_say_why(tmp_path):
    m = _module(tmp_path, """
[CUDAKernel] [Differentiable]
void g(DiffTensorView x, float k) { x[0] = x[0] * k; }
[CUDAKernel] [Differentiable]
void h(DiffTensorView x, no_diff float k) { x[0] = x[0] * k; }
""")
    dx = torch.tensor([1.0])  # a no_diff scalar is a plain value in bwd: d(x k)/dx = k
    m.h.bwd(x=(torch.tensor([3.0]), dx), k=2.5).launchRaw(blockSize=(1, 1, 1), gridSize=(1, 1, 1))
    assert dx.item() == 2.5
    with pytest.raises(CallError, match="differentiable parameter 'k' \\(float\\) is not supported in bwd"):
        m.g.bwd(x=(torch.ones(1), torch.ones(1)), k=2.0)
    launch = m.g(x=torch.ones(1), k=2.0)
    with pytest.raises(CallError, match="launchTotal is not supported"):
        launch.launchTotal(blockSize=(1, 1, 1), totalSize=(1, 1, 1))
    launch.launchRaw(blockSize=(1, 1, 1), gridSize=(1, 1, 1))


def test_constexpr_parameter_is_an_ordinary_parameter(tmp_path):
    # (constexpr says the argument is a compile-time constant; the value is the same either way)
    _module(tmp_path, "void mm(Ptr<float> p, constexpr int W) {}\n[CUDAKernel] void f(TensorView<float> a) {}\n")


def test_data_ptr_passes_the_tensor_as_a_pointer(tmp_path):
    m = _module(tmp_path, """
void axpy(float* y, float* x, uint i, float a) { y[i] = a * x[i] + y[i]; }
[CUDAKernel]
void f(TensorView<float> x, TensorView<float> y)
{
    uint i = cudaThreadIdx().x;
    axpy(y.data_ptr(), x.data_ptr(), i, 3.0);
}
""")
    x, y = torch.tensor([1.0, 2.0, -1.0]), torch.tensor([0.5, 0.25, 4.0])
    want = 3 * x + y
    m.f(x=x, y=y).launchRaw(blockSize=(3, 1, 1), gridSize=(1, 1, 1))
    np.testing.assert_allclose(y.numpy(), want.numpy())


def test_a_launch_leaves_tensors_saved_for_backward_usable(tmp_path):
    # a kernel's writes reach the tensor as CUDA's would, not as an autograd in-place op: a tensor
    # an autograd.Function saved, then passed to another launch, is still usable in backward
    m = _module(tmp_path, POLY)
    x = torch.tensor([0.5, -1.25, 2.0, 0.1])
    w = torch.tensor([0.3, -0.7, 1.1])
    k = torch.tensor([1], dtype=torch.int32)

    class Poly(torch.autograd.Function):
        @staticmethod
        def forward(ctx, xin):
            out = _poly_out(m, xin, w, k)
            ctx.save_for_backward(xin, out)
            return out

        @staticmethod
        def backward(ctx, grad):
            xin, out = ctx.saved_tensors
            gx = torch.zeros_like(xin)
            _launch(m.poly.bwd(x=(xin, gx), w=w, out=(out, grad.contiguous().clone()), k=k), xin.shape[0])
            return gx

    xr = x.clone().requires_grad_(True)
    y = Poly.apply(xr)
    _launch(m.poly(x=x, w=w, out=y.detach(), k=k), 4)  # (writes into y, as a later kernel may)
    y.sum().backward()
    xd = x.double().numpy()
    want = (w[1].item() + 2 * w[2].item() * xd) + np.cos(xd) * w[2].item() + 1.0
    np.testing.assert_allclose(xr.grad.numpy(), want, rtol=1e-4)
