"""Intrinsics beyond the basic math ones (test_slang_semantics.py): their values against numpy,
their derivatives against float64 central differences in both modes and forward against reverse
(slang_harness), Slang's conventions where a derivative is not defined, intrinsics given to
fwd_diff / bwd_diff, elementwise intrinsics on matrices, and the non-differentiable ones (isnan,
any, asfloat, ...) in plain code. `slang_differentiable` is checked against Slang's stdlib."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from slang_harness import Compiled, run_function, run_pipeline
from slang_helpers import expect_error

from diffc.frontend import compile_slang
from diffc.frontend.checker.builtins import BUILTINS, slang_differentiable

RNG = np.random.default_rng(7)


def uniform(lo, hi):
    return lambda shape: RNG.uniform(lo, hi, shape)


def away_from_integers(lo, hi):
    return lambda shape: np.floor(RNG.uniform(lo, hi, shape)) + RNG.uniform(0.15, 0.85, shape)


def away_from_zero(lo, hi):
    return lambda shape: RNG.choice([-1.0, 1.0], shape) * RNG.uniform(lo, hi, shape)


def _refract(i, n, eta):
    d = n @ i
    k = 1.0 - eta * eta * (1.0 - d * d)
    return np.zeros_like(i) if k < 0 else eta * i - (eta * d + math.sqrt(k)) * n


ELEMENTWISE = {
    # name -> (samplers of the arguments, numpy reference)
    "rcp": ([away_from_zero(0.3, 2)], lambda x: 1.0 / x),
    "asinh": ([uniform(-2, 2)], np.arcsinh),
    "acosh": ([uniform(1.2, 3)], np.arccosh),
    "atanh": ([uniform(-0.8, 0.8)], np.arctanh),
    "radians": ([uniform(-180, 180)], np.radians),
    "degrees": ([uniform(-3, 3)], np.degrees),
    "copysign": ([away_from_zero(0.2, 2), away_from_zero(0.2, 2)], np.copysign),
    "exp2": ([uniform(-2, 2)], np.exp2),
    "log2": ([uniform(0.2, 5)], np.log2),
    "log10": ([uniform(0.2, 5)], np.log10),
    "rsqrt": ([uniform(0.2, 5)], lambda x: 1.0 / np.sqrt(x)),
    "pow": ([uniform(0.2, 3), uniform(-2, 2)], np.power),
    "trunc": ([away_from_integers(-3, 3)], np.trunc),
}
ZERO_DERIVATIVE = {"trunc"}
FORMS = ["float", "float2", "float3", "float4", "double", "double3", "half"]


def _shape(form: str):
    return () if form[-1] not in "234" else (int(form[-1]),)


def _sample(sampler, shape):
    v = sampler(shape)
    return float(v) if shape == () else np.asarray(v, dtype=float)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_intrinsic(name, form):
    samplers, ref = ELEMENTWISE[name]
    params = ", ".join(f"{form} a{i}" for i in range(len(samplers)))
    call = f"{name}({', '.join(f'a{i}' for i in range(len(samplers)))})"
    c = Compiled(f"[Differentiable] {form} f({params}) {{ return {call}; }}", "f")
    args = [_sample(s, _shape(form)) for s in samplers]
    (val,) = c.primal(args)
    # constants (radians' pi / 180) are rounded to the function's float type
    rtol = {"half": 1e-3, "double": 1e-12}.get(form.rstrip("234"), 1e-6)
    np.testing.assert_allclose(val, ref(*args), rtol=rtol)
    c.check_derivatives(args, rtol=max(rtol, 1e-5))  # a rule's constants (ln 2) have the type too
    if name in ZERO_DERIVATIVE:
        _, tangents = c.fwd(args, [np.ones_like(a) if np.ndim(a) else 1.0 for a in args])
        assert np.all(np.asarray(tangents) == 0.0)


OTHER_WIDTHS = {
    # the intrinsics test_slang_semantics.py checks on float and float3, here on the other forms
    "exp": ([uniform(-2, 2)], np.exp), "log": ([uniform(0.2, 5)], np.log), "sqrt": ([uniform(0.2, 5)], np.sqrt),
    "sin": ([uniform(-2, 2)], np.sin), "cos": ([uniform(-2, 2)], np.cos), "tan": ([uniform(-1, 1)], np.tan),
    "asin": ([uniform(-0.8, 0.8)], np.arcsin), "acos": ([uniform(-0.8, 0.8)], np.arccos),
    "atan": ([uniform(-2, 2)], np.arctan), "tanh": ([uniform(-1, 1)], np.tanh),
    "abs": ([away_from_zero(0.2, 1)], np.abs), "frac": ([away_from_integers(-3, 3)], lambda x: x - np.floor(x)),
    "min": ([uniform(-1, 1), uniform(-1, 1)], np.minimum), "max": ([uniform(-1, 1), uniform(-1, 1)], np.maximum),
    "atan2": ([uniform(-1, 1), away_from_zero(0.3, 2)], np.arctan2),
    "clamp": ([uniform(-2, 2), uniform(-1, -0.2), uniform(0.2, 1)], lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)),
    "saturate": ([uniform(-0.5, 1.5)], lambda x: np.clip(x, 0.0, 1.0)),
    "lerp": ([uniform(-1, 1), uniform(-1, 1), uniform(0, 1)], lambda a, b, t: a + (b - a) * t),
    "fma": ([uniform(-1, 1)] * 3, lambda a, b, c: a * b + c), "mad": ([uniform(-1, 1)] * 3, lambda a, b, c: a * b + c),
}


@pytest.mark.parametrize("form", ["float2", "float4", "double", "double2", "half2"])
@pytest.mark.parametrize("name", sorted(OTHER_WIDTHS))
def test_intrinsic_on_other_widths_and_types(name, form):
    samplers, ref = OTHER_WIDTHS[name]
    params = ", ".join(f"{form} a{i}" for i in range(len(samplers)))
    c = Compiled(f"[Differentiable] {form} f({params}) {{ return {name}({', '.join(f'a{i}' for i in range(len(samplers)))}); }}", "f")
    args = [_sample(s, _shape(form)) for s in samplers]
    rtol = 1e-3 if form.startswith("half") else 1e-12
    np.testing.assert_allclose(c.primal(args)[0], ref(*args), rtol=rtol)
    c.check_derivatives(args, rtol=max(rtol, 1e-5))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_refract(n):
    ty = f"float{n}"
    c = Compiled(f"[Differentiable] {ty} f({ty} i, {ty} n, float eta) {{ return refract(i, n, eta); }}", "f")
    i = RNG.uniform(-1, 1, n)
    nrm = RNG.uniform(-1, 1, n)
    nrm /= np.linalg.norm(nrm)
    for eta in (0.4, 0.9):
        args = [i, nrm, eta]
        np.testing.assert_allclose(c.primal(args)[0], _refract(i, nrm, eta), rtol=1e-12)
        c.check_derivatives(args)
    # total internal reflection: a zero vector, zero derivative
    i, nrm = np.zeros(n), np.zeros(n)
    i[0], nrm[1] = 1.0, 1.0
    np.testing.assert_array_equal(c.primal([i, nrm, 3.0])[0], np.zeros(n))


@pytest.mark.parametrize("form", ["float", "float3", "float2x2"])
def test_sincos_out_parameters(form):
    src = f"[Differentiable] {form} f({form} x) {{ {form} s, c; sincos(x, s, c); return s * 2.0 + c * 3.0; }}"
    c = Compiled(src, "f")
    if form == "float2x2":  # a matrix is its rows
        args = [RNG.uniform(-2, 2, 2), RNG.uniform(-2, 2, 2)]
        want = [2 * np.sin(a) + 3 * np.cos(a) for a in args]
    else:
        args = [_sample(uniform(-2, 2), _shape(form))]
        want = [2 * np.sin(args[0]) + 3 * np.cos(args[0])]
    for got, w in zip(c.primal(args), want):
        np.testing.assert_allclose(got, w, rtol=1e-12)
    c.check_derivatives(args)


@pytest.mark.parametrize("name,ref", [
    ("sqrt", np.sqrt), ("exp", np.exp), ("abs", np.abs), ("frac", lambda x: x - np.floor(x)),
])
def test_elementwise_intrinsic_on_a_matrix_row_by_row(name, ref):
    c = Compiled(f"[Differentiable] float2x3 f(float2x3 m) {{ return {name}(m); }}", "f")
    rows = [RNG.uniform(0.2, 0.8, 3) + 1.0, RNG.uniform(0.2, 0.8, 3) + 2.0]
    for got, row in zip(c.primal(rows), rows):
        np.testing.assert_allclose(got, ref(row), rtol=1e-12)
    c.check_derivatives(rows)


def test_binary_intrinsic_on_matrices_and_a_scalar():
    c = Compiled("[Differentiable] float2x2 f(float2x2 a, float2x2 b, float t) { return lerp(a, b, t); }", "f")
    a, b = [RNG.uniform(-1, 1, 2) for _ in range(2)], [RNG.uniform(-1, 1, 2) for _ in range(2)]
    got = c.primal(a + b + [0.3])
    for g, x, y in zip(got, a, b):
        np.testing.assert_allclose(g, x + (y - x) * 0.3, rtol=1e-12)
    c.check_derivatives(a + b + [0.3])


# ---- Slang's conventions where the derivative is not defined --------------------------------


@pytest.mark.parametrize("form", ["float", "float2"])
@pytest.mark.parametrize("name", ["min", "max"])
def test_min_max_split_a_tie_half_and_half(name, form):
    """Slang's stdlib, and central differences: at x == y each operand gets half."""
    c = Compiled(f"[Differentiable] {form} f({form} x, {form} y) {{ return {name}(x, y); }}", "f")
    x = 1.5 if form == "float" else np.array([1.5, 2.0])
    y = 1.5 if form == "float" else np.array([1.5, 1.0])
    dx, dy = c.bwd([x, y], [1.0 if form == "float" else np.ones(2)])
    lane1 = (1.0, 0.0) if name == "max" else (0.0, 1.0)  # 2.0 vs 1.0
    np.testing.assert_array_equal(np.atleast_1d(dx), [0.5] if form == "float" else [0.5, lane1[0]])
    np.testing.assert_array_equal(np.atleast_1d(dy), [0.5] if form == "float" else [0.5, lane1[1]])
    _, (t,) = c.fwd([x, y], [1.0 if form == "float" else np.ones(2), -3.0 if form == "float" else -3.0 * np.ones(2)])
    assert np.atleast_1d(t)[0] == -1.0
    central = ((max if name == "max" else min)(1.5 + 1e-6, 1.5) - (max if name == "max" else min)(1.5 - 1e-6, 1.5)) / 2e-6
    assert central == pytest.approx(0.5)


@pytest.mark.parametrize("form", ["float", "float3"])
def test_clamp_and_saturate_keep_x_derivative_on_the_closed_range(form):
    """At x == lo or x == hi the derivative is not defined; Slang gives it all to x."""
    c = Compiled(f"[Differentiable] {form} f({form} x, {form} lo, {form} hi) {{ return clamp(x, lo, hi); }}", "f")
    s = Compiled(f"[Differentiable] {form} f({form} x) {{ return saturate(x); }}", "f")
    vec = form == "float3"
    x = np.array([0.0, 1.0, 0.5]) if vec else 0.0
    lo, hi = (np.zeros(3), np.ones(3)) if vec else (0.0, 1.0)
    one = np.ones(3) if vec else 1.0
    np.testing.assert_array_equal(c.bwd([x, lo, hi], [one]), [one, 0 * one, 0 * one])
    _, (t,) = c.fwd([x, lo, hi], [0.4 * one, 0.8 * one, 0.5 * one])
    np.testing.assert_allclose(t, 0.4 * one)
    np.testing.assert_array_equal(s.bwd([x], [one])[0], one)
    outside = np.array([-0.5, 1.5, 2.0]) if vec else -0.5
    np.testing.assert_array_equal(c.bwd([outside, lo, hi], [one])[0], 0 * one)
    np.testing.assert_array_equal(s.bwd([outside], [one])[0], 0 * one)


def test_copysign_derivative_is_zero_at_zero_magnitude_and_at_the_jump():
    c = Compiled("[Differentiable] float3 f(float3 x, float3 y) { return copysign(x, y); }", "f")
    x, y = np.array([0.0, -2.0, 3.0]), np.array([-1.0, 3.0, 0.0])
    (dx, dy) = c.bwd([x, y], [np.ones(3)])
    # |x| is even at x == 0; sign(x) sign(y) elsewhere; copysign jumps at y == 0 (Slang: 0)
    np.testing.assert_array_equal(dx, [0.0, -1.0, 0.0])
    np.testing.assert_array_equal(dy, [0.0, 0.0, 0.0])


def test_sqrt_derivative_is_finite_at_zero_as_in_slang():
    c = Compiled("[Differentiable] float f(float x) { return sqrt(x); }", "f")
    (dx,) = c.bwd([0.0], [1.0])
    assert dx == pytest.approx(0.5 / math.sqrt(1e-7))
    (dx,) = c.bwd([4.0], [1.0])
    assert dx == pytest.approx(0.25)


# ---- intrinsics given to fwd_diff / bwd_diff ---------------------------------------------------

DERIVATIVE_CALLS = """
float fwd_sin(float x) { return fwd_diff(sin)(diffPair(x, 1.0)).d; }
float second_sin(float x) {
    return fwd_diff(fwd_diff(sin))(diffPair(diffPair(x, 1.0), diffPair(1.0, 0.0))).d.d;
}
float3 bwd_cross_a(float3 a, float3 b, float3 dOut) {
    var pa = diffPair(a); var pb = diffPair(b);
    bwd_diff(cross)(pa, pb, dOut);
    return pa.d;
}
float bwd_sincos(float x, float ds, float dc) {
    var px = diffPair(x);
    bwd_diff(sincos)(px, ds, dc);
    return px.d;
}
float3 bwd_length(float3 v) { var p = diffPair(v); bwd_diff(length)(p, 1.0); return p.d; }
float2 bwd_sqrt_matrix_row1(float2x2 m, float2x2 dOut) {
    var p = diffPair(m);
    bwd_diff(sqrt)(p, dOut);
    return p.d[1];
}
float bwd_pow_y(float x, float y) { var px = diffPair(x); var py = diffPair(y); bwd_diff(pow)(px, py, 1.0); return py.d; }
float fwd_clamp(float x, float lo, float hi) {
    return fwd_diff(clamp)(diffPair(x, 1.0), diffPair(lo, 10.0), diffPair(hi, 100.0)).d;
}
"""


@pytest.fixture(scope="module")
def deriv_module():
    m = compile_slang(DERIVATIVE_CALLS, "d.slang")
    run_pipeline(m)
    return m


def test_intrinsics_as_functions_of_derivative_operators(deriv_module):
    m = deriv_module
    run = lambda name, *args: run_function(m, name, *args)  # noqa: E731
    assert run("fwd_sin", 0.4)[0] == pytest.approx(math.cos(0.4), rel=1e-12)
    assert run("second_sin", 0.4)[0] == pytest.approx(-math.sin(0.4), rel=1e-12)
    a, b, u = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    np.testing.assert_allclose(run("bwd_cross_a", a, b, u)[0], np.cross(b, u), rtol=1e-12)  # d<u, a x b>/da
    assert run("bwd_sincos", 0.4, 2.0, 3.0)[0] == pytest.approx(2 * math.cos(0.4) - 3 * math.sin(0.4), rel=1e-12)
    np.testing.assert_allclose(run("bwd_length", a)[0], a / np.linalg.norm(a), rtol=1e-12)
    rows = [np.array([4.0, 9.0]), np.array([16.0, 25.0])]
    douts = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    np.testing.assert_allclose(run("bwd_sqrt_matrix_row1", *rows, *douts)[0], [3 / 8, 4 / 10], rtol=1e-12)
    assert run("bwd_pow_y", 2.0, 3.0)[0] == pytest.approx(8 * math.log(2.0), rel=1e-12)
    assert run("fwd_clamp", 0.5, 0.0, 1.0)[0] == 1.0
    assert run("fwd_clamp", -0.5, 0.0, 1.0)[0] == 10.0
    assert run("fwd_clamp", 1.5, 0.0, 1.0)[0] == 100.0


def test_an_intrinsic_instance_is_shared_by_calls_of_one_type():
    m = compile_slang("""
    float f(float x) { return fwd_diff(exp)(diffPair(x, 1.0)).d + fwd_diff(exp)(diffPair(2.0 * x, 1.0)).d; }
    float3 g(float3 v) { return fwd_diff(exp)(diffPair(v, v)).d; }
    """, "t.slang")
    names = [op.sym_name.data for op in m.ops if op.name == "func.func"]
    assert names.count("__builtin_exp__float") == 1 and "__builtin_exp__float3" in names


# ---- non-differentiable intrinsics in plain code --------------------------------------------

PLAIN = """
float classify(float3 a, float3 b) {
    float r = 0.0;
    if (any(a < b)) r += 1.0;
    if (all(a < b)) r += 10.0;
    if (any(isnan(a))) r += 100.0;
    if (all(isfinite(b))) r += 1000.0;
    if (isinf(a.y)) r += 10000.0;
    if (any(b)) r += 100000.0;
    return r;
}
uint bits_of(float x) { return asuint(x); }
float from_bits(int i) { return asfloat(i); }
uint3 vector_bits(float3 v) { return asuint(v); }
float3 vector_round_trip(float3 v) { return asfloat(asint(v)) * 2.0; }
int3 signs(float3 v) { return sign(v); }
int3 int_signs(int3 v) { return sign(v) * 10 + sign(v.x); }
float pi() { return float.getPi() + double.getPi(); }
"""


def test_plain_code_intrinsics():
    m = compile_slang(PLAIN, "p.slang")
    nan, inf = float("nan"), float("inf")
    run = lambda *a: run_function(m, *a)[0]  # noqa: E731
    assert run("classify", np.array([1.0, 2.0, 3.0]), np.array([0.0, 5.0, 0.5])) == 101001.0
    assert run("classify", np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])) == 101011.0
    assert run("classify", np.array([nan, inf, 3.0]), np.array([0.0, 0.0, 0.0])) == 11100.0
    assert run("classify", np.array([1.0, 1.0, 1.0]), np.array([0.0, inf, 0.0])) == 100001.0
    assert run("bits_of", 1.0) == 0x3F800000
    assert run("bits_of", -2.0) % 2**32 == 0xC0000000  # i32 is signless in the IR
    assert run("from_bits", 0x40490FDB) == pytest.approx(math.pi, rel=1e-7)
    bits = np.asarray(run("vector_bits", np.array([1.0, -2.0, 0.5]))).astype(np.int64) % 2**32
    np.testing.assert_array_equal(bits, [0x3F800000, 0xC0000000, 0x3F000000])
    np.testing.assert_array_equal(run("vector_round_trip", np.array([1.5, -0.25, 3.0])), [3.0, -0.5, 6.0])
    np.testing.assert_array_equal(run("signs", np.array([-2.0, 0.0, 0.5])), [-1, 0, 1])
    np.testing.assert_array_equal(run("int_signs", np.array([-7, 0, 3])), [-11, -1, 9])
    assert run("pi") == pytest.approx(2 * math.pi, rel=1e-7)  # float.getPi() is a float


def test_non_differentiable_intrinsics_pass_no_derivative():
    src = """[Differentiable] float f(float x, float y) {
        float r = x;
        if (isnan(x) || any(float2(x, y) > 3.0)) r = 0.0;
        return r * float(sign(y)) + asfloat(asuint(y)) * 0.0 + trunc(y);
    }"""
    c = Compiled(src, "f")
    for args in ([0.7, -1.3], [1.2, 2.4]):
        c.check_derivatives(args)
        _, (t,) = c.fwd(args, [0.0, 1.0])
        assert t == 0.0  # y reaches the result only through sign, the bit casts and trunc


# ---- Slang's own differentiability flag ------------------------------------------------------


def test_slang_differentiable_follows_slangs_stdlib():
    for name in ("sin", "exp2", "rcp", "asinh", "atan2", "pow", "min", "clamp", "lerp", "fma", "mad", "dot",
                 "cross", "length", "normalize", "distance", "reflect", "refract", "sincos", "copysign",
                 "frac", "saturate", "radians", "degrees", "abs", "fmod", "mul", "transpose",
                 "determinant"):
        assert slang_differentiable(name), name
    for name in ("floor", "ceil", "round", "trunc", "sign", "step", "smoothstep", "isnan", "isinf", "isfinite", "any", "all",
                 "asfloat", "asint", "asuint", "printf", "no_such_function"):
        assert not slang_differentiable(name), name
    assert all(isinstance(slang_differentiable(n), bool) for n in BUILTINS)


# ---- the OpenCL backend (PoCL) -----------------------------------------------------------------

KERNEL = """\
//TEST_INPUT:ubuffer(data=[0.5 -1.5 2.5 0.25], stride=4):name=inp
RWStructuredBuffer<float> inp;
//TEST_INPUT: set outp = out ubuffer(data=[0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0], stride=4)
RWStructuredBuffer<float> outp;

[Differentiable]
float mx(float x, float y) { return max(x, y); }

[shader("compute")]
[numthreads(1, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID) {
    float x = inp[0], y = inp[1], z = inp[2], w = inp[3];
    outp[0] = rcp(x);
    outp[1] = asinh(y);
    outp[2] = acosh(z);
    outp[3] = atanh(w);
    outp[4] = trunc(y);
    outp[5] = radians(z) + degrees(w);
    outp[6] = copysign(z, y);
    float s, c;
    sincos(x, s, c);
    outp[7] = s + 10.0 * c;
    float3 r = refract(normalize(float3(x, y, z)), float3(0.0, 1.0, 0.0), 0.8);
    outp[8] = r.x; outp[9] = r.y; outp[10] = r.z;
    float3 v = float3(x, y, z);
    outp[11] = float(any(v < 0.0)) + 2.0 * float(all(v < 3.0)) + 4.0 * float(any(isnan(v)))
             + 8.0 * float(isinf(1.0 / (x - 0.5))) + 16.0 * float(isfinite(y));
    outp[12] = float(asuint(x) == 0x3f000000u) + asfloat(asint(y));
    int3 sg = sign(v);
    outp[13] = float(sg.x * 100 + sg.y * 10 + sg.z);
    var px = diffPair(x); var py = diffPair(x);
    bwd_diff(mx)(px, py, 1.0);
    outp[14] = px.d; outp[15] = py.d;
    var pa = diffPair(v); var pb = diffPair(float3(w, 1.0, -2.0));
    bwd_diff(cross)(pa, pb, float3(1.0, 2.0, 3.0));
    outp[16] = pa.d.x; outp[17] = pa.d.y; outp[18] = pa.d.z;
    outp[19] = float.getPi();
    float2x2 m = float2x2(x, z, w, 4.0);
    float2x2 sq = sqrt(m);
    outp[20] = sq[0][1] + sq[1][1];
    var pm = diffPair(m);
    bwd_diff(sqrt)(pm, float2x2(1.0, 1.0, 1.0, 1.0));
    outp[21] = pm.d[1][0];
    outp[22] = fwd_diff(sin)(diffPair(x, 1.0)).d;
    outp[23] = smoothstep(0.0, 1.0, w) + step(x, y);
}
"""


def _kernel_expected() -> list[float]:
    x, y, z, w = 0.5, -1.5, 2.5, 0.25
    i = np.array([x, y, z]) / np.linalg.norm([x, y, z])
    n, eta = np.array([0.0, 1.0, 0.0]), 0.8
    d = n @ i
    refr = eta * i - (eta * d + math.sqrt(1 - eta * eta * (1 - d * d))) * n
    cross_grad = np.cross(np.array([w, 1.0, -2.0]), np.array([1.0, 2.0, 3.0]))  # d<u, a x b>/da = b x u
    return [1 / x, np.arcsinh(y), np.arccosh(z), np.arctanh(w), np.trunc(y), np.radians(z) + np.degrees(w),
            math.copysign(z, y), math.sin(x) + 10 * math.cos(x), *refr,
            1 + 2 + 8 + 16,  # any(v < 0), all(v < 3), no NaN, isinf(1 / 0), isfinite(y)
            1 + y, 100 - 10 + 1, 0.5, 0.5, *cross_grad, math.pi, math.sqrt(z) + 2.0, 0.5 / math.sqrt(w),
            math.cos(x), w * w * (3 - 2 * w)]


def test_intrinsics_through_opencl(tmp_path):
    """`diffc run` on PoCL: the emitted OpenCL C computes what numpy does."""
    f = tmp_path / "k.slang"
    f.write_text(KERNEL)
    r = subprocess.run([sys.executable, "-m", "diffc.cli", "run", str(f)], capture_output=True, text=True,
                       env={**os.environ, "DIFFC_DEVICE": "cpu"}, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    assert lines[:2] == ["outp:", "float"]  # the out buffer, by name
    np.testing.assert_allclose([float(v) for v in lines[2:]], _kernel_expected(), rtol=1e-5, atol=1e-6)


# ---- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("src,code,col,words", [
    ("float f(float2 a) { return cross(a, a).x; }", "E0003", 28, "cross needs 3-vectors"),
    ("float f(float a) { return refract(a, a, a); }", "E0003", 27, "refract needs vectors"),
    ("float f(half a) { return asfloat(a); }", "E0003", 26, "asfloat needs 32-bit"),
    ("float f(int a) { return float(isnan(a)); }", "E0003", 31, "isnan needs float"),
    ("float f(uint a) { return float(sign(a)); }", "E0003", 32, "sign needs float or int"),
    ("float f(float a) { return int.getPi(); }", "E0004", 31, "type int has no method 'getPi'"),
    ("float f(float a) { float s; sincos(a, s, 1.0); return s; }", "E0003", 42, "assignment"),
    ("float f(float a) { return fwd_diff(sin)({a, 1.0}).d; }", "E0008", 41, "initializer list"),
    ("float f(float a) { let g = sin; return a; }", "E0008", 28, "intrinsic 'sin' used as a value"),
])
def test_intrinsic_errors_are_located(src, code, col, words):
    expect_error(src, code, 1, col, words)


FMOD_KERNEL = """
RWStructuredBuffer<float> X;
RWStructuredBuffer<float> Y;
RWStructuredBuffer<float> R;
[numthreads(8, 1, 1)] void remainders(uint3 t : SV_DispatchThreadID, uniform uint n) {
  if (t.x >= n) return;
  R[2 * t.x] = fmod(X[t.x], Y[t.x]);
  R[2 * t.x + 1] = X[t.x] % Y[t.x];
}
"""


def test_fmod_is_exact_in_float32_on_the_device(tmp_path):
    # x - y * trunc(x / y) rounds x / y first: fmod(1, 1/6) came out 0 where C's fmod gives 1/6
    import diffc

    path = tmp_path / "fmod.slang"
    path.write_text(FMOD_KERNEL)
    m = diffc.load_module(str(path))
    x = np.float32([1.0, -7.5, 5.5, 1.0, 100.0, -3.25, 0.7, 1e6])
    y = np.float32([1.0, 2.0, -2.0, 0.3, 1.0 / 3.0, 0.5, 0.1, 7.0])
    y[0] = np.float32(1.0) / np.float32(6.0)
    r = diffc.Tensor.from_numpy(np.zeros(16, np.float32))
    T = diffc.Tensor.from_numpy
    m.remainders.dispatch(thread_count=8, X=T(x), Y=T(y), R=r, n=8)
    out = r.to_numpy().reshape(8, 2)
    np.testing.assert_array_equal(out[:, 0], np.fmod(x, y))
    np.testing.assert_array_equal(out[:, 1], np.fmod(x, y))
