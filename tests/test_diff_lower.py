"""diff-lower: hand-written pair code lowered to plain values, checked structurally (no diff type
or op left, valid IR that prints and parses back) and by running it in diffc.interp."""

from __future__ import annotations

import math

import pytest
from conftest import print_module, run_pipeline
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from diffc.dialects.diff import Diff
from diffc.interp import parse_module, run_function
from diffc.passes.diff_lower import flat_types


def lower(src: str) -> tuple[ModuleOp, str]:
    module = run_pipeline(src, "diff-lower")
    text = print_module(module)
    diff_ops = {op.name for op in Diff.operations}
    for op in module.walk():
        assert op.name not in diff_ops, op.name
        for v in [*op.operands, *op.results]:
            assert not v.type.name.startswith("diff."), v.type
    assert "!diff." not in text
    return parse_module(text), text


PAIRS = """
func.func @callee(%p: !diff.pair<f32>, %n: index) -> (!diff.pair<f32>, index) {
  %x = diff.primal %p : !diff.pair<f32>
  %d = diff.differential %p : !diff.pair<f32>
  %two = arith.constant 2.0 : f32
  %x2 = arith.mulf %x, %two : f32
  %q = diff.make_pair %x2, %d : f32
  func.return %q, %n : !diff.pair<f32>, index
}
func.func @ops(%x: f32, %y: f32, %n: index) -> (!diff.pair<f32>, index) {
  %z = diff.zero : f32
  %s = diff.add %y, %z : f32
  %s2 = diff.add %s, %y : f32
  %dx = diff.detach %x : f32
  %p = diff.make_pair %dx, %s2 : f32
  %r, %m = func.call @callee(%p, %n) : (!diff.pair<f32>, index) -> (!diff.pair<f32>, index)
  %a = diff.primal %r : !diff.pair<f32>
  %b = diff.differential %r : !diff.pair<f32>
  %c = arith.mulf %a, %b : f32
  %q = diff.make_pair %c, %b : f32
  func.return %q, %m : !diff.pair<f32>, index
}
"""


def test_pairs_through_calls():
    m, _ = lower(PAIRS)
    c, d, n = run_function(m, "ops", 1.5, 0.25, 7)
    # s2 = y + y = 0.5; callee doubles the primal: a = 3.0, b = 0.5
    assert c == pytest.approx(1.5) and d == pytest.approx(0.5) and n == 7


PAIR_OF_PAIR = """
func.func @swap(%q: !diff.pair<!diff.pair<f32>>) -> !diff.pair<!diff.pair<f32>> {
  %a = diff.primal %q : !diff.pair<!diff.pair<f32>>
  %b = diff.differential %q : !diff.pair<!diff.pair<f32>>
  %z = diff.zero : !diff.pair<f32>
  %s = diff.add %b, %a : !diff.pair<f32>
  %s2 = diff.add %s, %z : !diff.pair<f32>
  %r = diff.make_pair %s2, %a : !diff.pair<f32>
  func.return %r : !diff.pair<!diff.pair<f32>>
}
"""


def test_pair_of_pair_is_four_values():
    assert len(flat_types(parse_module(PAIR_OF_PAIR).body.block.first_op.function_type.inputs.data[0])) == 4
    m, _ = lower(PAIR_OF_PAIR)
    r = run_function(m, "swap", 1.0, 2.0, 10.0, 20.0)
    assert r == pytest.approx((11.0, 22.0, 1.0, 2.0))


SCF = """
func.func @regions(%p: !diff.pair<f32>, %c: i1, %n: index) -> !diff.pair<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = scf.if %c -> (!diff.pair<f32>) {
    scf.yield %p : !diff.pair<f32>
  } else {
    %x = diff.primal %p : !diff.pair<f32>
    %z = diff.zero : f32
    %q = diff.make_pair %x, %z : f32
    scf.yield %q : !diff.pair<f32>
  }
  %f = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a) -> (!diff.pair<f32>) {
    %u = diff.primal %acc : !diff.pair<f32>
    %v = diff.differential %acc : !diff.pair<f32>
    %m = arith.mulf %u, %u : f32
    %t = arith.mulf %u, %v : f32
    %t2 = arith.addf %t, %t : f32
    %r = diff.make_pair %m, %t2 : f32
    scf.yield %r : !diff.pair<f32>
  }
  %w = scf.while (%b = %f) : (!diff.pair<f32>) -> !diff.pair<f32> {
    %bp = diff.primal %b : !diff.pair<f32>
    %lim = arith.constant 100.0 : f32
    %gt = arith.cmpf ogt, %bp, %lim : f32
    scf.condition(%gt) %b : !diff.pair<f32>
  } do {
  ^bb0(%e: !diff.pair<f32>):
    %ep = diff.primal %e : !diff.pair<f32>
    %ed = diff.differential %e : !diff.pair<f32>
    %h = arith.constant 0.5 : f32
    %eh = arith.mulf %ep, %h : f32
    %edh = arith.mulf %ed, %h : f32
    %n2 = diff.make_pair %eh, %edh : f32
    scf.yield %n2 : !diff.pair<f32>
  }
  func.return %w : !diff.pair<f32>
}
"""


@pytest.mark.parametrize("x,dx,c,n", [(3.0, 1.0, True, 2), (3.0, 1.0, False, 2), (1.5, 2.0, True, 3)])
def test_scf_regions(x, dx, c, n):
    m, _ = lower(SCF)
    p, d = run_function(m, "regions", x, dx, c, n)
    # by hand: square n times (tangent follows d(u^2) = 2u du), then halve while above 100
    u, v = x, (dx if c else 0.0)
    for _ in range(n):
        u, v = u * u, 2 * u * v
    while u > 100.0:
        u, v = u / 2, v / 2
    assert p == pytest.approx(u) and d == pytest.approx(v)


def test_vector_zero_is_splat():
    m, text = lower(
        """
func.func @vz(%x: vector<2xf64>) -> !diff.pair<vector<2xf64>> {
  %z = diff.zero : vector<2xf64>
  %p = diff.make_pair %x, %z : vector<2xf64>
  func.return %p : !diff.pair<vector<2xf64>>
}"""
    )
    assert "dense<0.000000e+00> : vector<2xf64>" in text
    p, d = run_function(m, "vz", [1.0, 2.0])
    assert list(p) == [1.0, 2.0] and list(d) == [0.0, 0.0]


def test_ptr_pair_accumulate():
    m, text = lower(
        """
func.func @acc(%v: f32) -> (f32, f32) {
  %m = memref.alloc() : memref<2xf32>
  %g = memref.alloc() : memref<2xf32>
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %g[%c0] : memref<2xf32>
  memref.store %v, %m[%c0] : memref<2xf32>
  %pp = diff.make_ptr_pair %m, %g : memref<2xf32>
  diff.accumulate %v, %pp[%c0] : !diff.ptr_pair<memref<2xf32>>, f32, index
  diff.accumulate %v, %pp[%c0] : !diff.ptr_pair<memref<2xf32>>, f32, index
  %gl = diff.ptr_gradient %pp : !diff.ptr_pair<memref<2xf32>>
  %pl = diff.ptr_primal %pp : !diff.ptr_pair<memref<2xf32>>
  %a = memref.load %gl[%c0] : memref<2xf32>
  %b = memref.load %pl[%c0] : memref<2xf32>
  func.return %a, %b : f32, f32
}"""
    )
    a, b = run_function(m, "acc", 1.25)
    assert a == pytest.approx(2.5) and b == pytest.approx(1.25)


def test_custom_derivative_links_dropped():
    _, text = lower(
        """
func.func @sq(%x: f32) -> f32 attributes {diff.differentiable, diff.fwd_derivative = @sq_d} {
  %m = arith.mulf %x, %x : f32
  func.return %m : f32
}
func.func @sq_d(%p: !diff.pair<f32>) -> !diff.pair<f32> {
  func.return %p : !diff.pair<f32>
}"""
    )
    assert "diff.fwd_derivative" not in text
    assert "func.func @sq_d(%p : f32, %p_d : f32)" in text or "func.func @sq_d(%p: f32, %p_d: f32)" in text


def test_fwd_diff_left_is_an_error():
    src = """
func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  func.return %x : f32
}
func.func @main(%x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}"""
    with pytest.raises(PassFailedException, match=r"in function @main: 'diff.fwd_diff'"):
        run_pipeline(src, "diff-lower")


def test_math_unchanged_by_lowering():
    m, _ = lower(
        """
func.func @plain(%x: f64) -> f64 {
  %s = math.sin %x : f64
  func.return %s : f64
}"""
    )
    (r,) = run_function(m, "plain", 0.3)
    assert r == pytest.approx(math.sin(0.3))
