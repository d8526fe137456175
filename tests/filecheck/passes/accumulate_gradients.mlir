// Gradient accumulation into global memory becomes private sums over a grid-stride loop of the
// kernel's work-items (run by the accumulated kernel's own, smaller, work-groups), one transposed
// reduction in local memory and one add per group and slot (or, in deterministic mode, a
// per-group partial sum that @K__accum_finish adds in a fixed order).
// The original kernel stays (reduce-atomics' fallback); a kernel whose adds the pass cannot
// place in fixed slots is left alone, and report=true says why.
// RUN: diffc-opt %s -p 'accumulate-gradients{report=true local_bytes=32 work_group=2 finish_group=8}' | filecheck %s
// RUN: diffc-opt %s -p 'accumulate-gradients{local_bytes=32 work_group=2 finish_group=8}' -t opencl | filecheck %s --check-prefix=CL
// RUN: diffc-opt %s -p 'accumulate-gradients{work_group=1 finish_group=8}' -t opencl | filecheck %s --check-prefix=ONE

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

// CHECK: // accumulate-gradients @grads: rewritten: 3 gradient slots, a grid-stride loop, one transposed reduction per work-group
// CHECK: // accumulate-gradients @per_item: left to reduce-atomics: an add whose address depends on the work-item or on a loop of unknown trip count

// The original kernel is kept as it was.
// CHECK-LABEL: func.func @grads(
// CHECK: kernel.atomic_rmw addf

// CHECK-LABEL: func.func @grads__accum(%values: memref<?xf32>, %grads: memref<?xf16>, %grads_off: index, %count: i32, %diffc_groups: index {diffc.name = "diffc_groups"}, %diffc_partials: memref<?xf32> {diffc.name = "diffc_partials"}, %diffc_deterministic: i32 {diffc.name = "diffc_deterministic"})
// Its own groups of 2 work-items; rows of 2 + 1 floats, two of them in 32 bytes.
// CHECK-SAME: kernel.reqd_work_group_size = [2 : i64, 1 : i64, 1 : i64], diffc.accumulated, diffc.accumulate_of = "grads", diffc.accumulate_slots = 3 : i64
// CHECK: %[[SLOTS:.+]] = kernel.local_alloc : memref<2x3xf32, 3 : i32>
// CHECK: %[[LID:.+]] = kernel.local_id 0
// CHECK: %[[GROUP:.+]] = kernel.group_id 0
// CHECK: %[[NGROUPS:.+]] = kernel.num_groups 0
// CHECK: %[[ACC:.+]] = memref.alloca() : memref<3xf32>
// The private sums start at 0, in a loop over the slots the device compiler unrolls.
// CHECK: scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT: memref.store %{{.+}}, %[[ACC]][%[[K]]] : memref<3xf32>
// CHECK-NEXT: } {diffc.unroll}
// The grid-stride loop over the original launch's diffc_groups * 4 work-items ...
// CHECK: %[[L:.+]] = arith.constant 4 : index
// CHECK: %[[R:.+]] = arith.constant 2 : index
// CHECK: %[[FIRST:.+]] = arith.muli %[[GROUP]], %[[R]] : index
// CHECK: %[[START:.+]] = arith.addi %[[FIRST]], %[[LID]] : index
// CHECK: %[[STRIDE:.+]] = arith.muli %[[NGROUPS]], %[[R]] : index
// CHECK: %[[TOTAL:.+]] = arith.muli %diffc_groups, %[[L]] : index
// CHECK: scf.for %[[VID:.+]] = %[[START]] to %[[TOTAL]] step %[[STRIDE]] {
// ... where global_id(0) is the virtual work-item.
// CHECK: arith.index_cast %[[VID]] : index to i32
// CHECK: memref.load %values[%[[VID]]]
// The loop of three adds is unrolled: three private sums, no atomic inside the loop.
// CHECK-NOT: kernel.atomic_rmw
// CHECK: arith.extf
// CHECK: memref.load %[[ACC]]
// CHECK: arith.addf
// CHECK: memref.store
// CHECK-NOT: kernel.atomic_rmw
// The first chunk of two slots: each work-item writes its sums once (a loop over the chunk's
// rows, unrolled by the device), one barrier ...
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT: %[[S:.+]] = memref.load %[[ACC]][%[[J]]]
// CHECK-NEXT: memref.store %[[S]], %[[SLOTS]][%[[J]], %[[LID]]]
// CHECK-NEXT: } {diffc.unroll}
// CHECK-NEXT: kernel.barrier
// ... work-item t sums row t over the group's 2 work-items (one pass: row t is the work-item's
// own; with more rows than work-items, a loop over the passes) ...
// CHECK: scf.for %{{.+}} = %{{.+}} to %[[R]]
// CHECK: memref.load %[[SLOTS]][%[[LID]], %{{.+}}]
// ... then stores the group's partial sum (deterministic) or adds it once: the three slots are
// one run of addresses grads_off + 0, 1, 2, so work-item t adds at grads_off + slot t (in half).
// CHECK: memref.store %{{.+}}, %diffc_partials
// CHECK: } else {
// CHECK-NEXT: %[[N2:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[MINE:.+]] = arith.cmpi ult, %[[LID]], %[[N2]] : index
// CHECK-NEXT: scf.if %[[MINE]] {
// CHECK: %[[BASE:.+]] = arith.addi %grads_off, %{{.+}} : index
// CHECK-NEXT: %[[AT:.+]] = arith.addi %[[BASE]], %[[LID]] : index
// CHECK-NEXT: arith.truncf %{{.+}} : f32 to f16
// CHECK-NEXT: kernel.atomic_rmw addf %{{.+}}, %grads[%[[AT]]]
// CHECK-NOT: kernel.atomic_rmw
// The second chunk (one slot) reuses the local rows after a barrier; only work-item 0 has a row,
// which is slot 2: grads_off + 0 + (row + 2).
// CHECK: kernel.barrier
// CHECK: memref.store %{{.+}}, %[[SLOTS]][%{{.+}}, %[[LID]]]
// CHECK-NEXT: } {diffc.unroll}
// CHECK-NEXT: kernel.barrier
// CHECK: arith.cmpi ult
// CHECK: scf.if %{{.+}} {
// CHECK: kernel.atomic_rmw addf
// CHECK-NOT: kernel.atomic_rmw
// CHECK: func.return

// The finish kernel: one group of 8 per slot (launched as 3 groups); group k's work-items add
// every 8th group's partial sums of slot k, a fixed tree (8 -> 4 -> 2 -> 1, a barrier after each
// level) adds the 8 parts, and work-item 0 issues the add of its group's slot only: one add in a
// loop over the run of three slots.
// CHECK-LABEL: func.func @grads__accum_finish(
// CHECK-SAME: %diffc_groups: index {diffc.name = "diffc_groups"}, %diffc_partials: memref<?xf32> {diffc.name = "diffc_partials"})
// CHECK-SAME: kernel.reqd_work_group_size = [8 : i64, 1 : i64, 1 : i64]
// CHECK: kernel.local_alloc : memref<8xf32, 3 : i32>
// CHECK: %[[LID:.+]] = kernel.local_id 0
// CHECK: %[[SLOT:.+]] = kernel.group_id 0
// CHECK: scf.for %{{.+}} = %[[LID]] to %diffc_groups step %{{.+}} iter_args
// CHECK: memref.load %diffc_partials
// CHECK: kernel.barrier
// CHECK: arith.constant 4 : index
// CHECK: kernel.barrier
// CHECK: arith.constant 2 : index
// CHECK: kernel.barrier
// CHECK: arith.constant 1 : index
// CHECK: kernel.barrier
// (a loop over the run's slots j, its add at grads_off + j: an address of a loop counter of
// constant bounds, which launch-time proofs cover)
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT: %[[IN:.+]] = arith.cmpi eq, %[[SLOT]], %[[J]] : index
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK: %[[FBASE:.+]] = arith.addi %grads_off, %{{.+}} : index
// CHECK-NEXT: %[[FAT:.+]] = arith.addi %[[FBASE]], %[[J]] : index
// CHECK: kernel.atomic_rmw addf %{{.+}}, %grads[%[[FAT]]]
// CHECK-NOT: kernel.atomic_rmw

// CHECK-LABEL: func.func @per_item(
// CHECK-NOT: func.func @per_item__accum

// CL: __kernel __attribute__((reqd_work_group_size(2, 1, 1))) void grads__accum(
// CL: __local float group_slots[6];
// CL: barrier(CLK_LOCAL_MEM_FENCE);
// CL: __kernel __attribute__((reqd_work_group_size(8, 1, 1))) void grads__accum_finish(

// Groups of one work-item (a CPU's): its three rows are three passes of one loop, each adding
// its total at grads_off + its slot.
// ONE-LABEL: void grads__accum(
// ONE: barrier(CLK_LOCAL_MEM_FENCE);
// ONE-NEXT: for (long [[P:.+]] = 0L; [[P]] < 3L; [[P]] += 1L) {
// ONE-NEXT: long [[ROW:.+]] = v + ([[P]] * 1L);
// ONE: diffc_partials[{{.+}}] =
// ONE: long [[AT:.+]] = (grads_off + 0L) + [[ROW]];
// ONE-NEXT: diffc_atomic_fetch_add_half_global(grads_1 + [[AT]], acc);
// ONE-NOT: diffc_atomic_fetch_add_half_global
// ONE: __kernel
