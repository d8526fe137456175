// diff-lower needs diff-fwd (and diff-rev) to have run.
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(diff-lower)' 2>&1 | filecheck %s
// CHECK: {{.*}}diff_lower_error.mlir:9:3: error: pass 'diff-lower' failed: in function @main: 'diff.fwd_diff' of @f is still present: run diff-fwd and diff-rev before diff-lower

func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  func.return %x : f32
}
func.func @main(%x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
