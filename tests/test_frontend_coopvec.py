"""`CoopVec<T, N>` (frontend/features/coopvec.py): a vector of N elements (any N; split-wide-vectors gives
OpenCL its widths) with the vector's arithmetic, subscripts and derivatives, and
`store(buffer, byteOffset)`. The matrix operations: tests/test_coopvec_matrix.py."""

from __future__ import annotations


import numpy as np
import pytest
from slang_harness import Compiled
from slang_helpers import expect_error, run

SRC = """
static const int Size = 3;
typealias Vec4 = CoopVec<float, 4>;

[Differentiable]
Vec4 arith(Vec4 x, Vec4 y) {
    let one = Vec4(1.0);
    return (x + y) * (x - y) / (one + y * y) - x * 2.0;
}

[Differentiable]
Vec4 math(Vec4 x, Vec4 y) {
    return exp(x) * sin(y) + log(Vec4(2.0) + x * x) + min(x, y) + clamp(x, Vec4(-0.5), Vec4(0.5))
        + fma(x, y, Vec4(1.0)) + tanh(-x);
}

[Differentiable]
Vec4 pack(float a, float b, float c, float d) {
    Vec4 v = { a, b * a, c, d };
    return v * CoopVec<float, 4>(a, b, c, d);
}

[Differentiable]
T pick<T : __BuiltinFloatingPointType>(CoopVec<T, Size> v, no_diff int k) {
    return v[k] * v[(k + 1) % Size];
}

[Differentiable]
CoopVec<T, Size> put<T : __BuiltinFloatingPointType>(CoopVec<T, Size> v, T x, no_diff int k) {
    v[k] = x * v[k];
    return v;
}

[Differentiable]
float fill(float[Size] xs, float s) {
    CoopVec<float, Size> v;
    for (int i = 0; i < Size; ++i)
        v[i] = xs[i] * s;
    float r = 0.0;
    for (int i = 0; i < Size; ++i)
        r += v[i] * v[i];
    return r;
}

float usePick(CoopVec<float, Size> v, int k) { return pick(v, k); }
float usePut(CoopVec<float, Size> v, float x, int k) { return put(v, x, k)[k]; }
"""

X = np.array([0.3, -0.8, 1.1, 0.45])
Y = np.array([0.9, 0.2, -0.6, 1.3])


def test_coopvec_arithmetic_and_intrinsics_differentiate_in_both_modes():
    c = Compiled(SRC, "arith")
    want = (X + Y) * (X - Y) / (1 + Y * Y) - X * 2
    np.testing.assert_allclose(c.primal([X, Y])[0], want, rtol=1e-6)
    c.check_derivatives([X, Y])
    Compiled(SRC, "math").check_derivatives([X, Y])
    c = Compiled(SRC, "pack")
    np.testing.assert_allclose(c.primal([0.5, 2.0, -1.0, 3.0])[0], [0.25, 2.0, 1.0, 9.0])
    c.check_derivatives([0.5, 2.0, -1.0, 3.0])


@pytest.mark.parametrize("k", [0, 1, 2])
def test_coopvec_subscripts_at_runtime_indices_differentiate(k):
    v = np.array([0.7, -1.2, 2.5])
    assert run(SRC, "usePick", v, k)[0] == pytest.approx(v[k] * v[(k + 1) % 3])
    w = v.copy()
    w[k] *= 1.5
    assert run(SRC, "usePut", v, 1.5, k)[0] == pytest.approx(w[k])
    Compiled(SRC, "pick_float").check_derivatives([v, k])
    Compiled(SRC, "put_float").check_derivatives([v, 1.5, k])
    Compiled(SRC, "fill").check_derivatives([0.4, -0.3, 0.8, 1.7])


STORE_KERNEL = """\
//TEST_INPUT: set out = out ubuffer(count=12, stride=4)
RWStructuredBuffer<float> out;
//TEST_INPUT: set dout = out ubuffer(count=4, stride=4)
RWStructuredBuffer<double> dout;

[Differentiable]
CoopVec<float, 4> sq(CoopVec<float, 4> x) { return x * x; }

[numthreads(1, 1, 1)]
void computeMain()
{
    let x = CoopVec<float, 4>(1.0, 2.0, 3.0, 4.0);
    sq(x).store(out, 0);
    var p = diffPair(x);
    bwd_diff(sq)(p, CoopVec<float, 4>(1.0, 10.0, 100.0, 1000.0));
    p.d.store(out, 16);
    int at = 8 * 4;
    fwd_diff(sq)(diffPair(x, CoopVec<float, 4>(1.0))).d.store(out, at);
    let h = CoopVec<double, 2>(0.5, 0.25);
    h.store(dout, 16);
}
"""


def test_store_writes_from_a_byte_offset_on_opencl(tmp_path, diffc_cli):
    f = tmp_path / "k.slang"
    f.write_text(STORE_KERNEL)
    r = diffc_cli("run", "--slang-output", str(f))
    assert r.returncode == 0, r.stderr
    sections = [[float(v) for v in s.split()[1:]] for s in r.stdout.split("type:")[1:]]
    x = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(sections[0], [*(x * x), *(2 * x * [1, 10, 100, 1000]), *(2 * x)])
    np.testing.assert_allclose(sections[1], [0.0, 0.0, 0.5, 0.25])


@pytest.mark.parametrize("src,code,col,words", [
    ("float f(CoopVec<float, 4> v) { return v.matMul(v)[0]; }", "E0008", 41, "CoopVec operation 'matMul'"),
    ("float f(CoopVec<float, 4> v) { return coopVecMatMul(v)[0]; }", "E0005", 39, "coopVecMatMul takes (input,"),
    ("RWStructuredBuffer<int> b;\nvoid f(CoopVec<float, 2> v) { v.store(b, 0); }", "E0003", 39,
     "needs a RWStructuredBuffer<float>"),
    ("RWStructuredBuffer<float> b;\nvoid f(CoopVec<float, 2> v) { v.store(b, 6); }", "E0003", 42,
     "not a multiple of the 4-byte elements"),
])
def test_coopvec_errors_are_located(src, code, col, words):
    expect_error(src, code, src.count("\n") + 1, col, words)


WIDE = """
typealias V = CoopVec<float, WIDTH>;

[Differentiable]
V act(V x, V y) { return max(x * y, x * 0.01) + exp(-x) * V(2.0) - tanh(y) / (V(1.5) + y * y); }

[Differentiable]
float energy(V x, float s, no_diff int k) {
    V v = x * s;
    v[k] = v[k] * v[(k + 3) % WIDTH];
    float r = 0.0;
    for (int i = 0; i < WIDTH; ++i)
        r += v[i] * v[i] * float(i % 5 - 2);
    return r;
}
"""


@pytest.mark.parametrize("width", [8, 64, 256])
def test_wide_coopvecs_differentiate_elementwise(width):
    src = WIDE.replace("WIDTH", str(width))
    rng = np.random.default_rng(width)
    x, y = rng.standard_normal(width), rng.standard_normal(width)
    c = Compiled(src, "act")
    want = np.maximum(x * y, x * 0.01) + np.exp(-x) * 2 - np.tanh(y) / (1.5 + y * y)
    np.testing.assert_allclose(c.primal([x, y])[0], want, rtol=1e-6)  # (0.01 is a float constant)
    c.check_derivatives([x, y])
    Compiled(src, "energy").check_derivatives([x, 0.7, width - 2])


WIDE_KERNEL = """\
//TEST_INPUT: set out = out ubuffer(count=60, stride=4)
RWStructuredBuffer<float> out;
typealias V = CoopVec<float, 20>;

[Differentiable]
V sq(V x) { return x * x + 1.0; }

[numthreads(1, 1, 1)]
void computeMain()
{
    V x = V(0.0);
    for (int i = 0; i < 20; ++i)
        x[i] = float(i) * 0.5;
    sq(x).store(out, 0);
    var p = diffPair(x);
    bwd_diff(sq)(p, V(3.0));
    p.d.store(out, 80);
    out[40 + int(out[1] * 2.0)] = x[int(out[3])];
}
"""


def test_a_20_wide_coopvec_runs_on_opencl(tmp_path, diffc_cli):
    f = tmp_path / "k.slang"
    f.write_text(WIDE_KERNEL)
    r = diffc_cli("run", "--slang-output", str(f))
    assert r.returncode == 0, r.stderr
    got = np.array([float(v) for v in r.stdout.split("type:")[1].split()[1:]])
    x = np.arange(20) * 0.5
    want = np.zeros(60)
    want[:20], want[20:40] = x * x + 1, 6 * x
    want[40 + int((x[1] ** 2 + 1) * 2)] = x[int(x[3] ** 2 + 1)]  # runtime lanes of a 16 + 4 split
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_truncating_a_vector_comparison_to_bool_warns(diffc_cli, tmp_path):
    # Slang compares two CoopVecs as one value (a < b is true here: equal first elements, then
    # 0 < 5); diffc's comparison is elementwise and a bool keeps its first element (false), so
    # the truncation is said, where it happens
    src = tmp_path / "cmp.slang"
    src.write_text("""//TEST_INPUT:ubuffer(data=[0 0], stride=4):out,name=outputBuffer
RWStructuredBuffer<int> outputBuffer;
[numthreads(1, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID)
{
    CoopVec<float, 4> a = CoopVec<float, 4>(2.0);
    CoopVec<float, 4> b = CoopVec<float, 4>(2.0);
    a[1] = 0.0;
    b[1] = 5.0;
    bool r = a < b;
    outputBuffer[0] = r ? 1 : 0;
    if (all(a == b)) outputBuffer[1] = 1;
}
""")
    run = diffc_cli("run", str(src))
    assert run.returncode == 0, run.stderr
    assert "cmp.slang:10:14: warning: implicit truncation of bool4 to bool keeps the first element only" in run.stderr
    assert run.stderr.count("warning:") == 1  # all(...) makes a bool: no truncation
