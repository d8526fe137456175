// RUN: diffc-opt %s -p diff-rev | filecheck %s
// Nested loops: the inner loop's carried value is stored per (outer, inner) iteration.

func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %ub2 = arith.constant 4 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %q = scf.for %j = %lb to %ub2 step %st iter_args(%b = %acc) -> (f32) {
      %a = arith.mulf %b, %y : f32
      scf.yield %a : f32
    }
    scf.yield %q : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %y: f32, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %d) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// CHECK-LABEL: func.func @f_bwd
// CHECK-DAG:     %[[OUTER:.+]] = memref.alloca() {diff.tape = "loop-carried value of scf.for"} : memref<3xf32>
// CHECK-DAG:     %[[INNER:.+]] = memref.alloca() {diff.tape = "loop-carried value of scf.for"} : memref<3x4xf32>
// CHECK:         scf.for %{{.+}} = %lb to %ub step %st
// CHECK:           %[[I:.+]] = arith.divsi {{.*}}diff.iter
// CHECK:           memref.store %acc, %[[OUTER]][%[[I]]] : memref<3xf32>
// CHECK:           scf.for %{{.+}} = %lb to %ub2 step %st
// CHECK:             %[[J:.+]] = arith.divsi {{.*}}diff.iter
// CHECK:             memref.store %b, %[[INNER]][%[[I]], %[[J]]] : memref<3x4xf32>
// The reverse: the outer reverse loop reloads acc, the inner one reloads b at [i, j].
// CHECK:         scf.for
// CHECK:           %[[RI:.+]] = arith.subi {{.*}}diff.iter
// CHECK:           memref.load %[[OUTER]][%[[RI]]] : memref<3xf32>
// CHECK:           scf.for
// CHECK:             %[[RJ:.+]] = arith.subi {{.*}}diff.iter
// CHECK:             memref.load %[[INNER]][%[[RI]], %[[RJ]]] : memref<3x4xf32>
