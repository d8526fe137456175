"""Differential types of a struct's own: `typealias Differential = B` with `[DerivativeMember(B.f)]`
fields, and C's brace elision in initializer lists. Derivatives against float64 central
differences (slang_harness) or arithmetic written out here."""

from __future__ import annotations

import pytest
from slang_harness import Compiled, run_function, run_pipeline

from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang

OWN = """
struct Grad : IDifferentiable { float dx; float3 dv; }
struct Particle : IDifferentiable {
    typealias Differential = Grad;
    [DerivativeMember(Differential.dx)] float x;
    int id;
    [DerivativeMember(Grad.dv)] float3 v;
    float tag;   // no DerivativeMember: carries no derivative
    [Differentiable] float energy() { return x * x * dot(v, v) + tag; }
}
"""


def _run(src: str, fname: str, *args) -> float:
    module = compile_slang(src, "test.slang")
    run_pipeline(module)
    (value,) = run_function(module, fname, *args)
    return float(value)


def test_derivative_members_hold_the_derivative_in_the_own_differential_type():
    src = OWN + """
[Differentiable] float f(float a, float3 b) { Particle p = { a, 7, b, 0.0 }; return p.energy(); }
"""
    Compiled(src, "f").check_derivatives([0.6, [0.2, -0.5, 1.1]])


def test_a_field_without_derivative_member_carries_no_derivative():
    src = OWN + """
[Differentiable] float f(float a, float t) { Particle p = { a, 7, float3(1.0, 2.0, 0.0), t * t }; return p.energy(); }
"""
    c = Compiled(src, "f")
    da, dt = (float(g) for g in c.bwd([0.5, 3.0], [1.0]))
    assert da == pytest.approx(2 * 0.5 * 5.0) and dt == 0.0


def test_the_pair_of_a_struct_with_an_own_differential_has_that_type():
    src = OWN + """
[Differentiable] float e(Particle p) { return p.energy(); }
float g(float a) {
    Particle p = { a, 1, float3(1.0, 0.0, 0.0), 0.0 };
    Grad none = { 0.0, float3(0.0) };
    var dp = diffPair(p, none);
    bwd_diff(e)(dp, 1.0);
    return dp.d.dx;
}
"""
    assert _run(src, "g", 1.5) == pytest.approx(2 * 1.5)


def test_an_own_differential_in_another_layout_is_a_located_error():
    src = """
struct D : IDifferentiable { float b; float a; }
struct S : IDifferentiable {
    typealias Differential = D;
    [DerivativeMember(D.a)] float a;
    [DerivativeMember(D.b)] float b;
}
"""
    with pytest.raises(DiffcError, match=r"test.slang:4:5: error\[E0008\]: Differential type D of 'S' must hold "
                       r"its fields' derivatives in the order of those fields \(float a, float b\)"):
        compile_slang(src, "test.slang")


def test_brace_elision_fills_nested_arrays_structs_and_vectors_in_order():
    src = """
struct Inner { float2 p; float q[2]; }
struct Outer { float w[3]; Inner i; }
float f(float x) {
    Outer o = { x, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0 };
    return o.w[0] * 1.0 + o.w[2] * 10.0 + o.i.p.y * 100.0 + o.i.q[1] * 1000.0;
}
"""
    assert _run(src, "f", 1.0) == 1.0 + 30.0 + 500.0 + 7000.0


def test_brace_elision_applies_where_an_item_does_not_fit_its_aggregate_member():
    # as many items as members, but the first member is a struct: C elides its braces
    src = """
struct B { float x; }
struct A { B b; float y; }
float f(float x) { A a = { x, 2.0 }; return a.b.x * 10.0 + a.y; }
"""
    assert _run(src, "f", 3.0) == 3.0 * 10.0 + 2.0
