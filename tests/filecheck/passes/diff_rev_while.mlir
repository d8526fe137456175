// RUN: diffc-opt %s -p diff-rev | filecheck %s
// scf.while with diff.max_iters = 20: the forward loop counts its iterations (an extra index
// carried value), stores the carried values (21 slots: the condition runs once more) and the
// count; the reverse sweep reverses the last condition evaluation, then loops over the count.
// A run longer than max_iters keeps its tape in bounds (the slot is min(iteration, 20)), and its
// gradients are NaN: the reverse sweep runs over the taped iterations and selects NaN.

func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lim = arith.constant 10.0 : f32
  %r = scf.while (%a = %x) : (f32) -> f32 {
    %c = arith.cmpf olt, %a, %lim : f32
    scf.condition(%c) %a : f32
  } do {
  ^bb0(%b: f32):
    %m = arith.mulf %b, %y : f32
    %n = arith.addf %m, %b : f32
    scf.yield %n : f32
  } attributes {diff.max_iters = 20 : i64}
  func.return %r : f32
}
func.func @main(%x: f32, %y: f32, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %d) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// CHECK-LABEL: func.func @f_bwd
// CHECK-DAG:     %[[TAPE:.+]] = memref.alloca() {diff.tape = "loop-carried value of scf.while"} : memref<21xf32>
// CHECK-DAG:     %[[CNT:.+]] = memref.alloca() {diff.tape = "iteration count of scf.while"} : memref<1xindex>
// CHECK:         %r, %[[N:.+]] = scf.while (%{{.+}} = %x, %[[K:.+]] = %{{.+}}) : (f32, index) -> (f32, index) {
// CHECK:           %[[LASTSLOT:.+]] = arith.constant 20 : index
// CHECK:           %[[SLOT:.+]] = arith.minui %[[K]], %[[LASTSLOT]] {diff.iter = {{[0-9]+}} : i64} : index
// CHECK:           memref.store %{{.+}}, %[[TAPE]][%[[SLOT]]]
// CHECK:           scf.condition(%{{.+}}) %{{.+}}, %{{.+}} : f32, index
// CHECK:         } do {
// CHECK:           arith.addi
// CHECK:           scf.yield %{{.+}}, %{{.+}} : f32, index
// CHECK:         } attributes {diff.max_iters = 20 : i64, diff.loop = {{[0-9]+}} : i64, diff.trip = 21 : i64}
// CHECK:         memref.store %[[N]], %[[CNT]]
// CHECK:         %[[TAPED:.+]] = memref.load %[[CNT]]
// CHECK:         %[[OVERRAN:.+]] = arith.cmpi ugt, %[[TAPED]], %[[LAST:.+]] : index
// CHECK:         %[[COUNT:.+]] = arith.minui %[[TAPED]], %[[LAST]] : index
// CHECK:         %[[G0:.+]], %[[G1:.+]] = scf.for %{{.+}} = %{{.+}} to %[[COUNT]] step
// CHECK:           memref.load %[[TAPE]]
// CHECK:         %[[NAN:.+]] = arith.constant 0x7fc00000 : f32
// CHECK:         %[[GX:.+]] = arith.select %[[OVERRAN]], %[[NAN]], %[[G0]] : f32
// CHECK:         %[[NAN2:.+]] = arith.constant 0x7fc00000 : f32
// CHECK:         %[[GY:.+]] = arith.select %[[OVERRAN]], %[[NAN2]], %[[G1]] : f32
// CHECK:         func.return %[[GX]], %[[GY]]
