"""pow's derivative: a partial that is not finite is 0, as Slang's (the slope at 0 is infinite
for y < 1), so a gamma curve after a ReLU (`pow(max(x, 0), 1 / 2.2)`) gives 0, not NaN, where
the ReLU is off; elsewhere the formula, against float64 central differences, forward and
reverse, scalars and vectors."""

from __future__ import annotations

import math

import pytest
from slang_helpers import central_difference, run

SRC = """
[Differentiable] float gamma(float x, float e) { return pow(max(x, 0.0), e); }
float dx_bwd(float x, float e) { var a = diffPair(x); var b = diffPair(e); bwd_diff(gamma)(a, b, 1.0); return a.d; }
float de_bwd(float x, float e) { var a = diffPair(x); var b = diffPair(e); bwd_diff(gamma)(a, b, 1.0); return b.d; }
float dx_fwd(float x, float e) { return fwd_diff(gamma)(diffPair(x, 1.0), diffPair(e, 0.0)).d; }
float de_fwd(float x, float e) { return fwd_diff(gamma)(diffPair(x, 0.0), diffPair(e, 1.0)).d; }
[Differentiable] float3 gamma3(float3 c) { return pow(max(c, float3(0.0)), float3(0.4545)); }
float3 d3(float3 c) { var p = diffPair(c); bwd_diff(gamma3)(p, float3(1.0)); return p.d; }
"""


@pytest.mark.parametrize("x,e", [(0.7, 1 / 2.2), (1.9, 2.5), (0.3, 3.0), (0.02, 0.8)])
def test_partials_against_central_differences(x, e):
    f = lambda a, b: math.pow(max(a, 0.0), b)
    gx, ge = central_difference(f, [x, e], 0), central_difference(f, [x, e], 1)
    for name, want in (("dx_bwd", gx), ("dx_fwd", gx), ("de_bwd", ge), ("de_fwd", ge)):
        assert run(SRC, name, x, e)[0] == pytest.approx(want, rel=1e-6), name


@pytest.mark.parametrize("x", [-0.5, 0.0])
def test_no_derivative_where_the_slope_is_infinite(x):
    for name in ("dx_bwd", "dx_fwd", "de_bwd", "de_fwd"):
        assert run(SRC, name, x, 1 / 2.2)[0] == 0.0, name


def test_vector_lanes_each_their_own():
    got = run(SRC, "d3", [-1.0, 0.25, 2.0])[0]
    want = [0.0, 0.4545 * 0.25 ** (0.4545 - 1), 0.4545 * 2.0 ** (0.4545 - 1)]
    assert list(got) == pytest.approx(want, rel=1e-6)  # (0.4545 is a float literal: rounded to float)


def test_a_negative_base_with_a_whole_exponent_keeps_its_derivative():
    src = "[Differentiable] float cube(float x) { return pow(x, 3.0); }\n" \
          "float d(float x) { var p = diffPair(x); bwd_diff(cube)(p, 1.0); return p.d; }"
    assert run(src, "d", -1.5)[0] == pytest.approx(3 * 1.5 ** 2, rel=1e-9)
