"""Generic forms of a numeric Slang library (a differentiable vector type written over a
type parameter), one test each: type tests in an instance (`T is half`, `x as To`), two generic
overloads of one method, static and instance overloads of one method, a generic function named
like a built-in one, a generic method's custom derivative that is a generic sibling method,
IArithmetic's methods on numbers and an IArithmetic struct's operators, and
`__slang_noop_cast<To>(x)` / `DifferentialPair<X>.DifferentialElementType`. Values against numpy,
derivatives against float64 central differences in both modes (slang_harness)."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled, compile_error

TYPE_TESTS = """
struct Pick<T : __BuiltinFloatingPointType> {
    static const int Code = (T is half) ? 16 : (T is float) ? 32 : 64;
}
[Differentiable] To convert<To : __BuiltinFloatingPointType, From : __BuiltinFloatingPointType>(From x) {
    if (let z = x as To) return z * To(2.0);
    return To(x.toFloat());
}
[Differentiable] float f(float x) {
    return float(Pick<float>.Code + Pick<double>.Code) * convert<float>(x) + convert<float>(double(x));
}
"""


def test_type_tests_in_a_generic_instance():
    c = Compiled(TYPE_TESTS, "f")
    x = 0.7
    assert c.primal([x])[0] == pytest.approx(96 * 2 * x + x)
    c.check_derivatives([x])


VEC = """
struct Vec<T : __BuiltinFloatingPointType, int N> : IDifferentiable, IArithmetic {
    T v[N];
    [Differentiable] __init(T x) { for (int i = 0; i < N; i++) v[i] = x; }
    [Differentiable] __init<S : __BuiltinFloatingPointType>(S x) { for (int i = 0; i < N; i++) v[i] = T(x.toFloat()); }
    [Differentiable] __init<S : __BuiltinFloatingPointType>(Vec<S, N> x) { for (int i = 0; i < N; i++) v[i] = T(x.v[i].toFloat()) * T(3.0); }
    [Differentiable] static This add(This a, This b) { This r; for (int i = 0; i < N; i++) r.v[i] = a.v[i] + b.v[i]; return r; }
    [Differentiable] This add(This o) { return add(this, o); }
    [Differentiable] This sub(This o) { This r; for (int i = 0; i < N; i++) r.v[i] = v[i] - o.v[i]; return r; }
    [Differentiable] This mul(This o) { This r; for (int i = 0; i < N; i++) r.v[i] = v[i] * o.v[i]; return r; }
    [Differentiable] This div(This o) { This r; for (int i = 0; i < N; i++) r.v[i] = v[i] / o.v[i]; return r; }
    [Differentiable] This mod(This o) { return this; }
    [Differentiable] This neg() { This r; for (int i = 0; i < N; i++) r.v[i] = -v[i]; return r; }
    bool equals(This o) { return v[0] == o.v[0]; }
    bool lessThan(This o) { return v[0] < o.v[0]; }
    bool lessThanOrEquals(This o) { return v[0] <= o.v[0]; }
    [Differentiable] T sum() { T s = T(0.0); for (int i = 0; i < N; i++) s += v[i]; return s; }
}
// named like the built-in max: a call of max on floats is the built-in one
[Differentiable] Vec<T, N> max<T : __BuiltinFloatingPointType, int N>(Vec<T, N> a, Vec<T, N> b) {
    Vec<T, N> r; for (int i = 0; i < N; i++) r.v[i] = max(a.v[i], b.v[i]); return r;
}
[Differentiable] float f(float x, float y) {
    Vec<float, 3> a = Vec<float, 3>(x);
    Vec<float, 3> b = Vec<float, 3>(double(y));     // __init<S>(S)
    Vec<float, 3> c = Vec<float, 3>(Vec<half, 3>(half(2.0)));  // __init<S>(Vec<S, N>): 6 each
    Vec<float, 3> s = a + b * c - (-a) / c;
    float m = max(x, y);
    return s.sum() + max(a, b).sum() * m + (a < b ? 1.0 : 0.0) + (a != b ? 10.0 : 0.0) + a.add(b).v[1]
        + Vec<float, 3>::add(a, a).v[2];
}
"""


def test_generic_overloads_static_and_instance_overloads_and_an_iarithmetic_structs_operators():
    c = Compiled(VEC, "f")
    x, y = 0.4, 1.3
    s = 3 * (x + y * 6 + x / 6)
    expect = s + 3 * max(x, y) * max(x, y) + (1.0 if x < y else 0.0) + 10.0 + (x + y) + 2 * x
    assert c.primal([x, y])[0] == pytest.approx(expect, rel=1e-3)  # (half's 2.0 is exact)
    c.check_derivatives([x, y])


FILL = """
struct Vec<T : __BuiltinFloatingPointType, int N> : IDifferentiable {
    T v[N];
    [BackwardDerivative(fill_bwd)]
    static Vec<T, N> fill<S : __BuiltinFloatingPointType>(S x) { Vec<T, N> r; for (int i = 0; i < N; i++) r.v[i] = T(x.toFloat()) * T(i + 1); return r; }
    static void fill_bwd<S : __BuiltinFloatingPointType>(inout DifferentialPair<S> x, Vec<T, N> grad) {
        T dx = T(0.0);
        for (int i = 0; i < N; i++) dx += grad.v[i] * T(i + 1);
        x = diffPair(x.p, __slang_noop_cast<DifferentialPair<S>.DifferentialElementType>(S(dx.toFloat())));
    }
}
[Differentiable] float f(float x) {
    Vec<float, 3> a = Vec<float, 3>::fill(x * x);
    return a.v[0] + a.v[1] * a.v[2];
}
"""


def test_a_generic_methods_custom_derivative_is_its_generic_sibling():
    c = Compiled(FILL, "f")
    x = 0.9
    assert c.primal([x])[0] == pytest.approx(x * x + 6 * x ** 4)
    c.check_derivatives([x])


def test_arithmetic_methods_of_numbers_and_vectors():
    src = """
    [Differentiable] float f(float x, float3 v) {
        float3 w = v.add(float3(x)).mul(v).sub(v.neg()).div(float3(2.0, 4.0, 8.0));
        bool same = v.equals(v) && !v.lessThan(v) && v.lessThanOrEquals(v) && x.lessThan(x + 1.0);
        return (same ? 1.0 : 0.0) + w.x + w.y * w.z + x.mul(x) + __slang_noop_cast<float>(x);
    }
    """
    c = Compiled(src, "f")
    x, v = 0.5, np.array([0.3, -0.7, 1.1])
    w = ((v + x) * v + v) / np.array([2.0, 4.0, 8.0])
    assert c.primal([x, v])[0] == pytest.approx(1 + w[0] + w[1] * w[2] + x * x + x)
    c.check_derivatives([x, v])
    assert "error[E0005]" in compile_error("float f(float x) { return x.add(); }")


def test_dmul_of_a_built_in_type_scales_a_derivative():
    src = """
    [BackwardDerivative(sq_bwd)] float3 sq(float3 x) { return x * x; }
    void sq_bwd(inout DifferentialPair<float3> x, float3 g) { x = diffPair(x.p, float3.dmul(half(2.0), x.p * g)); }
    [Differentiable] float f(float3 v) { float3 s = sq(v); return s.x + s.y * s.z; }
    """
    c = Compiled(src, "f")
    v = np.array([0.4, -1.2, 0.9])
    assert c.primal([v])[0] == pytest.approx(v[0] ** 2 + v[1] ** 2 * v[2] ** 2)
    c.check_derivatives([v])


STATIC_CONSTS = """
struct Ramp<T : __BuiltinFloatingPointType> {
    static const T Lo = T(0.5);
    static const T Slope = (T(1.0) - Lo) / (T(4.0) * Lo);   // names the static before it
    [Differentiable] static T apply(T x) { return Slope * x * x + Lo; }
}
[Differentiable] float f(float x) { return Ramp<float>.apply(x) + float(Ramp<double>.apply(double(x))); }
"""


def test_a_static_const_initializer_names_the_statics_before_it():
    c = Compiled(STATIC_CONSTS, "f")
    x = 0.8
    assert c.primal([x])[0] == pytest.approx(2 * (0.25 * x * x + 0.5))
    c.check_derivatives([x])


SWAPPED_DERIVATIVES = """
struct V : IDifferentiable { float2 c; }
[BackwardDerivative(mulR_bwd)] V operator *<T : __BuiltinFloatingPointType>(V lhs, const T rhs) { V r; r.c = lhs.c * rhs.toFloat(); return r; }
[BackwardDerivative(mulL_bwd)] V operator *<T : __BuiltinFloatingPointType>(const T lhs, V rhs) { V r; r.c = rhs.c * lhs.toFloat(); return r; }
void mulR_bwd<T : __BuiltinFloatingPointType>(inout DifferentialPair<V> lhs, inout DifferentialPair<T> rhs, V grad) {
    V d = grad * rhs.p;   // (uses the operator mulR_bwd is the derivative of)
    lhs = diffPair(lhs.p, d);
    rhs = diffPair(rhs.p, T(dot(grad.c, lhs.p.c)));
}
void mulL_bwd<T : __BuiltinFloatingPointType>(inout DifferentialPair<T> lhs, inout DifferentialPair<V> rhs, V grad) {
    mulR_bwd(rhs, lhs, grad);   // the other operator's derivative, called by name
}
[Differentiable] float f(float a, float b) { V v; v.c = float2(a, b); V w = a * v; return w.c.x + 2.0 * w.c.y; }
"""


def test_a_generic_custom_derivative_called_by_name_before_its_primal_has_that_instance():
    """mulL_bwd calls mulR_bwd<float> before anything uses `V * float`: the instance of mulR_bwd is
    the derivative of that operator's instance from the start (its call is bwd_diff of it)."""
    c = Compiled(SWAPPED_DERIVATIVES, "f")
    a, b = 0.3, -0.4
    assert c.primal([a, b])[0] == pytest.approx(a * a + 2 * a * b)
    cmp = c.compare([a, b], 0)
    np.testing.assert_allclose(cmp.jtu, cmp.jac.T @ cmp.u, rtol=1e-6, atol=1e-8)


def test_a_vector_wider_than_four():
    """`vector<T, N>` of any width (a generic library instantiates `vector<float, 24>`), as a
    CoopVec is: elementwise arithmetic, intrinsics, subscripts, generic inference."""
    src = """
    [Differentiable] vector<T, N> scale<T : __BuiltinFloatingPointType, int N>(vector<T, N> v, T k) { return v * k; }
    [Differentiable] float f(float x, float y) {
        vector<float, 6> v = vector<float, 6>(x);
        for (int i = 0; i < 6; i++) v[i] = v[i] * float(i + 1) + y;
        vector<float, 6> w = scale(v, y) + exp(v);
        float s = 0.0;
        for (int i = 0; i < 6; i++) s += w[i];
        return s;
    }
    """
    c = Compiled(src, "f")
    x, y = 0.3, -0.4
    v = x * np.arange(1, 7) + y
    assert c.primal([x, y])[0] == pytest.approx(np.sum(v * y + np.exp(v)))
    c.check_derivatives([x, y])


def test_real_cast():
    src = """
    [Differentiable] T twice<T : __BuiltinFloatingPointType, S : __BuiltinRealType>(S k, T x) { return __realCast<T>(k) * x; }
    [Differentiable] float f(float x) { return twice<float>(double(2.0), x) + __realCast<float>(double(x) * x); }
    """
    c = Compiled(src, "f")
    assert c.primal([0.7])[0] == pytest.approx(2 * 0.7 + 0.49)
    c.check_derivatives([0.7])
    msg = compile_error("float f(float x) {\n  return float(__realCast<int>(x));\n}\n")
    assert "prog.slang:2:27: error[E0003]" in msg and "__realCast converts between real types" in msg
