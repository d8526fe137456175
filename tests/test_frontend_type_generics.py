"""Type generics, monomorphized like int generics: `<T>`, `<T : I>`, `__generic<...>`, `where`
clauses, explicit and inferred type arguments, generic structs and methods, `T.Differential`,
`T.dzero()`, `T.dadd()`, `T(1.0)`, and derivatives of generic functions in both modes."""

from __future__ import annotations

import numpy as np
import pytest

from slang_harness import Compiled
from slang_helpers import central_difference, expect_error, funcs, front, run


def test_builtin_float_generic_instances_and_arithmetic():
    src = """
[Differentiable]
T poly<T : __BuiltinFloatingPointType>(T x) { return x * x * T(3.0) + T(1.0); }
[Differentiable] float f(float x) { return poly(x) + poly<float>(x * 2.0); }
[Differentiable] float3 g(float3 v) { return poly(v); }
"""
    names = set(funcs(front(src)))
    assert {"poly_float", "poly_float3", "f", "g"} <= names
    c = Compiled(src, "f")
    x = 0.45
    assert c.primal([x])[0] == pytest.approx(3 * x * x + 1 + 3 * 4 * x * x + 1)
    c.check_derivatives([x])
    g = Compiled(src, "g")
    v = np.array([0.1, -0.7, 1.2])
    np.testing.assert_allclose(g.primal([v])[0], 3 * v * v + 1, rtol=1e-6)
    g.check_derivatives([v])


def test_prefix_form_where_clause_and_ifloat():
    src = """
__generic<T>
[Differentiable]
T mix(T a, T b, T t) where T : IFloat { return a + (b - a) * t; }
[Differentiable]
T cube<T>(T x) where T : IDifferentiable, T : IFloat { return x * x * x; }
[Differentiable] float f(float a, float b, float t) { return mix(a, b, t) + cube(t); }
"""
    c = Compiled(src, "f")
    a, b, t = 0.2, 1.4, 0.35
    assert c.primal([a, b, t])[0] == pytest.approx(a + (b - a) * t + t ** 3)
    c.check_derivatives([a, b, t])


def test_fwd_diff_and_bwd_diff_of_a_generic_function():
    """`fwd_diff(f<float>)` names the instance explicitly; `bwd_diff(f)` infers it from the
    DifferentialPair arguments."""
    src = """
[Differentiable]
T g<T : IFloat>(T x, T y) { return sin(x) * y + x * x; }
float dfdx(float x, float y) { return fwd_diff(g<float>)(diffPair(x, 1.0), diffPair(y, 0.0)).d; }
float dfdy_rev(float x, float y)
{
    var px = diffPair(x);
    var py = diffPair(y);
    bwd_diff(g)(px, py, 1.0);
    return py.d;
}
float3 grad3(float3 x, float3 y)
{
    DifferentialPair<float3> px = diffPair(x);
    DifferentialPair<float3> py = diffPair(y);
    bwd_diff(g)(px, py, float3(1.0));
    return px.d;
}
"""
    g = lambda x, y: np.sin(x) * y + x * x  # noqa: E731
    (d,) = run(src, "dfdx", 0.8, 1.7)
    assert d == pytest.approx(central_difference(g, [0.8, 1.7], 0), rel=1e-5)
    (d,) = run(src, "dfdy_rev", 0.8, 1.7)
    assert d == pytest.approx(central_difference(g, [0.8, 1.7], 1), rel=1e-5)
    assert "g_float3" in funcs(front(src))


def test_generic_struct_over_a_type_with_methods():
    src = """
struct Pair2<T : IDifferentiable> : IDifferentiable
{
    T a; T b;
    [Differentiable] T sum() { return a + b; }
}
[Differentiable]
float f(float x, float y)
{
    Pair2<float> p = { x, y };
    Pair2<float2> q = { float2(x, y), float2(y, x) };
    float2 s = q.sum();
    return p.sum() * s.x + s.y * x;
}
"""
    c = Compiled(src, "f")
    x, y = 0.3, 1.1
    assert c.primal([x, y])[0] == pytest.approx((x + y) * (x + y) + (y + x) * x)
    c.check_derivatives([x, y])


def test_generic_struct_inferred_from_an_argument():
    src = """
struct Box<T> { T v; }
T unbox<T>(Box<T> b) { return b.v; }
float f(float x) { Box<float> b = { x }; Box<int> i = { 3 }; return unbox(b) + float(unbox(i)); }
"""
    assert run(src, "f", 1.5) == pytest.approx((4.5,))


def test_generic_method():
    src = """
struct Acc
{
    float k;
    [Differentiable] T scaled<T : IFloat>(T x) { return x * T(k); }
    static T twice<T : IFloat>(T x) { return x + x; }
    float both(float x) { return twice(x) + scaled<float>(x); }  // generic siblings, called bare
}
[Differentiable] float f(Acc a, float x) { return a.scaled(x) + a.scaled<float>(x * x); }
float g(float x) { return Acc::twice<float>(x) + Acc.twice(x); }
float h(float x) { Acc a = { 3.0 }; return a.both(x); }
"""
    c = Compiled(src, "f")
    assert c.primal([2.0, 0.5])[0] == pytest.approx(2.0 * 0.5 + 2.0 * 0.25)
    c.check_derivatives([2.0, 0.5])
    assert run(src, "g", 1.5) == pytest.approx((6.0,))
    assert run(src, "h", 1.5) == pytest.approx((3.0 + 4.5,))


def test_differential_dzero_dadd_of_a_type_parameter():
    src = """
struct V : IDifferentiable { float a; float b; }
[Differentiable]
float f<T : IDifferentiable>(T x, float s)
{
    T.Differential z = T.dzero();
    T.Differential w = T.dadd(z, z);
    return s * s;
}
float g(float s)
{
    V v = { 1.0, 2.0 };
    V.Differential d = V.dzero();
    return f(v, s) + f(s, s) + d.a;
}
"""
    assert run(src, "g", 3.0) == pytest.approx((18.0,))


def test_generic_value_parameter_forms():
    src = """
__generic<let N : int>
float total(float v[N]) { float s = 0.0; for (int i = 0; i < N; i++) s += v[i]; return s; }
vector<T, N> twice<T : IFloat, let N : int>(vector<T, N> v) { return v + v; }
float f(float x) { float a[3] = { x, 1.0, 2.0 }; float2 t = twice(float2(x, 1.0)); return total(a) + t.x + t.y; }
"""
    assert run(src, "f", 0.5) == pytest.approx((3.5 + 1.0 + 2.0,))


def test_unconstrained_type_parameter_is_not_differentiated():
    """Slang differentiates a value of a generic type only through IDifferentiable (or IFloat):
    an unconstrained `T` parameter of an instance for float is no_diff."""
    src = """
[Differentiable] T ident<T>(T x) { return x; }
[Differentiable] float f(float x) { return ident(x) * x; }
"""
    c = Compiled(src, "f")
    _, (t,) = c.fwd([1.5], [1.0])
    assert t == pytest.approx(1.5)  # only the second factor's derivative


def test_constraint_violation_is_located():
    src = """
T half_of<T : IFloat>(T x) { return x / T(2.0); }
int f(int x) { return half_of(x); }
"""
    expect_error(src, "E0003", 3, 23, "int does not conform to 'IFloat'")


def test_uninferable_type_parameter_is_located():
    src = """
T make<T : IFloat>() { return T(1.0); }
float f() { return make(); }
"""
    expect_error(src, "E0003", 3, 20, "cannot infer generic parameter 'T' of 'make'")


def test_generic_interface_conformance_and_interface_typed_parameter():
    """A generic interface constrains by name (its arguments are not checked); a parameter of
    such an interface type specializes the function."""
    src = """
interface IRead<T> { T read(T x); }
struct Twice : IRead<float> { float read(float x) { return 2.0 * x; } }
float use(IRead<float> r, float x) { return r.read(x); }
float g<R : IRead<float>>(R r, float x) { return r.read(x) + 1.0; }
float f(float x) { Twice t; return use(t, x) + g(t, x); }
"""
    assert run(src, "f", 1.5) == pytest.approx((7.0,))


def test_generic_interface_limits_are_located():
    base = "interface IRead<T> { T read(T x); T twice(T x) { return read(x) + read(x); } }\n"
    expect_error(base + "struct S : IRead<float> { float read(float x) { return x; } }\n", "E0008", 2, 1,
                 "default implementation of 'twice' in generic interface 'IRead' is not supported")
    # (dynamic values of generic interface instances: test_dynamic_generic_interfaces.py)
    expect_error("interface IRead<T> { T read(T x); }\ninterface IMore : IRead<float> { }\n"
                 "struct S : IMore { float read(float x) { return x; } }\n"
                 "float f() { IRead<float> r; return 0.0; }\n", "E0008", 4, 13,
                 "dynamic dispatch over 'IRead<float>': 'S' implements 'IRead' without naming its generic arguments")
    expect_error("float f<each T>(T x) { return 0.0; }\n", "E0008", 1, 9, "variadic generic parameters")


def test_array_size_expressions_and_writes_at_generic_indices():
    """`float c[D - 1]` and `idx[D - 1] = ...` in generic code: sizes and indices are constants
    once D is substituted (a generic method of a generic struct sees both parameters)."""
    src = """
struct G<let D : int>
{
    float k;
    float tail<let N : int>(float c[D - 1], float v[2 * N])
    {
        int idx[D];
        idx[D - 1] = N;
        float s = 0.0;
        for (int i = 0; i < D - 1; i++) s += c[i];
        return k * s + v[2 * N - 1] + float(idx[D - 1]);
    }
}
float f(float x) { G<3> g = { x }; float c[2] = { x, 1.0 }; float v[4] = { 0.0, 0.0, 0.0, 5.0 }; return g.tail<2>(c, v); }
"""
    x = 0.5
    assert run(src, "f", x) == pytest.approx((x * (x + 1.0) + 5.0 + 2.0,))


def test_buffer_element_written_through_a_field_in_a_plain_method():
    src = """
RWStructuredBuffer<float> out;
struct Sink<let D : int> { RWStructuredBuffer<float> buf; void put(float v) { buf[D] = v; } }
void main() { Sink<1> s = { out }; s.put(2.0); }
"""
    front(src)  # a buffer element is memory: writing it does not need a mutable `this`


def test_shift_after_a_failed_generic_argument_parse():
    src = "int f(int a, int b) { return (a < b >> 1) ? 1 : 2; }\n"
    assert run(src, "f", 1, 8) == (1,)
    assert run(src, "f", 5, 8) == (2,)


@pytest.mark.parametrize("link", ["of", "on"])
def test_generic_custom_derivative_is_instantiated_with_its_function(link):
    """A generic function whose only derivative is a generic custom one (named from either side)
    gets that derivative's instance for the same arguments; `Array<T, N>` is `T[N]`."""
    attr_on = "[BackwardDerivative(norm4_bwd)]" if link == "on" else ""
    attr_of = "[BackwardDerivativeOf(norm4)]" if link == "of" else ""
    src = f"""
{attr_on}
float norm4<let N : int>(Array<float, N> x) {{ float r = 0.0; for (int i = 0; i < N; i++) r += x[i] * x[i] * x[i] * x[i]; return r; }}
{attr_of}
void norm4_bwd<let N : int>(inout DifferentialPair<Array<float, N>> x, float dResult)
{{
    Array<float, N> d;
    for (int i = 0; i < N; i++) d[i] = 4.0 * x.p[i] * x.p[i] * x.p[i] * dResult;
    x = diffPair(x.p, d);
}}
float3 grad(float a, float b, float c)
{{
    Array<float, 3> x = {{ a, b, c }};
    DifferentialPair<Array<float, 3>> p = diffPair(x, {{}});
    bwd_diff(norm4)(p, 1.0);
    return float3(p.d[0], p.d[1], p.d[2]);
}}
"""
    xs = [0.5, -1.2, 0.8]
    (g,) = run(src, "grad", *xs)
    want = [central_difference(lambda *v: sum(t ** 4 for t in v), xs, i) for i in range(3)]
    assert list(g) == pytest.approx(want, rel=1e-5)


def test_unconstrained_field_of_a_generic_struct_is_not_differentiated():
    src = """
struct Holder<T, U : IDifferentiable> : IDifferentiable { T plain; U diff; }
[Differentiable] float f(Holder<float, float> h) { return h.plain * h.diff; }
"""
    c = Compiled(src, "f")
    assert c.diff_args == [1]  # only the IDifferentiable field's leaf carries a derivative
    c2 = Compiled(src.replace("T plain", "U plain"), "f")
    assert c2.diff_args == [0, 1]
    c2.check_derivatives([0.5, 2.0])


def test_default_values_of_generic_parameters():
    src = """
struct W<int L, int S = L - 1, T = float> { T v[S]; }
float f<int N, int M = 2 * N>(float x) { return x * float(M); }
float g(float x)
{
    W<4> w;            // S = 3, T = float
    w.v[2] = x;
    W<3, 1, int> q;    // all given
    q.v[0] = 2;
    return w.v[2] + float(q.v[0]) + f<3>(x);
}
"""
    assert run(src, "g", 1.5) == pytest.approx((1.5 + 2.0 + 9.0,))
    expect_error(src.replace("W<4> w;", "W<4, 3, float, 1> w;"), "E0005", 6, 5, "'W' takes 3 generic arguments, got 4")


def test_type_parameter_named_like_a_struct_and_prefix_forms_in_structs():
    """A type parameter called like a global struct shadows it only in its declaration; a
    `__generic` prefix works on methods too."""
    src = """
struct T { float v; }
struct Box<U> { U u; __generic<V : IFloat> V get(V x) { return x + V(u); } }
float id<T>(T x) { return 1.0; }
__generic<W : IFloat> W twice(W x) { return x + x; }
float g(float a) { T t = { a }; Box<float> b = { 2.0 }; return t.v + id(t) + b.get(3.0) + twice(1.0); }
"""
    assert run(src, "g", 1.5) == pytest.approx((1.5 + 1.0 + 5.0 + 2.0,))
