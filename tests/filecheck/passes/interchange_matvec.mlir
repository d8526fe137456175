// A coopVecMatMul row loop whose dot products read the matrix by a stride (the transposed
// product) becomes a loop over k around a loop over the rows, adding into a private array of
// sums in the same order from the same start; the row loop then reads its row's sum. A dot
// product that reads the matrix contiguously keeps its loop.
// RUN: diffc-opt %s -p interchange-matvec | filecheck %s

// CHECK-LABEL: func.func @transposed
// CHECK:       %out = memref.alloca() : memref<4xf32>
// CHECK-NEXT:  %[[SUMS:.*]] = memref.alloca() : memref<4xf32>
// CHECK:       scf.for %[[I0:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:    memref.store %{{.*}}, %[[SUMS]][%[[I0]]] : memref<4xf32>
// CHECK:       scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:    scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[ACC:.*]] = memref.load %[[SUMS]][%[[I]]] : memref<4xf32>
// CHECK-NEXT:      %[[KK:.*]] = arith.muli %[[K]], %{{.*}} : index
// CHECK-NEXT:      %[[AT:.*]] = arith.addi %[[I]], %[[KK]] : index
// CHECK-NEXT:      %[[A:.*]] = memref.load %{{.*}}[%[[AT]]] : memref<?xf32>
// CHECK-NEXT:      %[[B:.*]] = memref.load %{{.*}}[%[[K]]] : memref<4xf32>
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:      memref.store %[[S]], %[[SUMS]][%[[I]]] : memref<4xf32>
// CHECK:       scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:    %[[DOT:.*]] = memref.load %[[SUMS]][%[[R]]] : memref<4xf32>
// CHECK-NEXT:    memref.store %[[DOT]], %{{.*}}[%[[R]]] : memref<4xf32>
// CHECK-NEXT:  } {diffc.coopvec = "matmul"}
func.func @transposed(%w: memref<?xf32>, %x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %out = memref.alloca() : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %dot = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
      %kk = arith.muli %k, %c4 : index
      %at = arith.addi %i, %kk : index
      %a = memref.load %w[%at] : memref<?xf32>
      %b = memref.load %x[%k] : memref<4xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      scf.yield %s : f32
    }
    memref.store %dot, %out[%i] : memref<4xf32>
  } {diffc.coopvec = "matmul"}
  %r = memref.load %out[%c0] : memref<4xf32>
  func.return %r : f32
}

// CHECK-LABEL: func.func @contiguous
// CHECK-NOT:   memref.alloca() : memref<4xf32>
// CHECK:       scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:    %[[ROW:.*]] = arith.muli %[[I]], %{{.*}} : index
// CHECK-NEXT:    %{{.*}} = scf.for
func.func @contiguous(%w: memref<?xf32>, %x: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %row = arith.muli %i, %c4 : index
    %dot = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
      %kk = arith.muli %k, %c1 : index
      %at = arith.addi %row, %kk : index
      %a = memref.load %w[%at] : memref<?xf32>
      %b = memref.load %x[%k] : memref<4xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      scf.yield %s : f32
    }
    memref.store %dot, %out[%i] : memref<4xf32>
  } {diffc.coopvec = "matmul"}
  func.return
}
