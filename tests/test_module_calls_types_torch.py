"""Torch tensors in calls of functions with vector, matrix, array, struct and out/inout
parameters (runtime/torch_records.py), against torch's own autograd of the same functions."""

from __future__ import annotations

import numpy as np
import pytest

import diffc

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'diffc[torch]')")

SRC = """
struct Body : IDifferentiable { float3 pos; float mass; };
struct BodyD : IDifferentiable { double3 pos; double mass; };

[Differentiable] float len3(float3 p) { return sqrt(dot(p, p)); }
[Differentiable] double len3d(double3 p) { return sqrt(dot(p, p)); }
[Differentiable] double2 affine(double2x3 m, double3 v) { return mul(m, v); }
[Differentiable] double wsum(double w[3], double x) { return w[0] + w[1] * x + w[2] * x * x; }
[Differentiable] BodyD drift(BodyD b, double3 vel) {
    BodyD r;
    r.pos = b.pos + vel * b.mass;
    r.mass = b.mass * b.mass;
    return r;
}
[Differentiable] void split(double x, out double y, inout double z) { y = x * z; z = sin(z) + x; }
[Differentiable] float3 scalef(float3 p, float3 k) { return p * k; }
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("ttypes") / "t.slang"
    path.write_text(SRC)
    return diffc.load_module(path)


def leaf(shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=dtype) + 0.5).requires_grad_(True)


def grads_of(f, inputs, seed=1):
    """d sum(w * f(inputs)) / d inputs for fixed random weights w (one per output element)."""
    out = f(*inputs)
    outs = list(out.values()) if isinstance(out, dict) else [out]
    g = torch.Generator().manual_seed(seed)
    loss = sum((torch.rand(o.shape, generator=g, dtype=o.dtype) * o).sum() for o in outs)
    return torch.autograd.grad(loss, inputs), outs


@pytest.mark.parametrize("dtype, name, tol", [(torch.float64, "len3d", 1e-12), (torch.float32, "len3", 1e-5)])
def test_vector_against_torch(m, dtype, name, tol):
    p = leaf((4, 3), dtype)
    ours, out = grads_of(lambda p: getattr(m, name)(p=p), [p])
    theirs, ref = grads_of(lambda p: torch.linalg.norm(p, dim=-1), [p])
    assert out[0].dtype == dtype and out[0].shape == (4,)
    torch.testing.assert_close(out[0], ref[0], rtol=tol, atol=tol)
    torch.testing.assert_close(ours[0], theirs[0], rtol=tol, atol=tol)


def test_matrix_and_array_against_torch(m):
    mat, v = leaf((3, 2, 3)), leaf((3, 3), seed=2)
    ours, _ = grads_of(lambda a, b: m.affine(m=a, v=b), [mat, v])
    theirs, _ = grads_of(lambda a, b: torch.einsum("bij,bj->bi", a, b), [mat, v])
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
    w, x = leaf((5, 3), seed=3), leaf((5,), seed=4)
    ours, _ = grads_of(lambda w, x: m.wsum(w=w, x=x), [w, x])
    theirs, _ = grads_of(lambda w, x: w[:, 0] + w[:, 1] * x + w[:, 2] * x * x, [w, x])
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_struct_dicts_against_torch(m):
    pos, mass, vel = leaf((4, 3)), leaf((4,), seed=5), leaf((3,), seed=6)  # vel broadcast
    ours, out = grads_of(lambda a, b, c: m.drift(b={"pos": a, "mass": b}, vel=c), [pos, mass, vel])
    theirs, ref = grads_of(lambda a, b, c: {"pos": a + c * b[:, None], "mass": b * b}, [pos, mass, vel])
    for a, b in zip(out, ref):
        torch.testing.assert_close(a, b)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_out_and_inout_against_torch(m):
    x, z = leaf((4,)), leaf((4,), seed=7)
    z_before = z.detach().clone()
    ours, out = grads_of(lambda x, z: m.split(x=x, z=z), [x, z])
    theirs, ref = grads_of(lambda x, z: {"y": x * z, "z": torch.sin(z) + x}, [x, z])
    for a, b in zip(out, ref):
        torch.testing.assert_close(a, b)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(z.detach(), z_before)  # autograd's input is not written
    with torch.no_grad():  # without autograd an inout tensor is written in place
        zz = z_before.clone()
        m.split(x=x.detach(), z=zz)
    torch.testing.assert_close(zz, torch.sin(z_before) + x.detach())


def test_fwds_and_bwds_with_torch_tensors(m):
    p, k = leaf((5, 3), torch.float32), leaf((5, 3), torch.float32, seed=8)
    pt = p.detach().clone()  # its .grad is its tangent; k has none (zero)
    pt.grad = torch.ones_like(pt)
    y = m.scalef.fwds(p=pt, k=k.detach())
    torch.testing.assert_close(y, pt * k.detach())
    torch.testing.assert_close(y.grad, k.detach())  # d(p k)/dp . 1
    y = m.scalef(p=p.detach(), k=k.detach())
    y.grad = torch.full_like(y, 2.0)
    kk = k.detach().clone().requires_grad_(True)
    m.scalef.bwds(p=p.detach(), k=kk, _result=y)
    torch.testing.assert_close(kk.grad, 2.0 * p.detach())


def test_training_a_vector_parameter_with_torch_optim(m):
    target = torch.tensor([0.5, -1.0, 2.0])
    pts = torch.rand(64, 3, generator=torch.Generator().manual_seed(9)) + 0.5
    k = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.Adam([k], lr=0.05)
    for _ in range(300):
        opt.zero_grad()
        loss = ((m.scalef(p=pts, k=k) - pts * target) ** 2).mean()
        loss.backward()
        opt.step()
    np.testing.assert_allclose(k.detach().numpy(), target.numpy(), atol=1e-2)
