"""Dynamic values of generic interface instances (`IScale<float>`, `ISum<3>`), dynamic_generic.py:
the union holds the structs naming that instance among their bases and the generic structs'
instances that do; derivatives against finite differences and forward against reverse."""

from __future__ import annotations

import math

import numpy as np
import pytest

from diffc.frontend import compile_slang
from slang_harness import Compiled, compile_error

SCALES = """
interface IScale<T : IFloat> : IDifferentiable { [Differentiable] T apply(T x); }
struct Twice : IScale<float> { float k; [Differentiable] float apply(float x) { return k * x * 2.0; } }
// another instance of the interface: not part of IScale<float>'s union
struct Wide : IScale<double> { double k; [Differentiable] double apply(double x) { return k + x; } }
// a generic struct: its instance Pow<float> implements IScale<float>
struct Pow<R : IFloat> : IScale<R> { R k; [Differentiable] R apply(R x) { return k * x * x * x; } }
struct Sine : IScale<float> { float k; [Differentiable] float apply(float x) { return sin(k * x); } }
[Differentiable] float f(int id, float k, float x)
{
    IScale<float> s;
    if (id == 0) s = Twice(k);
    else if (id == 1) s = Pow<float>(k);
    else s = Sine(k);
    return s.apply(x) + 1.0;
}
float viaObject(int tag, float k, float x) { IScale<float> s = createDynamicObject<IScale<float>>(tag, k); return s.apply(x); }
"""

BY_ID = [lambda k, x: 2 * k * x, lambda k, x: k * x**3, lambda k, x: math.sin(k * x)]


def test_a_generic_interface_instance_dispatches_over_its_implementations():
    c = Compiled(SCALES, "f")
    k, x = 0.8, 1.3
    for which, g in enumerate(BY_ID):
        assert c.primal([which, k, x])[0] == pytest.approx(g(k, x) + 1.0)
        c.check_derivatives([which, k, x])


def test_tags_follow_declaration_order_or_the_ids_given_by_instance_names():
    from diffc.compiler import apply_pipeline
    from diffc.interp import run_function

    def via(tag, ids=None):
        m = compile_slang(SCALES, "scales.slang", conformance_ids=ids)
        apply_pipeline(m)
        return run_function(m, "viaObject", tag, 0.5, 1.5)[0]

    k, x = 0.5, 1.5
    # declaration order: Twice, Pow<float> (where Pow is declared), Sine
    assert [via(t) for t in range(3)] == pytest.approx([g(k, x) for g in BY_ID])
    ids = {"IScale<float>": {"Pow<float>": 0, "Sine": 1, "Twice": 2}}
    assert [via(t, ids) for t in range(3)] == pytest.approx([BY_ID[1](k, x), BY_ID[2](k, x), BY_ID[0](k, x)])


SUMS = """
interface ISum<int N> : IDifferentiable { [Differentiable] float sum(vector<float, N> v); }
struct Plain : ISum<3> { float w; [Differentiable] float sum(float3 v) { return w * (v.x + v.y + v.z); } }
struct Squares<int M> : ISum<M>
{
    float w;
    [Differentiable] float sum(vector<float, M> v) { return w * dot(v, v); }
}
struct Pair : ISum<2> { float w; [Differentiable] float sum(float2 v) { return w * v.x * v.y; } }
[Differentiable] float f(int id, float w, float3 v, float2 u)
{
    ISum<3> a;
    ISum<2> b;
    if (id == 0) { a = Plain(w); b = Pair(w); }
    else { a = Squares<3>(w); b = Squares<2>(w); }
    return a.sum(v) + 10.0 * b.sum(u);
}
"""


def test_an_int_generic_interface_has_one_union_per_value():
    c = Compiled(SUMS, "f")
    w, v, u = 0.7, np.array([0.5, -1.0, 2.0]), np.array([1.5, -0.25])
    assert c.primal([0, w, v, u])[0] == pytest.approx(w * v.sum() + 10 * w * u[0] * u[1])
    assert c.primal([1, w, v, u])[0] == pytest.approx(w * v @ v + 10 * w * u @ u)
    for which in (0, 1):
        c.check_derivatives([which, w, v, u])


def test_wrong_generic_argument_count_is_a_located_error():
    msg = compile_error(SCALES + "float g(float x) { return createDynamicObject<IScale>(0, x).apply(x); }\n")
    assert "error[E0005]: interface 'IScale' takes 1 generic arguments, got 0" in msg


def test_an_implementation_through_an_inherited_interface_is_refused():
    src = SCALES + """
interface IMore : IScale<float> { }
struct Late : IMore { float k; [Differentiable] float apply(float x) { return x; } }
"""
    msg = compile_error(src)
    assert "error[E0008]: dynamic dispatch over 'IScale<float>': 'Late' implements 'IScale' without naming its " \
           "generic arguments, which is not supported" in msg
