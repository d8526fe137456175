"""Numeric tests of diff-checkpoint: storing instead of recomputing must not change any
gradient (compared with finite differences), and the report must follow diff.prefer."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from conftest import finite_difference, gradient, run_pipeline, with_bwd_main
from test_diff_rev import CALL, CALLS_NESTED, IF_IN_LOOP, NESTED, WHILE_IN_FOR

CALL_IN_NESTED_LOOPS = """
func.func @g(%a: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %a : f32
  %m = arith.mulf %s, %a : f32
  func.return %m : f32
}
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %ub2 = arith.constant 4 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %q = scf.for %j = %lb to %ub2 step %st iter_args(%b = %acc) -> (f32) {
      %t = func.call @g(%b) : (f32) -> f32
      %e = math.exp %t : f32
      %a = arith.mulf %e, %y : f32
      %c = arith.cmpf ogt, %a, %b : f32
      %s = scf.if %c -> (f32) {
        %u = func.call @g(%a) : (f32) -> f32
        %v = arith.mulf %u, %t : f32
        scf.yield %v : f32
      } else {
        %v = arith.mulf %a, %b : f32
        scf.yield %v : f32
      }
      scf.yield %s : f32
    }
    %w = arith.mulf %q, %acc : f32
    %z = arith.mulf %w, %y : f32
    scf.yield %z : f32
  }
  func.return %r : f32
}
"""

PREFERS = [None, '"recompute"', '"checkpoint"']


def with_prefer(src: str, fn_prefer: str | None, callee_prefer: str | None) -> str:
    """Adds diff.prefer to @f (fn_prefer) and to @g (callee_prefer)."""
    out = src
    for name, pref in (("f", fn_prefer), ("g", callee_prefer)):
        if pref:
            out, n = re.subn(rf"(func\.func @{name}\([^\n]*attributes \{{)", rf"\1diff.prefer = {pref}, ", out)
            assert n == 1
    return out


@pytest.mark.parametrize("fn_prefer", PREFERS)
@pytest.mark.parametrize("callee_prefer", PREFERS)
def test_every_policy_gives_the_same_gradient(fn_prefer, callee_prefer):
    src = with_prefer(CALL_IN_NESTED_LOOPS, fn_prefer, callee_prefer)
    args = [0.7, 0.9]
    got = gradient(src, args, [1.0])
    want = finite_difference(CALL_IN_NESTED_LOOPS, args, [1.0], [0, 1])
    assert got == pytest.approx(want, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("src", [CALL, CALLS_NESTED, IF_IN_LOOP, NESTED, WHILE_IN_FOR])
@pytest.mark.parametrize("fn_prefer", ['"recompute"', '"checkpoint"'])
def test_function_preference_keeps_gradients(src, fn_prefer):
    n_out = 2 if src is IF_IN_LOOP else 1
    args, douts = [0.9, 0.3], [1.0, 0.5][:n_out]
    base = gradient(src, args, douts)
    changed = gradient(with_prefer(src, fn_prefer, None), args, douts)
    assert changed == pytest.approx(base, rel=1e-12, abs=1e-14)


def report(src: str) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        run_pipeline(with_bwd_main(src), "diff-rev,diff-checkpoint{report=true}")
    return buf.getvalue()


def stored_bytes(text: str, fn: str = "f_bwd") -> int:
    line = next(l for l in text.splitlines() if l.startswith(f"// checkpoint @{fn}:") and "bytes of stored" in l)
    return int(line.split(":")[1].split()[0])


def test_report_bytes_follow_preferences():
    # 3x4 iterations: carried values 3*4 + 3*4*4 bytes; the loop result 3*4 bytes; two calls
    # (one in a branch) 48 bytes each; exp/mulf values 48 bytes each when stored.
    default = stored_bytes(report(CALL_IN_NESTED_LOOPS))
    recompute = stored_bytes(report(with_prefer(CALL_IN_NESTED_LOOPS, None, '"recompute"')))
    checkpoint = stored_bytes(report(with_prefer(CALL_IN_NESTED_LOOPS, '"checkpoint"', None)))
    assert default == 12 + 48 + 12 + 48 + 48
    assert recompute == 12 + 48 + 12
    assert checkpoint > default


def test_report_is_comment_lines_and_module_still_parses():
    text = report(CALL)
    assert text.strip()
    assert all(line.startswith("// checkpoint @") for line in text.strip().splitlines())


def test_without_report_nothing_is_printed():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        module = run_pipeline(with_bwd_main(CALL), "diff-rev,diff-checkpoint")
    assert buf.getvalue() == ""
    for op in module.walk():
        assert not any(k in op.attributes for k in ("diff.primal_id", "diff.recompute", "diff.loop", "diff.tape"))


# The results of a switch inside a loop, which the reverse sweep needs there (for %w's adjoint):
# its rule (diffc/ad/branches.py BranchRule) recomputes them unless the function prefers
# checkpoint, as for scf.if.
SWITCH_RESULT_IN_LOOP = """
func.func @f(%x: f32, %y: f32, %k: index) -> f32 attributes {diff.differentiable} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %x) -> (f32) {
    %j = arith.addi %i, %k : index
    %v = scf.index_switch %j -> f32
    case 1 {
      %s = math.sin %acc : f32
      scf.yield %s : f32
    }
    default {
      %c = arith.mulf %acc, %y : f32
      scf.yield %c : f32
    }
    %w = arith.mulf %v, %acc : f32
    scf.yield %w : f32
  }
  func.return %r : f32
}
"""


@pytest.mark.parametrize("fn_prefer", [None, '"checkpoint"'])
@pytest.mark.parametrize("k", [0, 1])
def test_switch_results_follow_their_rule(fn_prefer, k):
    src = with_prefer(SWITCH_RESULT_IN_LOOP, fn_prefer, None)
    lines = report(src).splitlines()
    if fn_prefer is None:
        assert any("recompute scf.index_switch: branch results" in line for line in lines), lines
    else:
        assert any(line.startswith("// checkpoint @f_bwd: store scf.index_switch -> memref<3xf32>") for line in lines)
    args = [0.7, 1.3, k]
    got = gradient(src, args, [1.0])
    want = finite_difference(SWITCH_RESULT_IN_LOOP, args, [1.0], [0, 1])
    assert got == pytest.approx(want, rel=1e-5, abs=1e-7)


def test_an_ops_rule_decides_store_or_recompute(monkeypatch):
    # diff-checkpoint asks the op's rule (DerivativeRule.checkpoint): a rule that says "store"
    # for math.exp (cheap by default) gets it stored, and the gradient stays right
    import dataclasses

    from xdsl.dialects import math

    from diffc.ad.interface import RULES
    from diffc.ad.registry import lookup

    assert any("recompute math.exp: cheap arithmetic" in line for line in report(CALL_IN_NESTED_LOOPS).splitlines())
    rule = lookup(math.ExpOp)

    class Stored(type(rule)):  # the same partials, another choice
        def checkpoint(self, op, prefer, origin, symbols):
            return True, "its rule says so"

    monkeypatch.setitem(RULES, math.ExpOp, Stored(**{f.name: getattr(rule, f.name) for f in dataclasses.fields(rule)}))
    lines = report(CALL_IN_NESTED_LOOPS).splitlines()
    assert any(line.startswith("// checkpoint @f_bwd: store math.exp -> memref<3x4xf32>") and "its rule says so" in line
               for line in lines), lines
    args = [0.7, 0.9]
    got = gradient(CALL_IN_NESTED_LOOPS, args, [1.0])
    assert got == pytest.approx(finite_difference(CALL_IN_NESTED_LOOPS, args, [1.0], [0, 1]), rel=1e-5, abs=1e-7)
