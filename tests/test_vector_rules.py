"""Derivative rules of vector.broadcast / extract / insert (diffc/rules/vector_rules.py): on
IR written by hand (n-D broadcasts, dynamic positions) and through the front end (splats,
swizzles, swizzle assignment, constructors, the geometric builtins on float2/3/4). Forward and
reverse mode are both checked against float64 central differences and against each other."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import Compiled

from diffc.rules import lookup_rule

RNG = np.random.default_rng(7)


def vec(n: int) -> np.ndarray:
    return RNG.uniform(-1.0, 1.0, n)


def test_vector_ops_have_rules_for_both_modes():
    from xdsl.dialects import vector

    for op in (vector.BroadcastOp, vector.ExtractOp, vector.InsertOp):
        rule = lookup_rule(op)
        assert rule is not None and rule.jvp is not None and rule.vjp is not None, op.name


# -- hand-written IR ----------------------------------------------------------------------------

SCALAR_SPLAT_2D = """
func.func @f(%x: f64) -> vector<2x3xf64> attributes {diff.differentiable} {
  %s = arith.mulf %x, %x : f64
  %v = vector.broadcast %s : f64 to vector<2x3xf64>
  %w = vector.broadcast %x : f64 to vector<2x3xf64>
  %r = arith.mulf %v, %w : vector<2x3xf64>
  func.return %r : vector<2x3xf64>
}
"""

ROW_BROADCAST = """
func.func @f(%v: vector<3xf64>) -> vector<2x3xf64> attributes {diff.differentiable} {
  %b = vector.broadcast %v : vector<3xf64> to vector<2x3xf64>
  %c = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : vector<2x3xf64>
  %r = arith.mulf %b, %c : vector<2x3xf64>
  %s = arith.mulf %r, %b : vector<2x3xf64>
  func.return %s : vector<2x3xf64>
}
"""

DYNAMIC_POSITIONS = """
func.func @f(%v: vector<4xf64>, %x: f64, %i: index, %j: index) -> (f64, vector<4xf64>) attributes {diff.differentiable} {
  %a = vector.extract %v[%i] : f64 from vector<4xf64>
  %p = arith.mulf %a, %x : f64
  %w = vector.insert %p, %v [%j] : f64 into vector<4xf64>
  %b = vector.extract %w[%i] : f64 from vector<4xf64>
  %q = arith.mulf %b, %b : f64
  func.return %q, %w : f64, vector<4xf64>
}
"""

STATIC_2D = """
func.func @f(%m: vector<2x3xf64>, %r: vector<3xf64>) -> vector<2x3xf64> attributes {diff.differentiable} {
  %row = vector.extract %m[1] : vector<3xf64> from vector<2x3xf64>
  %sq = arith.mulf %row, %r : vector<3xf64>
  %out = vector.insert %sq, %m [0] : vector<3xf64> into vector<2x3xf64>
  %e = vector.extract %out[0, 2] : f64 from vector<2x3xf64>
  %out2 = vector.insert %e, %out [1, 0] : f64 into vector<2x3xf64>
  func.return %out2 : vector<2x3xf64>
}
"""


def test_scalar_broadcast_to_2d_sums_all_lanes_in_reverse():
    c = Compiled.from_ir(SCALAR_SPLAT_2D, "f")
    c.check_derivatives([0.8])
    (g,) = c.bwd([0.8], [np.ones((2, 3))])
    assert g == pytest.approx(6 * 3 * 0.8**2)  # d/dx of six lanes of x^3


def test_vector_broadcast_to_rows_sums_over_rows():
    c = Compiled.from_ir(ROW_BROADCAST, "f")
    v = vec(3)
    c.check_derivatives([v])
    (g,) = c.bwd([v], [np.ones((2, 3))])
    np.testing.assert_allclose(g, 2 * v * np.array([5.0, 7.0, 9.0]))


@pytest.mark.parametrize("i,j", [(0, 0), (1, 3), (3, 1), (2, 2)])
def test_extract_and_insert_at_dynamic_positions(i, j):
    c = Compiled.from_ir(DYNAMIC_POSITIONS, "f")
    c.check_derivatives([vec(4), 0.6, i, j])


def test_extract_and_insert_rows_and_elements_of_2d_vectors():
    c = Compiled.from_ir(STATIC_2D, "f")
    c.check_derivatives([RNG.uniform(-1, 1, (2, 3)), vec(3)])


# -- through the front end ----------------------------------------------------------------------


def test_splat_of_a_differentiable_scalar():
    c = Compiled("[Differentiable] float3 f(float x) { return float3(x) * float3(1.0, 2.0, 3.0) + x * x; }", "f")
    (v,) = c.primal([0.5])
    np.testing.assert_allclose(v, 0.5 * np.array([1.0, 2.0, 3.0]) + 0.25)
    c.check_derivatives([0.5])


def test_scalar_promoted_to_vector_in_arithmetic():
    c = Compiled("[Differentiable] float f(float x, float4 v) { float4 w = v * x + x; return w.x * w.y + w.z - w.w; }", "f")
    c.check_derivatives([0.3, vec(4)])


def test_swizzle_read_reverse_and_repeat():
    src = "[Differentiable] float4 f(float4 v) { float4 r = v.wzyx; return r * v.xxyy + float4(v.zz, v.xy); }"
    c = Compiled(src, "f")
    v = vec(4)
    (out,) = c.primal([v])
    np.testing.assert_allclose(out, v[::-1] * v[[0, 0, 1, 1]] + np.concatenate([v[[2, 2]], v[[0, 1]]]))
    c.check_derivatives([v])


def test_swizzle_assignment_reads_the_old_vector():
    src = "[Differentiable] float3 f(float3 p, float s) { p.xy = p.zx * s; p.z = p.y * p.x; return p; }"
    c = Compiled(src, "f")
    p = vec(3)
    (out,) = c.primal([p, 0.7])
    x, y = p[2] * 0.7, p[0] * 0.7
    np.testing.assert_allclose(out, [x, y, y * x])
    c.check_derivatives([p, 0.7])


def test_element_assignment_with_a_dynamic_index():
    src = "[Differentiable] float f(float3 v, float x, int k) { v[k] = v[k] * x; return dot(v, v); }"
    c = Compiled(src, "f")
    for k in range(3):
        v = vec(3)
        (val,) = c.primal([v, 0.4, k])
        w = v.copy()
        w[k] *= 0.4
        assert val == pytest.approx(w @ w)
        c.check_derivatives([v, 0.4, k])


def test_constructor_from_mixed_scalars_and_vectors():
    src = "[Differentiable] float4 f(float2 a, float b) { return float4(b, a, b * b) * float4(a.yx, 1.0, b); }"
    c = Compiled(src, "f")
    c.check_derivatives([vec(2), 0.9])


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize(
    "expr,ref",
    [
        ("dot(a, b)", lambda a, b: a @ b),
        ("length(a) * distance(a, b)", lambda a, b: np.linalg.norm(a) * np.linalg.norm(a - b)),
        ("dot(normalize(a), reflect(a, normalize(b)))",
         lambda a, b: (a / np.linalg.norm(a)) @ (a - 2 * ((b / np.linalg.norm(b)) @ a) * b / np.linalg.norm(b))),
        ("length(reflect(a.yx, b.xy) + a.xy)", lambda a, b: np.linalg.norm(a[[1, 0]] - 2 * (b[:2] @ a[[1, 0]]) * b[:2] + a[:2])),
    ],
)
def test_geometric_builtins_on_swizzled_vectors(n, expr, ref):
    src = f"[Differentiable] float f(float{n} a, float{n} b) {{ return {expr}; }}"
    c = Compiled(src, "f")
    a, b = vec(n), vec(n)
    (val,) = c.primal([a, b])
    assert val == pytest.approx(ref(a, b), rel=1e-12)
    c.check_derivatives([a, b])


def test_cross_of_swizzles():
    src = "[Differentiable] float3 f(float3 a, float3 b) { return cross(a.zxy, b) + cross(b, float3(a.x)); }"
    c = Compiled(src, "f")
    a, b = vec(3), vec(3)
    (val,) = c.primal([a, b])
    np.testing.assert_allclose(val, np.cross(a[[2, 0, 1]], b) + np.cross(b, np.full(3, a[0])), rtol=1e-12)
    c.check_derivatives([a, b])


SPLAT_MAIN = """
[Differentiable]
float f(float x) { float3 v = float3(x); float3 w = v * float3(1.0, 2.0, 3.0); return dot(w, w.zyx); }
void main() {
    let r = fwd_diff(f)(diffPair(2.0, 1.0));
    var x = diffPair(2.0, 0.0);
    bwd_diff(f)(x, 1.0);
    printf("%f %f %f\\n", r.p, r.d, x.d);
}
"""


def test_splat_through_diffc_run_on_opencl(tmp_path, capfd):
    """The splat program that used to fail with "'vector.broadcast' has no derivative rule":
    f(x) = 10 x^2, so f(2) = 40 and f'(2) = 40 in both modes."""
    from diffc.cli import main

    path = tmp_path / "splat.slang"
    path.write_text(SPLAT_MAIN)
    assert main(["run", str(path)]) == 0
    out = capfd.readouterr().out.split()
    assert [float(x) for x in out] == pytest.approx([40.0, 40.0, 40.0])
