// RUN: diffc-opt %s -p diff-fwd,diff-rev | filecheck %s
// A loop that carries !diff.pair (forward mode inside the loop), differentiated in reverse: each
// carried pair is taped as its two halves and rebuilt with diff.make_pair in the reverse loop.

func.func @h(%a: f64, %y: f64) -> f64 attributes {diff.differentiable} {
  %m = arith.mulf %a, %y : f64
  %s = math.sin %m : f64
  %t = arith.addf %s, %a : f64
  func.return %t : f64
}
func.func @g(%x: f64, %y: f64) -> f64 attributes {diff.differentiable} {
  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  %px = diff.make_pair %x, %one : f64
  %py = diff.make_pair %y, %zero : f64
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %px) -> (!diff.pair<f64>) {
    %q = diff.fwd_diff @h(%acc, %py) : (!diff.pair<f64>, !diff.pair<f64>) -> !diff.pair<f64>
    scf.yield %q : !diff.pair<f64>
  }
  %d = diff.differential %r : !diff.pair<f64>
  func.return %d : f64
}
func.func @grad_g(%x: f64, %y: f64, %u: f64) -> (f64, f64) {
  %g:2 = diff.bwd_diff @g(%x, %y, %u) : (f64, f64, f64) -> (f64, f64)
  func.return %g#0, %g#1 : f64, f64
}

// CHECK-LABEL: func.func @g_bwd(%x: f64, %y: f64, %d_out: f64) -> (f64, f64)
// CHECK-NEXT:    %[[TP:.+]] = memref.alloca() {diff.tape = "loop-carried value of scf.for (primal half)"} : memref<3xf64>
// CHECK-NEXT:    %[[TD:.+]] = memref.alloca() {diff.tape = "loop-carried value of scf.for (derivative half)"} : memref<3xf64>
// CHECK:         scf.for %i = %lb to %ub step %st iter_args(%acc = %px) -> (!diff.pair<f64>) {
// CHECK:           %[[K:.+]] = arith.divsi {{.*}} {diff.iter = 1 : i64} : index
// CHECK-NEXT:      %[[P:.+]] = diff.primal %acc : !diff.pair<f64>
// CHECK-NEXT:      memref.store %[[P]], %[[TP]][%[[K]]] : memref<3xf64>
// CHECK-NEXT:      %[[D:.+]] = diff.differential %acc : !diff.pair<f64>
// CHECK-NEXT:      memref.store %[[D]], %[[TD]][%[[K]]] : memref<3xf64>
// CHECK-NEXT:      %q = func.call @h_fwd(%acc, %py)
// The reverse loop carries the pair adjoints, reloads both halves of the same slot.
// CHECK:         scf.for {{.*}} -> (!diff.pair<f64>, !diff.pair<f64>) {
// CHECK:           %[[R:.+]] = arith.subi {{.*}} {diff.iter = 1 : i64} : index
// CHECK:           %[[LP:.+]] = memref.load %[[TP]][%[[R]]] : memref<3xf64>
// CHECK-NEXT:      %[[LD:.+]] = memref.load %[[TD]][%[[R]]] : memref<3xf64>
// CHECK-NEXT:      %[[ACC:.+]] = diff.make_pair %[[LP]], %[[LD]] : f64
// CHECK:           func.call @h_fwd_bwd(%[[ACC]], %py, {{.*}}) : (!diff.pair<f64>, !diff.pair<f64>, !diff.pair<f64>) -> (!diff.pair<f64>, !diff.pair<f64>)
