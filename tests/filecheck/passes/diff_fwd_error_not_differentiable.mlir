// fwd_diff of a function that is neither diff.differentiable nor has a custom derivative.
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' 2>&1 | filecheck %s
// CHECK: {{.*}}diff_fwd_error_not_differentiable.mlir:11:3: error: pass 'diff-fwd' failed: in function @main: 'diff.fwd_diff' of @f: @f is not differentiable (mark it diff.differentiable or give it diff.fwd_derivative)
// CHECK-NOT: Traceback

func.func @f(%x: f32) -> f32 {
  %y = math.exp %x : f32
  func.return %y : f32
}
func.func @main(%x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
