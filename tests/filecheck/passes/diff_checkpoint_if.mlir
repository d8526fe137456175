// RUN: diffc-opt %s -p 'diff-rev,diff-checkpoint{report=true}' | filecheck %s
// A call inside a branch outside any loop: its result is stored in a one-slot memref in the
// forward branch and loaded in the reverse branch on the same condition.

func.func @g(%a: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %a : f32
  func.return %s : f32
}
func.func @f(%x: f32, %c: i1) -> f32 attributes {diff.differentiable} {
  %r = scf.if %c -> (f32) {
    %t = func.call @g(%x) : (f32) -> f32
    %u = arith.mulf %t, %t : f32
    scf.yield %u : f32
  } else {
    scf.yield %x : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %c: i1, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %c, %d) : (f32, i1, f32) -> f32
  func.return %g : f32
}

// CHECK:      // checkpoint @f_bwd: 4 bytes of stored context
// CHECK-NEXT: // checkpoint @f_bwd: store func.call @g -> memref<1xf32> (4 bytes): result of a call to @g (expensive)
// CHECK-LABEL: func.func @f_bwd(%x: f32, %c: i1, %d_out: f32) -> f32
// CHECK-NEXT:    %[[T:.+]] = memref.alloca() : memref<1xf32>
// CHECK-NEXT:    %r = scf.if %c -> (f32) {
// CHECK-NEXT:      %t = func.call @g(%x) : (f32) -> f32
// CHECK-NEXT:      %[[Z:.+]] = arith.constant 0 : index
// CHECK-NEXT:      memref.store %t, %[[T]][%[[Z]]] : memref<1xf32>
// CHECK:         scf.if %c -> (f32) {
// CHECK-NEXT:      %[[Z2:.+]] = arith.constant 0 : index
// CHECK-NEXT:      %[[TR:.+]] = memref.load %[[T]][%[[Z2]]] : memref<1xf32>
// CHECK-NEXT:      arith.mulf %[[TR]], %d_out
// CHECK:           func.call @g_bwd(%x,
