// A buffer read through a memref.get_global whose global the module lacks is an error at the
// get_global (before, sorting the buffers by their globals' order raised a Python KeyError).
// RUN: not diffc-opt %s -p lower-entry-points 2>&1 | filecheck %s
// CHECK: {{.*}}lower_entry_points_missing_global.mlir:[[# @LINE + 5]]:3: error: pass 'lower-entry-points' failed: lower-entry-points: @get: uses @params, which is not a memref.global of this module
// CHECK-NOT: Traceback

"memref.global"() <{sym_name = "grads", type = memref<?xf32>, initial_value, sym_visibility = "public"}> : () -> ()
func.func @get(%i: i32) -> f32 {
  %b = memref.get_global @params : memref<?xf32>
  %j = arith.index_cast %i : i32 to index
  %v = memref.load %b[%j] : memref<?xf32>
  func.return %v : f32
}
func.func @main(%tid: vector<3xi32> {diffc.semantic = "SV_DispatchThreadID"}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %x = vector.extract %tid[0] : i32 from vector<3xi32>
  %v = func.call @get(%x) : (i32) -> f32
  func.return
}
