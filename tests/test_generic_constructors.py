"""Generic constructors, `__init<T : I>(T v)` (also as an interface requirement), beside plain
ones, with `This`, `static This create(...)` and a cast `(S)v` of a generic parameter: derivatives
against finite differences, forward against reverse."""

from __future__ import annotations

import pytest

from slang_harness import Compiled, compile_error

VALUES = """
interface IVal : IDifferentiable
{
    [Differentiable] float getVal();
    [Differentiable] __init<T : IVal>(T other);
    [Differentiable] static This create(float v);
}
struct Sq : IVal
{
    float y;
    [Differentiable] __init(float v) { y = v; }  // a plain constructor beside the generic one
    [Differentiable] __init<T : IVal>(T other) { y = other.getVal() + 1.0; }
    [Differentiable] float getVal() { return y * y; }
    [Differentiable] static This create(float v) { This r; r.y = sin(v); return r; }
}
struct Scaled : IVal
{
    float x;
    [Differentiable] __init<T : IVal>(T other) { x = other.getVal() * 2.0; }
    [Differentiable] float getVal() { return x; }
    [Differentiable] static This create(float v) { This r = { v * v }; return r; }
}
struct Copy : IVal
{
    float z;
    // the argument is a Copy in every instance the program makes: the cast is the value itself
    [Differentiable] __init<T : IVal>(T other) { this = (Copy)other; z = z * 3.0; }
    [Differentiable] float getVal() { return exp(z); }
    [Differentiable] static This create(float v) { This r = { v }; return r; }
}
"""


def test_a_generic_constructor_takes_any_implementation():
    src = VALUES + """
[Differentiable] float f(float v)
{
    Sq s = Sq(v);               // the plain constructor: y = v
    Scaled a = Scaled(s);       // x = 2 v^2
    Sq b = Sq(a);               // y = 2 v^2 + 1
    return b.getVal();          // (2 v^2 + 1)^2
}
"""
    c = Compiled(src, "f")
    v = 0.7
    assert c.primal([v])[0] == pytest.approx((2 * v * v + 1) ** 2)
    c.check_derivatives([v])
    c.check_derivatives([-1.3])


def test_generic_code_constructs_through_the_requirement():
    src = VALUES + """
[Differentiable] float build<T : IVal, U : IVal>(float v) { T t = T.create(v); U u = U(t); return u.getVal(); }
[Differentiable] float f(float v) { return build<Sq, Scaled>(v) + build<Scaled, Sq>(v) + build<Copy, Copy>(v); }
"""
    import math

    c = Compiled(src, "f")
    v = 0.45
    want = 2 * math.sin(v) ** 2 + (v * v + 1) ** 2 + math.exp(3 * v)
    assert c.primal([v])[0] == pytest.approx(want)
    c.check_derivatives([v])


def test_casting_a_generic_argument_to_another_struct_is_a_located_error():
    src = VALUES + """
[Differentiable] float f(float v) { Sq s = Sq(v); Copy c = Copy(s); return c.getVal(); }
"""
    assert "error[E0003]: cannot cast Sq to Copy" in compile_error(src)
