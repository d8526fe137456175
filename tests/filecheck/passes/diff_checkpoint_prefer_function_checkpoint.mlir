// RUN: diffc-opt %s -p 'diff-rev,diff-checkpoint{report=true}' | filecheck %s
// The same program as diff_checkpoint_default.mlir, but @f prefers checkpoint: even the cheap
// math.exp is stored (36 bytes instead of 24), the reverse loop recomputes nothing.
func.func @g(%a: f32, %b: f32) -> f32 attributes {diff.differentiable} {
  %m = arith.mulf %a, %b : f32
  %s = math.sin %m : f32
  func.return %s : f32
}
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable, diff.prefer = "checkpoint"} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %t = func.call @g(%acc, %y) : (f32, f32) -> f32
    %e = math.exp %acc : f32
    %u = arith.mulf %t, %e : f32
    scf.yield %u : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %y: f32, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %d) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// CHECK:      // checkpoint @f_bwd: 36 bytes of stored context
// CHECK-NEXT: // checkpoint @f_bwd: store memref<3xf32> (12 bytes): loop-carried value of scf.for
// CHECK-NEXT: // checkpoint @f_bwd: store func.call @g -> memref<3xf32> (12 bytes): result of a call to @g (expensive)
// CHECK-NEXT: // checkpoint @f_bwd: store math.exp -> memref<3xf32> (12 bytes): @f prefers checkpoint
// CHECK-LABEL: func.func @f_bwd
// CHECK:         scf.for
// CHECK:           %e = math.exp
// CHECK-NEXT:      memref.store %e
// CHECK:         scf.for
// CHECK-NOT:       math.exp
// CHECK:           func.call @g_bwd
