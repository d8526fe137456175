"""Struct constructors (`__init`), properties (get/set), enums (plain and `enum class`) and
`typedef` inside structs: values, derivatives against finite differences, and located errors."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled
from slang_helpers import expect_error, run

CTORS = """
struct Seg : IDifferentiable
{
    float a;
    float b;
    [Differentiable] __init(float x) { a = x; b = 2.0 * x; }
    [Differentiable] __init(float x, float y)
    {
        this.a = x * y;
        if (y > 0.0) { b = y; return; }
        b = -sin(y);
    }
    [Differentiable] float len() { return a + b * b; }
}
[Differentiable]
float f(float x, float y)
{
    Seg s = Seg(x);
    let t = Seg(x, y);
    return s.len() * t.len();
}
"""


def _f(x, y):
    s = x + (2 * x) ** 2
    tb = y if y > 0 else -np.sin(y)
    return s * (x * y + tb * tb)


@pytest.mark.parametrize("x, y", [(0.5, 1.5), (0.5, -1.5)])
def test_init_overloads_values_and_derivatives(x, y):
    assert run(CTORS, "f", x, y)[0] == pytest.approx(_f(x, y))
    Compiled(CTORS, "f").check_derivatives([x, y])


def test_struct_without_init_keeps_fieldwise_construction_and_a_non_differentiable_one_drops_derivatives():
    src = """
struct Plain { float v; int k; }
struct Box { float t; __init(float x) { t = x * x; } }
[Differentiable]
float g(float x)
{
    Plain p = Plain(x, 2);
    Box b = Box(x);  // Box is not differentiable: its value carries no derivative (as in Slang)
    return p.v * p.k + b.t;
}
float slope(float x) { return fwd_diff(g)(diffPair(x, 1.0)).d; }
"""
    assert run(src, "g", 3.0)[0] == pytest.approx(3.0 * 2 + 9.0)
    assert run(src, "slope", 3.0)[0] == pytest.approx(2.0)


def test_init_argument_mismatch_is_located():
    expect_error("struct S { float v; __init(float x) { v = x; } }\nfloat g() { S s = S(1.0, 2.0); return s.v; }\n",
                 "E0005", 2, 19, "'S' expects 1 argument, got 2")


PROPS = """
enum Mode { Square, Cube = 3, Lin };
enum class Dir : uint { Up = 1 << 2, Down };
struct H : IDifferentiable
{
    float v;
    float w;
    typedef float Real;
    property float Value
    {
        [Differentiable] get { return v * w; }
        [Differentiable] set { v = newValue; }
    }
    property Twice : float { [Differentiable] get { return 2.0 * Value; } }
    property Scaled : float { [Differentiable] set(float s) { w = s * 3.0; } }
    [Differentiable] [mutating] void bump(float d) { Value += d; }
    [Differentiable] Real half() { return v * 0.5; }
}
[Differentiable]
float f(float x, float y, int m)
{
    H h = { x, y };
    float r = h.Value + h.Twice;
    h.Value = r * x;
    h.bump(1.0);
    switch (m)
    {
    case Mode.Cube: r = r * h.v; break;
    case Lin: r = r + h.v; break;
    case Mode::Square: r = r * r; break;
    }
    if (Dir.Down == 5u) r = r + 1.0;
    h.Scaled = r;
    return r + h.half() + h.w;
}
"""


def _props(x, y, m):
    v, w = x, y
    r = v * w + 2 * v * w
    v = r * x
    v = v * w + 1.0
    r = r * v if m == 3 else r + v if m == 4 else r * r
    r = r + 1.0
    w = 3.0 * r
    return r + 0.5 * v + w


@pytest.mark.parametrize("m", [0, 3, 4])
def test_properties_enums_and_struct_typedef(m):
    assert run(PROPS, "f", 0.5, 1.5, m)[0] == pytest.approx(_props(0.5, 1.5, m))
    Compiled(PROPS, "f").check_derivatives([0.5, 1.5, m])


def test_enum_case_errors_are_located():
    expect_error("enum class E { A, B }\nint g() { return E.C; }\n", "E0004", 2, 20, "enum E has no case 'C'")
    expect_error("enum class E { A, B }\nint g() { return A; }\n", "E0002", 2, 18, "undefined name 'A'")
    expect_error("enum E : float { A }\n", "E0003", 1, 10, "an enum's type must be an integer type")


def test_property_without_a_setter_cannot_be_assigned_and_bodyless_accessors_are_refused():
    expect_error("struct S { float v; property float P { get { return v; } } }\n"
                 "void g() { S s = { 1.0 }; s.P = 2.0; }\n", "E0004", 2, 29, "no method '__set_P'")
    expect_error("struct S { float v; property float P { get; } }\n", "E0008", 1, 40,
                 "a property accessor without a body")


def test_an_own_differential_type_that_does_not_hold_the_derivative_members_is_refused():
    # no field is marked [DerivativeMember], so x's derivative goes to B's field named x: B has none
    expect_error("struct B : IDifferentiable { float z; }\n"
                 "struct A : IDifferentiable {\n  typedef B Differential;\n  float x;\n}\n",
                 "E0003", 4, 3, "differentiable field 'x' of 'A' has no field in its Differential B to hold its "
                 "derivative (none is named 'x')")


def test_a_method_writes_through_a_buffer_field_without_being_mutating():
    # the buffer is a handle: writing its elements does not change `this`
    from slang_helpers import front

    front("struct G { RWStructuredBuffer<float> out; void put(int i, float v) { out[i] = v; } }\n"
          "RWStructuredBuffer<float> buf;\nvoid g() { G s = { buf }; s.put(0, 1.0); }\n")
    expect_error("struct G { float v; void put(float x) { v = x; } }\n", "E0003", 1, 41, "cannot assign to 'this'")


def test_an_initializer_list_of_a_struct_with_constructors_calls_one():
    src = CTORS + """
[Differentiable]
float h(float x, float y)
{
    Seg s = { x };        // __init(float): b = 2x, not the field-wise { a = x, b = 0 }
    Seg t = { x, y };
    return s.b + t.a;
}
struct Box { float t; __init(float x) { t = x; } }
[Differentiable]
float boxed(float y)
{
    Box d = { y };  // Box is not differentiable: no derivative through it (Slang gives 0 too)
    return d.t + y * y;
}
float boxSlope(float y) { return fwd_diff(boxed)(diffPair(y, 1.0)).d; }
"""
    assert run(src, "h", 0.5, 1.5)[0] == pytest.approx(2 * 0.5 + 0.75)
    Compiled(src, "h").check_derivatives([0.5, 1.5])
    assert run(src, "boxSlope", 3.0)[0] == pytest.approx(6.0)


def test_differential_names_the_structs_own_differential_inside_it():
    src = """
struct V : IDifferentiable
{
    float x;
    no_diff float k;
    static Differential unit() { Differential d = { 1.0 }; return d; }
}
float slope(float x)
{
    V v = { x, 3.0 };
    return fwd_diff(sq)(diffPair(v, V.unit())).d;
}
[Differentiable] float sq(V v) { return v.x * v.x * v.k; }
"""
    assert run(src, "slope", 0.5)[0] == pytest.approx(2 * 0.5 * 3.0)


def test_constructor_of_a_generic_struct():
    src = """
struct V<int N> : IDifferentiable
{
    float v[N];
    [Differentiable] __init(float x) { for (int i = 0; i < N; i++) v[i] = x * (i + 1); }
    [Differentiable] float sum() { float s = 0.0; for (int i = 0; i < N; i++) s += v[i]; return s; }
}
[Differentiable] float f(float x) { V<3> a = V<3>(x); V<2> b = { x }; return a.sum() * x + b.sum(); }
"""
    assert run(src, "f", 2.0)[0] == pytest.approx(6 * 2.0 * 2.0 + 3 * 2.0)
    Compiled(src, "f").check_derivatives([0.7])


def test_enum_case_values_are_constant_integer_expressions():
    # A = 8, B = 8 | 2 = 10, C = ~10 & 255 = 245, D = 245 / 2 - 8 = 114, E = D + 1
    src = """
enum Bits { A = 1 << 3, B = A | 2, C = ~B & 255, D = C / 2 - A, E };
float g(float x) { return x + float(Bits.E) * 1000.0 + float(Bits.D); }
"""
    assert run(src, "g", 1.0)[0] == pytest.approx(1.0 + 115 * 1000.0 + 114)
    expect_error("static int k = 2;\nenum Bad { X = 1, Y = X + k };\n", "E0008", 2, 23,
                 "an enum case value other than a constant integer expression is not supported")
