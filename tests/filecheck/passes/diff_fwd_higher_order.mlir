// fwd of fwd: the inner fwd_diff is lowered first; the outer derivative works on pairs of pairs,
// with make_pair / primal / differential differentiated component-wise.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse)' | filecheck %s --check-prefix=LOW

func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %a = arith.mulf %x, %x : f32
  %b = arith.mulf %a, %x : f32
  func.return %b : f32
}
func.func @df(%x: f32) -> f32 attributes {diff.differentiable} {
  %one = arith.constant 1.0 : f32
  %p = diff.make_pair %x, %one : f32
  %r = diff.fwd_diff @f(%p) : (!diff.pair<f32>) -> !diff.pair<f32>
  %d = diff.differential %r : !diff.pair<f32>
  func.return %d : f32
}
// CHECK:       func.func @f_fwd(%0: !diff.pair<f32>) -> !diff.pair<f32> attributes {diff.differentiable}
// CHECK:       func.func @f_fwd_fwd(%0: !diff.pair<!diff.pair<f32>>) -> !diff.pair<!diff.pair<f32>>
// CHECK-LABEL: func.func @df(
// CHECK:         func.call @f_fwd(%p)
// CHECK-LABEL: func.func @df_fwd(%0: !diff.pair<f32>) -> !diff.pair<f32>
// CHECK:         %p = diff.make_pair %x, %one : f32
// CHECK-NEXT:    %[[Z:.+]] = diff.zero : f32
// CHECK-NEXT:    %p_d = diff.make_pair %x_d, %[[Z]] : f32
// CHECK-NEXT:    %[[PP:.+]] = diff.make_pair %p, %p_d : !diff.pair<f32>
// CHECK-NEXT:    %[[R:.+]] = func.call @f_fwd_fwd(%[[PP]]) : (!diff.pair<!diff.pair<f32>>) -> !diff.pair<!diff.pair<f32>>
// CHECK-NEXT:    %r = diff.primal %[[R]] : !diff.pair<!diff.pair<f32>>
// CHECK-NEXT:    %r_d = diff.differential %[[R]] : !diff.pair<!diff.pair<f32>>
// CHECK-NEXT:    %d = diff.differential %r : !diff.pair<f32>
// CHECK-NEXT:    %d_d = diff.differential %r_d : !diff.pair<f32>
// CHECK-NEXT:    %[[OUT:.+]] = diff.make_pair %d, %d_d : f32

// Four plain values per pair of pairs after lowering.
// LOW-LABEL: func.func @f_fwd_fwd(%{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: f32) -> (f32, f32, f32, f32)
// LOW-LABEL: func.func @df_fwd(%x: f32, %x_d: f32) -> (f32, f32)
// LOW:         %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = func.call @f_fwd_fwd(%x, %one, %x_d, %{{.*}}) : (f32, f32, f32, f32) -> (f32, f32, f32, f32)
func.func @main(%x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @df(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
