"""diffc/kernel_support/cse.py does what xDSL's CSE does, op for op: the same IR comes out."""

import io
import sys
from pathlib import Path

import pytest
from xdsl.printer import Printer
from xdsl.transforms.common_subexpression_elimination import cse as xdsl_cse

from diffc import compiler
from diffc.kernel_support.cse import cse

SNIPPET = """
func.func @f(%a: f32, %b: f32, %c: i1, %m: memref<?xf32>, %i: index) -> f32 {
  %x = arith.mulf %a, %b : f32
  %y = arith.mulf %a, %b : f32
  %dead = arith.addf %a, %a : f32
  %r1 = scf.if %c -> (f32) {
    %p = arith.addf %x, %y : f32
    scf.yield %p : f32
  } else {
    scf.yield %a : f32
  }
  %r2 = scf.if %c -> (f32) {
    %q = arith.addf %x, %y : f32
    scf.yield %q : f32
  } else {
    scf.yield %a : f32
  }
  %r3 = scf.if %c -> (f32) {
    %q2 = arith.subf %x, %a : f32
    scf.yield %q2 : f32
  } else {
    scf.yield %a : f32
  }
  %l1 = memref.load %m[%i] : memref<?xf32>
  %l2 = memref.load %m[%i] : memref<?xf32>
  memref.store %x, %m[%i] : memref<?xf32>
  %l3 = memref.load %m[%i] : memref<?xf32>
  %s0 = arith.addf %r1, %r2 : f32
  %s1 = arith.addf %s0, %r3 : f32
  %s2 = arith.addf %s1, %l1 : f32
  %s3 = arith.addf %s2, %l2 : f32
  %s4 = arith.addf %s3, %l3 : f32
  %k = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  %lo = arith.constant 0 : index
  %one = arith.constant 1 : index
  %sum = scf.for %j = %lo to %k step %one iter_args(%acc = %s4) -> (f32) {
    %inner = arith.mulf %a, %b : f32
    %n = arith.addf %acc, %inner : f32
    scf.yield %n : f32
  }
  %t = arith.addf %sum, %z : f32
  func.return %t : f32
}
"""


def printed(module) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def both(text: str) -> tuple[str, str]:
    theirs, ours = compiler.parse_ir(text, locate=False), compiler.parse_ir(text, locate=False)
    xdsl_cse(theirs)
    cse(ours)
    return printed(theirs), printed(ours)


def test_same_as_xdsl_on_branches_reads_and_loops():
    theirs, ours = both(SNIPPET)
    assert ours == theirs
    assert ours.count("scf.if") == 2  # the second branch was the first's; the third differs
    assert ours.count("memref.load") == 2  # a store between the reads keeps the third
    assert "%a, %a" not in ours  # dead


def test_same_as_xdsl_on_differentiated_code():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from bench_ad_pipeline import generate

    text, _ = generate(600)
    module = compiler.parse_ir(text, locate=False)
    compiler.apply_pipeline(module, "forward-handle-results,diff-fwd,diff-rev,diff-checkpoint,diff-lower")
    theirs, ours = both(printed(module))
    assert ours == theirs


@pytest.mark.parametrize("n", [50, 400])
def test_same_as_xdsl_on_many_like_branches(n):
    # n branches on one condition, each different: xDSL compared each with every earlier one
    body = "\n".join(f"  %r{k} = scf.if %c -> (f32) {{\n    %v{k} = arith.constant {k}.0 : f32\n"
                     f"    scf.yield %v{k} : f32\n  }} else {{\n    scf.yield %a : f32\n  }}" for k in range(n))
    text = f"func.func @g(%a: f32, %c: i1) -> f32 {{\n{body}\n  func.return %r{n - 1} : f32\n}}\n"
    theirs, ours = both(text)
    assert ours == theirs
