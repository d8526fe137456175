"""Where no derivative is needed, none is asked for (Slang's rules):

* a call of a non-differentiable function that gets a derivative-carrying value is primal code
  when no derivative of its result is used (it only reaches an int conversion or a comparison);
  where one is used it stays E0006;
* a function whose backward derivative is a custom one is never differentiated by reverse mode,
  so its loops need no bound.

Derivatives against float64 central differences in both modes, forward against reverse."""

from __future__ import annotations

import pytest
from slang_harness import Compiled, compile_error

NON_DIFF_HELPER = "float h(float x) { return x * 1.5 + 0.25; }\n"


@pytest.mark.parametrize("x", [2.1, -0.7, 0.33])
def test_result_reaching_only_an_int_conversion(x):
    c = Compiled(NON_DIFF_HELPER + "[Differentiable] float f(float x) { float r = h(x); int k = int(r); return x * k; }", "f")
    (val,) = c.primal([x])
    assert val == pytest.approx(x * int(x * 1.5 + 0.25))
    c.check_derivatives([x])


@pytest.mark.parametrize("x", [1.3, -0.4])
def test_result_reaching_only_a_comparison(x):
    c = Compiled(NON_DIFF_HELPER + "[Differentiable] float f(float x) { if (h(x) > 1.0) return x * x; return sin(x); }", "f")
    c.check_derivatives([x])


def test_result_whose_derivative_is_used_is_still_refused():
    msg = compile_error(NON_DIFF_HELPER + "[Differentiable] float f(float x) { float r = h(x); return r * x; }")
    assert "E0006" in msg and "'h' is not differentiable" in msg and "prog.slang:2:" in msg


LOOPED_PRIMAL = """
[BackwardDerivative(f_bwd)]
float f(float x, int n) { float r = 0.0; for (int i = 0; i < n; i++) r += x * x; return r; }
void f_bwd(inout DifferentialPair<float> x, int n, float d) { x = diffPair(x.p, 2.0 * x.p * n * d); }
[Differentiable] float g(float x, int n) { return f(x, n) * 3.0 + x; }
"""


@pytest.mark.parametrize("n", [0, 1, 3])
def test_custom_backward_derivative_spares_the_primal_a_loop_bound(n):
    c = Compiled(LOOPED_PRIMAL, "g")
    c.check_derivatives([0.8, n])


def test_a_differentiated_loop_still_needs_its_bound():
    msg = compile_error("[Differentiable] float f(float x, int n) { float r = 0.0; for (int i = 0; i < n; i++) r += x; return r; }")
    assert "E0007" in msg
