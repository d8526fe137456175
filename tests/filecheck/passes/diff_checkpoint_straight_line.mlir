// RUN: diffc-opt %s -p 'diff-rev,diff-checkpoint{report=true}' | filecheck %s
// Straight-line code: every primal value lives at the top level of @f_bwd, nothing is stored
// in memory; the pass removes diff-rev's marks.

func.func @g(%a: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %a : f32
  func.return %s : f32
}
func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %t = func.call @g(%x) : (f32) -> f32
  %u = arith.mulf %t, %x : f32
  func.return %u : f32
}
func.func @main(%x: f32, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %d) : (f32, f32) -> f32
  func.return %g : f32
}

// CHECK:      // checkpoint @g_bwd: 0 bytes of stored context
// CHECK-NEXT: // checkpoint @f_bwd: 0 bytes of stored context
// CHECK-NOT:  // checkpoint
// CHECK-NOT:  memref.alloca
// CHECK-NOT:  diff.bwd_of
