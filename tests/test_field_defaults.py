"""Default values of struct fields (frontend/features/field_defaults.py): `S s;`, `S s = {}`, a
partial list and a constructor's `this` start from them; derivatives go through a default that
depends on nothing (a constant) and through the given fields, checked against float64 central
differences in both modes."""

from __future__ import annotations

import pytest
from slang_helpers import central_difference, expect_error, run

SRC = """
struct S { float a = 1.5; float3 c = float3(1.0, 2.0, 3.0); int n; float b = 4.0; };
struct Scaled { float w = 2.0; float v; __init(float x) { v = x * w; } };
struct Sized<let N : int> { float k = float(N) * 0.5; };
struct Outer { S inner; float t = -1.0; };

float plain() { S s; return s.a + s.c.z + float(s.n) + s.b; }
float empty() { S s = {}; return s.a * 10.0 + s.b; }
float partial(float x) { S s = {x}; return s.a + s.c.y + s.b; }
float partial2(float x) { S s = {x, float3(x, x, x)}; return s.a + s.c.y + s.b; }
float ctor(float x) { Scaled s = Scaled(x); return s.v + s.w; }
float generic() { Sized<5> s; return s.k; }
float nested() { Outer o; return o.inner.b + o.t; }

[Differentiable] float f(float x) { S s = {x * x}; s.b = s.b * x; return s.a * s.c.z + s.b; }
float fwd(float x) { return fwd_diff(f)(diffPair(x, 1.0)).d; }
float bwd(float x) { var p = diffPair(x); bwd_diff(f)(p, 1.0); return p.d; }
"""


def test_defaults_where_no_value_is_given():
    assert run(SRC, "plain")[0] == pytest.approx(1.5 + 3.0 + 0.0 + 4.0)
    assert run(SRC, "empty")[0] == pytest.approx(15.0 + 4.0)
    assert run(SRC, "partial", 0.25)[0] == pytest.approx(0.25 + 2.0 + 4.0)
    assert run(SRC, "partial2", 0.25)[0] == pytest.approx(0.25 + 0.25 + 4.0)
    assert run(SRC, "ctor", 3.0)[0] == pytest.approx(3.0 * 2.0 + 2.0)  # the body sees w = 2
    assert run(SRC, "generic")[0] == pytest.approx(2.5)
    assert run(SRC, "nested")[0] == pytest.approx(4.0 - 1.0)


@pytest.mark.parametrize("x", [0.7, -1.3])
def test_derivatives_through_defaulted_structs(x):
    def value(v):
        return v * v * 3.0 + 4.0 * v

    want = central_difference(value, [x], 0)
    assert run(SRC, "f", x)[0] == pytest.approx(value(x), rel=1e-9)
    assert run(SRC, "fwd", x)[0] == pytest.approx(want, rel=1e-6)
    assert run(SRC, "bwd", x)[0] == pytest.approx(want, rel=1e-6)


def test_a_default_of_the_wrong_type_is_located():
    expect_error("struct P { float q; };\nstruct S { float a = P(1.0); };\nfloat g() { S s; return s.a; }", "E0003",
                 2, 22, "float")
