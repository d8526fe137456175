"""Derivatives through vector.extract / insert / broadcast (diffc/rules/vector_rules.py), from
Slang code that builds, swizzles and reduces vectors: reverse mode against float64 central
differences, and forward against reverse (<u, J v> = <J^T u, v>)."""

from __future__ import annotations

import numpy as np
import pytest

from slang_helpers import central_difference, lowered, run

SRC = """
[Differentiable]
float f(float3 v, float s)
{
    float3 w = v * s;              // broadcast of s
    w.y = w.x * v.z;               // insert into a vector
    float2 p = float2(v.z, w.y);   // built from extracted components
    return dot(w, v) + p.x * p.y + length(w.xz);
}

float4 grad(float3 v, float s)
{
    var dv = diffPair(v);
    var ds = diffPair(s);
    bwd_diff(f)(dv, ds, 1.0);
    return float4(dv.d.x, dv.d.y, dv.d.z, ds.d);
}

float tangent(float3 v, float s, float3 u, float t)
{
    return fwd_diff(f)(diffPair(v, u), diffPair(s, t)).d;
}
"""


@pytest.fixture(scope="module")
def module():
    return lowered(SRC)


POINTS = [[0.3, -1.2, 0.8, 1.7], [1.1, 0.4, -0.6, -0.9]]


@pytest.mark.parametrize("x", POINTS)
def test_reverse_matches_central_differences(module, x):
    def fval(a, b, c, s):
        return run(module, "f", np.array([a, b, c]), s)[0]

    (g,) = run(module, "grad", np.array(x[:3]), x[3])
    fd = [central_difference(fval, x, i) for i in range(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("x", POINTS)
def test_forward_agrees_with_reverse(module, x):
    rng = np.random.default_rng(7)
    v = rng.normal(size=4)
    (jv,) = run(module, "tangent", np.array(x[:3]), x[3], v[:3], v[3])
    (g,) = run(module, "grad", np.array(x[:3]), x[3])
    assert jv == pytest.approx(float(np.dot(g, v)), rel=1e-10)
