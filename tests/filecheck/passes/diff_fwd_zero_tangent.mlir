// Values without a tangent cost nothing: constants, detached values, no_diff parameters.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s

// CHECK-LABEL: func.func @f_fwd(%0: !diff.pair<f32>, %k: f32 {diff.no_diff}) -> !diff.pair<f32>
func.func @f(%x: f32, %k: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable} {
  // CHECK-NEXT: %x = diff.primal %0
  // CHECK-NEXT: %x_d = diff.differential %0
  // CHECK-NEXT: %c = arith.constant 3.000000e+00 : f32
  %c = arith.constant 3.0 : f32
  // Only the product with x carries a tangent; k*c has none.
  // CHECK-NEXT: %kc = arith.mulf %k, %c : f32
  // CHECK-NEXT: %y = arith.mulf %kc, %x : f32
  // CHECK-NEXT: %y_d = arith.mulf %kc, %x_d : f32
  %kc = arith.mulf %k, %c : f32
  %y = arith.mulf %kc, %x : f32
  // The detach stays (differentiating @f_fwd again must still drop this derivative).
  // CHECK-NEXT: %d = diff.detach %y : f32
  // CHECK-NEXT: %dt = math.sin %d : f32
  // CHECK-NEXT: %z = arith.addf %y, %dt : f32
  %d = diff.detach %y : f32
  %dt = math.sin %d : f32
  %z = arith.addf %y, %dt : f32
  // CHECK-NEXT: %[[R:.+]] = diff.make_pair %z, %y_d : f32
  // CHECK-NEXT: func.return %[[R]]
  func.return %z : f32
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT: func.call @f_fwd(%x, %k)
func.func @main(%x: !diff.pair<f32>, %k: f32) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x, %k) : (!diff.pair<f32>, f32) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
