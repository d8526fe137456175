"""`__func_extension fwd_diff(f)` / `bwd_diff(f)`: custom derivatives given apart from the
function (free functions, overloads told apart by signature, static and instance methods),
`fwd_diff(S::m)` on a method, and located E0008 for the forms not supported."""

from __future__ import annotations

import pytest
from slang_helpers import expect_error, run

# The extensions are deliberately not the true derivatives (a factor 10 on the true one), so a
# result equal to 10x the finite difference shows the extension, and nothing else, was used.
SRC = """
float cube(float x) { return x * x * x; }
__func_extension fwd_diff(cube)(DifferentialPair<float> x) -> DifferentialPair<float>
{
    return diffPair(cube(x.p), 10.0 * 3.0 * x.p * x.p * x.d);
}
__func_extension bwd_diff(cube)(inout DifferentialPair<float> x, float dOut) -> void
{
    x = diffPair(x.p, 10.0 * 3.0 * x.p * x.p * dOut);
}
float prod(float x) { return x * x; }
float prod(float x, float y) { return x * y; }
__func_extension fwd_diff(prod)(DifferentialPair<float> a, DifferentialPair<float> b) -> DifferentialPair<float>
{
    return diffPair(a.p * b.p, 10.0 * (a.d * b.p + a.p * b.d));
}
__func_extension fwd_diff(prod)(DifferentialPair<float> a) -> DifferentialPair<float>
{
    return diffPair(a.p * a.p, 10.0 * 2.0 * a.p * a.d);
}
struct Vec : IDifferentiable
{
    float x;
    float y;
    float len2() { return x * x + y * y; }
    static float twice(float v) { return 2.0 * v; }
}
__func_extension fwd_diff(Vec::len2)(DifferentialPair<Vec> self) -> DifferentialPair<float>
{
    return diffPair(self.p.len2(), 10.0 * 2.0 * (self.p.x * self.d.x + self.p.y * self.d.y));
}
__func_extension bwd_diff(Vec::twice)(inout DifferentialPair<float> v, float dOut) -> void
{
    v = diffPair(v.p, 10.0 * 2.0 * dOut);
}
float cubeFwd(float x) { return fwd_diff(cube)(diffPair(x, 1.0)).d; }
float cubeBwd(float x) { var p = diffPair(x); bwd_diff(cube)(p, 1.0); return p.d; }
float prod1(float x) { return fwd_diff(prod)(diffPair(x, 1.0)).d; }
float prod2(float x, float y) { return fwd_diff(prod)(diffPair(x, 1.0), diffPair(y, 0.0)).d; }
float lenFwd(float x, float y)
{
    Vec v = { x, y };
    Vec.Differential dv = { 1.0, 0.0 };
    return fwd_diff(Vec::len2)(diffPair(v, dv)).d;
}
float twiceBwd(float v) { var p = diffPair(v); bwd_diff(Vec::twice)(p, 1.0); return p.d; }
"""


def fd(f, *xs, i=0, h=1e-6):
    a, b = list(xs), list(xs)
    a[i] += h
    b[i] -= h
    return (f(*a) - f(*b)) / (2 * h)


@pytest.mark.parametrize("name, args, true", [
    ("cubeFwd", (0.7,), lambda x: x ** 3),
    ("cubeBwd", (0.7,), lambda x: x ** 3),
    ("prod1", (0.7,), lambda x: x * x),
    ("prod2", (0.7, -1.3), lambda x, y: x * y),
    ("lenFwd", (0.7, -1.3), lambda x, y: x * x + y * y),
    ("twiceBwd", (0.7,), lambda v: 2.0 * v),
])
def test_func_extensions_are_the_derivatives_used(name, args, true):
    assert run(SRC, name, *args)[0] == pytest.approx(10.0 * fd(true, *args), rel=1e-6)


def test_unsupported_forms_are_located():
    expect_error("float f(float x) { return x; }\n"
                 "__func_extension __apply(f + 1)(float x) -> Tuple<float, float> { return makeTuple(x, x); }\n",
                 "E0001", 2, 28, "expected ')', found '+'")
    expect_error("float f(float x) { return x; }\n"
                 "__func_extension __apply(f.g.h)(float x) -> Tuple<float, float> { return makeTuple(x, x); }\n",
                 "E0001", 2, 26, "expected a function or a method name, as in __apply(f) or __apply(S::m)")
    expect_error("struct C { float operator+(float x) { return x; } }\n", "E0008", 1, 18, "operator overloading")


def test_an_extension_that_fits_no_overload_is_located():
    expect_error("float p(float x) { return x; }\nfloat p(float x, float y) { return x; }\n"
                 "__func_extension fwd_diff(p)(DifferentialPair<float2> a) -> DifferentialPair<float2> { return a; }\n",
                 "E0003", 3, 27, "no overload of 'p' has the signature the derivative needs")


def test_generic_func_extension_is_the_derivative_of_every_instance():
    src = """
T sq<T : IArithmetic>(T x) { return x * x; }
__func_extension<T : IFloat> bwd_diff(sq<T>)(inout DifferentialPair<T> dpx, T dOut) -> void
    where T.Differential == T
{
    dpx = diffPair(dpx.p, dOut * T(3.0) * dpx.p);
}
__func_extension<T : IFloat> fwd_diff(sq<T>)(DifferentialPair<T> dpx) -> DifferentialPair<T>
{
    return diffPair(dpx.p * dpx.p, T(5.0) * dpx.d);
}
float g(float x) { var p = diffPair(x, 0.0); bwd_diff(sq<float>)(p, 2.0); return p.d; }
float h(float x) { return fwd_diff(sq<float>)(diffPair(x, 1.0)).d; }
"""
    # the rules as written: 3 x dOut and 5 dx (not the true derivative 2x): custom rules win
    assert run(src, "g", 1.5)[0] == pytest.approx(3 * 1.5 * 2.0)
    assert run(src, "h", 1.5)[0] == pytest.approx(5.0)


def test_update_diff_primal_and_pair_replace_parts_of_a_pair_variable():
    from slang_harness import run_function, run_pipeline

    from diffc.frontend import compile_slang

    src = """
struct Twice<let N : int> {
    float m(float x) { return N * x * x; }
    [BackwardDerivativeOf(m)]
    void m_bwd(inout DifferentialPair<float> x, float dOut) { updateDiff(x, N * 2.0 * x.p * dOut); }
}
[Differentiable] float t(float x) { Twice<3> w; return w.m(x); }
float g(float x) {
    var a = diffPair(x);
    bwd_diff(t)(a, 1.0);
    var b = diffPair(1.0, 2.0);
    updatePrimal(b, 10.0);
    var c = diffPair(0.0, 0.0);
    updatePair(c, 100.0, 1000.0);
    return a.d + b.p + b.d + c.p + c.d;
}
"""
    module = compile_slang(src, "test.slang")
    run_pipeline(module)
    (value,) = run_function(module, "g", 0.5)
    assert float(value) == pytest.approx(3 * 2 * 0.5 + 10.0 + 2.0 + 100.0 + 1000.0)


def test_a_generic_extension_derivative_of_a_generic_structs_method_serves_each_instance():
    # the custom derivative is scaled on purpose in forward mode: the number shows it ran; the
    # backward one is the true derivative, checked against finite differences
    from slang_harness import Compiled

    src = """
struct Vec<T : __BuiltinArithmeticType> { T x; T y; Vec<T> squared() { return Vec<T>(x * x, y * y); } };
extension<T : __BuiltinFloatingPointType> Vec<T> : IDifferentiable where T.Differential == T {
    typedef Vec<T> Differential;
    [Differentiable] static Differential dzero() { return Vec<T>(T(0), T(0)); }
    [Differentiable] static Differential dadd(Differential a, Differential b) { return Vec<T>(a.x + b.x, a.y + b.y); }
}
__func_extension<T : __BuiltinFloatingPointType>
bwd_diff(Vec<T>::squared)(inout DifferentialPair<Vec<T>> self, Vec<T> dOut) -> void where T.Differential == T {
    self = diffPair(self.p, Vec<T>(T(2) * self.p.x * dOut.x, T(2) * self.p.y * dOut.y));
}
__func_extension<T : __BuiltinFloatingPointType>
fwd_diff(Vec<T>::squared)(DifferentialPair<Vec<T>> self) -> DifferentialPair<Vec<T>> where T.Differential == T {
    return diffPair(self.p.squared(), Vec<T>(T(20) * self.p.x * self.d.x, T(20) * self.p.y * self.d.y));
}
[Differentiable] float f(float a, float b) { Vec<float> v = Vec<float>(a, b); let s = v.squared(); return s.x + 3.0 * s.y; }
"""
    c = Compiled(src, "f")
    assert [float(g) for g in c.bwd([0.5, 2.0], [1.0])] == [pytest.approx(2 * 0.5), pytest.approx(3 * 2 * 2.0)]
    _, (t,) = c.fwd([0.5, 2.0], [1.0, 0.0])
    assert float(t) == pytest.approx(20 * 0.5)  # the scaled custom forward derivative ran


def test_the_derivative_of_a_bodiless_function_is_its_custom_derivative():
    from slang_harness import run_function, run_pipeline

    from diffc.frontend import compile_slang

    src = """
DifferentialPair<float> sq_fwd(DifferentialPair<float> x) { return diffPair(x.p * x.p, 2.0 * x.p * x.d); }
void sq_bwd(inout DifferentialPair<float> x, float dOut) { x = diffPair(x.p, 2.0 * x.p * dOut); }
[ForwardDerivative(sq_fwd)] [BackwardDerivative(sq_bwd)]
float sq(float x);
float g(float x) {
    var p = diffPair(x);
    bwd_diff(sq)(p, 10.0);
    return fwd_diff(sq)(diffPair(x, 1.0)).d + p.d;
}
"""
    module = compile_slang(src, "test.slang")
    run_pipeline(module)
    (value,) = run_function(module, "g", 1.5)
    assert float(value) == pytest.approx(2 * 1.5 + 10 * 2 * 1.5)
    with pytest.raises(Exception, match=r"calling 'sq', which is declared but never defined"):
        compile_slang(src.replace("return fwd_diff", "return sq(x) + fwd_diff"), "test.slang")
