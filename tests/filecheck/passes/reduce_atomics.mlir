// Work-group-uniform atomic adds become a store of each work-item's contribution in local
// memory, a tree reduction and one atomic add per group; the `if (tid >= count) return;` guard
// becomes a predicate (inactive work-items contribute 0 and skip their loads and stores).
// RUN: diffc-opt %s -p reduce-atomics | filecheck %s
// RUN: diffc-opt %s -p reduce-atomics -t opencl | filecheck %s --check-prefix=CL

func.func @sums(%values: memref<?xf32>, %out: memref<?xf32>, %grads: memref<?xf32>, %hits: memref<?xi32>, %count: i32)
    attributes {kernel.entry, kernel.reqd_work_group_size = [6 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  %tid = arith.index_cast %g : index to i32
  %past = arith.cmpi uge, %tid, %count : i32
  %true = arith.constant true
  %active = arith.xori %past, %true : i1
  scf.if %active {
    %v = memref.load %values[%g] : memref<?xf32>
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c2 step %c1 {
      %w = arith.mulf %v, %v : f32
      kernel.atomic_add %w, %grads[%i] : memref<?xf32>
    }
    memref.store %v, %out[%g] : memref<?xf32>
    %one = arith.constant 1 : i32
    kernel.atomic_add %one, %hits[%c0] : memref<?xi32>
  }
  func.return
}

// CHECK-LABEL: func.func @sums(
// CHECK-DAG:     %[[SUMS:.+]] = kernel.local_alloc : memref<2x6xf32, 3 : i32>
// CHECK-DAG:     %[[ISUMS:.+]] = kernel.local_alloc : memref<1x6xi32, 3 : i32>
// CHECK-DAG:     %[[LID:.+]] = kernel.local_id 0
// CHECK:         %[[ACTIVE:.+]] = arith.xori
// The load runs in active work-items only; the others see 0.
// CHECK:         %[[V:.+]] = scf.if %[[ACTIVE]] -> (f32) {
// CHECK-NEXT:      %[[L:.+]] = memref.load %values
// CHECK-NEXT:      scf.yield %[[L]] : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      scf.yield %[[Z]] : f32
// The loop of two adds is unrolled: both contributions are stored, then reduced together.
// CHECK-NOT:     scf.for
// CHECK:         %[[W0:.+]] = arith.mulf %[[V]], %[[V]] : f32
// CHECK:         %[[C0:.+]] = arith.select %[[ACTIVE]], %[[W0]], %{{.+}} : f32
// CHECK-NEXT:    memref.store %[[C0]], %[[SUMS]][%{{.+}}, %[[LID]]] : memref<2x6xf32, 3 : i32>
// CHECK:         %[[W1:.+]] = arith.mulf %[[V]], %[[V]] : f32
// CHECK:         %[[C1:.+]] = arith.select %[[ACTIVE]], %[[W1]], %{{.+}} : f32
// CHECK-NEXT:    memref.store %[[C1]], %[[SUMS]][%{{.+}}, %[[LID]]] : memref<2x6xf32, 3 : i32>
// CHECK-NEXT:    kernel.barrier
// Six work-items: a loop over the tree's levels, steps 4 >> level = 4, 2, 1 (at step 4 only
// work-items 0 and 1 have a partner), and in each a loop over the batch's two rows, both kept
// rolled for the device compiler to unroll.
// CHECK-NEXT:    scf.for %[[LEVEL:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT:      %[[STEP:.+]] = arith.shrui %{{.+}}, %[[LEVEL]] : index
// CHECK-NEXT:      %[[LT:.+]] = arith.cmpi ult, %[[LID]], %[[STEP]] : index
// CHECK-NEXT:      %[[P:.+]] = arith.addi %[[LID]], %[[STEP]] : index
// CHECK-NEXT:      %[[IN:.+]] = arith.cmpi ult, %[[P]], %{{.+}} : index
// CHECK-NEXT:      %[[BOTH:.+]] = arith.andi %[[LT]], %[[IN]] : i1
// CHECK-NEXT:      scf.if %[[BOTH]] {
// CHECK-NEXT:        scf.for %[[ROW:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT:          %[[MINE:.+]] = memref.load %[[SUMS]][%[[ROW]], %[[LID]]]
// CHECK-NEXT:          %[[THEIRS:.+]] = memref.load %[[SUMS]][%[[ROW]], %[[P]]]
// CHECK-NEXT:          %[[T:.+]] = arith.addf %[[MINE]], %[[THEIRS]] : f32
// CHECK-NEXT:          memref.store %[[T]], %[[SUMS]][%[[ROW]], %[[LID]]]
// CHECK-NEXT:        } {diffc.unroll}
// CHECK-NEXT:      }
// CHECK-NEXT:      kernel.barrier
// CHECK-NEXT:    } {diffc.unroll}
// CHECK-NEXT:    %[[FIRST:.+]] = arith.cmpi eq, %[[LID]], %{{.+}} : index
// the unrolled loop's adds, at evenly spaced addresses (0, 1), are one add in a loop over the
// rows that the device compiler unrolls: row j's sum at the first address + j x 1
// CHECK-NEXT:    scf.if %[[FIRST]] {
// CHECK-NEXT:      scf.for %[[J:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT:        %[[R:.+]] = arith.addi %{{.+}}, %[[J]] : index
// CHECK-NEXT:        %[[ONE:.+]] = arith.constant 1 : index
// CHECK-NEXT:        %[[JS:.+]] = arith.muli %[[J]], %[[ONE]] : index
// CHECK-NEXT:        %[[A:.+]] = arith.addi %{{.+}}, %[[JS]] : index
// CHECK-NEXT:        %[[S:.+]] = memref.load %[[SUMS]][%[[R]], %{{.+}}]
// CHECK-NEXT:        kernel.atomic_add %[[S]], %grads[%[[A]]] : memref<?xf32>
// CHECK-NEXT:      } {diffc.unroll}
// CHECK-NEXT:    }
// The store to a per-work-item address stays under the predicate.
// CHECK:         scf.if %[[ACTIVE]] {
// CHECK-NEXT:      memref.store %[[V]], %out
// CHECK:         arith.select %[[ACTIVE]]
// CHECK-NEXT:    memref.store %{{.+}}, %[[ISUMS]]
// CHECK:         kernel.atomic_add %{{.+}}, %hits[%{{.+}}] : memref<?xi32>
// CHECK-NOT:     kernel.atomic_add
// CHECK:         func.return

// CL: __local float group_sums[12];
// CL: __local int group_sums_1[6];
// CL: barrier(CLK_LOCAL_MEM_FENCE);
// CL: #pragma unroll
// CL-NEXT: for (long [[LEVEL:.+]] = 0L; [[LEVEL]] < 3L; [[LEVEL]] += 1L) {
// CL-NEXT: long [[STEP:.+]] = (long)((ulong)4L >> [[LEVEL]]);
// CL: #pragma unroll
// CL-NEXT: for (long [[ROW:.+]] = 0L; [[ROW]] < 2L; [[ROW]] += 1L) {

// A guard in the else branch (`scf.if %past {} else {...}`), an add in a callee, a half add
// (summed in float, truncated once) and a loop too long to unroll into one batch.
func.func @add_half(%g: memref<?xf16>, %i: index, %v: f16) {
  %old = kernel.atomic_rmw addf %v, %g[%i] : memref<?xf16>
  func.return
}

func.func @halves(%values: memref<?xf16>, %grads: memref<?xf16>, %count: index)
    attributes {kernel.entry, kernel.reqd_work_group_size = [4 : i64, 1 : i64, 1 : i64]} {
  %g = kernel.global_id 0
  %past = arith.cmpi uge, %g, %count : index
  scf.if %past {
  } else {
    %v = memref.load %values[%g] : memref<?xf16>
    %c0 = arith.constant 0 : index
    %c40 = arith.constant 40 : index
    %c1 = arith.constant 1 : index
    scf.for %i = %c0 to %c40 step %c1 {
      func.call @add_half(%grads, %i, %v) : (memref<?xf16>, index, f16) -> ()
    }
  }
  func.return
}

// CHECK-LABEL: func.func @halves(
// CHECK:         %[[HSUMS:.+]] = kernel.local_alloc : memref<1x4xf32, 3 : i32>
// CHECK:         %[[PAST:.+]] = arith.cmpi uge
// CHECK:         %[[HACTIVE:.+]] = arith.xori %[[PAST]], %{{.+}} : i1
// CHECK:         scf.for %[[I:.+]] = {{.+}} {
// CHECK-NOT:       func.call
// CHECK:           %[[X:.+]] = arith.extf %{{.+}} : f16 to f32
// CHECK-NEXT:      %{{.+}} = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[HC:.+]] = arith.select %[[HACTIVE]], %[[X]], %{{.+}} : f32
// CHECK-NEXT:      memref.store %[[HC]], %[[HSUMS]]
// CHECK-NEXT:      kernel.barrier
// CHECK:           %[[HFIRST:.+]] = arith.cmpi eq
// CHECK-NEXT:      scf.if %[[HFIRST]] {
// CHECK-NEXT:        %[[HS:.+]] = memref.load %[[HSUMS]]
// CHECK-NEXT:        %[[HT:.+]] = arith.truncf %[[HS]] : f32 to f16
// CHECK-NEXT:        %{{.+}} = kernel.atomic_rmw addf %[[HT]], %grads[%[[I]]] : memref<?xf16>

// Adds of one block with another reduction between them (the loop's) are not batched together:
// the loop's reduction reuses the local buffer, so the first add is reduced before the loop.
func.func @split(%grads: memref<?xf32>, %v: f32) attributes {kernel.entry, kernel.reqd_work_group_size = [2 : i64, 1 : i64, 1 : i64]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c100 = arith.constant 100 : index
  kernel.atomic_add %v, %grads[%c0] : memref<?xf32>
  scf.for %i = %c0 to %c100 step %c1 {
    kernel.atomic_add %v, %grads[%i] : memref<?xf32>
  }
  kernel.atomic_add %v, %grads[%c2] : memref<?xf32>
  func.return
}
// CHECK-LABEL: func.func @split(
// CHECK:         %[[B:.+]] = kernel.local_alloc : memref<1x2xf32, 3 : i32>
// CHECK:         memref.store %v, %[[B]]
// CHECK-NEXT:    kernel.barrier
// CHECK:         kernel.atomic_add %{{.+}}, %grads[%c0]
// CHECK:         scf.for
// CHECK:           memref.store %v, %[[B]]
// CHECK:             kernel.atomic_add %{{.+}}, %grads[%i]
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.store %v, %[[B]]
// CHECK-NEXT:    kernel.barrier
// CHECK:         kernel.atomic_add %{{.+}}, %grads[%c2]
