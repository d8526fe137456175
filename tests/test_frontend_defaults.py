"""Default parameter values: calls that omit trailing defaulted arguments, also through fwd_diff
and bwd_diff (derivatives against float64 central differences, forward against reverse), and
located errors for misplaced defaults."""

from __future__ import annotations

import pytest

from slang_helpers import central_difference, expect_error, lowered, run

SRC = """
[Differentiable]
float f(float x, float s = 2.0, float t = 0.5)
{
    return s * sin(x) * x + t * x * x;
}

float all_defaults(float x) { return f(x); }
float one_default(float x, float s) { return f(x, s); }
float none_default(float x, float s, float t) { return f(x, s, t); }

float fwd_default(float x, float dx) { return fwd_diff(f)(diffPair(x, dx)).d; }
float fwd_one_default(float x, float dx, float s, float ds) { return fwd_diff(f)(diffPair(x, dx), diffPair(s, ds)).d; }

float bwd_default(float x, float dout)
{
    var dx = diffPair(x);
    bwd_diff(f)(dx, dout);         // s and t take their defaults; dOut still comes last
    return dx.d;
}

float2 bwd_one_default(float x, float s)
{
    var dx = diffPair(x);
    var ds = diffPair(s);
    bwd_diff(f)(dx, ds, 1.0);
    return float2(dx.d, ds.d);
}

struct Scaler
{
    float k;
    float apply(float x, float bias = 1.0) { return k * x + bias; }
};

float method_default(float x) { Scaler sc = { 3.0 }; return sc.apply(x) + 10.0 * sc.apply(x, 0.0); }

static const float BASE = 4.0;
float from_const(float x, float y = BASE * 2.0) { return x + y; }
float const_default(float x) { return from_const(x); }
"""


def f(x, s=2.0, t=0.5):
    import math

    return s * math.sin(x) * x + t * x * x


@pytest.fixture(scope="module")
def m():
    return lowered(SRC)


@pytest.mark.parametrize("x", [0.3, -1.7])
def test_omitted_arguments_take_the_defaults(m, x):
    assert run(m, "all_defaults", x)[0] == pytest.approx(f(x))
    assert run(m, "one_default", x, -0.75)[0] == pytest.approx(f(x, -0.75))
    assert run(m, "none_default", x, 1.5, 3.0)[0] == pytest.approx(f(x, 1.5, 3.0))


def test_defaults_of_methods_and_from_constants(m):
    assert run(m, "method_default", 2.0)[0] == pytest.approx(7.0 + 10.0 * 6.0)
    assert run(m, "const_default", 1.25)[0] == pytest.approx(9.25)


@pytest.mark.parametrize("x", [0.3, -1.7, 2.2])
def test_fwd_and_bwd_diff_with_defaults_omitted_match_central_differences(m, x):
    fd = central_difference(lambda v: f(v), [x], 0)
    assert run(m, "fwd_default", x, 1.0)[0] == pytest.approx(fd, rel=1e-6)
    assert run(m, "bwd_default", x, 1.0)[0] == pytest.approx(fd, rel=1e-6)
    # forward against reverse: <u, J v> = <J^T u, v> with u = 0.7, v = -1.3
    assert run(m, "fwd_default", x, -1.3)[0] * 0.7 == pytest.approx(run(m, "bwd_default", x, 0.7)[0] * -1.3, rel=1e-9)


@pytest.mark.parametrize("x,s", [(0.3, 1.5), (-1.1, -0.4)])
def test_bwd_diff_with_one_of_two_defaults_omitted(m, x, s):
    gx, gs = run(m, "bwd_one_default", x, s)[0]
    assert gx == pytest.approx(central_difference(lambda a, b: f(a, b), [x, s], 0), rel=1e-6)
    assert gs == pytest.approx(central_difference(lambda a, b: f(a, b), [x, s], 1), rel=1e-6)
    jv = run(m, "fwd_one_default", x, 0.2, s, -0.9)[0]
    assert jv == pytest.approx(gx * 0.2 + gs * -0.9, rel=1e-9)


def test_too_few_arguments_for_the_defaults_is_located():
    src = "float f(float x, float s = 2.0) { return x * s; }\nfloat g() { return f(); }\n"
    expect_error(src, "E0005", 2, 20, "expects 2 arguments, got 0")


def test_a_parameter_after_a_defaulted_one_needs_a_default():
    src = "float f(float x, float s = 2.0,\n        float t) { return x * s * t; }\n"
    expect_error(src, "E0001", 2, 9, "parameter 't' follows a parameter with a default value")


def test_a_default_of_the_wrong_type_is_located():
    src = "struct P { float a; };\nfloat f(float x, P p = 2.0) { return x; }\n"
    expect_error(src, "E0003", 2, 24, "expected a value of type P, got float")


def test_an_out_parameter_cannot_have_a_default():
    src = "void f(float x, out float y = 1.0) { y = x; }\n"
    expect_error(src, "E0008", 1, 31, "out parameter 'y' cannot have a default value")
