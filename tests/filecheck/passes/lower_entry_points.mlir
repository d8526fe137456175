// Buffers become kernel arguments, threaded through callees; the thread id becomes
// kernel.global_id; an atomic addf on a buffer becomes kernel.atomic_add.
// RUN: diffc-opt %s -p lower-entry-points | filecheck %s
// RUN: diffc-opt %s -p lower-entry-points -t opencl | filecheck %s --check-prefix=CL

"memref.global"() <{sym_name = "params", type = memref<?xf32>, initial_value, sym_visibility = "public"}> : () -> ()
"memref.global"() <{sym_name = "grads", type = memref<?xf32>, initial_value, sym_visibility = "public"}> {diffc.atomic} : () -> ()
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
func.func @step(%i: i32) {
  %v = func.call @get(%i) : (i32) -> f32
  func.call @acc(%i, %v) : (i32, f32) -> ()
  func.return
}
func.func @main(%tid: vector<3xi32> {diffc.semantic = "SV_DispatchThreadID"}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 2, 1>} {
  %x = vector.extract %tid[0] : i32 from vector<3xi32>
  %y = vector.extract %tid[1] : i32 from vector<3xi32>
  %s = arith.addi %x, %y : i32
  func.call @step(%s) : (i32) -> ()
  func.return
}

// CHECK-NOT:   memref.global
// CHECK-LABEL: func.func @get(%i: i32, %params: memref<?xf32>) -> f32 {
// CHECK:         memref.load %params[%{{.*}}] : memref<?xf32>
// CHECK-LABEL: func.func @acc(%i: i32, %d: f32, %grads: memref<?xf32>) {
// CHECK:         kernel.atomic_add %d, %grads[%{{.*}}] : memref<?xf32>
// CHECK-NOT:     memref.atomic_rmw
// CHECK-LABEL: func.func @step(%i: i32, %params: memref<?xf32>, %grads: memref<?xf32>) {
// CHECK-NEXT:    %v = func.call @get(%i, %params) : (i32, memref<?xf32>) -> f32
// CHECK-NEXT:    func.call @acc(%i, %v, %grads) : (i32, f32, memref<?xf32>) -> ()
// CHECK-LABEL: func.func @main(%params: memref<?xf32> {diff.abi = #diff.abi<buffer>}, %grads: memref<?xf32> {diff.abi = #diff.abi<buffer>})
// CHECK-SAME:    kernel.entry, kernel.reqd_work_group_size = [64 : i64, 2 : i64, 1 : i64]
// CHECK-DAG:     %[[X:.+]] = kernel.global_id 0
// CHECK-DAG:     %[[Y:.+]] = kernel.global_id 1
// CHECK-DAG:     arith.index_cast %[[X]] : index to i32
// CHECK-DAG:     arith.index_cast %[[Y]] : index to i32
// CHECK:         func.call @step(%{{.*}}, %params, %grads) : (i32, memref<?xf32>, memref<?xf32>) -> ()
// CHECK-NOT:     vector.extract

// CL: __kernel __attribute__((reqd_work_group_size(64, 2, 1))) void main_{{.*}}(__global float* params, __global float* grads)
// CL: get_global_id(0)
