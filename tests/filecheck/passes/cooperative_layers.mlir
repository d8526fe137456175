// Outer products and sums that every work-item of a group adds into the same buffer become a
// matrix product over the group's samples: each work-item's factors go to local memory as a row
// (zeros where the early return's predicate is false), each work-item sums a tile of the product
// in sample order, then adds each element of its tile once.
// RUN: diffc-opt %s -p cooperative-layers | filecheck %s
// RUN: diffc-opt %s -p cooperative-layers -t opencl | filecheck %s --check-prefix=CL

// CHECK-LABEL: func.func @outer(
// CHECK:         %[[LID:.+]] = kernel.local_id 0
// CHECK-NEXT:    %[[ROWS:.+]] = kernel.local_alloc : memref<20xf32, 3 : i32>
// the guard became a predicate around the rest of the body
// CHECK:         scf.if %active {
// CHECK:           %{{.*}} = memref.load %a[%g] : memref<?xf32>
// CHECK:         } else {
// CHECK-NEXT:    }
// the 2 x 3 product: tiles of 2 x 1, three of them
// CHECK:         %[[TILE_ON:.+]] = arith.cmpi ult, %[[LID]], %{{.*}} : index
// CHECK:         %[[S0:.+]], %[[S1:.+]] = scf.for %[[C:.+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// CHECK:           scf.if %{{.*}} {
// CHECK:             %{{.*}} = scf.if %active -> (f32) {
// CHECK:               %{{.*}} = memref.load %x[%{{.*}}] : memref<2xf32>
// CHECK:             } else {
// CHECK-NEXT:          %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:          scf.yield %[[ZERO]] : f32
// CHECK:             memref.store %{{.*}}, %[[ROWS]][%{{.*}}] : memref<20xf32, 3 : i32>
// CHECK:               %{{.*}} = memref.load %y[%{{.*}}] : memref<3xf32>
// CHECK:             memref.store %{{.*}}, %[[ROWS]][%{{.*}}] : memref<20xf32, 3 : i32>
// CHECK:           kernel.barrier
// CHECK-NEXT:      %{{.*}}, %{{.*}} = scf.if %[[TILE_ON]] -> (f32, f32) {
// CHECK:             arith.mulf
// CHECK-NEXT:        arith.addf
// CHECK:             arith.mulf
// CHECK-NEXT:        arith.addf
// CHECK:           kernel.barrier
// CHECK:         scf.if %[[TILE_ON]] {
// CHECK:           kernel.atomic_add %[[S0]], %dw[%{{.*}}] : memref<?xf32>
// CHECK:           kernel.atomic_add %[[S1]], %dw[%{{.*}}] : memref<?xf32>
// CHECK-NEXT:    }
// the bias sum: one element a work-item
// CHECK:         %[[SUM:.+]] = scf.for
// CHECK:           kernel.barrier
// CHECK:           kernel.barrier
// CHECK:         kernel.atomic_add %[[SUM]], %db[%{{.*}}] : memref<?xf32>
// CHECK-NOT:     kernel.atomic_add
// CHECK:         func.return

// CL: __kernel __attribute__((reqd_work_group_size(4, 1, 1))) void outer(
// CL:   __local float
// CL:   barrier(CLK_LOCAL_MEM_FENCE);
func.func @outer(%a: memref<?xf32>, %b: memref<?xf32>, %dw: memref<?xf32>, %db: memref<?xf32>, %count: i32)
    attributes {kernel.entry, kernel.reqd_work_group_size = [4 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  %tid = arith.index_cast %g : index to i32
  %past = arith.cmpi uge, %tid, %count : i32
  %true = arith.constant true
  %active = arith.xori %past, %true : i1
  scf.if %active {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c6 = arith.constant 6 : index
    %x = memref.alloca() : memref<2xf32>
    %y = memref.alloca() : memref<3xf32>
    %x0 = memref.load %a[%g] : memref<?xf32>
    memref.store %x0, %x[%c0] : memref<2xf32>
    memref.store %x0, %x[%c1] : memref<2xf32>
    %y0 = memref.load %b[%g] : memref<?xf32>
    memref.store %y0, %y[%c0] : memref<3xf32>
    memref.store %y0, %y[%c1] : memref<3xf32>
    memref.store %y0, %y[%c2] : memref<3xf32>
    scf.for %f = %c0 to %c6 step %c1 {
      %i = arith.divui %f, %c3 : index
      %j = arith.remui %f, %c3 : index
      %xi = memref.load %x[%i] : memref<2xf32>
      %yj = memref.load %y[%j] : memref<3xf32>
      %p = arith.mulf %xi, %yj : f32
      kernel.atomic_add %p, %dw[%f] : memref<?xf32>
    }
    scf.for %i = %c0 to %c2 step %c1 {
      %xi = memref.load %x[%i] : memref<2xf32>
      kernel.atomic_add %xi, %db[%i] : memref<?xf32>
    }
  }
  func.return
}

// A top-level branch with an empty side is a predicate like the early return (its
// work-items add zeros), but a branch inside it is not: the adds under it stay per work-item.
// CHECK-LABEL: func.func @diverging(
// CHECK-NOT:     kernel.barrier
// CHECK:         kernel.atomic_add
// CHECK-NOT:     kernel.barrier
func.func @diverging(%a: memref<?xf32>, %dw: memref<?xf32>, %count: index)
    attributes {kernel.entry, kernel.reqd_work_group_size = [4 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %active = arith.cmpi ult, %g, %count : index
  scf.if %active {
    %v = memref.load %a[%g] : memref<?xf32>
    %zero = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %v, %zero : f32
    scf.if %pos {
      scf.for %i = %c0 to %c4 step %c1 {
        kernel.atomic_add %v, %dw[%i] : memref<?xf32>
      }
    }
  }
  func.return
}
