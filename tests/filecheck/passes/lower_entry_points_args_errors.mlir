// Entry-point parameters a kernel cannot take and atomics no kernel op does are errors naming
// the function and the parameter or kind.
// Each case runs on its own: the pass stops at the first error.
// RUN: %python -c "import sys; print(open(sys.argv[1]).read().split(chr(10) + '// -----' + chr(10))[0])" %s | not diffc-opt -p lower-entry-points 2>&1 | filecheck %s --check-prefix=XOR
// RUN: %python -c "import sys; print(open(sys.argv[1]).read().split(chr(10) + '// -----' + chr(10))[1])" %s | not diffc-opt -p lower-entry-points 2>&1 | filecheck %s --check-prefix=MAXF
// RUN: %python -c "import sys; print(open(sys.argv[1]).read().split(chr(10) + '// -----' + chr(10))[2])" %s | not diffc-opt -p lower-entry-points 2>&1 | filecheck %s --check-prefix=F64
// RUN: %python -c "import sys; print(open(sys.argv[1]).read().split(chr(10) + '// -----' + chr(10))[3])" %s | not diffc-opt -p lower-entry-points 2>&1 | filecheck %s --check-prefix=I64
// RUN: %python -c "import sys; print(open(sys.argv[1]).read().split(chr(10) + '// -----' + chr(10))[4])" %s | not diffc-opt -p lower-entry-points 2>&1 | filecheck %s --check-prefix=LOCAL
// RUN: %python -c "import sys; print(open(sys.argv[1]).read().split(chr(10) + '// -----' + chr(10))[5])" %s | not diffc-opt -p lower-entry-points 2>&1 | filecheck %s --check-prefix=CLASH
// RUN: %python -c "import sys; print(open(sys.argv[1]).read().split(chr(10) + '// -----' + chr(10))[6])" %s | not diffc-opt -p lower-entry-points 2>&1 | filecheck %s --check-prefix=TENSOR

func.func @xor(%m: memref<?xi32>, %v: i32, %i: index) {
  %old = "memref.atomic_rmw"(%v, %m, %i) <{kind = 11 : i64}> : (i32, memref<?xi32>, index) -> i32
  func.return
}
// XOR: stdin:13:3: error: pass 'lower-entry-points' failed: lower-entry-points: @xor: 'memref.atomic_rmw' ori is not supported (supported: addf, addi, maxs, maxu, mins, minu)

// -----

func.func @max_f32(%m: memref<?xf32>, %v: f32, %i: index) {
  %old = "memref.atomic_rmw"(%v, %m, %i) <{kind = 3 : i64}> : (f32, memref<?xf32>, index) -> f32
  func.return
}
// MAXF: stdin:3:3: error: pass 'lower-entry-points' failed: lower-entry-points: @max_f32: 'memref.atomic_rmw' maximumf is not supported

// -----

func.func @add_f64(%m: memref<?xf64>, %v: f64, %i: index) {
  %old = "memref.atomic_rmw"(%v, %m, %i) <{kind = 0 : i64}> : (f64, memref<?xf64>, index) -> f64
  func.return
}
// F64: stdin:3:3: error: pass 'lower-entry-points' failed: lower-entry-points: @add_f64: 'memref.atomic_rmw' addf on f64 elements: only f16 and f32 are supported

// -----

func.func @max_i64(%m: memref<?xi64>, %v: i64, %i: index) {
  %old = "memref.atomic_rmw"(%v, %m, %i) <{kind = 5 : i64}> : (i64, memref<?xi64>, index) -> i64
  func.return
}
// I64: stdin:3:3: error: pass 'lower-entry-points' failed: lower-entry-points: @max_i64: 'memref.atomic_rmw' maxu on i64 elements: only i32 is supported

// -----

func.func @local_param(%t: i32 {diffc.semantic = "SV_DispatchThreadID"}, %scratch: memref<16xf32, 3 : i32>) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 16, 1, 1>} {
  func.return
}
// LOCAL: stdin:2:1: error: pass 'lower-entry-points' failed: lower-entry-points: @local_param: parameter 'scratch' is a memref in memory space 3; an entry point takes global buffers only

// -----

"memref.global"() <{sym_name = "data", type = memref<?xf32>, initial_value, sym_visibility = "public"}> : () -> ()
func.func @clash(%t: i32 {diffc.semantic = "SV_DispatchThreadID"}, %data: memref<?xf32>) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 16, 1, 1>} {
  %g = memref.get_global @data : memref<?xf32>
  %c0 = arith.constant 0 : index
  %v = memref.load %data[%c0] : memref<?xf32>
  memref.store %v, %g[%c0] : memref<?xf32>
  func.return
}
// CLASH: stdin:3:1: error: pass 'lower-entry-points' failed: lower-entry-points: @clash: parameter 'data' has the name of the buffer @data it uses; rename one of them

// -----

func.func @tensor_param(%t: i32 {diffc.semantic = "SV_DispatchThreadID"}, %x: tensor<4xf32>) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 16, 1, 1>} {
  func.return
}
// TENSOR: stdin:2:1: error: pass 'lower-entry-points' failed: lower-entry-points: @tensor_param: parameter 'x' has type tensor<4xf32>, which a kernel cannot take
