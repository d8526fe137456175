// Entry points lower-entry-points cannot turn into kernels are errors naming the function.
// RUN: not diffc-opt %s -p 'lower-entry-points{entry=nothere}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not diffc-opt %s -p 'lower-entry-points{entry=withargs}' 2>&1 | filecheck %s --check-prefix=ARGS
// RUN: diffc-opt %s -p 'lower-entry-points{entry=printer}' | filecheck %s --check-prefix=PRINT

func.func @withargs(%x: f32) {
  func.return
}
func.func @printer() {
  func.return
}
func.func @cs(%t: i32 {diffc.semantic = "SV_DispatchThreadID"}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 8, 1, 1>} {
  func.return
}
// UNKNOWN: no function @nothere (compute entry points: cs)
// ARGS: {{.*}}lower_entry_points_errors.mlir:6:1: error: pass 'lower-entry-points' failed: lower-entry-points: @withargs: a non-shader entry point must have no parameters
// A parameterless function becomes a one-work-item kernel; the compute shader is left alone.
// PRINT: func.func @printer() attributes {kernel.entry, kernel.reqd_work_group_size = [1 : i64, 1 : i64, 1 : i64]}
// PRINT: func.func @cs(%t: i32 {diffc.semantic = "SV_DispatchThreadID"})
