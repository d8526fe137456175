// RUN: diffc-opt %s -p diff-rev | filecheck %s
// Runtime bounds: the tape is sized by diff.max_iters, the reverse loop by the runtime trip
// count ceil((ub - lb) / step), at most diff.max_iters. A run past the bound writes its later
// iterations into the last slot, records its count in a status global and gets NaN gradients.

func.func @f(%x: f32, %n: index) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 1 : index
  %st = arith.constant 2 : index
  %r = scf.for %i = %lb to %n step %st iter_args(%acc = %x) -> (f32) {
    %a = arith.mulf %acc, %acc : f32
    scf.yield %a : f32
  } {diff.max_iters = 8 : i64}
  func.return %r : f32
}
func.func @main(%x: f32, %n: index, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %n, %d) : (f32, index, f32) -> f32
  func.return %g : f32
}

// CHECK-LABEL: func.func @f_bwd(%x: f32, %n: index, %d_out: f32) -> f32
// CHECK-NEXT:    %[[TAPE:.+]] = memref.alloca() {diff.tape = "loop-carried value of scf.for"} : memref<8xf32>
// CHECK:           %[[K:.+]] = arith.divsi %{{.+}}, %st : index
// CHECK-NEXT:      %[[LAST:.+]] = arith.constant 7 : index
// CHECK-NEXT:      %[[SLOT:.+]] = arith.minui %[[K]], %[[LAST]] {diff.iter = {{[0-9]+}} : i64} : index
// CHECK-NEXT:      memref.store %acc, %[[TAPE]][%[[SLOT]]] : memref<8xf32>
// CHECK:         } {diff.max_iters = 8 : i64, diff.loop = {{[0-9]+}} : i64, diff.trip = 8 : i64}
// CHECK:         %[[SPAN:.+]] = arith.subi %n, %lb : index
// CHECK-NEXT:    %[[S1:.+]] = arith.addi %[[SPAN]], %st : index
// CHECK-NEXT:    %[[ONE:.+]] = arith.constant 1 : index
// CHECK-NEXT:    %[[S2:.+]] = arith.subi %[[S1]], %[[ONE]] : index
// CHECK-NEXT:    %[[COUNT:.+]] = arith.divsi %[[S2]], %st : index
// CHECK-NEXT:    %[[N:.+]] = arith.constant 8 : index
// CHECK-NEXT:    %[[OVER:.+]] = arith.cmpi sgt, %[[COUNT]], %[[N]] : index
// CHECK-NEXT:    scf.if %[[OVER]] {
// CHECK:           memref.get_global @diffc_status_0
// CHECK:         %[[TAKEN:.+]] = arith.minsi %[[COUNT]], %{{.+}} : index
// CHECK:         %[[ADJ:.+]] = scf.for %{{.+}} = %{{.+}} to %[[TAKEN]] step
// CHECK:           memref.load %[[TAPE]]
// CHECK:         %[[NAN:.+]] = arith.constant 0x7fc00000 : f32
// CHECK-NEXT:    %[[GRAD:.+]] = arith.select %[[OVER]], %[[NAN]], %[[ADJ]] : f32
// CHECK-NEXT:    func.return %[[GRAD]] : f32
// CHECK:       "memref.global"() <{sym_name = "diffc_status_0", {{.*}}diffc.status = "overrun", {{.*}}diffc.function = "f", diffc.max_iters = 8 : i64}
