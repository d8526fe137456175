// An integer atomic at one address (a batch's largest loss: maxu) next to a gradient add: it
// becomes a private slot of its own kind too (identity 0 for maxu), combined over the group in a
// local array of i32 rows and issued once per group in both modes (exact in any order). With
// local_sums the sums live in the work-item's column of the local rows, not in private memory.
// RUN: diffc-opt %s -p 'accumulate-gradients{report=true work_group=2 finish_group=8}' | filecheck %s
// RUN: diffc-opt %s -p 'accumulate-gradients{work_group=2 finish_group=8 local_sums=true}' | filecheck %s --check-prefix=LOCAL

func.func @grads(%values: memref<?xf32>, %grads: memref<?xf32>, %loss: memref<?xi32>, %count: i32)
    attributes {kernel.entry, kernel.reqd_work_group_size = [4 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  %v = memref.load %values[%g] : memref<?xf32>
  %c0 = arith.constant 0 : index
  kernel.atomic_add %v, %grads[%c0] : memref<?xf32>
  %b = arith.bitcast %v : f32 to i32
  %old = kernel.atomic_rmw maxu %b, %loss[%c0] : memref<?xi32>
  func.return
}

// CHECK: // accumulate-gradients @grads: rewritten: 1 gradient slots and 1 integer (maxu)
// CHECK-LABEL: func.func @grads__accum(
// CHECK: %[[INTS:.+]] = kernel.local_alloc : memref<1x3xi32, 3 : i32>
// CHECK: %[[EXACT:.+]] = memref.alloca() : memref<1xi32>
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK: memref.store %[[ZERO]], %[[EXACT]]
// CHECK: scf.for
// CHECK-NOT: kernel.atomic
// CHECK: arith.maxui
// CHECK-NOT: kernel.atomic
// CHECK: kernel.barrier
// The float slot first (partial sum or atomic add), then the integer rows: copied, combined, one atomic.
// CHECK: kernel.atomic_add
// CHECK: memref.store %{{.+}}, %[[INTS]]
// CHECK: kernel.barrier
// CHECK: scf.for {{.+}} -> (i32)
// CHECK: arith.maxui
// CHECK: kernel.atomic_rmw maxu
// CHECK-NOT: kernel.atomic
// CHECK: func.return

// LOCAL-LABEL: func.func @grads__accum(
// LOCAL: %[[INTS:.+]] = kernel.local_alloc : memref<1x3xi32, 3 : i32>
// LOCAL: %[[ROWS:.+]] = kernel.local_alloc : memref<1x3xf32, 3 : i32>
// LOCAL: %[[LID:.+]] = kernel.local_id 0
// LOCAL-NOT: memref.alloca
// LOCAL: scf.for
// LOCAL: memref.load %[[ROWS]][%{{.+}}, %[[LID]]]
// LOCAL: arith.addf
// LOCAL: memref.store %{{.+}}, %[[ROWS]][%{{.+}}, %[[LID]]]
// LOCAL: memref.load %[[INTS]][%{{.+}}, %[[LID]]]
// LOCAL: arith.maxui
// One barrier after the loop: the rows are already in place.
// LOCAL: kernel.barrier
// LOCAL-NOT: kernel.barrier
// LOCAL: kernel.atomic_rmw maxu
