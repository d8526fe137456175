"""A derivative-carrying value passed to a function that has no derivative is no error when what
that function gives back feeds no derivative (Slang drops it there): here its results are ints,
through a second such function (the shape of a Gaussian splat's pixel radius). Where they do
feed one, the call is the located E0006. Derivatives checked against float64 central
differences in both modes."""

from __future__ import annotations

import pytest
from slang_helpers import central_difference, expect_error, run

SRC = """
struct Rect { int lo; int hi; };
float radius(float x) { return ceil(3.0 * abs(x)); }
Rect around(float r) { Rect q = { -int(r), int(r) }; return q; }
[Differentiable] float f(float x) { float r = radius(x); Rect q = around(r); return x * x * float(q.hi - q.lo); }
float fwd(float x) { return fwd_diff(f)(diffPair(x, 1.0)).d; }
float bwd(float x) { var p = diffPair(x); bwd_diff(f)(p, 1.0); return p.d; }
"""


@pytest.mark.parametrize("x", [0.8, -1.55])
def test_the_dropped_derivative_leaves_the_rest(x):
    import math

    def value(v):
        n = 2 * int(math.ceil(3.0 * abs(v)))
        return v * v * n

    want = central_difference(value, [x], 0)  # (away from the jumps of the radius)
    assert run(SRC, "f", x)[0] == pytest.approx(value(x))
    assert run(SRC, "fwd", x)[0] == pytest.approx(want, rel=1e-6)
    assert run(SRC, "bwd", x)[0] == pytest.approx(want, rel=1e-6)


def test_a_result_that_feeds_a_derivative_is_located():
    expect_error("float h(float x) { return 2.0 * x; }\nfloat g(float r) { return r + 1.0; }\n"
                 "[Differentiable] float f(float x) { float r = h(x); return x * g(r); }", "E0006", 3, 47, "'h'")
