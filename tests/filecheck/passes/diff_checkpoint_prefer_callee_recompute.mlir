// RUN: diffc-opt %s -p 'diff-rev,diff-checkpoint{report=true}' | filecheck %s
// The same program as diff_checkpoint_default.mlir, but @g prefers recompute: its result is
// no longer stored (12 bytes instead of 24) and the reverse loop calls @g again.
func.func @g(%a: f32, %b: f32) -> f32 attributes {diff.differentiable, diff.prefer = "recompute"} {
  %m = arith.mulf %a, %b : f32
  %s = math.sin %m : f32
  func.return %s : f32
}
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
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

// CHECK:      // checkpoint @f_bwd: 12 bytes of stored context
// CHECK-NEXT: // checkpoint @f_bwd: store memref<3xf32> (12 bytes): loop-carried value of scf.for
// CHECK-NEXT: // checkpoint @f_bwd: recompute func.call @g: callee @g prefers recompute
// CHECK-NEXT: // checkpoint @f_bwd: recompute math.exp: cheap arithmetic
// CHECK-LABEL: func.func @f_bwd
// CHECK-NEXT:    %[[CARRIED:.+]] = memref.alloca() : memref<3xf32>
// CHECK-NEXT:    arith.constant
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:           %[[ACC:.+]] = memref.load %[[CARRIED]]
// CHECK-NEXT:      %{{.+}} = func.call @g(%[[ACC]], %y) : (f32, f32) -> f32
// CHECK:           func.call @g_bwd
