// Entry points lower-entry-points cannot turn into kernels are errors naming the function.
// RUN: not diffc-opt %s -p 'lower-entry-points{entry=nothere}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not diffc-opt %s -p 'lower-entry-points{entry=withargs}' 2>&1 | filecheck %s --check-prefix=ARGS
// RUN: diffc-opt %s -p 'lower-entry-points{entry=printer}' | filecheck %s --check-prefix=PRINT
// RUN: diffc-opt %s -p 'lower-entry-points{entry=counter}' | filecheck %s --check-prefix=GLOBAL

func.func @withargs(%x: f32) {
  func.return
}
func.func @printer() {
  func.return
}
"memref.global"() <{sym_name = "count", sym_visibility = "private", type = memref<1xi32>, initial_value}> : () -> ()
func.func @counter() {
  %m = memref.get_global @count : memref<1xi32>
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  memref.store %one, %m[%c0] : memref<1xi32>
  func.return
}
func.func @cs(%t: i32 {diffc.semantic = "SV_DispatchThreadID"}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 8, 1, 1>} {
  func.return
}
// UNKNOWN: no function @nothere (compute entry points: cs)
// ARGS: {{.*}}lower_entry_points_errors.mlir:7:1: error: pass 'lower-entry-points' failed: lower-entry-points: @withargs: a non-shader entry point must have no parameters
// A parameterless function becomes a one-work-item kernel; the compute shader is left alone.
// PRINT: func.func @printer() attributes {kernel.entry, kernel.reqd_work_group_size = [1 : i64, 1 : i64, 1 : i64]}
// PRINT: func.func @cs(%t: i32 {diffc.semantic = "SV_DispatchThreadID"})
// A parameterless function's globals (a status global among them) are the buffer parameters of its kernel.
// GLOBAL: func.func @counter(%count: memref<1xi32> {diff.abi = #diff.abi<buffer>}) attributes {kernel.entry
