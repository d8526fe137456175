// !diff.pair<T>: T is differentiable; make_pair, primal, differential agree with T.
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOMODULE
// NOMODULE-NOT: builtin.module

func.func @wrong_differential(%x: f32, %d: f64) {
  %p = "diff.make_pair"(%x, %d) : (f32, f64) -> !diff.pair<f32>
  func.return
}
// CHECK: invalid_pair.mlir:7:3: error: 'diff.make_pair' differential type f64 does not match the differential of the pair's element type f32

// -----

func.func @wrong_primal(%x: f32) -> f64 {
  %p = "diff.make_pair"(%x, %x) : (f32, f32) -> !diff.pair<f32>
  %a = "diff.primal"(%p) : (!diff.pair<f32>) -> f64
  func.return %a : f64
}
// CHECK: invalid_pair.mlir:16:3: error: 'diff.primal' result type f64 does not match f32, the primal type of !diff.pair<f32>

// -----

func.func @primal_disagrees(%x: f64, %d: f32) {
  // CHECK: invalid_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.make_pair' primal type f64 does not match the pair's element type f32
  %p = "diff.make_pair"(%x, %d) : (f64, f32) -> !diff.pair<f32>
  func.return
}

// -----

func.func @vector_shape(%v: vector<4xf32>, %w: vector<2xf32>) {
  // CHECK: invalid_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.make_pair' differential type vector<2xf32> does not match the differential of the pair's element type vector<4xf32>
  %p = "diff.make_pair"(%v, %w) : (vector<4xf32>, vector<2xf32>) -> !diff.pair<vector<4xf32>>
  func.return
}

// -----

func.func @wrong_differential_result(%p: !diff.pair<!diff.pair<f32>>) {
  // CHECK: invalid_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.differential' result type f32 does not match !diff.pair<f32>, the differential type of !diff.pair<!diff.pair<f32>>
  %d = "diff.differential"(%p) : (!diff.pair<!diff.pair<f32>>) -> f32
  func.return
}

// -----

func.func @projection_of_non_pair(%x: f32) {
  // CHECK: invalid_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.primal' operand must be a !diff.pair, got f32
  %d = "diff.primal"(%x) : (f32) -> f32
  func.return
}

// -----

// A pair's element must carry a derivative: integers, indices and memrefs do not.
// CHECK: invalid_pair.mlir:[[# @LINE + 1]]:35: error: !diff.pair element type must be differentiable (a float, a vector of floats or a differentiable struct), got i32
func.func @int_pair(%p: !diff.pair<i32>) {
  func.return
}

// -----

func.func @int_vector_pair(%v: vector<4xi32>) {
  // CHECK: invalid_pair.mlir:[[# @LINE + 1]]:79: error: !diff.pair element type must be differentiable (a float, a vector of floats or a differentiable struct), got vector<4xi32>
  %p = "diff.make_pair"(%v, %v) : (vector<4xi32>, vector<4xi32>) -> !diff.pair<vector<4xi32>>
  func.return
}

// -----

// CHECK: invalid_pair.mlir:[[# @LINE + 1]]:37: error: !diff.pair element type must be differentiable (a float, a vector of floats or a differentiable struct), got index
func.func @index_pair(%p: !diff.pair<index>) {
  func.return
}

// -----

func.func @zero_of_int() {
  // CHECK: invalid_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.zero' result must be a differentiable type, got i32
  %z = diff.zero : i32
  func.return
}

// -----

func.func @add_of_index(%a: index) {
  // CHECK: invalid_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.add' operands must be of a differentiable type, got index
  %s = "diff.add"(%a, %a) : (index, index) -> index
  func.return
}

// -----

func.func @add_disagrees(%a: f32, %b: f64) {
  // CHECK: invalid_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.add' operands and result must have one type, got f32, f64 -> f32
  %s = "diff.add"(%a, %b) : (f32, f64) -> f32
  func.return
}

// -----

func.func @detach_changes_type(%a: f32) {
  // CHECK: invalid_pair.mlir:[[# @LINE + 1]]:3: error: 'diff.detach' result type f64 must equal the operand type f32: detach keeps the value and drops only its derivative
  %s = "diff.detach"(%a) : (f32) -> f64
  func.return
}
