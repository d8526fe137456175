"""The one activity analysis (diffc.ad.activity): what diff-rev and diff-fwd use, and what the
front end's checks will call through `active_values`."""

from __future__ import annotations

import pytest
from xdsl.dialects import func
from xdsl.utils.exceptions import PassFailedException

from diffc import interp
from diffc.ad.activity import Activity, active_ops, active_values
from diffc.dialects import diff

SRC = """
func.func @g(%a: f32) -> f32 attributes {diff.differentiable, diff.bwd_derivative = @g_bwd} {
  func.return %a : f32
}
func.func @g_bwd(%a: f32, %d: f32) -> f32 {
  func.return %d : f32
}
func.func @f(%x: f32, %y: f32, %n: index, %buf: memref<4xf32>) -> f32 attributes {diff.differentiable} {
  %c = arith.constant 2.0 : f32
  %m = arith.mulf %x, %c : f32
  %k = arith.constant 0 : index
  memref.store %m, %buf[%k] : memref<4xf32>
  %l = memref.load %buf[%k] : memref<4xf32>
  %det = diff.detach %y : f32
  %w = arith.addf %det, %l : f32
  %lb = arith.constant 0 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %n step %st iter_args(%acc = %w) -> (f32) {
    %t = arith.addf %acc, %m : f32
    scf.yield %t : f32
  }
  %h = func.call @g(%c) : (f32) -> f32
  %o = arith.addf %r, %h : f32
  func.return %o : f32
}
"""


def _values():
    module = interp.parse_module(SRC)
    fns = {f.sym_name.data: f for f in module.walk() if isinstance(f, func.FuncOp)}
    f = fns["f"]
    named = {}
    for op in f.walk():
        for r in op.results:
            if r.name_hint:
                named[r.name_hint] = r
    for a in f.body.block.args:
        named[a.name_hint] = a
    return f, fns, named


def test_active_values_follow_derivatives():
    f, fns, v = _values()
    act = active_values(f, fns)
    for name in ("x", "y", "m", "r", "o"):
        assert v[name] in act, name
    for name in ("c", "l", "det", "n", "buf"):  # constants, memory, detached values, non-floats
        assert v[name] not in act, name
    assert v["w"] not in act  # detach(y) + a load: neither carries a derivative
    # the loop's iter_arg varies through the yielded acc + m (a fixed point)
    loop = v["r"].owner
    assert loop.body.block.args[1] in act
    # a call of a function with a custom backward derivative varies even with a constant argument
    assert v["h"] in act
    assert v["h"] not in active_values(f, fns, kind=diff.FWD_DERIVATIVE)


def test_chosen_parameters():
    f, fns, v = _values()
    act = active_values(f, fns, args=[1])  # y only: x's products do not vary
    assert v["y"] in act and v["x"] not in act and v["m"] not in act


def test_ops_that_receive_a_derivative_without_a_rule_are_listed_not_raised():
    f, fns, v = _values()
    act = active_values(f, fns)
    stores = [op for op in active_ops(f, act) if op.name == "memref.store"]
    assert len(stores) == 1
    with pytest.raises(PassFailedException, match="'memref.store' has no derivative rule"):
        Activity(f, fns)  # the passes' strict analysis refuses it
