"""Arrays of structs as parameters of calls over tensors (runtime/layouts.py): `Pt ps[N]` takes a
dict of Pt's fields, each with the extra dimension N before the field's own shape. Values against
numpy; derivatives against float64 central differences in both modes (tests/call_harness.py)."""

from __future__ import annotations

import numpy as np
import pytest
from call_harness import check_call_derivatives

import diffc
from diffc.runtime.errors import CallError

SRC = """
struct Pt : IDifferentiable { double2 at; double w; no_diff double k; int id; };
struct Cloud : IDifferentiable { Pt pts[2]; double s; };
struct Q : IDifferentiable { double2 at; double w; };

[Differentiable] double spread(Pt ps[3], double x) {
    double acc = 0.0;
    for (int i = 0; i < 3; i++)
        acc += ps[i].w * sin(ps[i].at.x * x) + ps[i].at.y * ps[(i + 1) % 3].w * ps[i].k + double(ps[i].id);
    return acc;
}
[Differentiable] double cloud(Cloud c) { return c.s * (c.pts[0].at.x * c.pts[1].w) + exp(c.pts[1].at.y) * c.pts[0].w; }
[Differentiable] void move(inout Q ps[2], double d, out Q was[2]) {
    was = ps;
    ps[0].at = ps[0].at + d * ps[1].w;
    ps[1].w = ps[1].w * ps[0].at.y;
}
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("aos") / "aos.slang"
    path.write_text(SRC)
    return diffc.load_module(path)


def rand(*shape, seed=0):
    return np.random.default_rng(seed + 7 * len(shape) + sum(shape)).uniform(-1, 1, shape)


def pts(batch: int, n: int, seed: int = 0) -> dict:
    return {"at": rand(batch, n, 2, seed=seed), "w": rand(batch, n, seed=seed + 1),
            "k": rand(batch, n, seed=seed + 2), "id": np.arange(batch * n, dtype=np.int32).reshape(batch, n)}


def spread_np(ps: dict, x):
    at, w, k, ids = ps["at"], ps["w"], ps["k"], ps["id"]
    return sum(w[..., i] * np.sin(at[..., i, 0] * x) + at[..., i, 1] * w[..., (i + 1) % 3] * k[..., i] + ids[..., i]
               for i in range(3))


def test_array_of_structs_takes_a_dict_of_fields_with_the_element_dimension(m):
    ps = pts(4, 3)
    x = rand(4, seed=9)
    np.testing.assert_allclose(m.spread(ps=ps, x=x, _result="numpy"), spread_np(ps, x), rtol=1e-12)
    # broadcast: one array of structs for every x
    one = {f: v[:1] for f, v in ps.items()}
    np.testing.assert_allclose(m.spread(ps=one, x=x, _result="numpy"), spread_np(one, x), rtol=1e-12)


def test_array_of_structs_from_a_numpy_structured_array(m):
    ps = pts(5, 3, seed=3)
    rec = np.zeros(5, dtype=[("at", np.float64, (3, 2)), ("w", np.float64, (3,)), ("k", np.float64, (3,)),
                             ("id", np.int32, (3,))])
    for f, v in ps.items():
        rec[f] = v
    np.testing.assert_allclose(m.spread(ps=rec, x=0.4, _result="numpy"), spread_np(ps, 0.4), rtol=1e-12)


def test_array_of_structs_inside_a_struct(m):
    c = {"pts": {"at": rand(3, 2, 2, seed=4), "w": rand(3, 2, seed=5), "k": rand(3, 2, seed=6),
                 "id": np.zeros((3, 2), np.int32)}, "s": rand(3, seed=7)}
    p = c["pts"]
    want = c["s"] * p["at"][:, 0, 0] * p["w"][:, 1] + np.exp(p["at"][:, 1, 1]) * p["w"][:, 0]
    np.testing.assert_allclose(m.cloud(c=c, _result="numpy"), want, rtol=1e-12)
    check_call_derivatives(m.cloud, {"c": c})


def test_derivatives_of_an_array_of_structs(m):
    # k is no_diff, so finite differences must hold it: the harness holds integer arrays (the
    # call converts them to the field's double)
    ps = dict(pts(2, 3, seed=11), k=np.array([[1, -2, 3], [2, 1, -1]], np.int32))
    check_call_derivatives(m.spread, {"ps": ps, "x": rand(2, seed=12)})


def test_no_diff_field_of_an_array_of_structs_gets_no_gradient(m):
    ps = pts(3, 3, seed=13)
    tensors = {f: diffc.Tensor.from_numpy(np.ascontiguousarray(v)) for f, v in ps.items()}
    for f in ("at", "w", "k"):
        tensors[f].with_grads()
    y = m.spread(ps=tensors, x=0.3).with_grads()
    y.grad.fill(1.0)
    m.spread.bwds(ps=tensors, x=0.3, _result=y)
    np.testing.assert_array_equal(tensors["k"].grad.to_numpy(), np.zeros((3, 3)))
    # d/dw_i: sin(at_i.x x) + at_{i-1}.y k_{i-1}
    at, k = ps["at"], ps["k"]
    want = np.stack([np.sin(at[:, i, 0] * 0.3) + at[:, (i - 1) % 3, 1] * k[:, (i - 1) % 3] for i in range(3)], axis=1)
    np.testing.assert_allclose(tensors["w"].grad.to_numpy(), want, rtol=1e-12)


def test_inout_and_out_arrays_of_structs(m):
    ps = {"at": rand(4, 2, 2, seed=20), "w": rand(4, 2, seed=21)}
    before = {f: v.copy() for f, v in ps.items()}
    got = m.move(ps=ps, d=0.25, _result="numpy")
    for f in ("at", "w"):
        np.testing.assert_allclose(got["was"][f], before[f], rtol=1e-12)
    at0 = before["at"][:, 0] + 0.25 * before["w"][:, 1:2]
    np.testing.assert_allclose(got["ps"]["at"][:, 0], at0, rtol=1e-12)
    np.testing.assert_allclose(got["ps"]["w"][:, 1], before["w"][:, 1] * at0[:, 1], rtol=1e-12)
    np.testing.assert_allclose(ps["w"][:, 1], before["w"][:, 1] * at0[:, 1], rtol=1e-12)  # written in place
    fresh = {f: v.copy() for f, v in before.items()}
    check_call_derivatives(m.move, {"ps": fresh, "d": rand(4, seed=23)})


@pytest.mark.parametrize("ps, message", [
    ({"at": np.ones((4, 2)), "w": np.ones((4, 3)), "k": np.ones((4, 3)), "id": np.ones((4, 3), np.int32)},
     r"'ps\.at' has shape \(4, 2\); parameter type double2\[3\] takes arrays of shape \(\.\.\., 3, 2\)"),
    ({"at": np.ones((4, 3, 2)), "w": np.ones((4, 3))}, r"'ps' is missing field 'k' of struct Pt\[3\]"),
    ([{"at": np.ones(2), "w": 1.0}] * 3, r"'ps' is a struct Pt\[3\]: pass a dict of its fields"),
])
def test_wrong_arrays_of_structs_are_located_errors(m, ps, message):
    with pytest.raises(CallError, match=message):
        m.spread(ps=ps, x=1.0)


def test_torch_tensors_in_an_array_of_structs_match_torch_autograd(m):
    torch = pytest.importorskip("torch", reason="the torch path needs PyTorch")
    ps = pts(4, 3, seed=30)
    leaves = {f: torch.tensor(v, requires_grad=f in ("at", "w")) for f, v in ps.items()}
    x = torch.tensor(rand(4, seed=31), requires_grad=True)
    out = m.spread(ps=leaves, x=x)
    wgt = torch.tensor(rand(4, seed=32))
    (out * wgt).sum().backward()

    ref = {f: v.detach().clone().requires_grad_(f in ("at", "w")) for f, v in leaves.items()}
    xr = x.detach().clone().requires_grad_()
    at, w, k, ids = ref["at"], ref["w"], ref["k"], ref["id"]
    want = sum(w[:, i] * torch.sin(at[:, i, 0] * xr) + at[:, i, 1] * w[:, (i + 1) % 3] * k[:, i] + ids[:, i]
               for i in range(3))
    (want * wgt).sum().backward()
    torch.testing.assert_close(out.detach(), want.detach(), rtol=1e-12, atol=1e-12)
    for f in ("at", "w"):
        torch.testing.assert_close(leaves[f].grad, ref[f].grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(x.grad, xr.grad, rtol=1e-12, atol=1e-12)
