// A group-shared pointer (a Slang `__getAddress(tile[k])`): memref.cast of the work-group memref
// to a dynamic size, passed to a function as a buffer is. bounds-check gives the function a length
// for it, and the kernel passes the variable's static size; the sites name the callee's parameter.
// RUN: diffc-opt %s -p lower-entry-points,bounds-check{prove=false} | filecheck %s
// RUN: diffc-opt %s -p lower-entry-points -t opencl | filecheck %s --check-prefix=CL

"memref.global"() <{sym_name = "tile", type = memref<8xf32, 3 : i32>, initial_value, sym_visibility = "public"}> : () -> ()
func.func @bump(%p: memref<?xf32, 3 : i32>, %off: index) {
  %v = memref.load %p[%off] : memref<?xf32, 3 : i32>
  %one = arith.constant 1.0 : f32
  %w = arith.addf %v, %one : f32
  memref.store %w, %p[%off] : memref<?xf32, 3 : i32>
  func.return
}
func.func @main(%lid: vector<3xi32> {diffc.semantic = "SV_GroupThreadID"}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 8, 1, 1>} {
  %x = vector.extract %lid[0] : i32 from vector<3xi32>
  %i = arith.index_cast %x : i32 to index
  %t = memref.get_global @tile : memref<8xf32, 3 : i32>
  %p = "memref.cast"(%t) : (memref<8xf32, 3 : i32>) -> memref<?xf32, 3 : i32>
  func.call @bump(%p, %i) : (memref<?xf32, 3 : i32>, index) -> ()
  func.return
}

// CHECK: diffc.bounds_sites = ["bump|p|load|{{.*}}", "bump|p|store|{{.*}}"]
// CHECK: func.func @bump(%p: memref<?xf32, 3 : i32>, %off: index, %[[LEN:.*]]: index {diffc.name = "diffc_len_p"
// CHECK: arith.cmpi ult, %off, %[[LEN]] : index
// CHECK: %p = "memref.cast"(%{{.*}}) : (memref<8xf32, 3 : i32>) -> memref<?xf32, 3 : i32>
// CHECK-NEXT: %[[EIGHT:.*]] = arith.constant 8 : index
// CHECK: func.call @bump(%p, %i, %[[EIGHT]], %{{.*}})
// CL: __local float tile[8];
// CL: __local float* p = tile;
// CL: bump(p, {{.*}});
