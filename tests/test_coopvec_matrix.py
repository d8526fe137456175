"""CoopVec's matrix operations (frontend/coopvec.py): an MLP written as Slang users write it
(the layer's matMulAdd has a backward derivative built from coopVecOuterProductAccumulate,
coopVecReduceSumAccumulate and a transposed coopVecMatMul) against float64 central differences
and a numpy forward; the layouts, strides, offsets and transposes against numpy on PoCL; a
256-wide layer on PoCL against a numpy float64 model; located errors for bad sizes, strides,
offsets and component types."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from slang_harness import compile_error
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr

from diffc.compiler import apply_pipeline
from diffc.frontend import compile_slang
from diffc.interp import run_function

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import coopvec_network  # noqa: E402  (the layer bench_coopvec.py times)

sys.path.remove(str(BENCH))

SLOPE = 0.125
MLP = "static const int W = WIDTH;\n" + coopvec_network.HEADER + coopvec_network.layer_source(SLOPE) + """
[Differentiable]
float loss(Layer<4, W> l1, Layer<W, W> l2, Layer<W, 2> l3, no_diff CoopVec<float, 4> x, no_diff CoopVec<float, 2> t)
{
    let d = l3.matMulAdd(l2.eval(l1.eval(x))) - t;
    return d[0] * d[0] + d[1] * d[1];
}

void lossGrad(Layer<4, W> l1, Layer<W, W> l2, Layer<W, 2> l3, CoopVec<float, 4> x, CoopVec<float, 2> t)
{
    bwd_diff(loss)(l1, l2, l3, x, t, 1.0);
}
"""


def _memory(values) -> ShapedArray:
    return ShapedArray(TypedPtr.new_float64([float(v) for v in values]), [len(values)])


@pytest.mark.parametrize("width", [8, 20])  # (interpreted: its cost grows as width^2; 20: no power of two)
def test_mlp_backward_matches_central_differences(width):
    m = compile_slang(MLP.replace("WIDTH", str(width)), "mlp.slang")
    m.verify()
    apply_pipeline(m, name_failing_pass=True)
    shapes = [(4, width), (width, width), (width, 2)]
    offsets, n = coopvec_network.offsets(shapes)
    rng = np.random.default_rng(width)
    params = rng.normal(0, 0.5, n)
    x, t = rng.normal(0, 1, 4), rng.normal(0, 1, 2)

    def leaves(p, g):
        out = []
        for w, b in offsets:
            out += [p, w, g, w, p, b, g, b]
        return out

    def loss(p):
        return run_function(m, "loss", *leaves(_memory(p), _memory(np.zeros(n))), x, t)[0]

    assert loss(params) == pytest.approx(coopvec_network.loss(params, shapes, x[:, None], t[:, None], SLOPE), rel=1e-12)
    grads = _memory(np.zeros(n))
    run_function(m, "lossGrad", *leaves(_memory(params), grads), x, t)
    got = np.array([grads.data[i] for i in range(n)])
    h = 1e-6
    # every bias, and weights of every layer
    picks = sorted({*rng.choice(n, 12, replace=False), *(b for _, b in offsets), offsets[1][0], n - 1})
    for j in picks:
        e = np.zeros(n)
        e[j] = h
        fd = (loss(params + e) - loss(params - e)) / (2 * h)
        assert got[j] == pytest.approx(fd, rel=1e-5, abs=1e-7), f"parameter {j}"


LAYOUTS = """\
//TEST_INPUT: set mat = ubuffer(data=[DATA], stride=4)
RWStructuredBuffer<float> mat;
//TEST_INPUT: set out = out ubuffer(count=32, stride=4)
RWStructuredBuffer<float> out;
static const CoopVecComponentType F = CoopVecComponentType.Float32;

[numthreads(1, 1, 1)]
void computeMain()
{
    let x = coopVecLoad<3>(mat, 4);
    coopVecMatMul<float, 4>(x, F, mat, 16, F, CoopVecMatrixLayout.RowMajor, false, 20).store(out, 0);
    coopVecMatMul<float, 4, 3>(x, F, mat, 8, F, CoopVecMatrixLayout.ColumnMajor, false, 24).store(out, 16);
    coopVecMatMulAdd<float, 4>(x, F, mat, 12, F, mat, 40, F, CoopVecMatrixLayout.InferencingOptimal, true, 0)
        .store(out, 32);
    coopVecMatMulPacked<float, 4>(x, F, 3, mat, 0, F, CoopVecMatrixLayout.TrainingOptimal, false, 0).store(out, 48);
    coopVecOuterProductAccumulate(x, CoopVec<float, 2>(1.0, -2.0), out, 64, 12, CoopVecMatrixLayout.RowMajor, F);
    coopVecReduceSumAccumulate(x, out, 112);
}
"""


@pytest.fixture
def diffc_run(tmp_path, diffc_cli):
    """`diffc run --slang-output` of a program (conftest: in this process)."""

    def run(src: str) -> subprocess.CompletedProcess:
        f = tmp_path / "k.slang"
        f.write_text(src)
        return diffc_cli("run", "--slang-output", str(f))

    return run


def test_layouts_strides_offsets_and_transposes_on_opencl(diffc_run):
    data = np.round(np.random.default_rng(3).uniform(-2, 2, 48), 3)
    r = diffc_run(LAYOUTS.replace("DATA", " ".join(str(v) for v in data)))
    assert r.returncode == 0, r.stderr
    out = np.array([float(v) for v in r.stdout.split("type:")[1].split()[1:]])
    x = data[1:4]
    row_major = np.array([data[4 + 5 * i: 4 + 5 * i + 3] for i in range(4)])  # stride 20 bytes
    col_major = np.array([[data[2 + 6 * k + i] for k in range(3)] for i in range(4)])  # columns 24 bytes apart
    stored_3x4 = data[3:15].reshape(3, 4)  # transposed: K x M, packed
    packed_4x3 = data[0:12].reshape(4, 3)
    want = np.zeros(32)
    want[0:4] = row_major @ x
    want[4:8] = col_major @ x
    want[8:12] = stored_3x4.T @ x + data[10:14]
    want[12:16] = packed_4x3 @ x
    for i in range(3):
        want[16 + 3 * i: 16 + 3 * i + 2] += x[i] * np.array([1.0, -2.0])  # rows 12 bytes apart
    want[28:31] += x
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


WIDE = """
static const int W = 256;
static const CoopVecComponentType F = CoopVecComponentType.Float32;
RWStructuredBuffer<float> params;
RWStructuredBuffer<float> grads;
RWStructuredBuffer<float> inputs;

CoopVec<float, W> hidden(CoopVec<float, 3> x)
{
    return coopVecMatMulAdd<float, W>(x, F, params, 0, F, params, 3 * W * 4, F, CoopVecMatrixLayout.RowMajor,
                                      false, 12);
}

[BackwardDerivativeOf(hidden)]
void hiddenBwd(inout DifferentialPair<CoopVec<float, 3>> x, CoopVec<float, W> g)
{
    coopVecOuterProductAccumulate(g, x.p, grads, 0, 12, CoopVecMatrixLayout.RowMajor, F);
    coopVecReduceSumAccumulate(g, grads, 3 * W * 4);
    x = diffPair(x.p, coopVecMatMul<float, 3>(g, F, params, 0, F, CoopVecMatrixLayout.ColumnMajor, false, 12));
}

[Differentiable]
float net(CoopVec<float, 3> x)
{
    let h = hidden(x);
    let a = tanh(h) * CoopVec<float, W>(0.5) + h * h * 0.25;
    float s = 0.0;
    for (int i = 0; i < W; ++i)
        s += a[i] * float(i % 7 - 3);
    return s;
}

[shader("compute")]
[numthreads(4, 1, 1)]
void train(uint3 tid : SV_DispatchThreadID)
{
    let x = coopVecLoad<3>(inputs, tid.x * 12);
    var p = diffPair(x);
    bwd_diff(net)(p, 1.0);
    p.d.store(inputs, 48 + tid.x * 12);
}
"""


def test_a_256_wide_layer_trains_on_opencl():
    """net(x) = sum_i c_i (tanh(h_i) / 2 + h_i^2 / 4), h = W x + b: diffc's weight, bias and
    input gradients (per-work-item, 4 samples accumulated) against float64 central differences
    of a numpy model."""
    import diffc
    from diffc.runtime.module import load_module_from_string

    rng = np.random.default_rng(7)
    w, xs = 256, rng.normal(0, 1, (4, 3))
    p = rng.normal(0, 0.4, 4 * w).astype(np.float32)
    c = np.array([i % 7 - 3 for i in range(w)], np.float64)

    def net(params, x):
        h = params[:3 * w].reshape(w, 3) @ x + params[3 * w:]
        return float(c @ (np.tanh(h) * 0.5 + h * h * 0.25))

    m = load_module_from_string(WIDE, "wide.slang")
    params, grads = diffc.Tensor.from_numpy(p), diffc.Tensor.from_numpy(np.zeros(4 * w, np.float32))
    inputs = diffc.Tensor.from_numpy(np.concatenate([xs.ravel(), np.zeros(12)]).astype(np.float32))
    m.train.dispatch(thread_count=4, params=params, grads=grads, inputs=inputs)
    got = grads.to_numpy().astype(np.float64)
    dx = inputs.to_numpy()[12:].reshape(4, 3)
    p64, h = p.astype(np.float64), 1e-6
    for j in [0, 1, 2, 3 * 17 + 1, 3 * 255 + 2, 3 * w, 3 * w + 100, 4 * w - 1]:
        e = np.zeros(4 * w)
        e[j] = h
        fd = sum((net(p64 + e, x) - net(p64 - e, x)) / (2 * h) for x in xs)
        assert got[j] == pytest.approx(fd, rel=1e-4, abs=1e-4), f"parameter {j}"
    for s, x in enumerate(xs):
        for k in range(3):
            e = np.zeros(3)
            e[k] = h
            fd = (net(p64, x + e) - net(p64, x - e)) / (2 * h)
            assert dx[s, k] == pytest.approx(fd, rel=1e-4, abs=1e-3)


BUF = "RWStructuredBuffer<float> m;\nRWStructuredBuffer<half> hm;\n"
F = "CoopVecComponentType.Float32"
RM = "CoopVecMatrixLayout.RowMajor"


def _mm(args: str) -> str:
    return BUF + "float f(CoopVec<float, 3> x) { return coopVecMatMul<float, 2>(" + args + ")[0]; }"


@pytest.mark.parametrize("src,code,words", [
    (BUF + f"float f(CoopVec<float, 3> x) {{ return coopVecMatMul<float, 2, 4>(x, {F}, m, 0, {F}, {RM}, false, 12)[0]; }}",
     "E0003", "the input has 3 elements"),
    (_mm(f"x, {F}, hm, 0, {F}, {RM}, false, 12"), "E0003",
     "interpretation CoopVecComponentType.Float32 reads float elements, but the matrix holds half"),
    (_mm(f"x, {F}, m, 0, {F}, {RM}, true, 12"), "E0003", "transpose needs an optimal layout"),
    (_mm(f"x, {F}, m, 0, {F}, {RM}, false, 10"), "E0003", "matrix stride 10 is not a multiple of the 4-byte"),
    (_mm(f"x, {F}, m, 6, {F}, {RM}, false, 12"), "E0003", "byte offset 6 is not a multiple"),
    (_mm(f"x, CoopVecComponentType.SignedInt8, m, 0, {F}, {RM}, false, 12"), "E0008",
     "CoopVecComponentType.SignedInt8 is not supported"),
    (_mm(f"x, {F}, m, {F}, {RM}, false, 12"), "E0005", "takes (input, inputInterpretation, matrix, matrixOffset,"),
    (_mm(f"x, {F}, m, 0, {F}, {RM}, false"), "E0005", "takes (input, inputInterpretation, matrix"),
    (_mm(f"x, {F}, m, 0, {F}, 3, false, 12"), "E0003", "must be a compile-time CoopVecMatrixLayout case"),
    (BUF + f"void f(CoopVec<float, 3> a, CoopVec<half, 2> b) {{ coopVecOuterProductAccumulate(a, b, hm, 0, 0, "
     f"{RM}, {F}); }}", "E0003", "reads float elements, but the matrix holds half"),
    (BUF + "void f(CoopVec<float, 3> a) { coopVecReduceSumAccumulate(a, 1.0, 0); }", "E0003",
     "must be a RWStructuredBuffer or a pointer of half or float"),
    (BUF + "[Differentiable]\nfloat f(CoopVec<float, 3> x) { return coopVecMatMul<float, 2>(x, " + F + ", m, 0, "
     + F + ", " + RM + ", false, 12)[0]; }\nvoid g(CoopVec<float, 3> x) { var p = diffPair(x); bwd_diff(f)(p, 1.0); }",
     "E0006", "derivative-carrying value"),
])
def test_coopvec_matrix_errors_are_located(src, code, words):
    """Each error names the rule and points into the offending call (at the argument at fault)."""
    lines = src.split("\n")
    line = next(i for i, s in enumerate(lines, 1) if "coopVec" in s)
    msg = compile_error(src)
    at = re.match(rf"prog\.slang:{line}:(\d+): error\[{code}\]", msg)
    assert at is not None and words in msg, msg
    assert int(at.group(1)) >= lines[line - 1].index("coopVec") + 1, msg


STRIDE_PAST_END = """\
//TEST_INPUT: set mat = ubuffer(data=[1 2 3 4 5 6 7 8], stride=4)
RWStructuredBuffer<float> mat;
//TEST_INPUT: set out = out ubuffer(count=2, stride=4)
RWStructuredBuffer<float> out;

[numthreads(1, 1, 1)]
void computeMain()
{
    let x = CoopVec<float, 3>(1.0, 1.0, 1.0);
    let y = coopVecMatMul<float, 2>(x, CoopVecComponentType.Float32, mat, 0, CoopVecComponentType.Float32,
                                    CoopVecMatrixLayout.RowMajor, false, 24);
    y.store(out, 0);
}
"""


def test_a_stride_past_the_end_is_a_located_error(diffc_run):
    r = diffc_run(STRIDE_PAST_END)
    assert r.returncode != 0
    assert re.search(r"k\.slang:10:\d+: error\[E0011\].*load from buffer 'mat' at index 8, outside its 8", r.stderr), r.stderr


HALF = """
static const CoopVecComponentType H = CoopVecComponentType.Float16;

[shader("compute")]
[numthreads(4, 1, 1)]
void k(uint3 tid : SV_DispatchThreadID, half* mat, half* bias, float* out, half* g, half* gb)
{
    let x = CoopVec<half, 3>(1.0h, 2.0h, -1.0h) * half(tid.x + 1);
    let y = coopVecMatMulAdd<half, 2>(x, H, mat, H, bias, H, CoopVecMatrixLayout.RowMajor, false, 6);
    out[tid.x * 2] = y[0];
    out[tid.x * 2 + 1] = y[1];
    coopVecOuterProductAccumulate(y, x, g, 0, CoopVecMatrixLayout.TrainingOptimal, H);
    coopVecReduceSumAccumulate(x, gb);
}
"""


def test_half_matrices_through_pointers_on_opencl():
    """Float16 matrices and biases, and half accumulation from 4 work-items (every value here is
    exact in half precision)."""
    import diffc
    from diffc.runtime.module import load_module_from_string

    m = load_module_from_string(HALF, "half.slang")
    w, b = np.array([[1, 2, 3], [4, 5, 6]], np.float16), np.array([0.5, 0.25], np.float16)
    out = diffc.Tensor.from_numpy(np.zeros(8, np.float32))
    g, gb = diffc.Tensor.from_numpy(np.zeros(6, np.float16)), diffc.Tensor.from_numpy(np.zeros(3, np.float16))
    m.k.dispatch(thread_count=4, mat=diffc.Tensor.from_numpy(w.ravel()), bias=diffc.Tensor.from_numpy(b), out=out,
                 g=g, gb=gb)
    xs = [np.array([1.0, 2.0, -1.0]) * s for s in range(1, 5)]
    ys = [w.astype(np.float64) @ x + b for x in xs]
    np.testing.assert_array_equal(out.to_numpy(), np.concatenate(ys))
    np.testing.assert_array_equal(g.to_numpy(), sum(np.outer(y, x) for x, y in zip(xs, ys)).ravel())
    np.testing.assert_array_equal(gb.to_numpy(), sum(xs))


def test_each_operation_is_one_marked_loop():
    """A kernel pass finds each CoopVec operation by its outer loop's `diffc.coopvec`."""
    from collections import Counter

    m = compile_slang(MLP.replace("WIDTH", "8"), "mlp.slang")
    kinds = Counter(op.attributes["diffc.coopvec"].data for op in m.walk() if "diffc.coopvec" in op.attributes)
    # per Layer instance (3): matMulAdd's product; matMulAddBwd's outer product, reduction, product
    assert kinds == {"matmul": 6, "outer_product_accumulate": 3, "reduce_sum_accumulate": 3}
