"""`static const` arrays and structs (global and in structs), attributes that are accepted and
ignored ([ForceInline], ...) or implemented ([NoDiffThis]) or refused (E0008), a trailing comma
in a parameter list, and a groupshared initializer refused with a located error (groupshared
memory itself: test_groupshared.py)."""

from __future__ import annotations

import pytest
from slang_harness import Compiled
from slang_helpers import expect_error, run

TABLES = """
static const float W[3] = { 1.0, 2.0, 4.0 };
struct C { float a; float2 b; }
static const C K = { 0.5, float2(2.0, 3.0) };
struct S { static const int N[2] = { 3, 5 }; }
[Differentiable] [ForceInline] [__unsafeForceInlineEarly]
float f(float x, int j,)
{
    float s = 0.0;
    [ForceUnroll]
    for (int i = 0; i < 3; i++)
        s += W[i] * x * x;
    return s + W[j] * x + K.b.y * x * x + S.N[1] + S::N[j] * K.a;
}
"""


@pytest.mark.parametrize("j", [0, 1])
def test_static_const_arrays_and_structs(j):
    x = 0.5
    want = 7.0 * x * x + [1.0, 2.0][j] * x + 3.0 * x * x + 5 + [3, 5][j] * 0.5
    assert run(TABLES, "f", x, j)[0] == pytest.approx(want)
    Compiled(TABLES, "f").check_derivatives([x, j])


def test_no_diff_this_drops_the_derivative_of_this_only():
    src = """
struct A : IDifferentiable
{
    float x;
    [Differentiable] float both(float y) { return x * x + y * y; }
    [Differentiable] [NoDiffThis] float onlyY(float y) { return x * x + y * y; }
}
[Differentiable] float viaBoth(A obj, float y) { return obj.both(y); }
[Differentiable] float viaOnlyY(A obj, float y) { return obj.onlyY(y); }
float slopes(float x, float y)
{
    A a = { x };
    A.Differential da = { 1.0 };
    let p = diffPair(y, 1.0);
    return fwd_diff(viaBoth)(diffPair(a, da), p).d * 100.0 + fwd_diff(viaOnlyY)(diffPair(a, da), p).d;
}
"""
    x, y = 0.3, 0.7
    assert run(src, "slopes", x, y)[0] == pytest.approx((2 * x + 2 * y) * 100.0 + 2 * y)


def test_derivative_member_without_an_own_differential_type_is_a_located_error():
    expect_error("struct A : IDifferentiable {\n  [DerivativeMember(B.z)]\n  float x;\n}\n", "E0002", 2, 4,
                 "[DerivativeMember] on field 'x' of 'A' names a field of the struct's own Differential type")


def test_derivative_member_on_a_function_is_refused():
    expect_error("struct A : IDifferentiable {\n  float x;\n  [DerivativeMember(A.x)]\n  float f() { return x; }\n}\n",
                 "E0008", 3, 4, "[DerivativeMember] is not supported on a function")


def test_groupshared_with_an_initializer_is_refused_located():
    expect_error("groupshared float cache[4] = {1, 2, 3, 4};\n", "E0008", 1, 30,
                 "groupshared variable 'cache' has an initializer")


def test_slang_syntax_details_trailing_commas_unnamed_prototype_parameters_and_type_position_arrays():
    src = """
float g(float, float);
float g(float a, float b) { return a * b; }
float total(float x)
{
    float t[1][2] = { { x, 2.0 * x } };
    DifferentialPair<float[2][1]> p = diffPair(t);  // float[2][1] is an array of 1 of float[2]
    float[3] w = { 1.0, 2.0, 3.0, };
    return g(p.p[0][1], w[2],) + p.p[0][0];
}
"""
    assert run(src, "total", 1.5)[0] == pytest.approx(2 * 1.5 * 3.0 + 1.5)


def test_calling_a_function_that_is_never_defined_is_located():
    expect_error("float h(float x);\nfloat g(float x) { return h(x); }\n", "E0008", 2, 27,
                 "calling 'h', which is declared but never defined")


def test_a_void_call_may_initialize_a_name_that_cannot_be_used():
    src = ("[Differentiable] float f(float x) { return x * x; }\n"
           "float g(float x) { var p = diffPair(x); let r = bwd_diff(f)(p, 1.0); return p.d; }\n")
    assert run(src, "g", 3.0)[0] == pytest.approx(6.0)
    expect_error(src.replace("return p.d;", "return r + p.d;"), "E0003", 2, 77, "cannot combine void and float")


def test_differential_pair_constructor_builds_a_pair():
    src = """
typedef DifferentialPair<float3> dp3;
[Differentiable] float f(float3 v) { return v.x * v.y + v.z; }
float slope(float x)
{
    dp3 p = dp3(float3(x, 2.0, 3.0), float3(1.0, 0.0, 0.0));
    return fwd_diff(f)(p).d + 10.0 * DifferentialPair<float>(x, 0.5).d;
}
"""
    assert run(src, "slope", 0.25)[0] == pytest.approx(2.0 + 5.0)
    expect_error("float g() { return DifferentialPair<float>(1.0).p; }\n", "E0005", 1, 20,
                 "DifferentialPair<float> expects 2 arguments, got 1")
