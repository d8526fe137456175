// Pairs through scf regions: if results and yields, for iter_args and block arguments, while
// before/after arguments, conditions and results.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-lower)' | filecheck %s

// CHECK-LABEL: func.func @regions(%p: f32, %p_d: f32, %c: i1, %n: index) -> (f32, f32)
func.func @regions(%p: !diff.pair<f32>, %c: i1, %n: index) -> !diff.pair<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK:      %a, %a_d = scf.if %c -> (f32, f32) {
  // CHECK-NEXT:   scf.yield %p, %p_d : f32, f32
  // CHECK-NEXT: } else {
  // CHECK-NEXT:   %[[Z:.+]] = arith.constant 0.000000e+00 : f32
  // CHECK-NEXT:   scf.yield %p, %[[Z]] : f32, f32
  %a = scf.if %c -> (!diff.pair<f32>) {
    scf.yield %p : !diff.pair<f32>
  } else {
    %x = diff.primal %p : !diff.pair<f32>
    %z = diff.zero : f32
    %q = diff.make_pair %x, %z : f32
    scf.yield %q : !diff.pair<f32>
  }
  // CHECK:      %f, %f_d = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a, %acc_d = %a_d) -> (f32, f32) {
  // CHECK-NEXT:   %m = arith.mulf %acc, %acc_d : f32
  // CHECK-NEXT:   scf.yield %m, %acc_d : f32, f32
  %f = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a) -> (!diff.pair<f32>) {
    %u = diff.primal %acc : !diff.pair<f32>
    %v = diff.differential %acc : !diff.pair<f32>
    %m = arith.mulf %u, %v : f32
    %r = diff.make_pair %m, %v : f32
    scf.yield %r : !diff.pair<f32>
  }
  // CHECK:      %w, %w_d = scf.while (%b = %f, %b_d = %f_d) : (f32, f32) -> (f32, f32) {
  // CHECK:        scf.condition(%{{.*}}) %b, %b_d : f32, f32
  // CHECK-NEXT: } do {
  // CHECK-NEXT: ^{{.*}}(%e: f32, %e_d: f32):
  // CHECK-NEXT:   scf.yield %e, %e_d : f32, f32
  %w = scf.while (%b = %f) : (!diff.pair<f32>) -> !diff.pair<f32> {
    %bp = diff.primal %b : !diff.pair<f32>
    %one = arith.constant 1.0 : f32
    %gt = arith.cmpf ogt, %bp, %one : f32
    scf.condition(%gt) %b : !diff.pair<f32>
  } do {
  ^bb0(%e: !diff.pair<f32>):
    scf.yield %e : !diff.pair<f32>
  }
  // CHECK:      func.return %w, %w_d : f32, f32
  func.return %w : !diff.pair<f32>
}
