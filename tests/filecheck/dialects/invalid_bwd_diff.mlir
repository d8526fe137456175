// diff.bwd_diff must agree with bwd_signature(callee): every primal parameter, then one
// derivative per differentiable result; one gradient per differentiable parameter.
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOMODULE
// NOMODULE-NOT: builtin.module

func.func @square(%x: f32, %y: f32) -> f32 attributes {diff.differentiable}
func.func @missing_dout(%x: f32, %y: f32) {
  // CHECK: invalid_bwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.bwd_diff' of @square expects 3 operands (the primal value of every parameter of @square, then one derivative per differentiable result), got 2
  %gx, %gy = "diff.bwd_diff"(%x, %y) <{callee = @square}> : (f32, f32) -> (f32, f32)
  func.return
}

// -----

func.func @square(%x: f32, %y: f32) -> f32 attributes {diff.differentiable}
func.func @pair_operand(%px: !diff.pair<f32>, %y: f32, %one: f32) {
  // CHECK: invalid_bwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.bwd_diff' of @square: operand 0 has type !diff.pair<f32>, expected f32 (operand 0 is the primal value of parameter 0 of @square)
  %gx, %gy = "diff.bwd_diff"(%px, %y, %one) <{callee = @square}> : (!diff.pair<f32>, f32, f32) -> (f32, f32)
  func.return
}

// -----

func.func @square(%x: f32, %y: f32) -> f32 attributes {diff.differentiable}
func.func @dout_type(%x: f32, %y: f32, %one: f64) {
  // CHECK: invalid_bwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.bwd_diff' of @square: operand 2 has type f64, expected f32 (operand 2 is the derivative of differentiable result 0 of @square)
  %gx, %gy = "diff.bwd_diff"(%x, %y, %one) <{callee = @square}> : (f32, f32, f64) -> (f32, f32)
  func.return
}

// -----

// A no_diff parameter gets no gradient.
func.func @scale(%x: f32, %k: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable}
func.func @gradient_for_no_diff_param(%x: f32, %k: f32, %one: f32) {
  // CHECK: invalid_bwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.bwd_diff' of @scale expects 1 result (one gradient per differentiable parameter of @scale; no_diff parameters get none), got 2
  %gx, %gk = "diff.bwd_diff"(%x, %k, %one) <{callee = @scale}> : (f32, f32, f32) -> (f32, f32)
  func.return
}

// -----

// A no_diff result takes no derivative.
func.func @two(%x: f32) -> (f32, f32 {diff.no_diff}) attributes {diff.differentiable}
func.func @dout_for_no_diff_result(%x: f32, %d0: f32, %d1: f32) {
  // CHECK: invalid_bwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.bwd_diff' of @two expects 2 operands (the primal value of every parameter of @two, then one derivative per differentiable result), got 3
  %gx = "diff.bwd_diff"(%x, %d0, %d1) <{callee = @two}> : (f32, f32, f32) -> f32
  func.return
}

// -----

// Integer parameters are not differentiable: no gradient for them either.
func.func @index_param(%x: vector<4xf32>, %i: index) -> f32 attributes {diff.differentiable}
func.func @gradient_type(%x: vector<4xf32>, %i: index, %one: f32) {
  // CHECK: invalid_bwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.bwd_diff' of @index_param: result 0 has type f32, expected vector<4xf32> (result 0 is the gradient of differentiable parameter 0 of @index_param)
  %g = diff.bwd_diff @index_param(%x, %i, %one) : (vector<4xf32>, index, f32) -> f32
  func.return
}
