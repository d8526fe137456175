// Several results: differentiable ones become pairs; a no_diff float result and an integer
// result stay plain.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse)' | filecheck %s --check-prefix=LOW

func.func @multi(%x: f32, %y: f32) -> (f32, f32 {diff.no_diff}, i32, f32) attributes {diff.differentiable} {
  %a = arith.mulf %x, %y : f32
  %b = arith.addf %x, %y : f32
  %k = arith.constant 7 : i32
  %c = arith.constant 4.0 : f32
  func.return %a, %b, %k, %c : f32, f32, i32, f32
}
// CHECK-LABEL: func.func @multi_fwd(%0: !diff.pair<f32>, %1: !diff.pair<f32>) -> (!diff.pair<f32>, f32 {diff.no_diff}, i32, !diff.pair<f32>)
// CHECK:         %[[PA:.+]] = diff.make_pair %a, %a_d : f32
// CHECK-NEXT:    %[[Z:.+]] = diff.zero : f32
// CHECK-NEXT:    %[[PC:.+]] = diff.make_pair %c, %[[Z]] : f32
// CHECK-NEXT:    func.return %[[PA]], %b, %k, %[[PC]] : !diff.pair<f32>, f32, i32, !diff.pair<f32>

// LOW-LABEL: func.func @multi_fwd(%x: f32, %x_d: f32, %y: f32, %y_d: f32) -> (f32, f32, f32 {diff.no_diff}, i32, f32, f32)
// The no_diff result's tangent is dead and removed.
// LOW-NOT:     arith.addf %x_d, %y_d
// LOW:         func.return %a, %a_d, %b, %k, %c, %{{.*}} : f32, f32, f32, i32, f32, f32
func.func @main(%x: !diff.pair<f32>, %y: !diff.pair<f32>) -> (!diff.pair<f32>, f32, i32, !diff.pair<f32>) {
  %r:4 = diff.fwd_diff @multi(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> (!diff.pair<f32>, f32, i32, !diff.pair<f32>)
  func.return %r#0, %r#1, %r#2, %r#3 : !diff.pair<f32>, f32, i32, !diff.pair<f32>
}
