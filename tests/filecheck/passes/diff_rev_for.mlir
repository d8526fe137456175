// RUN: diffc-opt %s -p diff-rev | filecheck %s
// scf.for with constant bounds: the carried value is stored per iteration in a memref of the
// trip count (5); the reverse loop runs the iterations backwards and reloads it.

func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 5 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %a = arith.mulf %acc, %y : f32
    %s = math.sin %a : f32
    scf.yield %s : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %y: f32, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %d) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// CHECK-LABEL: func.func @f_bwd
// CHECK-NEXT:    %[[TAPE:.+]] = memref.alloca() {diff.tape = "loop-carried value of scf.for"} : memref<5xf32>
// CHECK:         %r = scf.for %[[I:.+]] = %lb to %ub step %st iter_args(%[[ACC:.+]] = %x) -> (f32) {
// CHECK-NEXT:      %[[D:.+]] = arith.subi %[[I]], %lb : index
// CHECK-NEXT:      %[[K:.+]] = arith.divsi %[[D]], %st {diff.iter = [[L:[0-9]+]] : i64} : index
// CHECK-NEXT:      memref.store %[[ACC]], %[[TAPE]][%[[K]]] : memref<5xf32>
// CHECK:         } {diff.loop = [[L]] : i64, diff.trip = 5 : i64}
// CHECK:         %[[N:.+]] = arith.constant 5 : index
// CHECK:         %{{.+}}, %{{.+}} = scf.for %[[R:.+]] = %{{.+}} to %[[N]] step %{{.+}} iter_args(%{{.+}} = %d_out, %{{.+}} = %{{.+}}) -> (f32, f32) {
// CHECK:           %[[KK:.+]] = arith.subi %{{.+}}, %[[R]] {diff.iter = [[L]] : i64} : index
// CHECK:           %{{.+}} = memref.load %[[TAPE]][%[[KK]]] : memref<5xf32>
// CHECK:           math.cos
// CHECK:           scf.yield
// CHECK-NEXT:    } {diff.loop = [[L]] : i64, diff.trip = 5 : i64}
