// RUN: not diffc-opt %s -p diff-rev 2>&1 | filecheck %s
// bwd_diff of a function without diff.differentiable.

func.func @f(%x: f32) -> f32 {
  %y = arith.mulf %x, %x : f32
  func.return %y : f32
}
func.func @main(%x: f32, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %d) : (f32, f32) -> f32
  func.return %g : f32
}

// CHECK: {{.*}}diff_rev_error_not_differentiable.mlir:9:3: error: pass 'diff-rev' failed: in function @main: bwd_diff of @f, which is not marked diff.differentiable
// CHECK-NOT: Traceback
