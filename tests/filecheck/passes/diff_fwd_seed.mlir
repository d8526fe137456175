// The seed example: fwd_diff of exp(x*x + 2*y + 2).
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s
// The canonical pipeline.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse)' | filecheck %s --check-prefix=LOW

func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %a = arith.mulf %x, %x : f32
  %c2 = arith.constant 2.0 : f32
  %b = arith.mulf %c2, %y : f32
  %s = arith.addf %a, %b : f32
  %s2 = arith.addf %s, %c2 : f32
  %e = math.exp %s2 : f32
  func.return %e : f32
}

// CHECK-LABEL: func.func @f_fwd(%0: !diff.pair<f32>, %1: !diff.pair<f32>) -> !diff.pair<f32> attributes {diff.differentiable}
// CHECK-NEXT:    %x = diff.primal %0 : !diff.pair<f32>
// CHECK-NEXT:    %x_d = diff.differential %0 : !diff.pair<f32>
// CHECK-NEXT:    %y = diff.primal %1 : !diff.pair<f32>
// CHECK-NEXT:    %y_d = diff.differential %1 : !diff.pair<f32>
// CHECK-NEXT:    %a = arith.mulf %x, %x : f32
// CHECK-NEXT:    %[[T1:.+]] = arith.mulf %x, %x_d : f32
// CHECK-NEXT:    %[[T2:.+]] = arith.mulf %x, %x_d : f32
// CHECK-NEXT:    %a_d = arith.addf %[[T1]], %[[T2]] : f32
// CHECK:         %b_d = arith.mulf %c2, %y_d : f32
// CHECK:         %s_d = arith.addf %a_d, %b_d : f32
// The constant 2 has no tangent: s2's tangent is s's.
// CHECK-NEXT:    %s2 = arith.addf %s, %c2 : f32
// CHECK-NEXT:    %e = math.exp %s2 : f32
// CHECK-NEXT:    %e_d = arith.mulf %e, %s_d : f32
// CHECK-NEXT:    %[[R:.+]] = diff.make_pair %e, %e_d : f32
// CHECK-NEXT:    func.return %[[R]] : !diff.pair<f32>

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %r = func.call @f_fwd(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
// CHECK-NOT:     diff.fwd_diff

// LOW-LABEL: func.func @f_fwd(%x: f32, %x_d: f32, %y: f32, %y_d: f32) -> (f32, f32)
// LOW-NOT:     {{!diff|= diff\.}}
// LOW:         %e_d = arith.mulf %e, %s_d : f32
// LOW-NEXT:    func.return %e, %e_d : f32, f32
// LOW-LABEL: func.func @main(%x: f32, %x_d: f32, %y: f32, %y_d: f32) -> (f32, f32)
// LOW-NEXT:    %r, %r_d = func.call @f_fwd(%x, %x_d, %y, %y_d) : (f32, f32, f32, f32) -> (f32, f32)
// LOW-NEXT:    func.return %r, %r_d : f32, f32
func.func @main(%x: !diff.pair<f32>, %y: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
