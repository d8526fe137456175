// scf.if: a result whose tangent exists on one branch only gets a zero on the other; a result
// with no tangent on either branch stays primal only.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse)' | filecheck %s --check-prefix=LOW

func.func @f(%x: f32, %c: i1) -> (f32, f32) attributes {diff.differentiable} {
  %one = arith.constant 1.0 : f32
  %a, %b = scf.if %c -> (f32, f32) {
    %s = math.sin %x : f32
    scf.yield %s, %one : f32, f32
  } else {
    scf.yield %one, %one : f32, f32
  }
  func.return %a, %b : f32, f32
}
// CHECK-LABEL: func.func @f_fwd
// CHECK:        %a, %b, %a_d = scf.if %c -> (f32, f32, f32) {
// CHECK-NEXT:     %s = math.sin %x : f32
// CHECK-NEXT:     %[[COS:.+]] = math.cos %x : f32
// CHECK-NEXT:     %s_d = arith.mulf %[[COS]], %x_d : f32
// CHECK-NEXT:     scf.yield %s, %one, %s_d : f32, f32, f32
// CHECK-NEXT:   } else {
// CHECK-NEXT:     %[[Z:.+]] = diff.zero : f32
// CHECK-NEXT:     scf.yield %one, %one, %[[Z]] : f32, f32, f32
// CHECK-NEXT:   }
// CHECK-NEXT:   %[[PA:.+]] = diff.make_pair %a, %a_d : f32
// CHECK-NEXT:   %[[ZB:.+]] = diff.zero : f32
// CHECK-NEXT:   %[[PB:.+]] = diff.make_pair %b, %[[ZB]] : f32
// CHECK-NEXT:   func.return %[[PA]], %[[PB]] : !diff.pair<f32>, !diff.pair<f32>

// LOW-LABEL: func.func @f_fwd(%x: f32, %x_d: f32, %c: i1) -> (f32, f32, f32, f32)
// LOW:         %a, %b, %a_d = scf.if %c -> (f32, f32, f32) {
// LOW:         } else {
// LOW-NEXT:      %[[Z1:.+]] = arith.constant 0.000000e+00 : f32
// LOW-NEXT:      scf.yield %one, %one, %[[Z1]] : f32, f32, f32
// LOW:         %[[Z2:.+]] = arith.constant 0.000000e+00 : f32
// LOW-NEXT:    func.return %a, %a_d, %b, %[[Z2]] : f32, f32, f32, f32
func.func @main(%x: !diff.pair<f32>, %c: i1) -> (!diff.pair<f32>, !diff.pair<f32>) {
  %r:2 = diff.fwd_diff @f(%x, %c) : (!diff.pair<f32>, i1) -> (!diff.pair<f32>, !diff.pair<f32>)
  func.return %r#0, %r#1 : !diff.pair<f32>, !diff.pair<f32>
}
