"""Calls of non-differentiable functions inside differentiated ones (E0006): decided by the one
activity analysis (diffc.ad.activity, on the front end's IR in frontend/lowering/derivative_checks.py),
as Slang decides by data flow. A value that carries no derivative may pass (a constant, an
integer's conversion, a detached value, a no_diff parameter's); one that depends on a
differentiable parameter may not. Accepted programs' derivatives are checked against finite
differences."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled

from diffc.diagnostics import DiffcError
from diffc.frontend import compile_slang

G = "float g(float a) { return a * a + 1.0; }\n"


@pytest.mark.parametrize("body", [
    "float c = 2.0; return g(c) * x;",                      # a constant in a variable
    "int k = 3; return g(float(k)) * sin(x);",               # an integer's conversion
    "float c = 1.0; if (x > 0.0) c = 4.0; return g(c) * x;",  # a branch on x, constants on both sides
    "return g(y) * x;",                                      # a no_diff parameter
])
def test_values_without_derivative_pass(body):
    src = G + f"[Differentiable] float f(float x, no_diff float y) {{ {body} }}\n"
    c = Compiled(src, "f")
    for x in (0.7, -1.3):
        c.check_derivatives([x, 0.4])


@pytest.mark.parametrize("body,call", [
    ("return g(x);", "g(x)"),
    ("float c = x * 0.0; return g(c);", "g(c)"),                    # zero, but it depends on x
    ("float c = 1.0; for (int i = 0; i < 3; i++) { c = c * x; } return g(c);", "g(c)"),  # loop-carried
    ("float c = 2.0; if (x > 0.0) c = x; return g(c);", "g(c)"),  # on one branch
])
def test_derivative_carrying_values_are_refused_at_the_call(body, call):
    src = G + f"[Differentiable]\nfloat f(float x) {{ {body} }}\n"
    with pytest.raises(DiffcError) as info:
        compile_slang(src, "nd.slang")
    head, text, caret = str(info.value).splitlines()
    col = src.splitlines()[2].index(call) + 1
    assert head == (f"nd.slang:3:{col}: error[E0006]: 'g' is not differentiable but gets a derivative-carrying "
                    "value in differentiable 'f': mark it [Differentiable] or call it with no_diff")
    assert caret.strip() == "^" * len(call)


def test_checked_where_nothing_differentiates_it_and_where_bwd_diff_does():
    # [Differentiable] functions are checked whether or not fwd_diff/bwd_diff reaches them (the
    # runtime may differentiate them from Python), and their callees through the call graph
    nothing = G + "[Differentiable] float f(float x) { return g(x * 2.0); }\n"
    with pytest.raises(DiffcError, match=r":2:\d+: error\[E0006\]: 'g' is not differentiable"):
        compile_slang(nothing, "nd.slang")
    reached = G + ("[Differentiable] float h(float x) { return g(sin(x)); }\n"
                   "[Differentiable] float f(float x) { return h(x); }\n"
                   "void main() { var p = diffPair(1.0); bwd_diff(f)(p, 1.0); }\n")
    with pytest.raises(DiffcError, match=r":2:\d+: error\[E0006\]: 'g' is not differentiable .* in differentiable 'h'"):
        compile_slang(reached, "nd.slang")


def test_detached_argument_passes_as_a_constant():
    # detach drops the derivative on purpose, so finite differences of f do not apply: d/dx of
    # g(detach(x)) * x is g(x) = x^2 + 1, in both modes
    c = Compiled(G + "[Differentiable] float f(float x) { return g(detach(x)) * x; }\n", "f")
    for x in (0.7, -1.3):
        r = c.compare([x], 0)
        np.testing.assert_allclose(r.jv, (x * x + 1) * r.v, rtol=1e-12)
        np.testing.assert_allclose(r.jtu, (x * x + 1) * r.u, rtol=1e-12)


def test_no_diff_call_and_calls_that_return_no_derivative_stay_accepted():
    src = ("void note(float a, out int n) { n = int(a); }\n"
           + G + "[Differentiable] float f(float x) { int n; note(x, n); return no_diff g(x) * x + float(n); }\n")
    r = Compiled(src, "f").compare([0.6], 0)  # no_diff drops g's derivative: d/dx is g(0.6) = 1.36
    np.testing.assert_allclose(r.jv, 1.36 * r.v, rtol=1e-12)
    np.testing.assert_allclose(r.jtu, 1.36 * r.u, rtol=1e-12)
