// Syntax errors and types that fail their verifier while being parsed: located, exit code 1,
// no traceback. Under --verify-diagnostics they are expected diagnostics like the others.
// RUN: not diffc-opt %s 2>&1 | filecheck %s
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=SPLIT

func.func @bad_pair(%p: !diff.pair<i1>) {
  func.return
}
// CHECK: syntax_errors.mlir:6:35: error: !diff.pair element type must be differentiable (a float, a vector of floats or a differentiable struct), got i1
// CHECK-NOT: Traceback
// SPLIT: syntax_errors.mlir:6:35: error: !diff.pair element type must be differentiable

// -----

func.func @missing_colon(%x: f32, %d: f32) {
  %p = diff.make_pair %x, %d f32
  func.return
}
// SPLIT: syntax_errors.mlir:[[# @LINE - 3]]:30: error: Expected ':'

// -----

func.func @not_a_pair_projection(%x: f32) {
  %p = diff.primal %x : f32
  func.return
}
// SPLIT: syntax_errors.mlir:[[# @LINE - 3]]:25: error: 'diff.primal' expects a !diff.pair operand type, got f32

// -----

func.func @undefined_value() {
  %z = diff.add %a, %a : f32
  func.return
}
// SPLIT: syntax_errors.mlir:[[# @LINE - 3]]:17: error: use of undefined value %a (never defined: %a)

// -----

func.func @undefined_later(%x: f32) {
  %s = diff.add %x, %x : f32
  %t = diff.add %s, %later : f32
  func.return
}
// SPLIT: syntax_errors.mlir:[[# @LINE - 3]]:21: error: use of undefined value %later
