// RUN: diffc-opt %s -p 'diff-rev,diff-checkpoint{report=true}' | filecheck %s
// A call in the inner of two loops is stored per (outer, inner) iteration. The inner loop's
// result, needed by the outer reverse body, is stored too (results of a loop), so the outer
// reverse body does not rerun the inner loop.

func.func @g(%a: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %a : f32
  func.return %s : f32
}
func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %ub2 = arith.constant 4 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %q = scf.for %j = %lb to %ub2 step %st iter_args(%b = %acc) -> (f32) {
      %t = func.call @g(%b) : (f32) -> f32
      %a = arith.mulf %t, %b : f32
      scf.yield %a : f32
    }
    %w = arith.mulf %q, %acc : f32
    scf.yield %w : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %d) : (f32, f32) -> f32
  func.return %g : f32
}

// CHECK:      // checkpoint @f_bwd: 120 bytes of stored context
// CHECK-DAG:  // checkpoint @f_bwd: store memref<3xf32> (12 bytes): loop-carried value of scf.for
// CHECK-DAG:  // checkpoint @f_bwd: store memref<3x4xf32> (48 bytes): loop-carried value of scf.for
// CHECK-DAG:  // checkpoint @f_bwd: store scf.for -> memref<3xf32> (12 bytes): results of a loop (loop-carried values)
// CHECK-DAG:  // checkpoint @f_bwd: store func.call @g -> memref<3x4xf32> (48 bytes): result of a call to @g (expensive)
// CHECK-LABEL: func.func @f_bwd
// CHECK:         scf.for
// CHECK:           %[[I:.+]] = arith.divsi {{.*}} : index
// CHECK:           scf.for
// CHECK:             %[[J:.+]] = arith.divsi {{.*}} : index
// CHECK:             %t = func.call @g
// CHECK-NEXT:        memref.store %t, %{{.+}}[%[[I]], %[[J]]] : memref<3x4xf32>
