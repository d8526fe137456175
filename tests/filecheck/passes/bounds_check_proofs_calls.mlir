// bounds-check's launch-time proofs through calls and over a grid-stride loop: a callee's access
// through a pointer parameter is a form over the callee's parameters, which each call fills in;
// a grid-stride loop's counter (start and step from work-item ids, bound c x a parameter) is a
// thread index whose range the parameter gives at launch; a group id one below the number of
// groups, a local id below the group's size, capped by an enclosing `if (x < C)`. The variant's
// flag reaches the callees where every proven path's access is unguarded under it; an access
// some path cannot prove (an index from a parameter) stays guarded under the flag too.
// RUN: diffc-opt %s -p lower-entry-points,bounds-check | filecheck %s

func.func @row(%w: memref<?xf32>, %w_off: index, %r: i32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  %ri = arith.index_cast %r : i32 to index
  %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %z) -> (f32) {
    %a = arith.muli %ri, %c4 : index
    %b = arith.addi %w_off, %a : index
    %c = arith.addi %b, %i : index
    %v = memref.load %w[%c] : memref<?xf32>
    %n = arith.addf %acc, %v : f32
    scf.yield %n : f32
  }
  func.return %s : f32
}

func.func @at(%w: memref<?xf32>, %w_off: index, %k: i32) -> f32 {
  %ki = arith.index_cast %k : i32 to index
  %i = arith.addi %w_off, %ki : index
  %v = memref.load %w[%i] : memref<?xf32>
  func.return %v : f32
}

func.func @stride(%w: memref<?xf32> {diff.abi = #diff.abi<pointer of "w">}, %w_off: index {diff.abi = #diff.abi<offset of "w">}, %out: memref<?xf32> {diff.abi = #diff.abi<pointer of "out">}, %out_off: index {diff.abi = #diff.abi<offset of "out">}, %groups: i32, %k: i32) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %two = arith.constant 2 : i32
  %r = func.call @row(%w, %w_off, %two) : (memref<?xf32>, index, i32) -> f32
  %q = func.call @at(%w, %w_off, %k) : (memref<?xf32>, index, i32) -> f32
  %s = arith.addf %r, %q : f32
  %g = kernel.global_id 0
  %size = kernel.global_size 0
  %c256 = arith.constant 256 : index
  %gi = arith.index_cast %groups : i32 to index
  %ub = arith.muli %gi, %c256 : index
  scf.for %v = %g to %ub step %size {
    %o = arith.addi %out_off, %v : index
    memref.store %s, %out[%o] : memref<?xf32>
  }
  // a group's row of 40: group id x 40 + (local id + 10), where local id + 10 < 40
  %lid = kernel.local_id 0
  %grp = kernel.group_id 0
  %c40 = arith.constant 40 : index
  %c10 = arith.constant 10 : index
  %row = arith.muli %grp, %c40 : index
  %col = arith.addi %lid, %c10 : index
  %inside = arith.cmpi ult, %col, %c40 : index
  scf.if %inside {
    %p = arith.addi %row, %col : index
    memref.store %s, %out[%p] : memref<?xf32>
  }
  func.return
}

// CHECK: diffc.bounds_proofs = ["stride|stride__inbounds|out||g0/64||40|39", "stride|stride__inbounds|out|out_off|groups*256||1|0", "stride|stride__inbounds|w|w_off|0||0|11"]
// A callee some proven path reaches takes the variants' flag: its proven access runs when the
// flag is on or its check holds; one no proven path reaches (@at) is left as it was.
// CHECK-LABEL: func.func @row(
// CHECK-SAME: %diffc_inbounds: i1
// CHECK: %[[C:.*]] = arith.cmpi ult, %c, %diffc_len_w
// CHECK-NEXT: %[[OK:.*]] = arith.ori %diffc_inbounds, %[[C]] : i1
// CHECK-NEXT: scf.if %[[OK]]
// CHECK-NEXT: memref.load %w[%c]
// CHECK-LABEL: func.func @at(
// CHECK-NOT: diffc_inbounds
// CHECK: %[[I:.*]] = arith.cmpi ult, %i, %diffc_len_w
// CHECK-NEXT: scf.if %[[I]]
// The kernel's body, which the kernel and its variant share, passes its flag down.
// CHECK-LABEL: func.func @stride__body(
// CHECK-SAME: %diffc_inbounds: i1
// CHECK-SAME: attributes {diffc.always_inline, diffc.body_of = "stride"}
// CHECK: func.call @row(%w, %w_off, %two, %diffc_inbounds, %diffc_len_w, %diffc_bounds)
// CHECK: func.call @at(%w, %w_off, %k, %diffc_len_w, %diffc_bounds)
// CHECK: %[[O:.*]] = arith.cmpi ult, %o, %diffc_len_out
// CHECK-NEXT: %[[OK2:.*]] = arith.ori %diffc_inbounds, %[[O]] : i1
// CHECK-NEXT: scf.if %[[OK2]]
// CHECK-NEXT: memref.store %{{.*}}, %out[%o]
// CHECK: %[[P:.*]] = arith.cmpi ult, %p, %diffc_len_out
// CHECK-NEXT: %[[OK3:.*]] = arith.ori %diffc_inbounds, %[[P]] : i1
// CHECK-NEXT: scf.if %[[OK3]]
// CHECK-NEXT: memref.store %{{.*}}, %out[%p]
// CHECK-LABEL: func.func @stride(
// CHECK-NEXT: %[[OFF:.*]] = arith.constant false
// CHECK-NEXT: func.call @stride__body(%w, %w_off, %out, %out_off, %groups, %k, %[[OFF]], %diffc_len_w, %diffc_len_out, %diffc_bounds)
// CHECK-NEXT: func.return
// CHECK-LABEL: func.func @stride__inbounds(
// CHECK-NEXT: %[[ON:.*]] = arith.constant true
// CHECK-NEXT: func.call @stride__body(%w, %w_off, %out, %out_off, %groups, %k, %[[ON]], %diffc_len_w, %diffc_len_out, %diffc_bounds)
// CHECK-NEXT: func.return
