// A pair of pairs is four values: primal.primal, primal.differential, differential.primal,
// differential.differential. diff.add and diff.zero on pairs work component-wise.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-lower)' | filecheck %s

// CHECK: func.func @pp(%[[PP:[^:]+]]: f32, %[[PD:[^:]+]]: f32, %[[DP:[^:]+]]: f32, %[[DD:[^:]+]]: f32) -> (f32, f32, f32, f32)
func.func @pp(%q: !diff.pair<!diff.pair<f32>>) -> (!diff.pair<f32>, f32, f32) {
  %a = diff.primal %q : !diff.pair<!diff.pair<f32>>
  %b = diff.differential %q : !diff.pair<!diff.pair<f32>>
  // CHECK-NEXT: %[[Z0:.+]] = arith.constant 0.000000e+00 : f32
  // CHECK-NEXT: %[[Z1:.+]] = arith.constant 0.000000e+00 : f32
  %z = diff.zero : !diff.pair<f32>
  // CHECK-NEXT: %[[S0:.+]] = arith.addf %[[DP]], %[[Z0]] : f32
  // CHECK-NEXT: %[[S1:.+]] = arith.addf %[[DD]], %[[Z1]] : f32
  %s = diff.add %b, %z : !diff.pair<f32>
  %bp = diff.primal %s : !diff.pair<f32>
  %ad = diff.differential %a : !diff.pair<f32>
  // CHECK-NEXT: func.return %[[PP]], %[[PD]], %[[S0]], %[[PD]] : f32, f32, f32, f32
  func.return %a, %bp, %ad : !diff.pair<f32>, f32, f32
}
