"""Memory of bytes (frontend/features/byte_pointers.py): pointers to and buffers of structs of
several scalar types, `void*`, `sizeof`. Kernels run through dispatch on the device (PoCL here);
layouts are checked against numpy's aligned structured dtypes, values against numpy, and the
gradients that a custom backward derivative writes through `void*` against float64 central
differences."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled
from slang_helpers import expect_error

import diffc

MIXED = """
struct Mixed { float3 p; half h; uint8_t tag; double w; int2 k; };

[numthreads(4, 1, 1)]
void mixed(uint tid : SV_DispatchThreadID, uniform Mixed* ms, uniform float* out, uniform void* raw, uniform uint n)
{
    if (tid >= n) return;
    Mixed m = ms[tid];
    Mixed* q = ms + tid;
    float* f = (float*)raw;
    out[tid] = m.p.y * float(m.h) + float(m.tag) + float(m.w) + float(q->k.y) + f[tid];
    q->k.x = int(tid) * 10;
    ms[tid].p.z = m.p.x + 1.0;
    (*q).h = half(2.5);
}
"""

# numpy's own C layout of the same struct: the oracle for the offsets diffc computes
NUMPY_MIXED = np.dtype([("p", "<f4", (3,)), ("h", "<f2"), ("tag", "u1"), ("w", "<f8"), ("k", "<i4", (2,))],
                       align=True)


def _module(tmp_path, name, text):
    f = tmp_path / f"{name}.slang"
    f.write_text(text)
    return diffc.load_module(f)


def test_layout_is_cs_natural_layout(tmp_path):
    m = _module(tmp_path, "mixed", MIXED)
    dt = m.byte_layout("Mixed")
    assert dt.itemsize == NUMPY_MIXED.itemsize == 32
    assert {k: v[1] for k, v in dt.fields.items()} == {k: v[1] for k, v in NUMPY_MIXED.fields.items()}
    with pytest.raises(diffc.runtime.errors.CallError, match="no pointer or buffer"):
        m.byte_layout("Nope")


def test_mixed_struct_reads_and_writes_through_pointers(tmp_path):
    m = _module(tmp_path, "mixed", MIXED)
    rng = np.random.default_rng(5)
    n = 5
    ms = np.zeros(n, m.byte_layout("Mixed"))
    ms["p"] = rng.normal(size=(n, 3))
    ms["h"] = rng.normal(size=n)
    ms["tag"] = rng.integers(0, 255, n)
    ms["w"] = rng.normal(size=n)
    ms["k"] = rng.integers(-50, 50, (n, 2))
    raw = rng.normal(size=n).astype(np.float32)
    M = diffc.Tensor.from_numpy(ms.view(np.uint8))
    out = diffc.Tensor.zeros(n)
    m.mixed.dispatch(thread_count=8, ms=M, out=out, raw=diffc.Tensor.from_numpy(raw), n=n)
    got = M.to_numpy().view(ms.dtype)
    want = (ms["p"][:, 1].astype(np.float64) * ms["h"] + ms["tag"] + ms["w"].astype(np.float32) + ms["k"][:, 1] + raw)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-5)
    np.testing.assert_array_equal(got["k"][:, 0], np.arange(n) * 10)
    np.testing.assert_array_equal(got["k"][:, 1], ms["k"][:, 1])  # its neighbour untouched
    np.testing.assert_allclose(got["p"][:, 2], ms["p"][:, 0] + 1, rtol=1e-6)
    np.testing.assert_array_equal(got["p"][:, :2], ms["p"][:, :2])
    np.testing.assert_array_equal(got["h"], np.float16(2.5))
    np.testing.assert_array_equal(got["tag"], ms["tag"])
    np.testing.assert_array_equal(got["w"], ms["w"])


ADAM = """
struct State { half mean; half variance; int iteration; };

void step(inout State s, inout half param, inout half grad)
{
    s.iteration++;
    s.mean = half(0.5) * s.mean + half(0.5) * grad;
    s.variance = half(0.75) * s.variance + half(0.25) * grad * grad;
    param -= half(0.125) * s.mean / (sqrt(s.variance) + half(1.0)) * float(s.iteration);
    grad = half(0.0);
}

[numthreads(4, 1, 1)]
void adjust(uint tid : SV_DispatchThreadID, uniform State* states, uniform half* params, uniform half* grads,
            uniform uint count)
{
    if (tid >= count) return;
    step(states[tid], params[tid], grads[tid]);
}
"""


def test_optimizer_state_as_a_struct_of_halves_and_an_int(tmp_path):
    """An Adam-style update over `State*` (half, half, int: 8 bytes), `inout` of a struct in memory."""
    m = _module(tmp_path, "adam", ADAM)
    dt = m.byte_layout("State")
    assert dt.itemsize == 8 and [dt.fields[k][1] for k in ("mean", "variance", "iteration")] == [0, 2, 4]
    n = 7
    rng = np.random.default_rng(9)
    st = np.zeros(n, dt)
    st["mean"], st["variance"], st["iteration"] = rng.normal(size=n), rng.uniform(0, 1, n), np.arange(n)
    params, grads = rng.normal(size=n).astype(np.float16), rng.normal(size=n).astype(np.float16)
    S = diffc.Tensor.from_numpy(st.view(np.uint8))
    P, G = diffc.Tensor.from_numpy(params), diffc.Tensor.from_numpy(grads)
    m.adjust.dispatch(thread_count=8, states=S, params=P, grads=G, count=n)
    got = S.to_numpy().view(dt)
    g = grads.astype(np.float64)
    mean = 0.5 * st["mean"] + 0.5 * g
    var = 0.75 * st["variance"] + 0.25 * g * g
    it = st["iteration"] + 1
    param = params - 0.125 * mean.astype(np.float16) / (np.sqrt(var.astype(np.float16)) + 1.0) * it
    np.testing.assert_array_equal(got["iteration"], it)
    np.testing.assert_allclose(got["mean"], mean, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(got["variance"], var, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(P.to_numpy(), param, rtol=2e-3, atol=2e-3)
    np.testing.assert_array_equal(G.to_numpy(), 0)


LAYER = """
struct Layer
{
    void* w;        // 2 x 3 halves, row-major
    void* b;        // 2 halves
    void* wGrad;
    void* bGrad;

    CoopVec<half, 2> apply(CoopVec<half, 3> x)
    {
        return coopVecMatMulAdd<half, 2>(x, CoopVecComponentType.Float16, w, CoopVecComponentType.Float16,
            b, CoopVecComponentType.Float16, CoopVecMatrixLayout.RowMajor, false, 3 * sizeof(half));
    }

    [BackwardDerivativeOf(apply)]
    void applyBwd(inout DifferentialPair<CoopVec<half, 3>> x, CoopVec<half, 2> dy)
    {
        coopVecOuterProductAccumulate(dy, x.p, wGrad, 0, CoopVecMatrixLayout.TrainingOptimal,
                                      CoopVecComponentType.Float16);
        coopVecReduceSumAccumulate(dy, (void*)bGrad);
        let dx = coopVecMatMul<half, 3>(dy, CoopVecComponentType.Float16, w, CoopVecComponentType.Float16,
            CoopVecMatrixLayout.ColumnMajor, false, 3 * sizeof(half));
        x = diffPair(x.p, dx);
    }
}

[Differentiable]
half loss(Layer* layer, no_diff half3 v)
{
    let y = layer->apply(CoopVec<half, 3>(v.x, v.y, v.z));
    return y[0] * y[0] + half(3.0) * y[1];
}

[numthreads(1, 1, 1)]
void train(uint tid : SV_DispatchThreadID, uniform Layer* layer, uniform half3* inputs, uniform float* losses)
{
    bwd_diff(loss)(layer, inputs[tid], half(1.0));
    losses[tid] = float(loss(layer, inputs[tid]));
}
"""


def _layer_loss(w, b, v):
    y = w @ v + b
    return y[0] ** 2 + 3 * y[1]


def test_void_pointers_hold_a_coopvec_layer_and_its_gradients(tmp_path):
    """Weights, biases and their gradients behind `void*` fields, read and accumulated as Float16;
    the gradients the custom backward derivative adds match float64 central differences of the
    same loss (half storage: within half's precision). Forward mode does not apply: the matrix
    operations are not differentiable (as in Slang) and the layer gives only a backward derivative."""
    m = _module(tmp_path, "layer", LAYER)
    rng = np.random.default_rng(3)
    w = rng.uniform(-1, 1, (2, 3)).astype(np.float16)
    b = rng.uniform(-1, 1, 2).astype(np.float16)
    v = rng.uniform(-1, 1, 3).astype(np.float16)
    params = diffc.Tensor.from_numpy(np.concatenate([w.ravel(), b]))  # one buffer, the biases at element 6
    grads = diffc.Tensor.zeros(8, np.float16)
    layer = {"w": params.at(0), "b": params.at(6), "wGrad": grads.at(0), "bGrad": grads.at(6)}
    losses = diffc.Tensor.zeros(1)
    inputs = diffc.Tensor.from_numpy(np.concatenate([v, [0]]).astype(np.float16).reshape(1, 4))
    m.train.dispatch(thread_count=1, layer=layer, inputs=inputs, losses=losses)
    w64, b64, v64 = w.astype(np.float64), b.astype(np.float64), v.astype(np.float64)
    assert losses.to_numpy()[0] == pytest.approx(_layer_loss(w64, b64, v64), rel=2e-3)
    eps = 1e-6
    fd_w = np.zeros((2, 3))
    for i in range(2):
        for j in range(3):
            d = np.zeros((2, 3))
            d[i, j] = eps
            fd_w[i, j] = (_layer_loss(w64 + d, b64, v64) - _layer_loss(w64 - d, b64, v64)) / (2 * eps)
    fd_b = np.array([(_layer_loss(w64, b64 + e, v64) - _layer_loss(w64, b64 - e, v64)) / (2 * eps)
                     for e in np.eye(2) * eps])
    g = grads.to_numpy().astype(np.float64)
    np.testing.assert_allclose(g[:6].reshape(2, 3), fd_w, rtol=4e-3, atol=4e-3)
    np.testing.assert_allclose(g[6:], fd_b, rtol=4e-3, atol=4e-3)


def test_sizeof_counts_bytes_by_the_same_layout():
    src = """
    typealias NF = half;
    struct S { half a; float b; };
    [Differentiable] float f(float x) { float y = 1.0; return x * float(sizeof(NF)) + float(sizeof(float3))
        + float(sizeof(S)) + float(sizeof(y)); }
    """
    c = Compiled(src, "f")
    assert c.primal([1.0])[0] == pytest.approx(2 + 12 + 8 + 4)
    c.check_derivatives([0.3])


@pytest.mark.parametrize("body, col, words", [
    ("float f(void* p) { return *(p); }", 27, "reading through a void*"),
    ("float f(void* p) { return p[1]; }", 27, "indexing a void*"),
    ("void* f(void* p) { return p + 1; }", 27, "arithmetic on a void*"),
])
def test_a_void_pointer_is_cast_before_use(body, col, words):
    expect_error(body, "E0003", 1, col, words)


def test_a_typed_pointer_does_not_become_a_void_pointer():
    expect_error("void* f(half* p) { return (void*)p; }", "E0008", 1, 27, "casting half* to void*")


def test_a_pointee_without_bytes_is_refused():
    expect_error("struct B { bool on; float x; };\nfloat f(B* p) { return p->x; }", "E0008", 2, 9, "pointer to B")


def test_a_structured_buffer_of_a_mixed_struct(tmp_path):
    """`RWStructuredBuffer<St>` of {float, int, half}: 12-byte elements, read whole, fields written."""
    m = _module(tmp_path, "buf", """
struct St { float m; int it; half h; };
RWStructuredBuffer<St> states;
RWStructuredBuffer<float> out;
[numthreads(4, 1, 1)]
void k(uint tid : SV_DispatchThreadID)
{
    St s = states[tid];
    out[tid] = s.m * float(s.it) + float(s.h);
    states[tid].it = s.it + 1;
    states[tid].m += 1.0;
}
""")
    dt = m.byte_layout("St")
    assert dt.itemsize == np.dtype([("m", "<f4"), ("it", "<i4"), ("h", "<f2")], align=True).itemsize == 12
    a = np.zeros(4, dt)
    a["m"], a["it"], a["h"] = [1, 2, 3, 4], [5, 6, 7, 8], [0.5, -0.25, 2, 0]
    S, out = diffc.Tensor.from_numpy(a.view(np.uint8)), diffc.Tensor.zeros(4)
    m.k.dispatch(thread_count=4, states=S, out=out)
    np.testing.assert_allclose(out.to_numpy(), a["m"] * a["it"] + a["h"])
    got = S.to_numpy().view(dt)
    np.testing.assert_array_equal(got["it"], a["it"] + 1)
    np.testing.assert_array_equal(got["m"], a["m"] + 1)
    np.testing.assert_array_equal(got["h"], a["h"])


def test_a_generic_struct_is_named_as_written(tmp_path):
    """`byte_layout("Moments<half>")`: a generic instance's layout by its Slang name."""
    m = _module(tmp_path, "generic", """
struct Moments<T : __BuiltinFloatingPointType> { T m; int n; T v; };
[numthreads(2, 1, 1)]
void k(uint tid : SV_DispatchThreadID, uniform Moments<half>* s)
{
    s[tid].n += 1;
    s[tid].v = s[tid].m * half(2.0);
}
""")
    dt = m.byte_layout("Moments<half>")
    assert dt.itemsize == np.dtype([("m", "<f2"), ("n", "<i4"), ("v", "<f2")], align=True).itemsize == 12
    a = np.zeros(2, dt)
    a["m"], a["n"] = [1.5, -0.25], [3, 7]
    S = diffc.Tensor.from_numpy(a.view(np.uint8))
    m.k.dispatch(thread_count=2, s=S)
    got = S.to_numpy().view(dt)
    np.testing.assert_array_equal(got["n"], [4, 8])
    np.testing.assert_array_equal(got["v"], [3.0, -0.5])
