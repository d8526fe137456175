// An entry point's own parameters (pointers as memref + index offset, scalars) stay kernel
// parameters in order, before the buffers it uses; memref.atomic_rmw kinds become
// kernel.atomic_rmw (or kernel.atomic_add for an unused f32 add). A buffer whose name a name
// hint cannot hold (xDSL drops `_<digits>`) is named by a diffc.name argument attribute.
// RUN: diffc-opt %s -p lower-entry-points | filecheck %s
// RUN: diffc-opt %s -p lower-entry-points -t opencl | filecheck %s --check-prefix=CL

"memref.global"() <{sym_name = "hits", type = memref<?xi32>, initial_value, sym_visibility = "public"}> : () -> ()
func.func @accumulate(%grad: memref<?xf16>, %grad_off: index, %i: index, %d: f16) {
  %j = arith.addi %grad_off, %i : index
  %old = "memref.atomic_rmw"(%d, %grad, %j) <{kind = 0 : i64}> : (f16, memref<?xf16>, index) -> f16
  func.return
}
func.func @learn(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %net_w: memref<?xf16> {diff.abi = #diff.abi<pointer of "net_w">}, %net_w_off: index {diff.abi = #diff.abi<offset of "net_w">}, %loss: memref<?xi32> {diff.abi = #diff.abi<pointer of "loss">}, %loss_off: index {diff.abi = #diff.abi<offset of "loss">}, %scale: f32, %count: i32) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 256, 1, 1>} {
  %done = arith.cmpi uge, %tid, %count : i32
  scf.if %done {
  } else {
    %i = arith.index_cast %tid : i32 to index
    %h = arith.truncf %scale : f32 to f16
    func.call @accumulate(%net_w, %net_w_off, %i, %h) : (memref<?xf16>, index, index, f16) -> ()
    %bits = arith.bitcast %scale : f32 to i32
    %m = "memref.atomic_rmw"(%bits, %loss, %loss_off) <{kind = 5 : i64}> : (i32, memref<?xi32>, index) -> i32
    %s = "memref.atomic_rmw"(%bits, %loss, %loss_off) <{kind = 7 : i64}> : (i32, memref<?xi32>, index) -> i32
    %g = memref.get_global @hits : memref<?xi32>
    %one = arith.constant 1 : i32
    %c0 = arith.constant 0 : index
    %n = "memref.atomic_rmw"(%one, %g, %c0) <{kind = 1 : i64}> : (i32, memref<?xi32>, index) -> i32
    %n1 = "memref.atomic_rmw"(%one, %g, %i) <{kind = 1 : i64}> : (i32, memref<?xi32>, index) -> i32
    memref.store %n1, %g[%i] : memref<?xi32>
  }
  func.return
}
func.func @count_rows(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %bins_0: f32 {diffc.name = "bins_0"}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 1, 1, 1>} {
  %g = memref.get_global @rows_2 : memref<?xf32>
  %c0 = arith.constant 0 : index
  memref.store %bins_0, %g[%c0] : memref<?xf32>
  func.return
}
"memref.global"() <{sym_name = "rows_2", type = memref<?xf32>, initial_value, sym_visibility = "public"}> : () -> ()

// CHECK-LABEL: func.func @accumulate(%grad: memref<?xf16>, %grad_off: index, %i: index, %d: f16) {
// CHECK:         %old = kernel.atomic_rmw addf %d, %grad[%j] : memref<?xf16>
// CHECK-LABEL: func.func @learn(%net_w: memref<?xf16> {diff.abi = #diff.abi<pointer of "net_w">}, %net_w_off: index {diff.abi = #diff.abi<offset of "net_w">}, %loss: memref<?xi32> {diff.abi = #diff.abi<pointer of "loss">}, %loss_off: index {diff.abi = #diff.abi<offset of "loss">}, %scale: f32 {diff.abi = #diff.abi<value>}, %count: i32 {diff.abi = #diff.abi<value>}, %hits: memref<?xi32> {diff.abi = #diff.abi<buffer>})
// CHECK-SAME:    kernel.entry, kernel.reqd_work_group_size = [256 : i64, 1 : i64, 1 : i64]
// CHECK:         %m = kernel.atomic_rmw maxu %bits, %loss[%loss_off] : memref<?xi32>
// CHECK-NEXT:    %s = kernel.atomic_rmw mins %bits, %loss[%loss_off] : memref<?xi32>
// CHECK:         kernel.atomic_add %one, %hits[%c0] : memref<?xi32>
// CHECK-NEXT:    %n1 = kernel.atomic_rmw addi %one, %hits[%i] : memref<?xi32>
// CHECK-NOT:     memref.atomic_rmw
// CHECK-LABEL: func.func @count_rows(%bins: f32 {diffc.name = "bins_0", diff.abi = #diff.abi<value>}, %rows: memref<?xf32> {diffc.name = "rows_2", diff.abi = #diff.abi<buffer>})

// CL-LABEL: void accumulate(__global half* grad, long grad_off, long i, float d) {
// CL:         diffc_atomic_fetch_add_half_global(grad + j, d);
// CL-LABEL: __kernel __attribute__((reqd_work_group_size(256, 1, 1))) void learn(__global half* net_w, long net_w_off, __global int* loss, long loss_off, float scale, int count, __global int* hits) {
// CL:         atomic_max((volatile __global uint*)&loss[loss_off], (uint)bits);
// CL-NEXT:    atomic_min(&loss[loss_off], bits);
