// bounds-check's launch-time proofs: an entry kernel's access at (offset +) scale x global id +
// extra gets a twin kernel @<k>__inbounds (same parameters) where that access is unguarded; the
// runtime runs it when the launch keeps the largest such index below the length. Other accesses
// stay guarded in both. The two share the kernel's body, @<k>__body, which takes a flag: the
// kernel passes false, the twin true, and a proven access runs when the flag or its check holds.
// RUN: diffc-opt %s -p lower-entry-points,bounds-check | filecheck %s

func.func @main(%tid: vector<3xi32> {diffc.semantic = "SV_DispatchThreadID"}, %dst: memref<?xf32> {diff.abi = #diff.abi<pointer of "dst">}, %dst_off: index {diff.abi = #diff.abi<offset of "dst">}, %src: memref<?xf32> {diff.abi = #diff.abi<pointer of "src">}, %src_off: index {diff.abi = #diff.abi<offset of "src">}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %x = vector.extract %tid[0] : i32 from vector<3xi32>
  %i = arith.index_cast %x : i32 to index
  %a = arith.addi %dst_off, %i : index
  %sq = arith.muli %i, %i : index
  %v = memref.load %src[%sq] : memref<?xf32>
  %three = arith.constant 3 : i32
  %one = arith.constant 1 : i32
  %x3 = arith.muli %x, %three : i32
  %x31 = arith.addi %x3, %one : i32
  %j = arith.index_cast %x31 : i32 to index
  %w = memref.load %src[%j] : memref<?xf32>
  %s = arith.addf %v, %w : f32
  memref.store %s, %dst[%a] : memref<?xf32>
  func.return
}

// `if (tid >= count) return;` as the front end gives it: the store is proven against min(size, n)
func.func @guarded(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %out: memref<?xf32> {diff.abi = #diff.abi<pointer of "out">}, %out_off: index {diff.abi = #diff.abi<offset of "out">}, %n: i32) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %f = arith.constant false
  %t = arith.constant true
  %past = arith.cmpi uge, %tid, %n : i32
  %ret = scf.if %past -> (i1) {
    scf.yield %t : i1
  } else {
    scf.yield %f : i1
  }
  %go = arith.xori %ret, %t : i1
  scf.if %go {
    %i = arith.index_cast %tid : i32 to index
    %a = arith.addi %out_off, %i : index
    %z = arith.constant 1.0 : f32
    memref.store %z, %out[%a] : memref<?xf32>
  }
  func.return
}

// CHECK: diffc.bounds_proofs = ["main|main__inbounds|dst|dst_off|0||1|0", "main|main__inbounds|src||0||3|1", "guarded|guarded__inbounds|out|out_off|0|n|1|0"]
// one site per access, which the kernel and its variant share, named after the kernel
// CHECK-SAME: diffc.bounds_sites = ["main|src|load|{{.*}}:13:3", "main|src|load|{{.*}}:19:3", "main|dst|store|{{.*}}:21:3", "guarded|out|store|{{.*}}:40:5"]
// CHECK-LABEL: func.func @main__body(
// CHECK-SAME: %diffc_inbounds: i1
// CHECK-SAME: attributes {diffc.always_inline, diffc.body_of = "main"}
// src[i * i] is not proven: checked under either flag
// CHECK: %[[SQ:.*]] = arith.cmpi ult, %sq, %diffc_len_src
// CHECK-NEXT: scf.if %[[SQ]]
// CHECK: %[[J:.*]] = arith.cmpi ult, %j, %diffc_len_src
// CHECK-NEXT: %[[JOK:.*]] = arith.ori %diffc_inbounds, %[[J]] : i1
// CHECK-NEXT: scf.if %[[JOK]]
// CHECK-NEXT: memref.load %src[%j]
// CHECK: %[[A:.*]] = arith.cmpi ult, %a, %diffc_len_dst
// CHECK-NEXT: %[[AOK:.*]] = arith.ori %diffc_inbounds, %[[A]] : i1
// CHECK-NEXT: scf.if %[[AOK]]
// CHECK-NEXT: memref.store %{{.*}}, %dst[%a]
// CHECK-LABEL: func.func @main(
// CHECK-NEXT: %[[OFF:.*]] = arith.constant false
// CHECK-NEXT: func.call @main__body(%dst, %dst_off, %src, %src_off, %[[OFF]], %diffc_len_dst, %diffc_len_src, %diffc_bounds)
// CHECK-NEXT: func.return
// CHECK-LABEL: func.func @main__inbounds(%dst: memref<?xf32> {diff.abi = #diff.abi<pointer of "dst">}, %dst_off: index {diff.abi = #diff.abi<offset of "dst">}, %src: memref<?xf32> {diff.abi = #diff.abi<pointer of "src">}, %src_off: index {diff.abi = #diff.abi<offset of "src">}, %diffc_len_dst: index {diffc.name = "diffc_len_dst", diff.abi = #diff.abi<length of "dst">}, %diffc_len_src: index {diffc.name = "diffc_len_src", diff.abi = #diff.abi<length of "src">}, %diffc_bounds: memref<?xi32> {diffc.name = "diffc_bounds", diff.abi = #diff.abi<status of "bounds">})
// CHECK-NEXT: %[[ON:.*]] = arith.constant true
// CHECK-NEXT: func.call @main__body(%dst, %dst_off, %src, %src_off, %[[ON]], %diffc_len_dst, %diffc_len_src, %diffc_bounds)
// CHECK-NEXT: func.return
// CHECK-LABEL: func.func @guarded__body(
// CHECK: %[[G:.*]] = arith.cmpi ult, %a, %diffc_len_out
// CHECK-NEXT: %[[GOK:.*]] = arith.ori %diffc_inbounds, %[[G]] : i1
// CHECK-NEXT: scf.if %[[GOK]]
// CHECK-NEXT: memref.store
// CHECK-LABEL: func.func @guarded(
// CHECK-NEXT: arith.constant false
// CHECK-LABEL: func.func @guarded__inbounds(
// CHECK-NEXT: arith.constant true
