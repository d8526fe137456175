"""diffc.slangpy: SlangPy's Python API (module calls over tensors, grid, call_id, _result, bwds)
and the Slang `slangpy` module's tensors. Values against numpy; derivatives against float64
central differences of the same functions written in numpy."""

from __future__ import annotations

import numpy as np
import pytest

import diffc.slangpy as spy
from diffc.runtime.errors import CallError

SRC = """
import slangpy;

[Differentiable] float wave(float a, float x) { return a * x * x + sin(x); }
[Differentiable] double waved(double a, double x) { return a * x * x + sin(x); }
[Differentiable] float3 twist(float3 p, float t) { return float3(p.x * cos(t) - p.y * sin(t), p.x * sin(t) + p.y * cos(t), p.z * t); }
int2 coord(int2 c) { return c; }
int coord1(int c) { return c; }
int2 coordArray(int c[2]) { return int2(c[0], c[1]); }
void step(inout float v, inout float g, float lr) { v -= lr * g; g = 0.0; }
void fill(out float4 v, float k) { v = float4(k, 2.0 * k, 3.0 * k, 4.0 * k); }
float2 ff2(float2 v) { return 2.0 * v; }
void twice(int i, Tensor<float, 1> x, RWTensor<float, 1> y) { y[i] = 2.0 * x[i]; y[i] += 1.0; }
[Differentiable] float leaky(float x, no_diff float slope = 0.25) { return max(x, 0.0) + slope * min(x, 0.0); }

// a tensor read at a neighbour and written through a differentiable store
[Differentiable]
void smooth(int i, GradInOutTensor<float, 1> x, GradInOutTensor<float, 1> y)
{
    int j = min(i + 1, int(x.primal.shape[0]) - 1);
    float a = x[i];
    float b = x.load(j);
    y.set({i}, a * b + exp(0.5 * a));
}

// vectors in a 2D tensor, read through a vector index (x is the last dimension)
float sumRow(int r, Tensor<float2, 2> t) { return t.load(int2(0, r)).x + t[r, 1].y; }

// many threads adding into one element
void scatter(int i, Tensor<float, 1> x, AtomicTensor<float2, 1> acc) { acc.add(0, float2(x[i], 1.0)); }

struct Params { float2 origin; float scale; };

// the usual bounds check before the tensor accesses
[Differentiable]
void squareFirst(int i, GradInOutTensor<float, 1> x, GradInOutTensor<float, 1> y)
{
    if (i >= 3)
        return;
    y.set({i}, x[i] * x[i]);
}

// SlangPy's interface names: read-only differentiable (ITensor) and written (IRWTensor) tensors
[Differentiable]
float3 tint(ITensor<float, 2> v, ITensor<float, 1> c, uint2 cell)
{
    float2 p = float2(v[0, 0], v[1, 1]);
    return float3(c[0], c[1], c[2]) * (p.x * float(cell.x) + p.y * float(cell.y));
}
[Differentiable] float affine(no_diff Params p, float2 v) { return dot(v - p.origin, v) * p.scale; }
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    path = tmp_path_factory.mktemp("spy") / "calls.slang"
    path.write_text(SRC)
    return spy.Module.load_from_file(spy.create_device(), str(path))


def _fd(f, x, h=1e-6):
    """Central differences of the sum of f's results with respect to each element of x (float64)."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        g[k] = (np.sum(f(x + e)) - np.sum(f(x - e))) / (2 * h)
    return g


def test_elementwise_call_and_gradient(m):
    x = np.array([0.25, -1.5, 2.0, 0.75], np.float32)
    got = m.wave(3.0, x, _result="numpy")
    assert np.allclose(got, 3.0 * x.astype(np.float64) ** 2 + np.sin(x), rtol=1e-6)
    xt = spy.Tensor.from_numpy(None, x).with_grads()
    y = m.wave(3.0, xt).with_grads()
    w = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    y.grad.copy_from_numpy(w)
    m.wave.bwds(3.0, xt, _result=y)
    fd = _fd(lambda v: w * (3.0 * v**2 + np.sin(v)), x)
    assert np.allclose(xt.grad.to_numpy(), fd, rtol=1e-5, atol=1e-5)


def test_double_gradient_against_the_kernels_own_differences(m):
    x = np.array([0.3, -0.7, 1.9])
    xt = spy.Tensor.from_numpy(None, x).with_grads()
    y = m.waved(0.5, xt).with_grads()
    y.grad.copy_from_numpy(np.ones(3))
    m.waved.bwds(0.5, xt, _result=y)
    h = 1e-6
    fd = (m.waved(0.5, x + h, _result="numpy") - m.waved(0.5, x - h, _result="numpy")) / (2 * h)
    assert np.allclose(xt.grad.to_numpy(), fd, rtol=1e-8)


def test_broadcasting_and_its_accumulated_gradient(m):
    a = np.array([[1.0], [2.0], [-0.5]], np.float32)  # (3, 1)
    x = np.array([0.1, 0.2, 0.3, 0.4], np.float32)  # (4,)
    got = m.wave(a, x, _result="numpy")
    assert got.shape == (3, 4)
    assert np.allclose(got, a * x * x + np.sin(x), rtol=1e-6)
    at = spy.Tensor.from_numpy(None, a).with_grads()
    xt = spy.Tensor.from_numpy(None, x).with_grads()
    y = m.wave(at, xt).with_grads()
    y.grad.copy_from_numpy(np.ones((3, 4)))
    m.wave.bwds(at, xt, _result=y)
    # a's gradient sums over the 4 columns it is broadcast along, x's over the 3 rows
    ga = _fd(lambda v: v * x.astype(np.float64) ** 2 + np.sin(x), a)
    gx = _fd(lambda v: a.astype(np.float64) * v**2 + np.sin(v), x)
    assert np.allclose(at.grad.to_numpy(), ga, rtol=1e-5)
    assert np.allclose(xt.grad.to_numpy(), gx, rtol=1e-5)


def test_shapes_that_do_not_broadcast_are_a_call_error(m):
    with pytest.raises(CallError, match="does not broadcast"):
        m.wave(np.ones(3, np.float32), np.ones(4, np.float32))


def test_vectors_take_the_trailing_dimension(m):
    p = np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32)
    got = m.twist(p, 0.3, _result="numpy")
    c, s = np.cos(0.3), np.sin(0.3)
    want = np.stack([p[:, 0] * c - p[:, 1] * s, p[:, 0] * s + p[:, 1] * c, p[:, 2] * 0.3], -1)
    assert got.shape == (5, 3) and np.allclose(got, want, rtol=1e-5, atol=1e-6)
    pt = spy.Tensor.from_numpy(None, p, spy.float3).with_grads()
    assert pt.shape == (5,)
    y = m.twist(pt, 0.3).with_grads()
    y.grad.copy_from_numpy(np.ones((5, 3)))
    m.twist.bwds(pt, 0.3, _result=y)

    def f(q):
        return np.stack([q[:, 0] * c - q[:, 1] * s, q[:, 0] * s + q[:, 1] * c, q[:, 2] * 0.3], -1)

    assert np.allclose(pt.grad.to_numpy(), _fd(f, p), rtol=1e-5, atol=1e-6)


def test_grid_and_call_id(m):
    got = m.coord(spy.grid(shape=(2, 3)), _result="numpy")
    assert got.shape == (2, 3, 2)
    rows, cols = np.meshgrid(range(2), range(3), indexing="ij")
    assert (got[..., 0] == cols).all() and (got[..., 1] == rows).all()  # x: the last dimension
    arr = m.coordArray(spy.grid(shape=(2, 3)), _result="numpy")
    assert (arr[..., 0] == rows).all() and (arr[..., 1] == cols).all()  # an array: in order
    strided = m.coord(spy.grid(shape=(2, 3), stride=(4, 10)), _result="numpy")
    assert (strided[..., 0] == 10 * cols).all() and (strided[..., 1] == 4 * rows).all()
    # call_id takes the call's shape from the result
    out = spy.Tensor.zeros(None, (4,), spy.int2)
    m.coord(spy.call_id(), _result=out)
    assert out.to_numpy()[:, 0].tolist() == [0, 1, 2, 3]
    assert m.coord1(spy.grid(shape=(5,)), _result="numpy").tolist() == [0, 1, 2, 3, 4]


def test_result_forms(m):
    x = np.array([0.5, 1.0], np.float32)
    t = m.wave(1.0, x)
    assert isinstance(t, spy.Tensor) and t.shape == (2,)
    given = spy.Tensor.zeros(None, (2,), float)
    assert m.wave(1.0, x, _result=given) is given
    assert np.allclose(given.to_numpy(), x * x + np.sin(x))
    assert abs(m.wave(2.0, 0.5) - (0.5 + np.sin(0.5))) < 1e-6  # no dimensions: a value
    with pytest.raises(CallError, match="_result"):
        m.wave(1.0, x, _result=spy.Tensor.zeros(None, (3,), float))
    with pytest.raises(CallError, match="_result"):
        m.wave(1.0, x, _result=spy.Tensor.zeros(None, (2,), spy.float2))


def test_out_and_inout_parameters_write_their_tensors(m):
    v = spy.Tensor.from_numpy(None, np.array([1.0, 2.0, 3.0], np.float32))
    g = spy.Tensor.from_numpy(None, np.array([0.5, -1.0, 2.0], np.float32))
    m.step(v, g, 0.1)
    assert np.allclose(v.to_numpy(), [0.95, 2.1, 2.8]) and (g.to_numpy() == 0).all()
    out = spy.Tensor.empty(None, (2, 2), spy.float4)
    m.fill(out, 1.5)
    assert np.allclose(out.to_numpy(), np.broadcast_to([1.5, 3.0, 4.5, 6.0], (2, 2, 4)))


def test_grad_inout_tensors_accumulate_read_gradients(m):
    n = 6
    x = np.linspace(-1.0, 1.0, n).astype(np.float32)
    xt = spy.Tensor.from_numpy(None, x).with_grads()
    yt = spy.Tensor.zeros(None, (n,), float).with_grads()
    w = np.arange(1, n + 1, dtype=np.float32)
    yt.grad_in.copy_from_numpy(w)

    def model(v):
        j = np.minimum(np.arange(n) + 1, n - 1)
        return v * v[j] + np.exp(0.5 * v)

    m.smooth(spy.grid(shape=(n,)), xt, yt)
    assert np.allclose(yt.to_numpy(), model(x.astype(np.float64)), rtol=1e-6)
    m.smooth.bwds(spy.grid(shape=(n,)), xt, yt)
    # x[i] is read by thread i and by thread i - 1: its gradient is both cotangents' sum
    assert np.allclose(xt.grad_out.to_numpy(), _fd(lambda v: w * model(v), x), rtol=1e-5, atol=1e-6)


def test_bwds_of_a_tensor_without_gradients_is_a_call_error(m):
    x = spy.Tensor.from_numpy(None, np.ones(3, np.float32))
    y = spy.Tensor.zeros(None, (3,), float).with_grads()
    with pytest.raises(CallError, match="with_grads"):
        m.smooth.bwds(spy.grid(shape=(3,)), x, y)


def test_tensor_views_and_atomic_adds(m):
    t = np.arange(12, dtype=np.float32).reshape(3, 2, 2)  # 3 x 2 of float2
    tt = spy.Tensor.from_numpy(None, t, spy.float2)
    got = m.sumRow(spy.grid(shape=(3,)), tt, _result="numpy")
    assert np.allclose(got, t[:, 0, 0] + t[:, 1, 1])
    x = spy.Tensor.from_numpy(None, np.arange(100, dtype=np.float32))
    acc = spy.Tensor.zeros(None, (1,), spy.float2)
    m.scatter(spy.grid(shape=(100,)), x, acc)
    assert acc.to_numpy().tolist() == [[4950.0, 100.0]]
    with pytest.raises(CallError, match="float2"):
        m.sumRow(spy.grid(shape=(3,)), spy.Tensor.zeros(None, (3, 2), float))


def test_struct_arguments_are_dicts(m):
    v = np.array([[1.0, 2.0], [0.5, -1.0]], np.float32)
    p = {"origin": spy.float2(0.5, 0.25), "scale": 2.0, "_type": "Params"}
    got = m.affine(p, v, _result="numpy")
    want = np.sum((v - [0.5, 0.25]) * v, -1) * 2.0
    assert np.allclose(got, want)
    vt = spy.Tensor.from_numpy(None, v, spy.float2).with_grads()
    y = m.affine(p, vt).with_grads()
    y.grad.copy_from_numpy(np.ones(2))
    m.affine.bwds(p, vt, _result=y)
    fd = _fd(lambda q: np.sum((q - [0.5, 0.25]) * q, -1) * 2.0, v)
    assert np.allclose(vt.grad.to_numpy(), fd, rtol=1e-5)
    with pytest.raises(CallError, match="element by element"):
        m.affine(np.zeros((2, 3), np.float32), v)


def test_interface_tensor_names_bind_differentiable_tensors(m):
    v = np.array([[0.5, 9.0], [9.0, -0.25]], np.float32)
    c = np.array([1.0, 2.0, 3.0], np.float32)
    got = m.tint(v, c, spy.grid(shape=(2, 3)), _result="numpy")  # tensors without gradients
    ys, xs = np.meshgrid(range(2), range(3), indexing="ij")  # cell.x: the last dimension
    want = c * (0.5 * xs - 0.25 * ys)[..., None]
    assert np.allclose(got, want)
    vt = spy.Tensor.from_numpy(None, v).with_grads()
    ct = spy.Tensor.from_numpy(None, c).with_grads()
    out = m.tint(vt, ct, spy.grid(shape=(2, 3))).with_grads()
    out.grad.copy_from_numpy(np.ones((2, 3, 3), np.float32))
    m.tint.bwds(vt, ct, spy.grid(shape=(2, 3)), _result=out)

    def total(vv, cc):
        return np.sum(cc * (vv[0, 0] * xs + vv[1, 1] * ys)[..., None])

    gv = _fd(lambda q: total(q, c.astype(np.float64)), v)
    gc = _fd(lambda q: total(v.astype(np.float64), q), c)
    assert np.allclose(vt.grad.to_numpy(), gv, rtol=1e-5) and np.allclose(ct.grad.to_numpy(), gc, rtol=1e-5)


def test_torch_tensors_run_through_autograd(m):
    torch = pytest.importorskip("torch")
    v = torch.tensor([[0.5, 2.0], [3.0, -0.25]], requires_grad=True)
    c = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    out = m.tint(v, c, spy.grid(shape=(2, 3)))
    assert isinstance(out, torch.Tensor) and tuple(out.shape) == (2, 3, 3)
    w = torch.linspace(-1.0, 1.0, 18).reshape(2, 3, 3)
    (out * w).sum().backward()
    ys, xs = np.meshgrid(range(2), range(3), indexing="ij")
    wn = w.numpy().astype(np.float64)

    def total(vv, cc):
        return np.sum(wn * cc * (vv[0, 0] * xs + vv[1, 1] * ys)[..., None])

    vn, cn = v.detach().numpy(), c.detach().numpy()
    assert np.allclose(v.grad.numpy(), _fd(lambda q: total(q, cn.astype(np.float64)), vn), rtol=1e-5, atol=1e-6)
    assert np.allclose(c.grad.numpy(), _fd(lambda q: total(vn.astype(np.float64), q), cn), rtol=1e-5, atol=1e-6)
    # a _result tensor is written in place and joins the graph; its call shape comes from it
    img = torch.zeros((2, 3, 3))
    m.tint(v, c, spy.call_id(), _result=img)
    assert img.grad_fn is not None and torch.allclose(img, out.detach())



def test_torch_second_order_is_refused(m):
    """create_graph=True gives the same gradient as a plain backward, tied into the graph so that
    a backward through it raises (no silent constant that drops the second-order term)."""
    torch = pytest.importorskip("torch")
    v = torch.tensor([[0.5, 2.0], [3.0, -0.25]], requires_grad=True)
    c = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    (plain,) = torch.autograd.grad(m.tint(v, c, spy.grid(shape=(2, 3))).sum(), c)
    (gc,) = torch.autograd.grad(m.tint(v, c, spy.grid(shape=(2, 3))).sum(), c, create_graph=True)
    assert gc.requires_grad and torch.equal(gc.detach(), plain)
    with pytest.raises(CallError, match=r"tint\(\): second derivatives through a diffc function are not supported"):
        (gc * gc).sum().backward()


# (a module compiles for each call with the call's number of dimensions, so `shape[1]` is out of
# bounds in a one-dimensional call: the two-dimensional function has a module of its own)
WHERE_SRC = """
import slangpy;
int3 where(float x)
{
    CallShapeInfo c = CallShapeInfo::get_call_id();
    return int3(c.shape[0], c.shape[1], c.dimension);
}
"""
SHAPE_SRC = """
import slangpy;
static const int K = 2;
struct Counter { float sum; int seen; float2 last; };
// each thread updates the struct at its call id and reads the pointer there
void tally(float* xs, inout Counter c, float[K] w)
{
    int i = CallShapeInfo::get_call_id().shape[0];
    c.sum += xs[i] * w[0] + w[1];
    c.seen += 1;
    c.last = float2(xs[i], float(i));
}
"""


def test_call_shape_info_is_the_threads_place_in_the_call(tmp_path):
    where = spy.Module.load_from_source(None, str(tmp_path / "where"), WHERE_SRC)
    r = where.where(np.zeros((3, 4), np.float32), _result="numpy")
    rows, cols = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    assert (r[..., 0] == rows).all() and (r[..., 1] == cols).all() and (r[..., 2] == 2).all()
    # a one-dimensional call, a tensor of structs updated in place, an array sized by a constant
    mod = spy.Module.load_from_source(None, str(tmp_path / "tally"), SHAPE_SRC)
    xs = spy.Tensor.from_numpy(None, np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32))
    c = spy.Tensor.zeros(None, dtype=mod.Counter, shape=(5,))
    for _ in range(2):
        mod.tally(xs, c, [0.5, 1.0])
    got = c.to_numpy()
    assert np.allclose(got["sum"], 2 * (0.5 * np.arange(1, 6) + 1.0))
    assert got["seen"].tolist() == [2] * 5
    assert np.allclose(got["last"], np.stack([np.arange(1, 6), np.arange(5)], axis=1))


def test_a_tensor_of_structs_for_another_type_is_a_call_error(tmp_path):
    mod = spy.Module.load_from_source(None, str(tmp_path / "where"), WHERE_SRC + "struct Counter { float sum; };")
    with pytest.raises(CallError, match="tensor of Counter"):
        mod.where(spy.Tensor.zeros(None, dtype=mod.Counter, shape=(5,)))


def test_tensor_gradients_behind_a_bounds_check(m):
    # (issue 22 B1: custom-derivative reads and writes behind an early return came out 0)
    x = spy.Tensor.from_numpy(None, np.array([1.0, 2.0, 3.0, 4.0], np.float32)).with_grads()
    y = spy.Tensor.zeros(None, (4,), float).with_grads()
    y.grad_in.copy_from_numpy(np.ones(4, np.float32))
    m.squareFirst(spy.grid(shape=(4,)), x, y)
    assert y.to_numpy().tolist() == [1.0, 4.0, 9.0, 0.0]
    m.squareFirst.bwds(spy.grid(shape=(4,)), x, y)
    assert np.allclose(x.grad_out.to_numpy(), [2.0, 4.0, 6.0, 0.0])


def test_a_texture_as_result_and_as_element_wise_argument(m):
    dev = spy.create_device()
    tex = dev.create_texture(width=3, height=2, format=spy.Format.rgba32_float)
    m.fill(tex, 2.0)  # an out float4 parameter: one thread per texel
    assert np.allclose(tex.to_numpy(), np.broadcast_to([2.0, 4.0, 6.0, 8.0], (2, 3, 4)))
    # a texture as an element-wise input: its texels, rows (y) first
    data = np.arange(2 * 3 * 2, dtype=np.float32).reshape(2, 3, 2)
    src = dev.create_texture(data=data, format=spy.Format.rg32_float)
    out = spy.Tensor.zeros(None, (2, 3), spy.float2)
    m.ff2(src, _result=out)
    assert np.allclose(out.to_numpy(), data * 2.0)


def test_messages_name_the_parameter(m):
    with pytest.raises(CallError, match="'p'"):
        m.affine({"origin": spy.float2(0, 0), "scale": 1.0, "bogus": 2.0}, np.zeros((1, 2), np.float32))


def test_parameters_left_to_their_defaults(m):
    x = np.array([-2.0, 3.0], np.float32)
    assert m.leaky(x, _result="numpy").tolist() == [-0.5, 3.0]
    assert m.leaky(x, 0.5, _result="numpy").tolist() == [-1.0, 3.0]
    with pytest.raises(CallError, match="missing argument 'x'"):
        m.leaky(slope=0.5)


def test_a_numpy_result_is_written_and_gives_an_unset_grid_dimension(m):
    res = np.zeros((3, 4, 2), np.int32)
    assert m.coord(spy.grid(shape=(-1, -1), stride=(5, 2)), _result=res) is res
    rows, cols = np.meshgrid(range(3), range(4), indexing="ij")
    assert (res[..., 0] == 2 * cols).all() and (res[..., 1] == 5 * rows).all()
    with pytest.raises(CallError, match="_result"):
        m.coord(spy.grid(shape=(3, 4)), _result=np.zeros((3, 4, 3), np.int32))


def test_a_struct_of_pointers_takes_tensors_and_bad_fields_name_the_parameter(tmp_path):
    path = tmp_path / "ptrs.slang"
    path.write_text("import slangpy;\nstruct Span { float* p; int n; };\n"
                    "float total(Span s, int k) { float t = 0; for (int i = 0; i < s.n; i++) t += s.p[i]; return t * k; }\n")
    mod = spy.Module.load_from_file(None, str(path))
    data = spy.Tensor.from_numpy(None, np.array([1.0, 2.0, 4.0], np.float32))
    assert mod.total({"p": data, "n": 3}, np.array([1, 2], np.int32), _result="numpy").tolist() == [7.0, 14.0]
    with pytest.raises(CallError, match=r"total\(\): argument 's_p'"):
        mod.total({"p": [1.0], "n": 1}, 1)


def test_rw_tensor_subscript_stores(m):
    x = spy.Tensor.from_numpy(None, np.array([1.0, -2.0, 0.5], np.float32))
    y = spy.Tensor.zeros(None, (3,), float)
    m.twice(spy.grid(shape=(3,)), x, y)
    assert y.to_numpy().tolist() == [3.0, -3.0, 2.0]


def test_a_nonmutating_setter_writes_through_a_handle(tmp_path):
    # (a mutating setter of a struct holding a pointer cannot be emitted: [nonmutating] leaves `this`)
    path = tmp_path / "handle.slang"
    path.write_text("import slangpy;\n"
                    "struct View { float* d; __subscript(int i) -> float { get { return d[i]; } "
                    "[nonmutating] set { d[i] = newValue; } } };\n"
                    "void put(int i, View v, float k) { v[i] = k * float(i); v[i] += 0.5; }\n")
    mod = spy.Module.load_from_file(None, str(path))
    data = spy.Tensor.zeros(None, (4,), float)
    mod.put(spy.grid(shape=(4,)), {"d": data}, 3.0)
    assert data.to_numpy().tolist() == [0.5, 3.5, 6.5, 9.5]


def test_a_call_of_no_dimensions_returns_a_vector(m):
    got = m.ff2(spy.float2(1.5, -2.0))
    assert isinstance(got, spy.float2) and got == spy.float2(3.0, -4.0)


def test_imports_are_found_in_the_devices_include_paths_and_atomic_set_adds(tmp_path):
    """A module importing a library from an include path (as SlangPy's create_device(include_paths=...)
    makes it found), whose struct holds a GradOutTensor written through `d_out.set` (SlangPy's
    earlier AtomicTensor.set: an atomic add, so every thread's gradient accumulates)."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "Scale.slang").write_text(
        "import slangpy;\n"
        "struct Scale {\n"
        "  GradOutTensor<float, 1> w;\n"
        "  [BackwardDerivative(apply_bwd)] float apply(float x) { return w[0] * x * x; }\n"
        "  void apply_bwd(inout DifferentialPair<float> x, float g) {\n"
        "    w.d_out.set({0}, float.dmul(x.p * x.p, g));\n"
        "    x = diffPair(x.p, 2.0 * w[0] * x.p * g);\n"
        "  }\n"
        "}\n")
    (tmp_path / "main.slang").write_text(
        "import Scale;\n[Differentiable] float run(Scale s, float x) { return s.apply(x) + x; }\n")
    device = spy.create_device(include_paths=[str(lib)])
    mod = spy.Module.load_from_file(device, str(tmp_path / "main.slang"))
    w = spy.Tensor.from_numpy(device, np.array([1.5], np.float32)).with_grads()
    w.grad.copy_from_numpy(np.zeros(1, np.float32))
    x = np.array([0.5, -1.0, 2.0], np.float32)
    xt = spy.Tensor.from_numpy(device, x).with_grads()
    s = {"w": {"primal": {"_data": w.storage, "shape": [1], "_strides": [1], "_offset": 0},
               "d_out": {"_data": w.grad.storage, "shape": [1], "_strides": [1], "_offset": 0}}}
    y = mod.run(s, xt).with_grads()
    assert np.allclose(y.to_numpy(), 1.5 * x * x + x)
    y.grad.copy_from_numpy(np.ones(3, np.float32))
    mod.run.bwds(s, xt, _result=y)
    assert np.allclose(w.grad.to_numpy(), [np.sum(x * x)], rtol=1e-6)  # d/dw of sum(w x^2 + x)
    assert np.allclose(xt.grad.to_numpy(), 2 * 1.5 * x + 1, rtol=1e-6)


VECTOR_SRC = """
import slangpy;
// SlangPy's vector-index accessors: getv / setv (x is the last dimension), t[i, j, l], sample(uv)
float3 texel(int2 p, Tensor<float3, 2> t) { return t.getv(p); }
void copyv(int2 p, Tensor<float, 2> src, RWTensor<float, 2> dst) { dst.setv(p, src.getv(p) + src[p.y, p.x]); }
float cube(int i, Tensor<float, 3> t) { return t[i, 1, 2] + t.getv(int3(0, 0, i)); }
void count(int i, AtomicTensor<float, 1> acc) { acc.set({0}, 1.0); acc.setv(1, float(i)); }
[Differentiable] float2 look(no_diff float2 uv, GradOutTensor<float2, 2> t) { return t.sample(uv); }
"""


def _bilinear(img, uv):
    """SlangPy's Tensor.sample in float64: texel (x, y) spans [x, x + 1) / size, clamped."""
    h, w = img.shape[:2]
    at = np.asarray(uv, np.float64) * [w, h]
    t = np.floor(at).astype(int)
    f = at - t
    x0, y0 = np.clip(t[0], 0, w - 1), np.clip(t[1], 0, h - 1)
    x1, y1 = min(t[0] + 1, w - 1), min(t[1] + 1, h - 1)
    top = img[y0, x0] * (1 - f[0]) + img[y0, x1] * f[0]
    bottom = img[y1, x0] * (1 - f[0]) + img[y1, x1] * f[0]
    return top * (1 - f[1]) + bottom * f[1]


def test_vector_accessors_and_sampling(tmp_path):
    mod = spy.Module.load_from_source(None, str(tmp_path / "vectors"), VECTOR_SRC)
    img = np.random.default_rng(3).random((3, 4, 3)).astype(np.float32)  # 3 rows of 4 float3
    got = mod.texel(spy.grid(shape=(3, 4)), spy.Tensor.from_numpy(None, img, spy.float3), _result="numpy")
    assert np.allclose(got, img)
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    dst = spy.Tensor.zeros(None, (3, 4), float)
    mod.copyv(spy.grid(shape=(3, 4)), src, dst)
    assert np.allclose(dst.to_numpy(), 2 * src)
    c = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    i = np.arange(2)
    assert np.allclose(mod.cube(i.astype(np.int32), c, _result="numpy"), c[i, 1, 2] + c[i, 0, 0])
    acc = spy.Tensor.zeros(None, (2,), float)
    mod.count(spy.grid(shape=(5,)), acc)
    assert acc.to_numpy().tolist() == [5.0, 10.0]
    # sampling and its gradient: each sample's cotangent spread over its four texels by the weights
    img2 = np.random.default_rng(4).random((3, 5, 2)).astype(np.float32)
    uv = np.array([[0.1, 0.2], [0.55, 0.9], [0.99, 0.01], [0.3, 0.5]], np.float32)
    t = spy.Tensor.from_numpy(None, img2, spy.float2).with_grads()
    got = mod.look(uv, t, _result="numpy")
    want = np.stack([_bilinear(img2.astype(np.float64), q) for q in uv])
    assert np.allclose(got, want, rtol=1e-5)
    out = mod.look(uv, t).with_grads()
    seed = np.random.default_rng(5).random((4, 2)).astype(np.float32)
    out.grad.copy_from_numpy(seed)
    mod.look.bwds(uv, t, _result=out)
    fd = _fd(lambda im: np.stack([_bilinear(im, q) for q in uv]) * seed, img2)
    assert np.allclose(t.grad.to_numpy(), fd, rtol=1e-5, atol=1e-6)


INSTANCE_SRC = """
import slangpy;
struct Layer<int N> { Tensor<float, 1> w; AtomicTensor<float, 1> g; float scale; };
struct Model { Layer<2> layer; };
[BackwardDerivative(readBwd)] float read(Model m, int i) { return m.layer.w.get({i}) * m.layer.scale; }
void readBwd(Model m, int i, float d) { m.layer.g.set({i}, d * m.layer.scale); }
[Differentiable] float apply(int i, float x, Model m) { return read(m, i) * x * x; }
uint hashed(uint seed) { return seed; }
uint2 hashed2(uint2 seed) { return seed; }
"""


def _wang(v):
    m = 0xFFFFFFFF
    v = ((v ^ 61) ^ (v >> 16)) & m
    v = (v * 9) & m
    v ^= v >> 4
    v = (v * 0x27D4EB2D) & m
    return v ^ (v >> 15)


def test_instance_lists_wang_hash_and_struct_types_by_name(tmp_path):
    mod = spy.Module.load_from_source(None, str(tmp_path / "instances"), INSTANCE_SRC)

    class Layer(spy.InstanceList):
        def __init__(self):
            super().__init__(mod["Layer<2>"])
            self.w = spy.Tensor.from_numpy(None, np.array([1.5, -2.0], np.float32))
            self.g = spy.Tensor.zeros_like(self.w)
            self.scale = 3.0
            self.note = "not a field"  # (kept on the object, not passed)

    class Model(spy.InstanceList):
        def __init__(self):
            super().__init__(mod["Model"])
            self.layer = Layer()

    model = Model()
    i = np.array([0, 1, 1], np.int32)
    x = np.array([0.5, 2.0, -1.0], np.float32)
    w = np.array([1.5, -2.0])
    assert np.allclose(mod.apply(i, x, model, _result="numpy"), w[i] * 3.0 * x * x)
    out = mod.apply(i, x, model).with_grads()
    out.grad.copy_from_numpy(np.ones(3, np.float32))
    mod.apply.bwds(i, x, model, _result=out)
    want = np.zeros(2)
    np.add.at(want, i, 3.0 * x.astype(np.float64) ** 2)  # readBwd adds read's cotangent, x^2, times scale
    assert np.allclose(model.layer.g.to_numpy(), want)
    # wang_hash: each thread's index hashed (warmup rounds, xor the hashed seed, one round per component)
    got = mod.hashed(spy.wang_hash(seed=7, warmup=2), _result=spy.Tensor.zeros(None, (5,), "uint")).to_numpy()
    seed = _wang(7)
    assert got.tolist() == [_wang(_wang(_wang(t)) ^ seed) for t in range(5)]
    got2 = mod.hashed2(spy.wang_hash(seed=7, hash_seed=False), _result=spy.Tensor.zeros(None, (3,), "uint2")).to_numpy()
    for t in range(3):
        first = _wang((2 * t) ^ 7)
        assert got2[t].tolist() == [first, _wang(first)]


def _png(path, rgb: np.ndarray) -> None:
    """An 8-bit RGB PNG with Sub and Paeth filtered rows (the reader undoes both)."""
    import struct
    import zlib

    h, w, _ = rgb.shape
    raw = b""
    for y in range(h):
        row = rgb[y].astype(np.int32).reshape(-1)
        if y % 2 == 0:  # Sub
            raw += b"\x01" + bytes(((row - np.concatenate([[0, 0, 0], row[:-3]])) & 255).astype(np.uint8))
        else:  # Paeth
            up = rgb[y - 1].astype(np.int32).reshape(-1)
            left = np.concatenate([[0, 0, 0], row[:-3]])
            ul = np.concatenate([[0, 0, 0], up[:-3]])
            p = left + up - ul
            pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, ul))
            raw += b"\x04" + bytes(((row - pred) & 255).astype(np.uint8))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_load_from_image(tmp_path):
    rgb = np.random.default_rng(6).integers(0, 256, (5, 7, 3))
    _png(tmp_path / "img.png", rgb)
    t = spy.Tensor.load_from_image(None, tmp_path / "img.png")
    assert t.shape == (5, 7) and t.dtype.name == "float3"
    assert np.allclose(t.to_numpy(), rgb / 255.0, atol=1e-6)
    lin = spy.Tensor.load_from_image(None, tmp_path / "img.png", linearize=True, flip_y=True).to_numpy()
    v = rgb[::-1] / 255.0
    assert np.allclose(lin, np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4), atol=1e-6)
    (tmp_path / "img.jpg").write_bytes(b"\xff\xd8\xff")
    with pytest.raises(ValueError, match="PNG"):
        spy.Tensor.load_from_image(None, tmp_path / "img.jpg")
