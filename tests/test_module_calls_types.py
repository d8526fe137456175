"""Calls over tensors of every parameter type (runtime/record_calls.py): vectors, matrices, arrays,
structs, out/inout parameters, half and double, vector and struct results. Values are checked
against numpy; derivatives against float64 central differences (tests/call_harness.py)."""

from __future__ import annotations

import numpy as np
import pytest
from call_harness import check_call_derivatives

import diffc
from diffc.runtime.errors import CallError

SRC = """
struct Particle : IDifferentiable { double3 pos; double mass; int id; };
struct ParticleF : IDifferentiable { float3 pos; float mass; };

[Differentiable] double len3(double3 p) { return sqrt(dot(p, p)); }
[Differentiable] double3 swirl(double3 a, double3 b, double s) { return cross(a, b) * s + a * a.y; }
[Differentiable] double2 affine(double2x3 m, double3 v) { return mul(m, v) + double2(m[0][0] * v.z, 0.0); }
[Differentiable] double2x2 outer2(double2 a, double2 b) {
    return double2x2(a.x * b.x, a.x * b.y, a.y * b.x, sin(a.y * b.y));
}
[Differentiable] double wsum(double w[4], double x) {
    double s = 0.0;
    for (int i = 0; i < 4; i++) s += w[i] * pow(x, double(i));
    return s;
}
[Differentiable] Particle step(Particle p, double3 vel, double dt) {
    Particle r;
    r.pos = p.pos + vel * dt * p.mass;
    r.mass = p.mass * exp(-dt);
    r.id = p.id + 1;
    return r;
}
[Differentiable] double energy(Particle p) { return 0.5 * p.mass * dot(p.pos, p.pos) + double(p.id); }
[Differentiable] void split(double x, out double y, inout double z, out double2 w) {
    y = x * x;
    w = double2(z, x * z);
    z = sin(z) * x;
}
[Differentiable] double polyd(double a, double x) { return a * x * x + x; }

[Differentiable] float len3f(float3 p) { return sqrt(dot(p, p)); }
[Differentiable] float3 scalef(float3 p, float3 k) { return p * k * k; }
[Differentiable] double3 scaled(double3 p, double3 k) { return p * k * k; }
[Differentiable] float energyf(ParticleF p) { return p.mass * dot(p.pos, p.pos); }
[Differentiable] half2 hf(half2 a, half b) { return a * b + a.yx; }
[Differentiable] float2 ff(float2 a, float b) { return a * b + a.yx; }
[Differentiable] double2 hd(double2 a, double b) { return a * b + a.yx; }
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("types") / "types.slang"
    path.write_text(SRC)
    return diffc.load_module(path)


def rand(*shape, seed=0):
    return np.random.default_rng(seed + len(shape) + sum(shape)).uniform(-1, 1, shape)


# -- values -----------------------------------------------------------------------------------


def test_vector_parameter_takes_the_trailing_dimension(m):
    p = rand(2, 5, 3)
    got = m.len3(p=p, _result="numpy")
    assert got.shape == (2, 5)
    np.testing.assert_allclose(got, np.linalg.norm(p, axis=-1), rtol=1e-12)
    t = m.len3(p=diffc.Tensor.from_numpy(p))  # a Tensor of shape (..., 3) as well
    np.testing.assert_allclose(t.to_numpy(), np.linalg.norm(p, axis=-1), rtol=1e-12)


def test_vector_result_and_broadcasting(m):
    a, b = rand(4, 3), rand(3, seed=1)  # b: one vector for every element
    got = m.swirl(a=a, b=b, s=2.0, _result="numpy")
    assert got.shape == (4, 3)
    np.testing.assert_allclose(got, np.cross(a, b) * 2.0 + a * a[:, 1:2], rtol=1e-12)
    got = m.swirl(a=a[None], b=rand(2, 1, 3), s=0.5, _result="numpy")  # batch (1, 4) with (2, 1)
    assert got.shape == (2, 4, 3)


def test_matrix_parameter_and_result(m):
    mat, v = rand(3, 2, 3), rand(3, 3, seed=2)
    want = np.einsum("bij,bj->bi", mat, v)
    want[:, 0] += mat[:, 0, 0] * v[:, 2]
    np.testing.assert_allclose(m.affine(m=mat, v=v, _result="numpy"), want, rtol=1e-12)
    a, b = rand(5, 2), rand(5, 2, seed=3)
    got = m.outer2(a=a, b=b, _result="numpy")
    assert got.shape == (5, 2, 2)
    want = a[:, :, None] * b[:, None, :]
    want[:, 1, 1] = np.sin(want[:, 1, 1])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_array_parameter(m):
    w, x = rand(6, 4), rand(6, seed=4)
    np.testing.assert_allclose(m.wsum(w=w, x=x, _result="numpy"), sum(w[:, i] * x**i for i in range(4)), rtol=1e-12)


def test_struct_parameter_and_result_as_dicts(m):
    pos, mass, ids = rand(4, 3), rand(4, seed=5) + 2, np.arange(4, dtype=np.int32)
    vel = rand(3, seed=6)
    got = m.step(p={"pos": pos, "mass": mass, "id": ids}, vel=vel, dt=0.1, _result="numpy")
    assert set(got) == {"pos", "mass", "id"}
    np.testing.assert_allclose(got["pos"], pos + vel * 0.1 * mass[:, None], rtol=1e-12)
    np.testing.assert_allclose(got["mass"], mass * np.exp(-0.1), rtol=1e-12)
    np.testing.assert_array_equal(got["id"], ids + 1)


def test_struct_from_a_numpy_structured_array(m):
    rec = np.zeros(3, dtype=[("pos", np.float64, (3,)), ("mass", np.float64), ("id", np.int32)])
    rec["pos"], rec["mass"], rec["id"] = rand(3, 3), [1.0, 2.0, 3.0], [1, 2, 3]
    got = m.energy(p=rec, _result="numpy")
    np.testing.assert_allclose(got, 0.5 * rec["mass"] * (rec["pos"] ** 2).sum(-1) + rec["id"], rtol=1e-12)


def test_out_and_inout_parameters(m):
    x, z = rand(4), rand(4, seed=7)
    z0 = z.copy()
    got = m.split(x=x, z=z, _result="numpy")
    assert set(got) == {"y", "z", "w"}
    np.testing.assert_allclose(got["y"], x * x, rtol=1e-12)
    np.testing.assert_allclose(got["w"], np.stack([z0, x * z0], -1), rtol=1e-12)
    np.testing.assert_allclose(z, np.sin(z0) * x, rtol=1e-12)  # the inout array, written in place
    # given Tensors are written in place; an inout Tensor too
    zt, yt = diffc.Tensor.from_numpy(z0), diffc.Tensor.zeros((4,), np.float64)
    out = m.split(x=x, y=yt, z=zt)
    assert out["y"] is yt and out["z"] is zt
    np.testing.assert_allclose(yt.to_numpy(), x * x, rtol=1e-12)
    np.testing.assert_allclose(zt.to_numpy(), np.sin(z0) * x, rtol=1e-12)


def test_half_agrees_with_float(m):
    a, b = rand(8, 2).astype(np.float16), rand(8, seed=8).astype(np.float16)
    got = m.hf(a=a, b=b, _result="numpy")
    assert got.dtype == np.float16 and got.shape == (8, 2)
    want = m.ff(a=a.astype(np.float32), b=b.astype(np.float32), _result="numpy")
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=2e-3)


# -- derivatives against finite differences ----------------------------------------------------


def test_derivatives_vector(m):
    check_call_derivatives(m.len3, {"p": rand(3, 3) + 2})
    check_call_derivatives(m.swirl, {"a": rand(2, 3), "b": rand(2, 3, seed=1), "s": 1.5})


def test_derivatives_matrix(m):
    check_call_derivatives(m.affine, {"m": rand(2, 2, 3), "v": rand(2, 3, seed=2)})
    check_call_derivatives(m.outer2, {"a": rand(2, 2), "b": rand(2, 2, seed=3)})


def test_derivatives_array(m):
    check_call_derivatives(m.wsum, {"w": rand(2, 4), "x": rand(2, seed=4)})


def test_derivatives_struct(m):
    p = {"pos": rand(2, 3), "mass": rand(2, seed=5) + 2, "id": np.arange(2, dtype=np.int32)}
    check_call_derivatives(m.step, {"p": p, "vel": rand(2, 3, seed=6), "dt": 0.3})
    check_call_derivatives(m.energy, {"p": p})


def test_derivatives_out_inout(m):
    check_call_derivatives(m.split, {"x": rand(3), "z": rand(3, seed=7)})


def test_broadcast_vector_gradient_is_summed(m):
    """float32: the broadcast argument's gradient is the sum over the batch (atomic adds) of the
    gradients it gets when passed at full shape (those are checked in float64 below)."""
    p = rand(64, 3).astype(np.float32)
    k = rand(3, seed=9).astype(np.float32)
    g = rand(64, 3, seed=10).astype(np.float32)

    def grads(k_value):
        pt = diffc.Tensor.from_numpy(p).with_grads()
        kt = diffc.Tensor.from_numpy(np.ascontiguousarray(k_value)).with_grads()
        y = m.scalef(p=pt, k=kt).with_grads()
        y.grad.copy_from_numpy(g)
        m.scalef.bwds(p=pt, k=kt, _result=y)
        return pt.grad.to_numpy(), kt.grad.to_numpy()

    gp, gk = grads(k)
    gp_full, gk_full = grads(np.broadcast_to(k, (64, 3)))
    assert gk.shape == (3,)
    np.testing.assert_allclose(gk, gk_full.sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gp, gp_full, rtol=1e-6)
    np.testing.assert_allclose(gp, g * k * k, rtol=1e-6)  # by hand: d(p k k)/dp = k k
    check_call_derivatives(m.scaled, {"p": rand(2, 3), "k": rand(2, 3, seed=9)})


def test_half_derivatives_agree_with_float(m):
    """hf (half), ff (float) and hd (double, checked against finite differences) are one function."""
    a, b = rand(4, 2), rand(4, seed=11)
    check_call_derivatives(m.hd, {"a": a, "b": b})
    ta, tb = rand(4, 2, seed=12), rand(4, seed=13)

    def fwd(f, dt):
        ah = diffc.Tensor.from_numpy(a.astype(dt)).with_grads(diffc.Tensor.from_numpy(ta.astype(dt)), zero=False)
        bh = diffc.Tensor.from_numpy(b.astype(dt)).with_grads(diffc.Tensor.from_numpy(tb.astype(dt)), zero=False)
        return f.fwds(a=ah, b=bh).grad.to_numpy().astype(np.float32)

    np.testing.assert_allclose(fwd(m.hf, np.float16), fwd(m.ff, np.float32), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(fwd(m.ff, np.float32), fwd(m.hd, np.float64), rtol=1e-5, atol=1e-6)

    def bwd(f, dt):
        ah = diffc.Tensor.from_numpy(a.astype(dt)).with_grads()
        bh = diffc.Tensor.from_numpy(b.astype(dt)).with_grads()
        y = f(a=ah, b=bh).with_grads()
        y.grad.copy_from_numpy(ta.astype(dt))
        f.bwds(a=ah, b=bh, _result=y)
        return ah.grad.to_numpy().astype(np.float32), bh.grad.to_numpy().astype(np.float32)

    for half, full, double in zip(bwd(m.hf, np.float16), bwd(m.ff, np.float32), bwd(m.hd, np.float64)):
        np.testing.assert_allclose(half, full, rtol=1e-2, atol=1e-2)
        np.testing.assert_allclose(full, double, rtol=1e-5, atol=1e-6)


def test_struct_gradient_into_each_field(m):
    """float32 struct fields are separate Tensors, each with its own .grad."""
    pos, mass = rand(5, 3).astype(np.float32), (rand(5, seed=14) + 2).astype(np.float32)
    p = {"pos": diffc.Tensor.from_numpy(pos).with_grads(), "mass": diffc.Tensor.from_numpy(mass).with_grads()}
    y = m.energyf(p=p).with_grads()
    y.grad.fill(1)
    m.energyf.bwds(p=p, _result=y)
    np.testing.assert_allclose(p["pos"].grad.to_numpy(), 2 * mass[:, None] * pos, rtol=1e-5)
    np.testing.assert_allclose(p["mass"].grad.to_numpy(), (pos * pos).sum(-1), rtol=1e-5)


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("call, message", [
    (lambda m: m.len3(p=np.ones((4, 2))), "argument 'p' has shape (4, 2); parameter type double3 takes arrays of shape (..., 3)"),
    (lambda m: m.affine(m=np.ones((4, 3, 2)), v=np.ones((4, 3))), "parameter type double2x3 takes arrays of shape (..., 2, 3)"),
    (lambda m: m.wsum(w=np.ones((4, 3)), x=1.0), "parameter type double[4] takes arrays of shape (..., 4)"),
    (lambda m: m.len3(p=np.ones((4, 3)), q=1), "unknown argument 'q'"),
    (lambda m: m.swirl(a=np.ones((4, 3)), b=np.ones((5, 3)), s=1.0), "argument 'b' has batch shape (5,)"),
    (lambda m: m.energy(p=np.ones((4, 4))), "'p' is a struct Particle: pass a dict of its fields (pos, mass, id)"),
    (lambda m: m.energy(p={"pos": np.ones((2, 3)), "mass": np.ones(2)}), "'p' is missing field 'id'"),
    (lambda m: m.energy(p={"pos": np.ones((2, 3)), "mass": np.ones(2), "id": np.ones(2, np.int32), "v": 1}),
     "has no field 'v'"),
    (lambda m: m.energy(p={"pos": np.ones((2, 3)), "mass": np.ones(2), "id": np.ones(2)}),
     "argument 'p.id' is a float64 array, parameter is int"),
    (lambda m: m.split(x=np.ones(3), z=1.0), "'z' is written by the call: pass a Tensor or a numpy array"),
    (lambda m: m.split(x=np.ones(3), z=np.ones(1)), "'z' is written by the call, so its batch shape must be the call's (3,)"),
    (lambda m: m.len3(p=3.0), "'p' is a double3: pass an array of shape (..., 3), got a number"),
    (lambda m: m.len3(p=diffc.Tensor.from_numpy(np.ones((2, 3), np.float32))), "is a float32 Tensor, parameter is double3"),
])
def test_errors_name_the_parameter_and_shape(m, call, message):
    with pytest.raises(CallError) as e:
        call(m)
    assert message in str(e.value)


def test_broadcast_float64_gradient_is_refused(m):
    a = diffc.Tensor.from_numpy(rand(4, 3)).with_grads()
    b = diffc.Tensor.from_numpy(rand(3)).with_grads()
    y = m.swirl(a=a, b=b, s=1.0).with_grads()
    with pytest.raises(CallError, match="argument 'b' is broadcast"):
        m.swirl.bwds(a=a, b=b, s=1.0, _result=y)


def test_bwds_needs_result_grads(m):
    p = diffc.Tensor.from_numpy(rand(4, 3)).with_grads()
    y = m.len3(p=p)
    with pytest.raises(CallError, match="'_result' has no .grad"):
        m.len3.bwds(p=p, _result=y)


# -- more shapes of calls -----------------------------------------------------------------------

MORE = """
struct Pt : IDifferentiable { float2 at; float w; };
[Differentiable] float pick(float3 v, int i, no_diff float k) { return v[i] * k + v.x; }
[Differentiable] float many(Pt ps[2]) { return ps[0].w + ps[1].w; }
[Differentiable] Pt nudge(Pt p, float d) { Pt r; r.at = p.at + d; r.w = p.w * d; return r; }
[Differentiable] float col(float3x1 m) { return m[0] + 2.0 * m[2]; }
"""

VEC_IR = """
func.func @dot3(%a: vector<3xf32>, %b: vector<3xf32>) -> f32 attributes {diff.differentiable} {
  %p = arith.mulf %a, %b : vector<3xf32>
  %x = vector.extract %p[0] : f32 from vector<3xf32>
  %y = vector.extract %p[1] : f32 from vector<3xf32>
  %z = vector.extract %p[2] : f32 from vector<3xf32>
  %xy = arith.addf %x, %y : f32
  %s = arith.addf %xy, %z : f32
  func.return %s : f32
}
"""


@pytest.fixture(scope="module")
def more(tmp_path_factory):
    path = tmp_path_factory.mktemp("more") / "more.slang"
    path.write_text(MORE)
    return diffc.load_module(path)


def test_integer_and_no_diff_parameters_with_vectors(more):
    v = rand(5, 3).astype(np.float32)
    i = np.array([0, 1, 2, 1, 0], np.int32)
    got = more.pick(v=v, i=i, k=3.0, _result="numpy")
    np.testing.assert_allclose(got, v[np.arange(5), i] * 3.0 + v[:, 0], rtol=1e-6)
    vt = diffc.Tensor.from_numpy(v).with_grads()
    y = more.pick(v=vt, i=i, k=3.0).with_grads()
    y.grad.fill(1)
    more.pick.bwds(v=vt, i=i, k=3.0, _result=y)
    want = np.zeros_like(v)
    want[np.arange(5), i] += 3.0
    want[:, 0] += 1.0
    np.testing.assert_allclose(vt.grad.to_numpy(), want)  # by hand


def test_struct_result_into_given_tensors_and_numpy_fwds(more):
    at, w = rand(3, 2).astype(np.float32), rand(3, seed=1).astype(np.float32)
    into = {"at": diffc.Tensor.zeros((3, 2), np.float32), "w": diffc.Tensor.zeros((3,), np.float32)}
    got = more.nudge(p={"at": at, "w": w}, d=0.5, _result=into)
    assert got["at"] is into["at"] and got["w"] is into["w"]
    np.testing.assert_allclose(into["at"].to_numpy(), at + 0.5, rtol=1e-6)
    wt = diffc.Tensor.from_numpy(w).with_grads(diffc.Tensor.from_numpy(np.ones(3, np.float32)), zero=False)
    pairs = more.nudge.fwds(p={"at": at, "w": wt}, d=0.5, _result="numpy")
    primal, tangent = pairs["w"]
    np.testing.assert_allclose(primal, w * 0.5, rtol=1e-6)
    np.testing.assert_allclose(tangent, np.full(3, 0.5), rtol=1e-6)  # d(w d)/dw = d
    np.testing.assert_allclose(pairs["at"][1], np.zeros((3, 2)))  # `at` was an array: no tangent


def test_matrix_of_one_column(more):
    mat = rand(4, 3, 1).astype(np.float32)
    np.testing.assert_allclose(more.col(m=mat, _result="numpy"), mat[:, 0, 0] + 2 * mat[:, 2, 0], rtol=1e-6)


def test_arrays_of_structs_take_a_dict_of_fields_not_a_list(more):
    with pytest.raises(CallError, match=r"'ps' is a struct Pt\[2\]: pass a dict of its fields \(at, w\)"):
        more.many(ps=[{"at": np.ones(2), "w": 1.0}] * 2)
    w = np.array([[1.0, 2.0], [3.0, 5.0]], np.float32)
    got = more.many(ps={"at": np.ones((2, 2, 2), np.float32), "w": w}, _result="numpy")
    np.testing.assert_allclose(got, w.sum(axis=1))  # (tests/test_module_calls_struct_arrays.py: the rest)


def test_ir_module_with_vector_parameters(tmp_path):
    path = tmp_path / "dot3.mlir"
    path.write_text(VEC_IR)
    m = diffc.load_module(path)
    a, b = rand(6, 3).astype(np.float32), rand(3, seed=2).astype(np.float32)
    np.testing.assert_allclose(m.dot3(a=a, b=b, _result="numpy"), a @ b, rtol=1e-5)
    at = diffc.Tensor.from_numpy(a).with_grads()
    y = m.dot3(a=at, b=b).with_grads()
    y.grad.fill(2)
    m.dot3.bwds(a=at, b=b, _result=y)
    np.testing.assert_allclose(at.grad.to_numpy(), np.broadcast_to(2 * b, (6, 3)), rtol=1e-6)


def test_repr_names_the_slang_parameters(m):
    assert repr(m.step) == "<diffc.Function step(p, vel, dt)>"
    assert repr(m.split) == "<diffc.Function split(x, y, z, w)>"


def test_broadcast_half_gradient_is_refused(m):
    a = diffc.Tensor.from_numpy(np.ones((8, 2), np.float16)).with_grads()
    b = diffc.Tensor.from_numpy(np.array([2.0], np.float16)).with_grads()
    y = m.hf(a=a, b=b).with_grads()
    with pytest.raises(CallError, match="argument 'b' is broadcast, and accumulating its float16 gradient"):
        m.hf.bwds(a=a, b=b, _result=y)


def test_half_scalar_from_a_number(m):
    a = np.array([[1, 2], [3, 4]], np.float16)
    np.testing.assert_array_equal(m.hf(a=a, b=2.0, _result="numpy"), a * 2 + a[:, ::-1])  # exact in half


NESTED = """
struct Inner : IDifferentiable { double2 uv; double w[2]; };
struct Outer : IDifferentiable { Inner a; no_diff double k; double3 c; };
[Differentiable] double f(Outer o) { return o.a.uv.x * o.a.w[1] + o.k * o.c.z * o.c.x + o.a.uv.y * exp(o.a.w[0]); }
"""


def test_nested_structs_with_array_and_no_diff_fields(tmp_path):
    path = tmp_path / "nested.slang"
    path.write_text(NESTED)
    m = diffc.load_module(path)
    o = {"a": {"uv": rand(3, 2), "w": rand(3, 2, seed=1)}, "k": rand(3, seed=2), "c": rand(3, 3, seed=3)}
    want = (o["a"]["uv"][:, 0] * o["a"]["w"][:, 1] + o["k"] * o["c"][:, 2] * o["c"][:, 0]
            + o["a"]["uv"][:, 1] * np.exp(o["a"]["w"][:, 0]))
    np.testing.assert_allclose(m.f(o=o, _result="numpy"), want, rtol=1e-12)
    # k is no_diff: held as a number here (finite differences would see its derivative)
    check_call_derivatives(m.f, {"o": {"a": o["a"], "k": 0.7, "c": o["c"]}})
    kt = diffc.Tensor.from_numpy(o["k"]).with_grads()
    y = m.f(o=dict(o, k=kt)).with_grads()
    y.grad.fill(1)
    m.f.bwds(o=dict(o, k=kt), _result=y)
    np.testing.assert_array_equal(kt.grad.to_numpy(), np.zeros(3))  # no_diff: no gradient


# -- replays: a call like the one before it reuses its launch ---------------------------------


def test_replay_reads_the_tensors_current_values_and_numbers(m):
    p = diffc.Tensor.from_numpy(rand(4, 3))
    first = m.swirl(a=p, b=p, s=2.0)
    assert "call" in m.swirl._record_plans
    p.copy_from_numpy(rand(4, 3, seed=5))  # same Tensor, new values: replayed, reads them
    second = m.swirl(a=p, b=p, s=2.0)
    assert second is not first  # a fresh result per call
    a = p.to_numpy()
    np.testing.assert_allclose(second.to_numpy(), np.cross(a, a) * 2 + a * a[:, 1:2], rtol=1e-12)
    third = m.swirl(a=p, b=p, s=-0.0)  # another number: not the plan's
    np.testing.assert_allclose(third.to_numpy(), a * a[:, 1:2], rtol=1e-12)


def test_replay_of_bwds_and_fwds_follows_grads_and_dict_fields(m):
    pos, mass, ids = rand(3, 3), rand(3, seed=1) + 1, np.arange(3, dtype=np.int32)
    pt, mt, it = (diffc.Tensor.from_numpy(a) for a in (pos, mass, ids))
    p = {"pos": pt, "mass": mt, "id": it}
    y = m.energy(p=p).with_grads()
    y.grad.fill(1)
    m.energy.bwds(p=p, _result=y)  # no grads attached: nothing to accumulate
    pt.with_grads()
    m.energy.bwds(p=p, _result=y)  # a grad attached since: not a replay
    np.testing.assert_allclose(pt.grad.to_numpy(), mass[:, None] * pos, rtol=1e-12)
    m.energy.bwds(p=p, _result=y)  # the same: replayed, accumulates
    assert m.energy._record_plans["bwds"].key is not None
    np.testing.assert_allclose(pt.grad.to_numpy(), 2 * mass[:, None] * pos, rtol=1e-12)
    other = diffc.Tensor.from_numpy(mass * 2).with_grads()
    p["mass"] = other  # another Tensor in the dict: not a replay
    m.energy.bwds(p=p, _result=y)
    np.testing.assert_allclose(other.grad.to_numpy(), 0.5 * (pos * pos).sum(-1), rtol=1e-12)
    p["mass"] = mt  # (no grad: a zero tangent)
    pt.grad.copy_from_numpy(np.ones((3, 3)))
    results = [m.energy.fwds(p=p) for _ in range(2)]  # the second replays, with a result of its own
    assert results[0] is not results[1]
    for t in results:  # d(0.5 m |pos|^2) along pos' = ones: m sum(pos)
        np.testing.assert_allclose(t.grad.to_numpy(), mass * pos.sum(-1), rtol=1e-12)
