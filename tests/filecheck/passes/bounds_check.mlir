// bounds-check: each host buffer gets its length and every function a status buffer,
// threaded through calls; every access runs under `index <u length`, and the else branch
// records the site (loads yield 0, stores and atomics are dropped).
// RUN: diffc-opt %s -p lower-entry-points,bounds-check | filecheck %s
// RUN: diffc-opt %s -p lower-entry-points,bounds-check -t opencl | filecheck %s --check-prefix=CL

"memref.global"() <{sym_name = "params", type = memref<?xf32>, initial_value, sym_visibility = "public"}> : () -> ()
"memref.global"() <{sym_name = "grads", type = memref<?xf32>, initial_value, sym_visibility = "public"}> : () -> ()
func.func @get(%i: i32) -> f32 {
  %b = memref.get_global @params : memref<?xf32>
  %j = arith.index_cast %i : i32 to index
  %v = memref.load %b[%j] : memref<?xf32>
  func.return %v : f32
}
func.func @acc(%i: i32, %d: f32) {
  %b = memref.get_global @grads : memref<?xf32>
  %j = arith.index_cast %i : i32 to index
  %old = "memref.atomic_rmw"(%d, %b, %j) <{kind = 0 : i64}> : (f32, memref<?xf32>, index) -> f32
  func.return
}
func.func @main(%tid: vector<3xi32> {diffc.semantic = "SV_DispatchThreadID"}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %x = vector.extract %tid[0] : i32 from vector<3xi32>
  %v = func.call @get(%x) : (i32) -> f32
  func.call @acc(%x, %v) : (i32, f32) -> ()
  func.return
}

// the callees' indices are the thread id: proven at launch through the calls (bounds_check_proofs.mlir)
// CHECK: builtin.module attributes {diffc.bounds_proofs = ["main|main__inbounds|grads||0||1|0", "main|main__inbounds|params||0||1|0"], diffc.bounds_sites = ["get|params|load|{{.*}}bounds_check.mlir:12:3", "acc|grads|atomic|{{.*}}bounds_check.mlir:18:3"]}
// (so the callees take the flag of the kernel's shared body: see bounds_check_proofs.mlir)
// CHECK: func.func @get(%i: i32, %params: memref<?xf32>, %[[FLAG:.*]]: i1 {diffc.name = "diffc_inbounds"}, %[[LEN:.*]]: index {diffc.name = "diffc_len_params"}, %[[ST:.*]]: memref<?xi32> {diffc.name = "diffc_bounds"}) -> f32
// CHECK: %[[IN:.*]] = arith.cmpi ult, %j, %[[LEN]] : index
// CHECK-NEXT: %[[OK:.*]] = arith.ori %[[FLAG]], %[[IN]] : i1
// CHECK-NEXT: %[[R:.*]] = scf.if %[[OK]] -> (f32) {
// CHECK-NEXT: %v = memref.load %params[%j]
// CHECK-NEXT: scf.yield %v
// CHECK-NEXT: } else {
// CHECK: func.call @diffc_record_site(%j, %[[LEN]], %[[ST]], %{{.*}}) : (index, index, memref<?xi32>, index) -> ()
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: scf.yield %[[Z]] : f32
// CHECK: func.return %[[R]] : f32
// CHECK: func.func @acc(
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: kernel.atomic_add %d, %grads[%j]
// CHECK: func.func @main__body(%params: memref<?xf32> {diff.abi = #diff.abi<buffer>}, %grads: memref<?xf32> {diff.abi = #diff.abi<buffer>}, %[[F:.*]]: i1 {diffc.name = "diffc_inbounds"}, %[[BLP:.*]]: index {diffc.name = "diffc_len_params"}, %[[BLG:.*]]: index {diffc.name = "diffc_len_grads"}, %[[BS:.*]]: memref<?xi32> {diffc.name = "diffc_bounds"})
// CHECK: func.call @get(%{{.*}}, %params, %[[F]], %[[BLP]], %[[BS]])
// CHECK: func.call @acc(%{{.*}}, %{{.*}}, %grads, %[[F]], %[[BLG]], %[[BS]])
// CHECK: func.func @main(%params: memref<?xf32> {diff.abi = #diff.abi<buffer>}, %grads: memref<?xf32> {diff.abi = #diff.abi<buffer>}, %[[LP:.*]]: index {diffc.name = "diffc_len_params", diff.abi = #diff.abi<length of "params">}, %[[LG:.*]]: index {diffc.name = "diffc_len_grads", diff.abi = #diff.abi<length of "grads">}, %[[S:.*]]: memref<?xi32> {diffc.name = "diffc_bounds", diff.abi = #diff.abi<status of "bounds">})
// CHECK: func.call @main__body(%params, %grads, %{{.*}}, %[[LP]], %[[LG]], %[[S]])
// a failed check records its site (3k: 1, or 2 for a negative index; 3k+1: the index; 3k+2: the length)
// CHECK-LABEL: func.func @diffc_record_site(%index: index, %length: index, %diffc_status: memref<?xi32>, %site: index)
// CHECK: %[[K:.*]] = arith.muli %site, %{{.*}} : index
// CHECK: kernel.atomic_rmw maxs %{{.*}}, %diffc_status[%[[K]]]
// CHECK: kernel.atomic_rmw maxs %{{.*}}, %diffc_status[%{{.*}}]
// CHECK: kernel.atomic_rmw maxs %{{.*}}, %diffc_status[%{{.*}}]
// CHECK-NEXT: func.return

// CL: (ulong){{.*}} < (ulong)
// CL: __kernel {{.*}}main{{[_0-9]*}}(__global float* params, __global float* grads, long diffc_len_params, long diffc_len_grads, __global int* diffc_bounds)
