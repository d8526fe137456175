// bounds-check's launch-time proofs: an entry kernel's access at `offset + global id` gets a
// twin kernel @<k>__inbounds (same parameters) where that access is unguarded; the runtime runs
// it when offset + global size <= length. Other accesses stay guarded in both.
// RUN: diffc-opt %s -p lower-entry-points,bounds-check | filecheck %s

func.func @main(%tid: vector<3xi32> {diffc.semantic = "SV_DispatchThreadID"}, %dst: memref<?xf32>, %dst_off: index, %src: memref<?xf32>, %src_off: index) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %x = vector.extract %tid[0] : i32 from vector<3xi32>
  %i = arith.index_cast %x : i32 to index
  %a = arith.addi %dst_off, %i : index
  %two = arith.constant 2 : index
  %j = arith.muli %i, %two : index
  %v = memref.load %src[%j] : memref<?xf32>
  memref.store %v, %dst[%a] : memref<?xf32>
  func.return
}

// `if (tid >= n) return;` as the front end gives it: the store is proven against min(size, n)
func.func @guarded(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %out: memref<?xf32>, %out_off: index, %n: i32) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
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

// CHECK: diffc.bounds_proofs = ["main|main__inbounds|dst|dst_off|0|", "guarded|guarded__inbounds|out|out_off|0|n"]
// the variant's remaining sites are named after the kernel it stands for
// CHECK-SAME: "main|src|load|{{.*}}:12:3", "main|dst|store|{{.*}}:13:3", "main|src|load|{{.*}}:12:3", "guarded|out|store|{{.*}}:32:5"]
// CHECK-LABEL: func.func @main(
// CHECK: arith.cmpi ult, %j, %diffc_len_src
// CHECK: arith.cmpi ult, %a, %diffc_len_dst
// CHECK-LABEL: func.func @main__inbounds(%dst: memref<?xf32>, %dst_off: index, %src: memref<?xf32>, %src_off: index, %diffc_len_dst: index {diffc.name = "diffc_len_dst"}, %diffc_len_src: index {diffc.name = "diffc_len_src"}, %diffc_bounds: memref<?xi32> {diffc.name = "diffc_bounds"})
// CHECK: arith.cmpi ult, %j, %diffc_len_src
// CHECK-NOT: diffc_len_dst
// CHECK: memref.store %{{.*}}, %dst[%a]
// CHECK-NEXT: func.return
