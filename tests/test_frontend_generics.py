"""Generic structs and functions with int value parameters: monomorphized instances, explicit,
partly explicit and inferred arguments, parameters as compile-time constants."""

from __future__ import annotations

import pytest

from slang_helpers import central_difference, expect_error, front, funcs, lowered, run

VEC = """
struct Vec<int N>
{
    float data[N];
    float sum()
    {
        float s = 0.0;
        for (int i = 0; i < N; i++)
            s += data[i];
        return s;
    }
}
"""


def test_generic_struct_instances_are_separate_structs():
    m = front(VEC + """
float f(float a)
{
    Vec<3> v3 = { { a, 2.0, 3.0 } };
    Vec<2> v2 = { { a, 10.0 } };
    return v3.sum() + v2.sum();
}
""")
    names = set(funcs(m))
    assert {"Vec_3_sum", "Vec_2_sum", "f"} <= names
    assert len(funcs(m)["Vec_3_sum"].function_type.inputs) == 3
    assert len(funcs(m)["Vec_2_sum"].function_type.inputs) == 2
    assert run(lowered(VEC + """
float f(float a)
{
    Vec<3> v3 = { { a, 2.0, 3.0 } };
    Vec<2> v2 = { { a, 10.0 } };
    return v3.sum() + v2.sum();
}
"""), "f", 1.5) == pytest.approx((1.5 + 5.0 + 1.5 + 10.0,))


GEN_FUNCS = """
float dotN<int N>(float[N] a, float[N] b)
{
    float s = 0.0;
    for (int i = 0; i < N; i++)
        s += a[i] * b[i];
    return s;
}

float[M] firstOf<int M, int N>(float[N] a)
{
    float r[M];
    for (int i = 0; i < M; i++)
        r[i] = a[i];
    return r;
}
"""


def test_generic_function_inferred_explicit_and_partial():
    src = GEN_FUNCS + """
float f(float x)
{
    float a[3] = { x, 2.0, 3.0 };
    float b[3] = { 4.0, 5.0, 6.0 };
    let inferred = dotN(a, b);
    let explicit = dotN<3>(a, b);
    let two = firstOf<2>(a);       // M given, N inferred from a
    let both = firstOf<1, 3>(a);
    return inferred + 10.0 * explicit + 100.0 * (two[0] + two[1]) + 1000.0 * both[0];
}
"""
    m = front(src)
    assert {"dotN_3", "firstOf_2_3", "firstOf_1_3"} <= set(funcs(m))
    x = 0.5
    d = 4 * x + 10 + 18
    assert run(src, "f", x) == pytest.approx((d + 10 * d + 100 * (x + 2) + 1000 * x,))


def test_generic_parameter_is_a_constant_loop_bound_for_reverse_mode():
    # The loop bound N is a constant after instantiation, so bwd_diff needs no [MaxIters].
    src = """
[Differentiable]
float powN<int N>(float x)
{
    float r = 1.0;
    for (int i = 0; i < N; i++)
        r *= x;
    return r;
}

[Differentiable]
float f(float x) { return powN<3>(x) + powN<2>(x); }

float grad(float x)
{
    var p = diffPair(x);
    bwd_diff(f)(p, 1.0);
    return p.d;
}
"""
    m = lowered(src)
    (f_val,) = run(m, "f", 1.3)
    assert f_val == pytest.approx(1.3**3 + 1.3**2)
    fd = central_difference(lambda x: run(m, "f", x)[0], [1.3], 0)
    assert run(m, "grad", 1.3)[0] == pytest.approx(fd, rel=1e-6)


def test_comparison_is_not_taken_for_generic_arguments():
    src = """
int f(int a, int b, int c)
{
    bool x = a < b;
    bool y = b > (c);
    return (x ? 1 : 0) + (y ? 2 : 0);
}
"""
    assert run(src, "f", 1, 5, 3) == (3,)


def test_cannot_infer_generic_parameter():
    expect_error(GEN_FUNCS + """
float g(float x)
{
    float a[3] = { x, 2.0, 3.0 };
    let r = firstOf(a);
    return r[0];
}
""", "E0003", 21, 13, "cannot infer generic parameter 'M'")


def test_non_int_generic_value_parameters_are_unsupported():
    expect_error("struct Box<let X : float> { float x; }\n", "E0008", 1, 20, "generic value parameters of type 'float'")


def test_wrong_number_of_generic_arguments():
    expect_error(VEC + "float g(Vec<2, 3> v) { return 0.0; }\n", "E0005", 13, 9, "takes 1 generic arguments, got 2")


ENUM_GENERIC = """
enum Mode { Square, Same, Triple };
enum class Shape : uint { Sine = 4, Cube = 7 };

[BackwardDerivative(applyBwd)]
float apply<let M : Mode>(float x) {
    switch (M) {
    case Mode.Square: return x * x;
    case Mode.Same: return x;
    default: return 3.0 * x;
    }
}

void applyBwd<let M : Mode>(inout DifferentialPair<float> x, float d) {
    float g = M == Mode.Square ? 2.0 * x.p : M == Mode.Same ? 1.0 : 3.0;
    updateDiff(x, g * d);
}

[Differentiable]
float shaped<let S : Shape>(float x) {
    if (S == Shape::Sine) return sin(x);
    return x * x * x;
}

[Differentiable]
float all(float x) {
    return apply<Mode.Square>(x) + 2.0 * apply<Mode::Triple>(x) + apply<Same>(x * x)
        + shaped<Shape.Sine>(x) + shaped<Shape::Cube>(x);
}
"""


def test_enum_valued_generic_parameters_take_cases():
    """`<let M : Mode>` is an int parameter of the enum's type: `f<Mode.A>`, `f<Mode::A>` and a plain
    enum's bare case pick instances, and custom derivatives follow them."""
    import math

    from slang_harness import Compiled

    c = Compiled(ENUM_GENERIC, "all")
    x = 0.8
    assert c.primal([x])[0] == pytest.approx(x * x + 6 * x + x * x + math.sin(x) + x ** 3)
    c.check_derivatives([x])


def test_a_generic_value_parameter_of_another_type_is_refused():
    expect_error("struct S { int a; };\nfloat f<let M : S>(float x) { return x; }", "E0008", 2, 17,
                 "generic value parameters of type 'S'")
