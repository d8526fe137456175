"""Function and method overloading: resolution by argument types and count (exact match first,
then the cheapest implicit conversion), located errors for ambiguous and unmatched calls, and
derivatives through overloaded functions (fwd_diff/bwd_diff of an overloaded name, custom
derivatives that name overloaded functions)."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled
from slang_helpers import expect_error, front, funcs, run

SHAPES = """
[Differentiable] float f(float a) { return a * a + a; }
[Differentiable] float f(float3 a) { return a.x * a.y + sin(a.z); }
[Differentiable] float f(float a, float b) { return a * exp(b); }
"""


def test_overloads_are_chosen_by_argument_types_and_count():
    src = SHAPES + """
float pick(float x)
{
    return f(x) + 10.0 * f(float3(x, 2.0 * x, 3.0 * x)) + 100.0 * f(x, 0.5);
}
"""
    x = 0.7
    want = (x * x + x) + 10.0 * (x * 2 * x + np.sin(3 * x)) + 100.0 * x * np.exp(0.5)
    assert run(src, "pick", x)[0] == pytest.approx(want)
    # three functions in the IR, one per overload
    assert sum(1 for n in funcs(front(src)) if n == "f" or n.startswith("f__")) == 3


def test_derivatives_through_calls_of_overloads():
    src = SHAPES + """
[Differentiable]
float g(float x, float3 v)
{
    return f(x) * f(v) + f(v.y, x);
}
"""
    Compiled(src, "g").check_derivatives([0.4, np.array([0.3, -1.2, 0.8])])


def test_fwd_diff_and_bwd_diff_of_an_overloaded_name_pick_by_the_pair_types():
    src = SHAPES + """
float scalarSlope(float x)
{
    return fwd_diff(f)(diffPair(x, 1.0)).d;
}
float vectorSlope(float x)
{
    return fwd_diff(f)(diffPair(float3(x, 1.0, x), float3(1.0, 0.0, 1.0))).d;
}
float vectorGradZ(float x)
{
    var p = diffPair(float3(x, 1.0, x), float3(0.0));
    bwd_diff(f)(p, 1.0);
    return p.d.z;
}
float twoArgGradB(float x)
{
    var a = diffPair(x);
    var b = diffPair(0.5 * x);
    bwd_diff(f)(a, b, 1.0);
    return b.d;
}
"""
    x, h = 0.9, 1e-6

    def f3(a):
        return a[0] * a[1] + np.sin(a[2])

    scalar = ((x + h) ** 2 + (x + h) - (x - h) ** 2 - (x - h)) / (2 * h)
    vec = (f3([x + h, 1.0, x + h]) - f3([x - h, 1.0, x - h])) / (2 * h)
    grad_z = (f3([x, 1.0, x + h]) - f3([x, 1.0, x - h])) / (2 * h)
    b = 0.5 * x
    grad_b = (x * np.exp(b + h) - x * np.exp(b - h)) / (2 * h)
    assert run(src, "scalarSlope", x)[0] == pytest.approx(scalar, rel=1e-6)
    assert run(src, "vectorSlope", x)[0] == pytest.approx(vec, rel=1e-6)
    assert run(src, "vectorGradZ", x)[0] == pytest.approx(grad_z, rel=1e-6)
    assert run(src, "twoArgGradB", x)[0] == pytest.approx(grad_b, rel=1e-6)


def test_exact_match_beats_conversions_and_widening_beats_narrowing():
    src = """
float k(float a) { return 1.0; }
float k(int a) { return 2.0; }
float k(double a) { return 3.0; }
float m(float3 a) { return 10.0; }
float m(float a) { return 20.0; }
float which(float x, half h, int i, uint u)
{
    // x: float exact; i: int exact; h: half -> float (widening, nearer than double);
    // u: uint -> int (same family) before the floats; a scalar goes to m(float), not a splat
    return k(x) + 10.0 * k(i) + 100.0 * k(h) + 1000.0 * k(u) + m(x) + m(float3(x));
}
"""
    assert run(src, "which", 0.5, 0.25, 3, 4)[0] == pytest.approx(1 + 20 + 100 + 2000 + 20 + 10)


def test_custom_derivatives_naming_overloaded_functions():
    # Each overload of `sq` names `dsq`; the attribute picks the dsq whose pair types fit.
    src = """
[ForwardDerivative(dsq)]
float sq(float v) { return v * v; }
DifferentialPair<float> dsq(DifferentialPair<float> v) { return diffPair(v.p * v.p, 2.0 * v.d * v.p); }

[ForwardDerivative(dsq)]
float2 sq(float2 v) { return v * v; }
DifferentialPair<float2> dsq(DifferentialPair<float2> v) { return diffPair(v.p * v.p, 2.0 * v.d * v.p); }

void bsq(inout DifferentialPair<float> v, float dOut) { v = diffPair(v.p, 2.0 * v.p * dOut); }
void bsq(inout DifferentialPair<float2> v, float2 dOut) { v = diffPair(v.p, 2.0 * v.p * dOut); }
[BackwardDerivative(bsq)] float cube(float v) { return v * v * v; }
float3 unrelated(float3 v) { return v; }

[ForwardDifferentiable]
float test(float v)
{
    return sq(v) + sq(float2(v, 3.0 * v)).y;
}
float slope(float v) { return fwd_diff(test)(diffPair(v, 1.0)).d; }
float cubeGrad(float v)
{
    var p = diffPair(v);
    bwd_diff(cube)(p, 1.0);
    return p.d;
}
"""
    v = 0.8
    assert run(src, "slope", v)[0] == pytest.approx(2 * v + 18 * v, rel=1e-9)
    # the custom backward derivative is (deliberately) 2v, not d(v^3)/dv: it must be the one used
    assert run(src, "cubeGrad", v)[0] == pytest.approx(2 * v)


def test_derivative_of_overload_named_by_BackwardDerivativeOf():
    src = """
[Differentiable] float h(float x) { return x * x; }
[Differentiable] float h(float2 x) { return x.x * x.y; }
[BackwardDerivativeOf(h)]
void h_bwd(inout DifferentialPair<float2> x, float dOut) { x = diffPair(x.p, float2(x.p.y, x.p.x) * dOut); }
[Differentiable]
float use(float a, float b) { return h(a) + h(float2(a, b)); }
"""
    Compiled(src, "use").check_derivatives([0.6, -1.3])


def test_method_overloads_and_sibling_calls():
    src = """
struct Lens : IDifferentiable
{
    float k;
    [Differentiable] float bend(float x) { return k * x * x; }
    [Differentiable] float bend(float x, float y) { return bend(x) + k * y; }
    [Differentiable] float bend(float2 p) { return bend(p.x, p.y); }
}
[Differentiable]
float g(float k, float x, float y)
{
    Lens l = { k };
    return l.bend(x) + l.bend(x, y) + l.bend(float2(y, x));
}
"""
    k, x, y = 1.5, 0.3, -0.7
    assert run(src, "g", k, x, y)[0] == pytest.approx(k * x * x + (k * x * x + k * y) + (k * y * y + k * x))
    Compiled(src, "g").check_derivatives([k, x, y])


def test_a_declaration_then_definitions_of_two_overloads():
    src = """
float q(float x);
float q(float2 x);
float use(float x) { return q(x) + q(float2(x, 1.0)); }
float q(float x) { return 2.0 * x; }
float q(float2 x) { return x.x + x.y; }
"""
    assert run(src, "use", 3.0)[0] == pytest.approx(6.0 + 4.0)


def test_ambiguous_call_is_a_located_error():
    expect_error("float f(float a, int b) { return a; }\nfloat f(int a, float b) { return b; }\n"
                 "float g() { return f(1, 2); }\n", "E0003", 3, 20, "ambiguous call of 'f' with (int, int)")


def test_no_matching_overload_is_a_located_error():
    expect_error("float f(float2 a) { return a.x; }\nfloat f(float3 a) { return a.x; }\n"
                 "float g(float4 v) { return f(v); }\n", "E0003", 3, 28, "no overload of 'f' takes (float4)")


def test_same_parameter_types_twice_is_a_redefinition():
    expect_error("float f(float a) { return a; }\nfloat f(float b) { return 2.0 * b; }\n",
                 "E0009", 2, 7, "function 'f' is defined twice with the same parameter types")


def test_an_overloaded_name_outside_a_call_is_refused():
    expect_error("[Differentiable] float f(float a) { return a; }\n[Differentiable] float f(float2 a) { return a.x; }\n"
                 "void g() { let d = fwd_diff(f); }\n", "E0008", 3, 29, "'f' is overloaded")
