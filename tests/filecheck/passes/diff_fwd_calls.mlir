// Calls: derivatives of callees are generated transitively and once; a call whose operands
// carry no tangent stays a primal call, even to a function that is not differentiable.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s

func.func @h(%x: f32) -> f32 attributes {diff.differentiable} {
  %e = math.exp %x : f32
  func.return %e : f32
}
func.func @plain(%x: f32) -> f32 {
  func.return %x : f32
}
func.func @g(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %a = func.call @h(%x) : (f32) -> f32
  %b = func.call @h(%y) : (f32) -> f32
  %c = arith.constant 2.0 : f32
  %p = func.call @plain(%c) : (f32) -> f32
  %m = arith.mulf %a, %b : f32
  %n = arith.mulf %m, %p : f32
  func.return %n : f32
}
// CHECK:       func.func @h_fwd(%0: !diff.pair<f32>) -> !diff.pair<f32>
// CHECK-NOT:   func.func @h_fwd
// CHECK-LABEL: func.func @g_fwd
// CHECK:         %[[PX:.+]] = diff.make_pair %x, %x_d : f32
// CHECK-NEXT:    %[[RX:.+]] = func.call @h_fwd(%[[PX]]) : (!diff.pair<f32>) -> !diff.pair<f32>
// CHECK-NEXT:    %a = diff.primal %[[RX]]
// CHECK-NEXT:    %a_d = diff.differential %[[RX]]
// CHECK-NEXT:    %[[PY:.+]] = diff.make_pair %y, %y_d : f32
// CHECK-NEXT:    %[[RY:.+]] = func.call @h_fwd(%[[PY]])
// CHECK:         %p = func.call @plain(%c) : (f32) -> f32
// CHECK-NOT:   func.func @plain_fwd
// CHECK-LABEL: func.func @main
// CHECK:         func.call @g_fwd
// CHECK:         func.call @h_fwd
func.func @main(%x: !diff.pair<f32>, %y: !diff.pair<f32>) -> (!diff.pair<f32>, !diff.pair<f32>) {
  %r = diff.fwd_diff @g(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  %s = diff.fwd_diff @h(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r, %s : !diff.pair<f32>, !diff.pair<f32>
}
