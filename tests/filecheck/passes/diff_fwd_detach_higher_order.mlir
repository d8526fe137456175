// fwd_diff(fwd_diff(f)) where f passes a detached value to a non-differentiable function (the
// front end lowers `no_diff helper(x)` this way): @f_fwd keeps the detach, so differentiating
// @f_fwd again sees no derivative flowing into @helper.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse)' | filecheck %s --check-prefix=LOWER

func.func @helper(%a: f32) -> f32 {
  %c = arith.constant 3.0 : f32
  %r = arith.mulf %a, %c : f32
  func.return %r : f32
}
func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %d = diff.detach %x : f32
  %h = func.call @helper(%d) : (f32) -> f32
  %m = arith.mulf %x, %x : f32
  %r = arith.addf %m, %h : f32
  func.return %r : f32
}
func.func @f1(%x: !diff.pair<f32>) -> !diff.pair<f32> attributes {diff.differentiable} {
  %r = diff.fwd_diff @f(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
func.func @main(%x: !diff.pair<!diff.pair<f32>>) -> !diff.pair<!diff.pair<f32>> {
  %r = diff.fwd_diff @f1(%x) : (!diff.pair<!diff.pair<f32>>) -> !diff.pair<!diff.pair<f32>>
  func.return %r : !diff.pair<!diff.pair<f32>>
}

// CHECK-LABEL: func.func @f_fwd(
// CHECK:         %d = diff.detach %x : f32
// CHECK-NEXT:    %h = func.call @helper(%d) : (f32) -> f32
// CHECK-LABEL: func.func @f_fwd_fwd(
// CHECK:         %x = diff.primal %1 : !diff.pair<f32>
// CHECK:         %d = diff.detach %x : f32
// CHECK-NEXT:    %h = func.call @helper(%d) : (f32) -> f32
// CHECK-NOT:     @helper_fwd

// LOWER-LABEL: func.func @f_fwd_fwd(
// LOWER:         func.call @helper(%{{.*}}) : (f32) -> f32
// LOWER-NOT:     diff.detach
