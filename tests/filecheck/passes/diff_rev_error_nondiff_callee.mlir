// RUN: not diffc-opt %s -p diff-rev 2>&1 | filecheck %s
// Passing a derivative-carrying value to a function that is not differentiable is an error.

func.func @h(%a: f32) -> f32 {
  %s = math.sin %a : f32
  func.return %s : f32
}
func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %y = func.call @h(%x) : (f32) -> f32
  func.return %y : f32
}
func.func @main(%x: f32, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %d) : (f32, f32) -> f32
  func.return %g : f32
}

// CHECK: {{.*}}diff_rev_error_nondiff_callee.mlir:9:3: error: pass 'diff-rev' failed: in function @f: a derivative-carrying value (operand 0) is passed to @h, which is not differentiable
// CHECK-NOT: Traceback
