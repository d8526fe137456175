// A groupshared global (work-group memory, memory space 3): lower-entry-points threads it to the
// functions that use it as it threads buffers, but the kernel allocates it itself
// (kernel.local_alloc, named for bounds-check); bounds-check guards its accesses against its
// static size and names it "groupshared <name>" in the sites.
// RUN: diffc-opt %s -p lower-entry-points | filecheck %s
// RUN: diffc-opt %s -p lower-entry-points,bounds-check{prove=false} | filecheck %s --check-prefix=BOUNDS
// RUN: diffc-opt %s -p lower-entry-points -t opencl | filecheck %s --check-prefix=CL

"memref.global"() <{sym_name = "out", type = memref<?xf32>, initial_value, sym_visibility = "public"}> : () -> ()
"memref.global"() <{sym_name = "tile", type = memref<8xf32, 3 : i32>, initial_value, sym_visibility = "public"}> : () -> ()
func.func @at(%i: index) -> f32 {
  %t = memref.get_global @tile : memref<8xf32, 3 : i32>
  %v = memref.load %t[%i] : memref<8xf32, 3 : i32>
  func.return %v : f32
}
func.func @main(%lid: vector<3xi32> {diffc.semantic = "SV_GroupThreadID"}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 8, 1, 1>} {
  %x = vector.extract %lid[0] : i32 from vector<3xi32>
  %i = arith.index_cast %x : i32 to index
  %f = arith.sitofp %x : i32 to f32
  %t = memref.get_global @tile : memref<8xf32, 3 : i32>
  memref.store %f, %t[%i] : memref<8xf32, 3 : i32>
  kernel.barrier
  %v = func.call @at(%i) : (index) -> f32
  %o = memref.get_global @out : memref<?xf32>
  memref.store %v, %o[%i] : memref<?xf32>
  func.return
}

// CHECK: func.func @at(%i: index, %tile: memref<8xf32, 3 : i32>) -> f32
// CHECK: func.func @main(%out: memref<?xf32> {diff.abi = #diff.abi<buffer>})
// CHECK-NEXT: %tile = kernel.local_alloc {diffc.name = "tile"} : memref<8xf32, 3 : i32>
// CHECK: memref.store %f, %tile[%i] : memref<8xf32, 3 : i32>
// CHECK: func.call @at(%i, %tile) : (index, memref<8xf32, 3 : i32>) -> f32

// BOUNDS: diffc.bounds_sites = ["at|groupshared tile|load|{{.*}}", "main|groupshared tile|store|{{.*}}", "main|out|store|{{.*}}"]
// BOUNDS: func.func @at(%i: index, %tile: memref<8xf32, 3 : i32>, %{{.*}}: memref<?xi32> {diffc.name = "diffc_bounds"}) -> f32
// BOUNDS: %[[N:.*]] = arith.constant 8 : index
// BOUNDS-NEXT: %[[OK:.*]] = arith.cmpi ult, %i, %[[N]] : index
// BOUNDS-NEXT: scf.if %[[OK]] -> (f32) {
// BOUNDS-NEXT: memref.load %tile[%i]

// CL: float at(long i, __local float* tile) {
// CL: __kernel __attribute__((reqd_work_group_size(8, 1, 1))) void {{main.*}}(__global float* out) {
// CL-NEXT: __local float tile[8];
// CL: barrier(CLK_LOCAL_MEM_FENCE);
