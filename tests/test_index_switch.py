"""scf.index_switch, differentiated through its one rule file (diffc/ad/rules/scf_index_switch.py):
both modes against float64 central finite differences, and forward against reverse
(<u, J v> = <J^T u, v>), for every case and the default, at the top level and inside a loop
(so that diff-checkpoint stores or recomputes values of the cases)."""

from __future__ import annotations

import pytest
from conftest import CANONICAL, central, finite_difference, gradient, run, run_pipeline, with_fwd_main

SWITCH = """
func.func @f(%x: f32, %y: f32, %k: index) -> f32 attributes {diff.differentiable} {
  %r = scf.index_switch %k -> f32
  case 0 {
    %a = arith.mulf %x, %y : f32
    %s = math.sin %a : f32
    scf.yield %s : f32
  }
  case 2 {
    %b = arith.mulf %x, %x : f32
    scf.yield %b : f32
  }
  default {
    %c = math.exp %y : f32
    %d = arith.subf %c, %x : f32
    scf.yield %d : f32
  }
  %o = arith.mulf %r, %y : f32
  func.return %o : f32
}
"""

SWITCH_IN_LOOP = """
func.func @f(%x: f32, %y: f32, %k: index) -> f32 attributes {diff.differentiable} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %x) -> (f32) {
    %j = arith.addi %i, %k : index
    %v = scf.index_switch %j -> f32
    case 1 {
      %a = arith.mulf %acc, %y : f32
      %s = math.sin %a : f32
      scf.yield %s : f32
    }
    case 2 {
      %b = arith.mulf %acc, %acc : f32
      scf.yield %b : f32
    }
    default {
      %c = arith.addf %acc, %y : f32
      scf.yield %c : f32
    }
    scf.yield %v : f32
  }
  func.return %r : f32
}
"""

POINTS = [(0.7, 1.3), (-0.4, 0.9)]


@pytest.mark.parametrize("src", [SWITCH, SWITCH_IN_LOOP], ids=["top", "in_loop"])
@pytest.mark.parametrize("k", [0, 1, 2, 3])
@pytest.mark.parametrize("x, y", POINTS)
def test_reverse_matches_finite_differences(src, k, x, y):
    got = gradient(src, [x, y, k], [1.0])
    want = finite_difference(src, [x, y, k], [1.0], [0, 1])
    assert got == pytest.approx(want, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("src", [SWITCH, SWITCH_IN_LOOP], ids=["top", "in_loop"])
@pytest.mark.parametrize("k", [0, 1, 2, 3])
@pytest.mark.parametrize("x, y", POINTS)
def test_forward_matches_finite_differences_and_reverse(src, k, x, y):
    module = run_pipeline(with_fwd_main(src), CANONICAL)
    v = (0.3, -1.1)
    (tangent,) = run(module, "main_fwd", x, y, k, *v)
    want = central(lambda p: run(run_pipeline(src, "canonicalize"), "f", p[0], p[1], k)[0], [x, y], v)
    assert tangent == pytest.approx(want, rel=1e-6, abs=1e-7)
    grads = gradient(src, [x, y, k], [1.0])
    assert tangent == pytest.approx(grads[0] * v[0] + grads[1] * v[1], rel=1e-9, abs=1e-12)
