// Gradient accumulation into global memory becomes private sums over a persistent loop of the
// kernel's work-groups, one transposed reduction in local memory and one add per group and
// slot (or, in deterministic mode, a per-group partial sum that @K__accum_finish adds in order).
// The original kernel stays (reduce-atomics' fallback); a kernel whose adds the pass cannot
// place in fixed slots is left alone, and report=true says why.
// RUN: diffc-opt %s -p 'accumulate-gradients{report=true local_bytes=32}' | filecheck %s
// RUN: diffc-opt %s -p 'accumulate-gradients{local_bytes=32}' -t opencl | filecheck %s --check-prefix=CL

func.func @grads(%values: memref<?xf32>, %grads: memref<?xf16>, %grads_off: index, %count: i32)
    attributes {kernel.entry, kernel.reqd_work_group_size = [4 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  %tid = arith.index_cast %g : index to i32
  %past = arith.cmpi uge, %tid, %count : i32
  %true = arith.constant true
  %active = arith.xori %past, %true : i1
  scf.if %active {
    %v = memref.load %values[%g] : memref<?xf32>
    %h = arith.truncf %v : f32 to f16
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c3 step %c1 {
      %at = arith.addi %grads_off, %i : index
      %old = kernel.atomic_rmw addf %h, %grads[%at] : memref<?xf16>
    }
  }
  func.return
}

func.func @per_item(%grads: memref<?xf32>) attributes {kernel.entry, kernel.reqd_work_group_size = [4 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  %one = arith.constant 1.0 : f32
  kernel.atomic_add %one, %grads[%g] : memref<?xf32>
  func.return
}

// CHECK: // accumulate-gradients @grads: rewritten: 3 gradient slots, persistent work-groups, one transposed reduction
// CHECK: // accumulate-gradients @per_item: left to reduce-atomics: an add whose address depends on the work-item or on a loop of unknown trip count

// The original kernel is kept as it was.
// CHECK-LABEL: func.func @grads(
// CHECK: kernel.atomic_rmw addf

// CHECK-LABEL: func.func @grads__accum(%values: memref<?xf32>, %grads: memref<?xf16>, %grads_off: index, %count: i32, %diffc_groups: index, %diffc_partials: memref<?xf32>, %diffc_deterministic: i32)
// CHECK-SAME: diffc.accumulated, diffc.accumulate_of = "grads", diffc.accumulate_slots = 3 : i64
// CHECK: %[[SLOTS:.+]] = kernel.local_alloc : memref<2x4xf32, 3 : i32>
// CHECK: %[[LID:.+]] = kernel.local_id 0
// CHECK: %[[GROUP:.+]] = kernel.group_id 0
// CHECK: %[[NGROUPS:.+]] = kernel.num_groups 0
// CHECK: %[[ACC:.+]] = memref.alloca() : memref<3xf32>
// The persistent loop: global_id(0) is virtual_group * 4 + local_id(0).
// CHECK: scf.for %[[VG:.+]] = %[[GROUP]] to %diffc_groups step %[[NGROUPS]] {
// CHECK: %[[BASE:.+]] = arith.muli %[[VG]], %{{.+}} : index
// CHECK: %[[GID:.+]] = arith.addi %[[BASE]], %[[LID]] : index
// CHECK: memref.load %values[%[[GID]]]
// The loop of three adds is unrolled: three private sums, no atomic inside the loop.
// CHECK-NOT: kernel.atomic_rmw
// CHECK: arith.extf
// CHECK: memref.load %[[ACC]]
// CHECK: arith.addf
// CHECK: memref.store
// CHECK-NOT: kernel.atomic_rmw
// Chunks of two slots (32 bytes of local memory): each work-item writes its sums once, one barrier.
// CHECK: memref.store %{{.+}}, %[[SLOTS]][%{{.+}}, %[[LID]]]
// CHECK: memref.store %{{.+}}, %[[SLOTS]][%{{.+}}, %[[LID]]]
// CHECK-NEXT: kernel.barrier
// Work-item t sums slot t over the group ...
// CHECK: memref.load %[[SLOTS]][%[[LID]], %{{.+}}]
// ... then stores the group's partial sum (deterministic) or adds it once (the original add, in half).
// CHECK: memref.store %{{.+}}, %diffc_partials
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK: kernel.atomic_rmw addf

// CHECK-LABEL: func.func @grads__accum_finish(
// CHECK-SAME: %diffc_groups: index, %diffc_partials: memref<?xf32>)
// CHECK: kernel.local_alloc : memref<3xf32, 3 : i32>
// CHECK: memref.load %diffc_partials
// CHECK: kernel.barrier
// CHECK-COUNT-3: kernel.atomic_rmw addf

// CHECK-LABEL: func.func @per_item(
// CHECK-NOT: func.func @per_item__accum

// CL: __kernel __attribute__((reqd_work_group_size(4, 1, 1))) void grads__accum(
// CL: __local float group_slots[8];
// CL: barrier(CLK_LOCAL_MEM_FENCE);
