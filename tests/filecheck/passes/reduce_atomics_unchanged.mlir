// Adds reduce-atomics leaves as they are: a per-work-item address, an add in a divergent branch,
// a buffer the kernel also reads, a fetch-add whose old value is used, an add in a loop whose
// bound differs between work-items, a kernel of one work-item, and a barrier inside the guard.
// RUN: diffc-opt %s -p reduce-atomics | filecheck %s
// RUN: diffc-opt %s -p reduce-atomics | filecheck %s --check-prefix=NONE

// NONE-NOT: kernel.local_alloc
// NONE-NOT: kernel.local_id

func.func @per_item(%grads: memref<?xf32>, %v: f32) attributes {kernel.entry, kernel.reqd_work_group_size = [64 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  kernel.atomic_add %v, %grads[%g] : memref<?xf32>
  func.return
}
// CHECK-LABEL: func.func @per_item(
// CHECK-NEXT:    %[[G:.+]] = kernel.global_id 0
// CHECK-NEXT:    kernel.atomic_add %v, %grads[%[[G]]] : memref<?xf32>
// CHECK-NEXT:    func.return

func.func @divergent(%flags: memref<?xi32>, %grads: memref<?xf32>, %v: f32) attributes {kernel.entry, kernel.reqd_work_group_size = [64 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  %c0 = arith.constant 0 : index
  %f = memref.load %flags[%g] : memref<?xi32>
  %zero = arith.constant 0 : i32
  %set = arith.cmpi ne, %f, %zero : i32
  %past = arith.cmpi uge, %g, %c0 : index
  scf.if %past {
    scf.if %set {
      kernel.atomic_add %v, %grads[%c0] : memref<?xf32>
    }
  }
  func.return
}
// CHECK-LABEL: func.func @divergent(
// CHECK:         scf.if %{{.+}} {
// CHECK-NEXT:      scf.if %set {
// CHECK-NEXT:        kernel.atomic_add %v, %grads[%c0] : memref<?xf32>

func.func @also_read(%grads: memref<?xf32>, %out: memref<?xf32>, %v: f32) attributes {kernel.entry, kernel.reqd_work_group_size = [64 : i64, 1 : i64, 1 : i64]} {
  %c0 = arith.constant 0 : index
  kernel.atomic_add %v, %grads[%c0] : memref<?xf32>
  %seen = memref.load %grads[%c0] : memref<?xf32>
  %g = kernel.global_id 0
  memref.store %seen, %out[%g] : memref<?xf32>
  func.return
}
// CHECK-LABEL: func.func @also_read(
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    kernel.atomic_add %v, %grads[%c0] : memref<?xf32>

func.func @fetch_add(%counter: memref<?xi32>, %out: memref<?xi32>) attributes {kernel.entry, kernel.reqd_work_group_size = [64 : i64, 1 : i64, 1 : i64]} {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %slot = kernel.atomic_rmw addi %one, %counter[%c0] : memref<?xi32>
  %g = kernel.global_id 0
  memref.store %slot, %out[%g] : memref<?xi32>
  func.return
}
// CHECK-LABEL: func.func @fetch_add(
// CHECK:         %slot = kernel.atomic_rmw addi %one, %counter[%c0] : memref<?xi32>

func.func @item_bound(%grads: memref<?xf32>, %v: f32) attributes {kernel.entry, kernel.reqd_work_group_size = [64 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %g step %c1 {
    kernel.atomic_add %v, %grads[%i] : memref<?xf32>
  }
  func.return
}
// CHECK-LABEL: func.func @item_bound(
// CHECK:         scf.for %i = %c0 to %{{.+}} step %c1 {
// CHECK-NEXT:      kernel.atomic_add %v, %grads[%i] : memref<?xf32>

func.func @one_item(%grads: memref<?xf32>, %v: f32) attributes {kernel.entry, kernel.reqd_work_group_size = [1 : i64, 1 : i64, 1 : i64]} {
  %c0 = arith.constant 0 : index
  kernel.atomic_add %v, %grads[%c0] : memref<?xf32>
  func.return
}
// CHECK-LABEL: func.func @one_item(
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    kernel.atomic_add %v, %grads[%c0] : memref<?xf32>

func.func @guard_with_barrier(%grads: memref<?xf32>, %v: f32, %n: index) attributes {kernel.entry, kernel.reqd_work_group_size = [64 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  %c0 = arith.constant 0 : index
  %in = arith.cmpi ult, %g, %n : index
  scf.if %in {
    "kernel.barrier"() : () -> ()
    kernel.atomic_add %v, %grads[%c0] : memref<?xf32>
  }
  func.return
}
// CHECK-LABEL: func.func @guard_with_barrier(
// CHECK:         scf.if %in {
// CHECK-NEXT:      kernel.barrier
// CHECK-NEXT:      kernel.atomic_add %v, %grads[%c0] : memref<?xf32>
