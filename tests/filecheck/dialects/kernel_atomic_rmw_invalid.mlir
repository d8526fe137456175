// kernel.atomic_rmw checks its kind, element type and indices.
// RUN: diffc-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

func.func @bad_kind(%u: memref<?xi32>, %v: i32, %i: index) {
  %a = kernel.atomic_rmw xori %v, %u[%i] : memref<?xi32>
  func.return
}
// CHECK: 'kernel.atomic_rmw' kind must be one of addf, addi, maxs, maxu, mins, minu, got xori

// -----

func.func @max_of_floats(%u: memref<?xf32>, %v: f32, %i: index) {
  %a = kernel.atomic_rmw maxu %v, %u[%i] : memref<?xf32>
  func.return
}
// CHECK: 'kernel.atomic_rmw' maxu supports i32 elements, got f32

// -----

func.func @add_doubles(%u: memref<?xf64>, %v: f64, %i: index) {
  %a = kernel.atomic_rmw addf %v, %u[%i] : memref<?xf64>
  func.return
}
// CHECK: 'kernel.atomic_rmw' addf supports f16 and f32 elements, got f64

// -----

func.func @two_indices(%u: memref<?xi32>, %v: i32, %i: index) {
  %a = kernel.atomic_rmw addi %v, %u[%i, %i] : memref<?xi32>
  func.return
}
// CHECK: 'kernel.atomic_rmw' expects 1 indices for memref<?xi32>, got 2
