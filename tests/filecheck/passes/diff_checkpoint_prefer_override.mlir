// RUN: diffc-opt %s -p 'diff-rev,diff-checkpoint{report=true}' | filecheck %s
// @f prefers recompute, so the result of @g is recomputed; @h prefers checkpoint itself, and
// the callee's preference wins: its result is stored.

func.func @g(%a: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %a : f32
  func.return %s : f32
}
func.func @h(%a: f32) -> f32 attributes {diff.differentiable, diff.prefer = "checkpoint"} {
  %s = math.cos %a : f32
  func.return %s : f32
}
func.func @f(%x: f32) -> f32 attributes {diff.differentiable, diff.prefer = "recompute"} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 4 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %t = func.call @g(%acc) : (f32) -> f32
    %u = func.call @h(%acc) : (f32) -> f32
    %v = arith.mulf %t, %u : f32
    scf.yield %v : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %d) : (f32, f32) -> f32
  func.return %g : f32
}

// CHECK:      // checkpoint @f_bwd: 32 bytes of stored context
// CHECK-NEXT: // checkpoint @f_bwd: store memref<4xf32> (16 bytes): loop-carried value of scf.for
// CHECK-NEXT: // checkpoint @f_bwd: recompute func.call @g: call to @g: @f prefers recompute
// CHECK-NEXT: // checkpoint @f_bwd: store func.call @h -> memref<4xf32> (16 bytes): callee @h prefers checkpoint
