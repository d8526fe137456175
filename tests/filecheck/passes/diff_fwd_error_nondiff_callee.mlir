// A derivative-carrying value passed to a function that is not differentiable.
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' 2>&1 | filecheck %s
// CHECK: {{.*}}diff_fwd_error_nondiff_callee.mlir:10:3: error: pass 'diff-fwd' failed: in function @f: 'func.call' passes a derivative-carrying value (operand #0) to @h, which is not differentiable
// CHECK-NOT: Traceback

func.func @h(%x: f32) -> f32 {
  func.return %x : f32
}
func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %y = func.call @h(%x) : (f32) -> f32
  func.return %y : f32
}
func.func @main(%x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
