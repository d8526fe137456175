// RUN: diffc-opt %s -p 'diff-rev,diff-checkpoint{report=true}' | filecheck %s
// RUN: diffc-opt %s -p 'diff-rev,diff-checkpoint' | filecheck %s --check-prefix=QUIET
// Default policy: the call's result, needed by the reverse loop, is stored per iteration;
// the cheap math.exp is recomputed from the reloaded carried value.

func.func @g(%a: f32, %b: f32) -> f32 attributes {diff.differentiable} {
  %m = arith.mulf %a, %b : f32
  %s = math.sin %m : f32
  func.return %s : f32
}
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %t = func.call @g(%acc, %y) : (f32, f32) -> f32
    %e = math.exp %acc : f32
    %u = arith.mulf %t, %e : f32
    scf.yield %u : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %y: f32, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %d) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// CHECK:      // checkpoint @g_bwd: 0 bytes of stored context
// CHECK-NEXT: // checkpoint @f_bwd: 24 bytes of stored context
// CHECK-NEXT: // checkpoint @f_bwd: store memref<3xf32> (12 bytes): loop-carried value of scf.for
// CHECK-NEXT: // checkpoint @f_bwd: store func.call @g -> memref<3xf32> (12 bytes): result of a call to @g (expensive)
// CHECK-NEXT: // checkpoint @f_bwd: recompute math.exp: cheap arithmetic
// CHECK-LABEL: func.func @f_bwd
// CHECK-NEXT:    %[[CALLS:.+]] = memref.alloca() : memref<3xf32>
// CHECK-NEXT:    %[[CARRIED:.+]] = memref.alloca() : memref<3xf32>
// CHECK:         scf.for
// CHECK:           %[[K:.+]] = arith.divsi
// CHECK-NEXT:      memref.store %acc, %[[CARRIED]][%[[K]]]
// CHECK-NEXT:      %t = func.call @g(%acc, %y) : (f32, f32) -> f32
// CHECK-NEXT:      memref.store %t, %[[CALLS]][%[[K]]] : memref<3xf32>
// CHECK:         scf.for
// CHECK:           arith.subi
// CHECK-NEXT:      %[[RK:.+]] = arith.subi
// CHECK:           %[[ACC:.+]] = memref.load %[[CARRIED]][%[[RK]]]
// CHECK-NEXT:      %{{.+}} = memref.load %[[CALLS]][%[[RK]]] : memref<3xf32>
// CHECK-NEXT:      %{{.+}} = math.exp %[[ACC]] : f32
// CHECK-NOT:       func.call @g(
// CHECK:           func.call @g_bwd
// CHECK-NOT:   diff.

// QUIET-NOT: // checkpoint
// QUIET-NOT: diff.recompute
// QUIET-NOT: diff.primal_id
// QUIET-NOT: diff.tape
