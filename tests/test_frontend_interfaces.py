"""Interfaces, resolved statically: requirements and default implementations, inheritance,
`This`, associated types, differentiable interface methods, interface-typed parameters and
locals specialized per concrete type, extensions, and dynamic dispatch as a tagged union."""

from __future__ import annotations

import numpy as np
import pytest

from slang_harness import Compiled
from slang_helpers import central_difference, expect_error, funcs, front, run

SHAPES = """
interface IShape : IDifferentiable
{
    [Differentiable] float eval(float x);
    // a default implementation: a struct that does not define it gets this one
    [Differentiable] float twice(float x) { return 2.0 * eval(x); }
}
struct Quad : IShape
{
    float k;
    [Differentiable] float eval(float x) { return k * x * x; }
}
struct Lin : IShape
{
    float k;
    [Differentiable] float eval(float x) { return k + sin(x); }
    [Differentiable] float twice(float x) { return eval(x) + eval(x) * x; }
}
"""


def quad(k, x):
    return k * x * x


def lin(k, x):
    return k + np.sin(x)


def test_generic_function_over_an_interface_specializes_per_struct():
    src = SHAPES + """
[Differentiable] float apply<T : IShape>(T s, float x) { return s.eval(x) * x; }
[Differentiable]
float f(float k, float x)
{
    Quad q = { k };
    Lin l = { k };
    return apply(q, x) + apply(l, x);
}
"""
    names = set(funcs(front(src)))
    assert {"apply_Quad", "apply_Lin"} <= names
    c = Compiled(src, "f")
    (v,) = c.primal([0.7, 1.3])
    assert v == pytest.approx(quad(0.7, 1.3) * 1.3 + lin(0.7, 1.3) * 1.3)
    c.check_derivatives([0.7, 1.3])


def test_default_implementation_and_override():
    src = SHAPES + """
[Differentiable]
float f(float k, float x)
{
    Quad q = { k };
    Lin l = { k };
    return q.twice(x) + l.twice(x);
}
"""
    c = Compiled(src, "f")
    k, x = 0.4, 0.9
    (v,) = c.primal([k, x])
    assert v == pytest.approx(2 * quad(k, x) + lin(k, x) + lin(k, x) * x)
    c.check_derivatives([k, x])


def test_interface_typed_parameter_and_local_are_specialized():
    src = SHAPES + """
[Differentiable] float use(IShape s, float x) { return s.eval(x) + s.twice(x); }
[Differentiable]
float f(float k, float x)
{
    IShape s = Quad(k);   // the concrete type is known: no dynamic dispatch
    return use(s, x) + use(Lin(k), x);
}
"""
    assert {"use_Quad", "use_Lin"} <= set(funcs(front(src)))
    c = Compiled(src, "f")
    k, x = 1.1, -0.6
    (v,) = c.primal([k, x])
    assert v == pytest.approx(3 * quad(k, x) + lin(k, x) + lin(k, x) + lin(k, x) * x)
    c.check_derivatives([k, x])


def test_differentiable_interface_struct_carries_derivatives_through_generic_code():
    """`interface IModel : IDifferentiable`: a struct implementing it is differentiable, and a
    generic parameter constrained by it carries derivatives (its fields get gradients)."""
    src = """
interface IModel : IDifferentiable
{
    [Differentiable] float predict(float x);
    [Differentiable] static This make(float a);
}
struct Line : IModel
{
    float a; float b;
    [Differentiable] float predict(float x) { return a * x + b * b; }
    [Differentiable] static This make(float a) { This m; m.a = a; m.b = 2.0 * a; return m; }
}
[Differentiable] float loss<M : IModel>(M m, float x) { float r = m.predict(x) - 1.0; return r * r; }
[Differentiable] float f(Line m, float x) { return loss(m, x) + loss(Line.make(x), 0.5); }
"""
    c = Compiled(src, "f")
    a, b, x = 0.3, -0.8, 1.7
    (v,) = c.primal([a, b, x])
    want = (a * x + b * b - 1.0) ** 2 + (x * 0.5 + 4 * x * x - 1.0) ** 2
    assert v == pytest.approx(want)
    assert c.diff_args == [0, 1, 2]
    c.check_derivatives([a, b, x])


def test_non_differentiable_interface_view_carries_no_derivative():
    """Seen through an interface without IDifferentiable, a differentiable struct's value is
    `no_diff` (generic parameter, interface-typed parameter and local alike): only x's derivative
    flows, although the struct's own method would differentiate its field too."""
    src = """
interface IVal { [Differentiable] float get(float y); }
struct P : IDifferentiable, IVal { float x; [Differentiable] float get(float y) { return x * x * y; } }
[Differentiable] float g<T : IVal>(T v, float y) { return v.get(y); }
[Differentiable] float h(IVal v, float y) { return v.get(y); }
[Differentiable] float f(P p, float y) { IVal v = p; return g(p, y) + h(p, y) + v.get(y); }
[Differentiable] float direct(P p, float y) { return p.get(y); }
"""
    c = Compiled(src, "f")
    x, y = 1.5, 0.8
    assert c.primal([x, y])[0] == pytest.approx(3 * x * x * y)
    fd = c.jacobian_fd([x, y])
    assert fd[0, 0] != 0.0  # the primal depends on x ...
    _, (t,) = c.fwd([x, y], [1.0, 0.0])
    assert t == 0.0  # ... but no derivative flows to it through the interface
    _, (t,) = c.fwd([x, y], [0.0, 1.0])
    assert t == pytest.approx(fd[0, 1])
    d = Compiled(src, "direct")
    _, (t,) = d.fwd([x, y], [1.0, 0.0])
    assert t == pytest.approx(2 * x * y)


def test_interface_inheritance_and_associated_type():
    src = """
interface IBase { [Differentiable] float base(float x); }
interface IDerived : IBase
{
    associatedtype Params : IDifferentiable;
    [Differentiable] float derived(Params p, float x);
}
struct W : IDifferentiable { float w; }
struct Impl : IDerived
{
    typealias Params = W;
    [Differentiable] float base(float x) { return exp(x); }
    [Differentiable] float derived(Params p, float x) { return p.w * base(x); }
}
[Differentiable] float run<T : IDerived>(T t, T.Params p, float x) { return t.derived(p, x) + t.base(x); }
[Differentiable] float f(float w, float x) { Impl i; W p = { w }; return run(i, p, x); }
"""
    c = Compiled(src, "f")
    w, x = 0.6, 0.25
    assert c.primal([w, x])[0] == pytest.approx(w * np.exp(x) + np.exp(x))
    c.check_derivatives([w, x])


def test_extension_adds_methods_and_conformance():
    src = """
interface IScale { [Differentiable] float scale(float x); }
struct S { float k; }
extension S : IScale { [Differentiable] float scale(float x) { return k * x * x; } }
[Differentiable] float use<T : IScale>(T t, float x) { return t.scale(x); }
[Differentiable] float f(float x) { S s = { 3.0 }; return use(s, x) + s.scale(x); }
"""
    c = Compiled(src, "f")
    assert c.primal([0.5])[0] == pytest.approx(2 * 3.0 * 0.25)
    c.check_derivatives([0.5])


def test_blanket_extension_applies_to_every_conforming_struct():
    src = """
interface IHas { float get(); }
extension<T : IHas> T { float doubled() { return get() * 2.0; } }
struct A : IHas { float v; float get() { return v; } }
struct B : IHas { float get() { return 5.0; } }
float f(float x) { A a = { x }; B b; return a.doubled() + b.doubled(); }
"""
    assert run(src, "f", 1.25) == pytest.approx((2.5 + 10.0,))


def test_generic_struct_extension_for_one_instance_and_all():
    src = """
struct Vec<let N : int> { float v[N]; }
extension<let M : int> Vec<M> { float sum() { float s = 0.0; for (int i = 0; i < M; i++) s += v[i]; return s; } }
extension Vec<2> { float first() { return v[0]; } }
float f(float x) { Vec<2> a = { { x, 2.0 } }; Vec<3> b = { { 1.0, 2.0, x } }; return a.sum() + b.sum() + a.first(); }
"""
    assert run(src, "f", 0.5) == pytest.approx((2.5 + 3.5 + 0.5,))


DYN = SHAPES + """
[Differentiable] float use(IShape s, float x) { return s.eval(x) * x; }
IShape pick(uint id, float k)
{
    if (id == 0) { Quad q = { k }; return q; }
    return Lin(k);
}
"""


@pytest.mark.parametrize("which", [0, 1])
def test_dynamic_dispatch_chooses_the_implementation_at_run_time(which):
    """An interface-typed local assigned in branches is a tagged union: the tag chooses the
    method at run time (an scf.if chain), in the primal and both derivative modes."""
    src = DYN + """
[Differentiable]
float f(uint id, float k, float x)
{
    IShape s;
    if (id == 0) s = Quad(k); else s = Lin(k);
    return use(s, x) + s.twice(x);
}
"""
    assert "use_IShape" in funcs(front(src))
    c = Compiled(src, "f")
    k, x = 0.8, 1.3
    g = quad if which == 0 else lin
    tw = 2 * quad(k, x) if which == 0 else lin(k, x) + lin(k, x) * x
    assert c.primal([which, k, x])[0] == pytest.approx(g(k, x) * x + tw)
    c.check_derivatives([which, k, x])


def test_interface_result_and_dynamic_object():
    src = DYN + """
float f(uint id, float x) { return pick(id, 2.0).eval(x) + createDynamicObject<IShape>(id, 3.0).eval(x); }
"""
    x = 0.7
    assert run(src, "f", 0, x) == pytest.approx((quad(2.0, x) + quad(3.0, x),))
    assert run(src, "f", 1, x) == pytest.approx((lin(2.0, x) + lin(3.0, x),))


def test_dynamic_value_gradient_reaches_the_chosen_implementation():
    """bwd_diff through a dynamic value of a differentiable interface: the gradient of the
    implementation's fields lands in its slot of the union's Differential, zeros elsewhere."""
    src = DYN + """
float2 grads(uint id, float k, float x)
{
    var ps = diffPair(pick(id, k));
    var px = diffPair(x);
    bwd_diff(use)(ps, px, 1.0);
    return float2(ps.d.Quad.k + ps.d.Lin.k, px.d);
}
"""
    k, x = 0.6, 1.1
    for which, g in ((0, quad), (1, lin)):
        (gk_gx,) = run(src, "grads", which, k, x)
        gk = central_difference(lambda k_: g(k_, x) * x, [k], 0)
        gx = central_difference(lambda x_: g(k, x_) * x_, [x], 0)
        assert list(gk_gx) == pytest.approx([gk, gx], rel=1e-5)


def test_an_implementation_declared_after_a_dynamic_use_is_part_of_the_union():
    # as in Slang, dispatch covers every conformance of the program, wherever it is declared
    src = DYN + """
[Differentiable] float f(uint id, float x) { IShape s; if (id == 2) s = Late(); else s = pick(id, 1.0); return s.eval(x); }
struct Late : IShape { [Differentiable] float eval(float x) { return x * x * x; } }
"""
    c = Compiled(src, "f")
    assert c.primal([2, 1.5])[0] == pytest.approx(1.5**3)
    assert c.primal([0, 1.5])[0] == pytest.approx(quad(1.0, 1.5))
    c.check_derivatives([2, 1.5])


def test_pointer_to_interface_values_that_are_not_words_is_refused_located():
    # (pointers to interface values are read in Slang's layout of 32-bit words: test_dynamic_buffers.py)
    wide = "struct Wide : IShape { double k; [Differentiable] float eval(float x) { return x; } }\n"
    expect_error(SHAPES + wide + "float f(IShape* p) { return 0.0; }\n", "E0008", 20, 9,
                 "interface 'IShape' values in memory holding Wide, whose fields are not all 32-bit numbers, are "
                 "not supported")


def test_extension_of_a_builtin_type_is_refused_located():
    expect_error(SHAPES + "extension float : IShape { float eval(float x) { return x; } }\n", "E0008", 19, 11,
                 "an extension of 'float' is not supported")


def test_missing_requirement_is_reported():
    src = """
interface I { float f(float x); }
struct S : I { float g(float x) { return x; } }
"""
    expect_error(src, "E0003", 3, 1, "'S' does not implement 'f', required by interface 'I'")


def test_constraint_violation_is_reported():
    src = """
interface I { float f(float x); }
struct S { float v; }
float g<T : I>(T t) { return 0.0; }
float h() { S s = { 1.0 }; return g(s); }
"""
    expect_error(src, "E0003", 5, 35, "S does not conform to 'I'")


def test_treat_as_differentiable_implementation_has_zero_derivative():
    """`[TreatAsDifferentiable]` satisfies a differentiable requirement with a derivative of zero:
    the primal is the method's value, and derivatives see it as a constant."""
    src = """
interface IFoo { [Differentiable] float f(float v); }
struct Tex : IFoo { uint k; [TreatAsDifferentiable] float f(float v) { return float(k) * v + 1.0; } }
[Differentiable] float use(IFoo o, float x) { float s = o.f(x); return s / x; }
[Differentiable] float g(float x) { Tex t = { 2 }; return use(t, x); }
"""
    c = Compiled(src, "g")
    x = 2.0
    assert c.primal([x])[0] == pytest.approx((2 * x + 1) / x)
    s = 2 * x + 1  # held constant: d/dx (s / x) = -s / x^2
    _, (t,) = c.fwd([x], [1.0])
    assert t == pytest.approx(central_difference(lambda x_: s / x_, [x], 0), rel=1e-6)
    (gx,) = c.bwd([x], [1.0])
    assert gx == pytest.approx(t)


def test_extension_static_const_and_field_refusal():
    src = """
struct S { float a; }
extension S { static const float K = 2.5; float scaled() { return a * K; } }
float f(float x) { S s = { x }; return s.scaled(); }
"""
    assert run(src, "f", 2.0) == pytest.approx((5.0,))
    expect_error("struct S { float a; }\nextension S { float b; }\n", "E0008", 2, 15,
                 "an extension cannot add fields")


def test_interfaces_may_name_later_interfaces_and_clash_with_structs():
    src = """
interface I : J { float f(); }
interface J { float g(); }
struct S : I { float f() { return 1.0; } float g() { return 2.0; } }
float use<T : J>(T t) { return t.g(); }
float h() { S s; return s.f() + use(s); }
"""
    assert run(src, "h") == pytest.approx((3.0,))
    expect_error("interface I { float f(); }\nstruct I { float v; }\n", "E0009", 2, 1, "a second struct (or interface)")
    expect_error("interface I : K { float f(); }\n", "E0002", 1, 1, "unknown interface 'K'")


def test_constrained_extension_of_a_generic_struct_applies_to_conforming_instances():
    src = """
struct V<T> { T x; }
extension<T : IFloat> V<T> : IDifferentiable { [Differentiable] T sq() { return x * x; } }
extension<T : IInteger> V<T> { T sq() { return x * x + T(1); } }
[Differentiable] float f(V<float> v) { return v.sq(); }
int g(int k) { V<int> v = { k }; return v.sq(); }
"""
    c = Compiled(src, "f")
    assert c.diff_args == [0]  # the IFloat extension made V<float> differentiable
    c.check_derivatives([1.3])
    assert run(src, "g", 3) == (10,)


def test_dynamic_dispatch_over_implementations_declared_after_use_with_an_associated_type():
    # pick() makes a dynamic IShape before any implementation is declared; setup() returns the
    # associated type, a dynamic IInst behind the dynamic IShape; typedefs name later structs
    from slang_harness import Compiled

    src = """
interface IInst : IDifferentiable { [Differentiable] float eval(float x); }
interface IShape { associatedtype Inst : IInst; [Differentiable] Inst setup(float k); }
IShape pick(int t) { return createDynamicObject<IShape, float>(t, 0.0); }
[Differentiable] float f(float x, float k) { IShape s = pick(1); let i = s.setup(k); return i.eval(x) + 1.0; }
typedef SqInst Squared;
struct Lin : IShape { float pad; typedef LinInst Inst; [Differentiable] LinInst setup(float k) { LinInst i = { k }; return i; } }
struct Sq : IShape { float pad; typedef Squared Inst; [Differentiable] Squared setup(float k) { Squared i = { k }; return i; } }
struct LinInst : IInst { float k; [Differentiable] float eval(float x) { return k * x; } }
struct SqInst : IInst { float k; [Differentiable] float eval(float x) { return k * x * x; } }
"""
    c = Compiled(src, "f")
    (g_x, g_k) = (float(v) for v in c.bwd([1.5, 2.0], [1.0]))
    assert (g_x, g_k) == (pytest.approx(2 * 2.0 * 1.5), pytest.approx(1.5**2))  # tag 1: Sq, k x^2
    c.check_derivatives([1.5, 2.0])


def test_a_generic_method_dispatches_dynamically_with_its_generic_arguments():
    from slang_harness import Compiled

    src = """
public dyn interface ISum { [Differentiable] float sum<let N : int>(vector<float, N> v); }
struct Plain : ISum { [Differentiable] float sum<let N : int>(vector<float, N> v) { float s = 0; [ForceUnroll] for (int i = 0; i < N; i++) s += v[i]; return s; } }
struct Sq : ISum { [Differentiable] float sum<let N : int>(vector<float, N> v) { float s = 0; [ForceUnroll] for (int i = 0; i < N; i++) s += v[i] * v[i]; return s; } }
[Differentiable] float f(uint id, float3 v, float2 w) {
    ISum s;
    if (id == 0) s = Plain(); else s = Sq();
    return s.sum(v) + 10.0 * s.sum(w);
}
"""
    c = Compiled(src, "f")
    v, w = [0.5, -1.0, 2.0], [3.0, 0.25]
    assert c.primal([1, v, w])[0] == pytest.approx(sum(x * x for x in v) + 10 * sum(x * x for x in w))
    assert c.primal([0, v, w])[0] == pytest.approx(sum(v) + 10 * sum(w))
    c.check_derivatives([1, v, w])


EXTERN_FIELD = """
__generic<let N : int>
struct myvec { vector<float, N> val; };

typedef myvec<3> myvec3;

extension myvec3 : IDifferentiable
{
    typedef myvec3 Differential;

    [DerivativeMember(Differential.val)]
    extern vector<float, 3> val;

    [Differentiable]
    static Differential dzero() { Differential d; d.val = float3(0.0); return d; }

    [Differentiable]
    static Differential dadd(Differential a, Differential b) { Differential d; d.val = a.val + b.val; return d; }
};

[Differentiable]
float energy(myvec3 v, float s) {
    return dot(v.val, v.val) * s + v.val.y;
}
"""


def test_an_extern_field_in_an_extension_of_a_typedef_instance_gives_the_field_attributes():
    """`extension myvec3 : IDifferentiable` (a typedef of a generic instance) makes the instance
    differentiable; `[DerivativeMember(Differential.val)] extern ... val;` names its own field."""
    c = Compiled(EXTERN_FIELD, "energy")
    v = np.array([0.5, 1.0, -2.0])
    assert c.primal([v, 1.5])[0] == pytest.approx(float(v @ v) * 1.5 + 1.0)
    c.check_derivatives([v, 1.5])


@pytest.mark.parametrize("body,code,line,col,words", [
    ("extension S { extern float y; };", "E0002", 2, 15, "extern field 'y': 'S' has no field"),
    ("extension S { extern int x; };", "E0003", 2, 22, "extern field 'x' is declared int, but 'S' has it as float"),
    ("struct R { extern float z; };", "E0008", 2, 12, "'extern' field outside an extension"),
])
def test_extern_field_errors_are_located(body, code, line, col, words):
    expect_error("struct S { float x; };\n" + body, code, line, col, words)
