// Passing a detached value, or a value into a no_diff parameter, to code without derivatives is
// fine: no tangent flows there.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s

func.func @h(%x: f32) -> f32 {
  func.return %x : f32
}
func.func @k(%x: f32, %s: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable} {
  %m = arith.mulf %x, %s : f32
  func.return %m : f32
}
func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %d = diff.detach %x : f32
  %y = func.call @h(%d) : (f32) -> f32
  %z = func.call @k(%y, %x) : (f32, f32) -> f32
  %w = func.call @k(%x, %x) : (f32, f32) -> f32
  %r = arith.addf %z, %w : f32
  func.return %r : f32
}
// CHECK-LABEL: func.func @k_fwd(%0: !diff.pair<f32>, %s: f32 {diff.no_diff}) -> !diff.pair<f32>
// CHECK-LABEL: func.func @f_fwd
// CHECK:         %d = diff.detach %x : f32
// CHECK-NEXT:    %y = func.call @h(%d) : (f32) -> f32
// Neither operand of the first call to @k that lands on a differentiable parameter has a
// tangent: a primal call.
// CHECK-NEXT:    %z = func.call @k(%y, %x) : (f32, f32) -> f32
// CHECK-NEXT:    %[[P:.+]] = diff.make_pair %x, %x_d : f32
// CHECK-NEXT:    %[[W:.+]] = func.call @k_fwd(%[[P]], %x) : (!diff.pair<f32>, f32) -> !diff.pair<f32>
// CHECK-NEXT:    %w = diff.primal %[[W]]
// CHECK-NEXT:    %w_d = diff.differential %[[W]]
// CHECK-NEXT:    %r = arith.addf %z, %w : f32
// CHECK-NEXT:    %[[R:.+]] = diff.make_pair %r, %w_d : f32
func.func @main(%x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
