// Pointer pairs and gradient accumulation: the location is a memref of a differentiable
// element type, both halves agree, accumulate gives one index per dimension and a value of
// the element type.
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOMODULE
// NOMODULE-NOT: builtin.module

func.func @value_type(%pp: !diff.ptr_pair<memref<?xf32>>, %v: f64, %i: index) {
  // CHECK: invalid_ptr_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.accumulate' value type f64 does not match the element type f32 of the gradient location
  diff.accumulate %v, %pp[%i] : !diff.ptr_pair<memref<?xf32>>, f64, index
  func.return
}

// -----

func.func @too_few_indices(%pp: !diff.ptr_pair<memref<?x?xf32>>, %v: f32, %i: index) {
  // CHECK: invalid_ptr_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.accumulate' takes one index per dimension of the gradient location: 2 for memref<?x?xf32>, got 1
  diff.accumulate %v, %pp[%i] : !diff.ptr_pair<memref<?x?xf32>>, f32, index
  func.return
}

// -----

func.func @too_many_indices(%pp: !diff.ptr_pair<memref<f32>>, %v: f32, %i: index) {
  // CHECK: invalid_ptr_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.accumulate' takes one index per dimension of the gradient location: 0 for memref<f32>, got 1
  "diff.accumulate"(%v, %pp, %i) : (f32, !diff.ptr_pair<memref<f32>>, index) -> ()
  func.return
}

// -----

func.func @index_type(%pp: !diff.ptr_pair<memref<?xf32>>, %v: f32, %i: i32) {
  // CHECK: invalid_ptr_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.accumulate' index 0 must have type index, got i32
  diff.accumulate %v, %pp[%i] : !diff.ptr_pair<memref<?xf32>>, f32, i32
  func.return
}

// -----

func.func @halves_disagree(%m: memref<?xf32>, %g: memref<?xf64>) {
  // CHECK: invalid_ptr_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.make_ptr_pair' gradient location type memref<?xf64> does not match the pair's location type memref<?xf32>
  %pp = "diff.make_ptr_pair"(%m, %g) : (memref<?xf32>, memref<?xf64>) -> !diff.ptr_pair<memref<?xf32>>
  func.return
}

// -----

func.func @wrong_location(%pp: !diff.ptr_pair<memref<?xf32>>) {
  // CHECK: invalid_ptr_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.ptr_gradient' result type memref<4xf32> does not match memref<?xf32>
  %g = "diff.ptr_gradient"(%pp) : (!diff.ptr_pair<memref<?xf32>>) -> memref<4xf32>
  func.return
}

// -----

// CHECK: invalid_ptr_pair.mlir:[[# @LINE + 1]]:44: error: !diff.ptr_pair location must be a memref of a differentiable element type, got memref<?xi32>
func.func @int_location(%pp: !diff.ptr_pair<memref<?xi32>>) {
  func.return
}

// -----

// CHECK: invalid_ptr_pair.mlir:[[# @LINE + 1]]:44: error: !diff.ptr_pair location must be a memref of a differentiable element type, got f32
func.func @not_a_memref(%pp: !diff.ptr_pair<f32>) {
  func.return
}

// -----

func.func @not_a_ptr_pair(%m: memref<?xf32>, %v: f32, %i: index) {
  // CHECK: invalid_ptr_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.accumulate' accumulates into a !diff.ptr_pair, got memref<?xf32>
  "diff.accumulate"(%v, %m, %i) : (f32, memref<?xf32>, index) -> ()
  func.return
}

// -----

func.func @primal_of_memref(%m: memref<?xf32>) {
  // CHECK: invalid_ptr_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.ptr_primal' operand must be a !diff.ptr_pair, got memref<?xf32>
  %p = "diff.ptr_primal"(%m) : (memref<?xf32>) -> memref<?xf32>
  func.return
}
