"""CoopVec matrix operations on ByteAddressBuffer / RWByteAddressBuffer (features/byte_address_buffers.py,
coopvec.py), as Slang's CPU and GPU targets take them: the forward operations in every layout and
both float component types against numpy on PoCL, with the buffers filled by `diffc run` from
//TEST_INPUT data as Slang's test runner fills them (float words, `1.5h` halves packed by stride=2);
a layer trained with the user-written backward on byte buffers against float64 central
differences; the located errors."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
from slang_harness import compile_error

F32 = "CoopVecComponentType.Float32"
F16 = "CoopVecComponentType.Float16"

FORWARD = """\
//TEST_INPUT: set mat = ubuffer(data=[DATA], stride=4)
ByteAddressBuffer mat;
//TEST_INPUT: set hmat = ubuffer(data=[HDATA], stride=2)
RWByteAddressBuffer hmat;
//TEST_INPUT: set acc = ubuffer(count=64, stride=4)
RWByteAddressBuffer acc;
//TEST_INPUT: set out = out ubuffer(count=48, stride=4)
RWStructuredBuffer<float> out;

static const CoopVecComponentType F = CoopVecComponentType.Float32;
static const CoopVecComponentType H = CoopVecComponentType.Float16;

[numthreads(1, 1, 1)]
void computeMain()
{
    let x = coopVecLoad<3, float>(mat, 4);
    coopVecMatMul<float, 4>(x, F, mat, 16, F, CoopVecMatrixLayout.RowMajor, false, 20).store(out, 0);
    coopVecMatMul<float, 4>(x, F, mat, 8, F, CoopVecMatrixLayout.ColumnMajor, false, 24).store(out, 16);
    coopVecMatMulAdd<float, 4>(x, F, mat, 12, F, mat, 40, F, CoopVecMatrixLayout.InferencingOptimal, true, 0)
        .store(out, 32);
    coopVecMatMulPacked<float, 4>(x, F, 3, mat, 0, F, CoopVecMatrixLayout.TrainingOptimal, false, 0).store(out, 48);

    // Float16 data, a half input and a half bias
    let xh = coopVecLoad<3, half>(hmat, 2);
    coopVecMatMulAdd<float, 4>(xh, H, hmat, 8, H, hmat, 40, H, CoopVecMatrixLayout.RowMajor, false, 8)
        .store(out, 64);
    coopVecMatMul<float, 2>(xh, H, hmat, 4, H, CoopVecMatrixLayout.ColumnMajor, false, 8).store(out, 80);

    // accumulations: a matrix written in TrainingOptimal is read back by a product in TrainingOptimal
    let b = CoopVec<float, 2>(0.5, -2.0);
    coopVecOuterProductAccumulate(x, b, acc, 16, 0, CoopVecMatrixLayout.TrainingOptimal, F);
    coopVecOuterProductAccumulate(x, b, acc, 16, 0, CoopVecMatrixLayout.TrainingOptimal, F);
    coopVecMatMul<float, 3>(b, F, acc, 16, F, CoopVecMatrixLayout.TrainingOptimal, false, 0).store(out, 88);
    coopVecMatMul<float, 2>(x, F, acc, 16, F, CoopVecMatrixLayout.TrainingOptimal, true, 0).store(out, 100);
    coopVecReduceSumAccumulate(x, acc, 4);
    coopVecReduceSumAccumulate(x, acc, 4);
    coopVecLoad<3, float>(acc, 4).store(out, 108);
    coopVecOuterProductAccumulate(xh, CoopVec<half, 2>(1.0h, 0.5h), acc, 128, 0, CoopVecMatrixLayout.RowMajor, H);
    for (int i = 0; i < 6; ++i)
        out[30 + i] = float(acc.Load<half>(128 + i * 2));
    CoopVec<float, 3> v = x;
    v.matMulAccum(CoopVec<float, 3>(1.0, 1.0, 1.0), F, mat, 0, F, CoopVecMatrixLayout.RowMajor, false, 12);
    v.store(out, 144);
}
"""


@pytest.fixture
def diffc_run(tmp_path, diffc_cli):
    def run(src: str) -> subprocess.CompletedProcess:
        f = tmp_path / "k.slang"
        f.write_text(src)
        return diffc_cli("run", "--slang-output", str(f))

    return run


def _outputs(r: subprocess.CompletedProcess) -> np.ndarray:
    assert r.returncode == 0, r.stderr
    return np.array([float(v) for v in r.stdout.split("type:")[1].split()[1:]])


def test_forward_operations_in_every_layout_and_component_type_on_opencl(diffc_run):
    rng = np.random.default_rng(5)
    data = np.round(rng.uniform(-2, 2, 24), 3)
    hdata = rng.integers(-8, 8, 24) / 4  # (exact in half precision)
    src = FORWARD.replace("HDATA", " ".join(f"{v}h" for v in hdata)).replace("DATA", " ".join(str(v) for v in data))
    out = _outputs(diffc_run(src))
    x = data[1:4]
    want = np.zeros(48)
    want[0:4] = np.array([data[4 + 5 * i: 7 + 5 * i] for i in range(4)]) @ x  # rows 20 bytes apart
    want[4:8] = np.array([[data[2 + 6 * k + i] for k in range(3)] for i in range(4)]) @ x  # columns 24 bytes apart
    want[8:12] = data[3:15].reshape(3, 4).T @ x + data[10:14]  # optimal = packed row-major, stored K x M
    want[12:16] = data[0:12].reshape(4, 3) @ x
    xh = hdata[1:4]
    want[16:20] = np.array([hdata[4 + 4 * i: 7 + 4 * i] for i in range(4)]) @ xh + hdata[20:24]
    want[20:22] = np.array([[hdata[2 + 4 * k + i] for k in range(3)] for i in range(2)]) @ xh
    grad = 2 * np.outer(x, [0.5, -2.0])  # two outer products, packed row-major 3 x 2
    want[22:25] = grad @ [0.5, -2.0]
    want[25:27] = grad.T @ x
    want[27:30] = 2 * x
    want[30:36] = np.outer(xh, [1.0, 0.5]).ravel()
    want[36:39] = x + data[0:9].reshape(3, 3) @ np.ones(3)
    np.testing.assert_allclose(out[:39], want[:39], rtol=1e-5, atol=1e-5)


# A layer y = leaky(W x + b), loss = sum_i c_i y_i^2, with W, b in a RWByteAddressBuffer read as
# COMPONENT; its backward written as Slang users write it, gradients accumulated into a second
# byte buffer in TrainingOptimal (the layout the forward reads W in).
LAYER = """
static const CoopVecComponentType C = COMPONENT;
static const int K = 5;
static const int M = 6;
RWByteAddressBuffer params;
RWByteAddressBuffer grads;
RWStructuredBuffer<float> inputs;
RWStructuredBuffer<float> losses;

CoopVec<REAL, M> affine(CoopVec<REAL, K> x)
{
    return coopVecMatMulAdd<REAL, M>(x, C, params, 0, C, params, M * K * SIZE, C,
                                     CoopVecMatrixLayout.TrainingOptimal, false, 0);
}

[BackwardDerivativeOf(affine)]
void affineBwd(inout DifferentialPair<CoopVec<REAL, K>> x, CoopVec<REAL, M> g)
{
    coopVecOuterProductAccumulate(g, x.p, grads, 0, 0, CoopVecMatrixLayout.TrainingOptimal, C);
    coopVecReduceSumAccumulate(g, grads, M * K * SIZE);
    x = diffPair(x.p, coopVecMatMul<REAL, K>(g, C, params, 0, C, CoopVecMatrixLayout.TrainingOptimal, true, 0));
}

[Differentiable]
REAL loss(CoopVec<REAL, K> x)
{
    let h = affine(x);
    let y = max(h, h * REAL(0.125));
    REAL s = REAL(0.0);
    for (int i = 0; i < M; ++i)
        s += y[i] * y[i] * REAL(i - 2);
    return s;
}

[shader("compute")]
[numthreads(4, 1, 1)]
void train(uint3 tid : SV_DispatchThreadID)
{
    CoopVec<REAL, K> x;
    for (int i = 0; i < K; ++i)
        x[i] = REAL(inputs[tid.x * K + i]);
    var p = diffPair(x);
    bwd_diff(loss)(p, REAL(1.0));
    for (int i = 0; i < K; ++i)
        inputs[4 * K + tid.x * K + i] = float(p.d[i]);
    losses[tid.x] = float(loss(x));
}
"""


def _layer_loss(params: np.ndarray, x: np.ndarray) -> float:
    k, m = 5, 6
    h = params[:m * k].reshape(m, k) @ x + params[m * k:]
    y = np.maximum(h, h * 0.125)
    return float(np.sum(y * y * (np.arange(m) - 2)))


@pytest.mark.parametrize("real,component", [("float", F32), ("half", F16)])
def test_a_layer_trains_on_byte_buffers_against_central_differences(real, component):
    """Weight, bias and input gradients of 4 samples (accumulated atomically into the gradient
    byte buffer) against float64 central differences of a numpy model of the same parameters;
    half's bounds are those of its rounding."""
    import diffc
    from diffc.runtime.module import load_module_from_string

    dtype, size = (np.float32, 4) if real == "float" else (np.float16, 2)
    src = LAYER.replace("COMPONENT", component).replace("REAL", real).replace("SIZE", str(size))
    m = load_module_from_string(src, f"layer_{real}.slang")
    rng = np.random.default_rng(11)
    n = 6 * 5 + 6
    p = rng.normal(0, 0.5, n).astype(dtype)
    xs = rng.normal(0, 1, (4, 5)).astype(dtype)
    params = diffc.Tensor.from_numpy(p.view(np.uint8).copy())
    grads = diffc.Tensor.from_numpy(np.zeros(n * size, np.uint8))
    inputs = diffc.Tensor.from_numpy(np.concatenate([xs.astype(np.float32).ravel(), np.zeros(20, np.float32)]))
    losses = diffc.Tensor.from_numpy(np.zeros(4, np.float32))
    m.train.dispatch(thread_count=4, params=params, grads=grads, inputs=inputs, losses=losses)
    got = grads.to_numpy().view(dtype).astype(np.float64)
    dx = inputs.to_numpy()[20:].reshape(4, 5).astype(np.float64)
    p64, x64, h = p.astype(np.float64), xs.astype(np.float64), 1e-6
    rel, tol = (1e-4, 1e-4) if real == "float" else (2e-2, 5e-2)
    np.testing.assert_allclose(losses.to_numpy(), [_layer_loss(p64, x) for x in x64], rtol=rel, atol=tol)
    for j in range(n):
        e = np.zeros(n)
        e[j] = h
        fd = sum((_layer_loss(p64 + e, x) - _layer_loss(p64 - e, x)) / (2 * h) for x in x64)
        assert got[j] == pytest.approx(fd, rel=rel, abs=tol), f"parameter {j}"
    for s, x in enumerate(x64):
        for k in range(5):
            e = np.zeros(5)
            e[k] = h
            fd = (_layer_loss(p64, x + e) - _layer_loss(p64, x - e)) / (2 * h)
            assert dx[s, k] == pytest.approx(fd, rel=rel, abs=tol), f"sample {s}, input {k}"


BAB = "ByteAddressBuffer rm;\nRWByteAddressBuffer wm;\nRWStructuredBuffer<float> fm;\n"
RM = "CoopVecMatrixLayout.RowMajor"


@pytest.mark.parametrize("src,code,words", [
    (BAB + f"float f(CoopVec<float, 3> x) {{ return coopVecMatMul<float, 2>(x, {F32}, rm, 0, {F32}, {RM}, false, 8)[0]; }}",
     "E0003", "matrix stride 8 bytes is shorter than a row of the 2 x 3 float matrix"),
    (BAB + f"float f(CoopVec<half, 4> x) {{ return coopVecMatMul<float, 2>(x, {F16}, rm, 0, {F16}, "
     "CoopVecMatrixLayout.ColumnMajor, false, 2)[0]; }", "E0003", "shorter than a column"),
    (BAB + f"float f(CoopVec<float, 3> x) {{ return coopVecMatMul<float, 2>(x, {F32}, fm, 0, {F16}, {RM}, false, 12)[0]; }}",
     "E0003", "CoopVecComponentType.Float16 reads half elements, but the matrix holds float"),
    (BAB + f"float f(CoopVec<float, 3> x) {{ return coopVecMatMul<float, 2>(x, {F32}, rm, 6, {F32}, {RM}, false, 12)[0]; }}",
     "E0003", "byte offset 6 is not a multiple of the 4-byte float"),
    (BAB + f"float f(CoopVec<float, 3> x) {{ return coopVecMatMul<float, 2>(x, {F32}, rm, {F32}, {RM}, false, 12)[0]; }}",
     "E0005", "takes (input, inputInterpretation, matrix, matrixOffset,"),
    (BAB + "float f() { return coopVecLoad<4>(rm)[0]; }", "E0005", "needs the element type T"),
    (BAB + "void f(CoopVec<float, 3> a) { coopVecReduceSumAccumulate(a, rm, 0); }", "E0003",
     "or a RWByteAddressBuffer read as half or float, got ByteAddressBuffer"),
    (BAB + f"void f(CoopVec<float, 3> a) {{ coopVecOuterProductAccumulate(a, a, rm, 0, 0, {RM}, {F32}); }}", "E0003",
     "got ByteAddressBuffer"),
    (BAB + "void f(CoopVec<float, 3> a) { a.store(rm, 0); }", "E0003", "needs a writable buffer"),
    (BAB + "void f() { rm.Store(0, 1); }", "E0003", "a ByteAddressBuffer is read-only"),
    (BAB + "void f(CoopVec<double, 3> a) { coopVecReduceSumAccumulate(a, wm, 0); }", "E0008",
     "accumulating double values into a RWByteAddressBuffer is not supported"),
    (BAB + "float f() { return wm[0]; }", "E0008", "indexing a RWByteAddressBuffer is not supported"),
    (BAB + "void f() { uint n; wm.GetDimensions(n); }", "E0008", "RWByteAddressBuffer.GetDimensions is not supported"),
    (BAB + "groupshared int gi[8];\nvoid f(CoopVec<float, 4> v) { v.store(gi, 0); }", "E0003",
     "needs a groupshared float[M], got int[8]"),
    (BAB + "void f() { float a[4]; let v = coopVecLoadGroupshared<4>(a); }", "E0003",
     "coopVecLoadGroupshared reads a groupshared array of scalars"),
])
def test_byte_buffer_errors_are_located(src, code, words):
    lines = src.split("\n")
    line = len(lines)
    msg = compile_error(src)
    assert re.match(rf"prog\.slang:{line}:\d+: error\[{code}\]", msg) and words in msg, msg


STRIDE_PAST_END = """\
//TEST_INPUT: set mat = ubuffer(data=[1 2 3 4 5 6 7 8], stride=4)
ByteAddressBuffer mat;
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


def test_a_stride_past_a_byte_buffers_end_is_a_located_error(diffc_run):
    r = diffc_run(STRIDE_PAST_END)
    assert r.returncode != 0
    assert re.search(r"k\.slang:10:\d+: error\[E0011\].*'mat'", r.stderr), r.stderr


LOAD_STORE = """\
//TEST_INPUT:ubuffer(data=[1.5 7 2.5h 0.25h], stride=4),name=words
RWByteAddressBuffer words;
//TEST_INPUT:ubuffer(data=[1.0h -2.0h 3.0h], stride=2),name=halves
ByteAddressBuffer halves;
//TEST_INPUT:ubuffer(data=[0 0 0 0 0 0], stride=4):out,name=out
RWStructuredBuffer<float> out;
//TEST_INPUT:ubuffer(data=[0 0], stride=2):out,name=hout
RWStructuredBuffer<half> hout;

[numthreads(1, 1, 1)]
void computeMain()
{
    out[0] = words.Load<float>(0);
    out[1] = float(words.Load(4));
    out[2] = float(words.Load<half>(8));
    words.Store<float2>(8, float2(4.0, words.Load<float>(0) * 2.0));
    out[3] = words.Load2(8).y == asuint(3.0) ? 1.0 : 0.0;
    let h = coopVecLoad<3, half>(halves);
    out[4] = float(h[1] + h[2]);
    out[5] = float(h.getCount());
    hout[0] = h[0];
    hout[1] = h[1] * h[2];
}
"""


def test_load_store_and_slang_test_input_data(diffc_run):
    """`diffc run` fills byte buffers as Slang's runner does (a float's, an int's and a half's bits
    a word each; stride=2 packs halves two to a word), `,name=` included, and prints half buffers."""
    r = diffc_run(LOAD_STORE)
    assert r.returncode == 0, r.stderr
    blocks = [b.split() for b in r.stdout.split("type:")[1:]]
    assert blocks[0][0] == "float" and [float(v) for v in blocks[0][1:]] == [1.5, 7.0, 2.5, 1.0, 1.0, 3.0]
    assert blocks[1][0] == "half" and [float(v) for v in blocks[1][1:]] == [1.0, -6.0]


GROUPSHARED = """\
//TEST_INPUT: set out = out ubuffer(count=16, stride=4)
RWStructuredBuffer<float> out;
groupshared float temp[20];

[numthreads(4, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID)
{
    let v = CoopVec<float, 4>(1.0, 2.0, 3.0, 4.0) * float(tid.x + 1);
    v.store(temp, 16 + tid.x * 16);
    GroupMemoryBarrierWithGroupSync();
    let w = coopVecLoadGroupshared<4>(temp, 16 + ((tid.x + 1) % 4) * 16);
    w.store(out, tid.x * 16);
}
"""


def test_store_to_and_load_from_groupshared_arrays(diffc_run):
    """Each work-item's vector through work-group memory at a byte offset, read by its neighbour."""
    out = _outputs(diffc_run(GROUPSHARED))
    want = np.concatenate([np.arange(1, 5) * ((t + 1) % 4 + 1) for t in range(4)])
    np.testing.assert_array_equal(out, want)


POINTERS = """\
//TEST_INPUT: set src = ubuffer(data=[1 2 3 4 5 6 7 8 9 10 11 12], stride=4);
uniform float* src;
//TEST_INPUT: set dst = out ubuffer(count=8, stride=4);
uniform float* dst;

[numthreads(1, 1, 1)]
void computeMain()
{
    let a = coopVecLoad<4, float>(src, 0);
    let b = coopVecLoad<4, float>(src + 2, 16);
    b.store(dst, 0);
    a.store(dst + 1, 12);
}
"""


def test_pointer_loads_and_stores_take_byte_offsets(diffc_run):
    """As in Slang, coopVecLoad and store of a T* take a byte offset from where it points (and
    Slang's `set X = ubuffer(...);` with its semicolon reads)."""
    np.testing.assert_array_equal(_outputs(diffc_run(POINTERS)), [7, 8, 9, 10, 1, 2, 3, 4])
