"""Lambdas (frontend/features/lambdas.py): expression and block bodies, captures by value (a
variable changed after the lambda is declared keeps its old value inside it), and derivatives
through a lambda's call against float64 central differences, forward and reverse."""

from __future__ import annotations

import math

import pytest
from slang_helpers import central_difference, expect_error, run

SRC = """
static const int N = 3;
float grid(float s)
{
    float m[9];
    for (int i = 0; i < 9; i++) m[i] = float(i) * s;
    let at = (int r, int c) => m[r * N + c];
    m[0] = 100.0;  // after the lambda: its copy keeps the old value
    let tri = (float x) => { float y = x * 2.0; if (y > 5.0) return y - 1.0; return y + s; };
    return at(1, 2) + at(0, 0) + tri(at(2, 2)) + tri(1.0);
}

[Differentiable]
float h(float x, float w)
{
    float k = x * w;
    let f = (float y) => sin(y) * k + x;
    let g = (float y, float z) => { float t = y * z; return t * t + w; };
    k = 0.0;  // (not seen by f)
    return f(x) + g(f(2.0 * w), x);
}
float dh_fwd(float x, float w, float dx, float dw) { return fwd_diff(h)(diffPair(x, dx), diffPair(w, dw)).d; }
float dh_dx(float x, float w) { var a = diffPair(x); var b = diffPair(w); bwd_diff(h)(a, b, 1.0); return a.d; }
float dh_dw(float x, float w) { var a = diffPair(x); var b = diffPair(w); bwd_diff(h)(a, b, 1.0); return b.d; }
"""


def h(x, w):
    k = x * w
    f = lambda y: math.sin(y) * k + x
    return f(x) + (f(2.0 * w) * x) ** 2 + w


def test_bodies_and_captures_by_value():
    s = 0.5
    tri = lambda x: 2 * x - 1 if 2 * x > 5 else 2 * x + s
    assert run(SRC, "grid", s)[0] == pytest.approx(5 * s + 0.0 + tri(8 * s) + tri(1.0))


@pytest.mark.parametrize("x,w", [(0.7, -0.4), (-1.1, 0.9)])
def test_derivatives_through_lambda_calls(x, w):
    assert run(SRC, "h", x, w)[0] == pytest.approx(h(x, w), rel=1e-12)
    gx = central_difference(h, [x, w], 0)
    gw = central_difference(h, [x, w], 1)
    assert run(SRC, "dh_dx", x, w)[0] == pytest.approx(gx, rel=1e-6)
    assert run(SRC, "dh_dw", x, w)[0] == pytest.approx(gw, rel=1e-6)
    assert run(SRC, "dh_fwd", x, w, 1.0, 0.0)[0] == pytest.approx(gx, rel=1e-6)
    assert run(SRC, "dh_fwd", x, w, 0.0, 1.0)[0] == pytest.approx(gw, rel=1e-6)


def test_a_lambda_passed_along_is_located():
    expect_error("float g(float x) { return x; }\nfloat f() { return g((float y) => y); }", "E0008", 2, 22, "lambda")


def test_a_lambda_reading_a_field_is_located():
    expect_error("struct S { float a; float f(float x) { let g = (float y) => y * a; return g(x); } };",
                 "E0008", 1, 65, "field 'a'")


def test_a_call_with_the_wrong_count_is_located():
    expect_error("float f(float x) { let g = (float y) => y; return g(x, x); }", "E0005", 1, 51, "takes 1")
