// diff.fwd_diff must agree with fwd_signature(callee): a pair per differentiable parameter and
// result, the plain value for no_diff and non-differentiable ones.
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOMODULE
// NOMODULE-NOT: builtin.module

func.func @f(%x: f32, %k: f32 {diff.no_diff}) -> (f32, f32 {diff.no_diff}) attributes {diff.differentiable}
func.func @too_few(%px: !diff.pair<f32>) {
  // CHECK: invalid_fwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.fwd_diff' of @f expects 2 operands (one per parameter of @f, a !diff.pair for each differentiable one), got 1
  %r, %s = diff.fwd_diff @f(%px) : (!diff.pair<f32>) -> (!diff.pair<f32>, f32)
  func.return
}

// -----

func.func @f(%x: f32) -> f32 attributes {diff.differentiable}
func.func @plain_for_pair(%x: f32) {
  // CHECK: invalid_fwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.fwd_diff' of @f: operand 0 has type f32, expected !diff.pair<f32> (parameter 0 of @f is differentiable, so it is passed as a !diff.pair)
  %r = "diff.fwd_diff"(%x) <{callee = @f}> : (f32) -> !diff.pair<f32>
  func.return
}

// -----

func.func @f(%x: f32, %k: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable}
func.func @pair_for_no_diff_param(%px: !diff.pair<f32>) {
  // CHECK: invalid_fwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.fwd_diff' of @f: operand 1 has type !diff.pair<f32>, expected f32 (parameter 1 of @f is no_diff, so it is passed as its plain value)
  %r = diff.fwd_diff @f(%px, %px) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  func.return
}

// -----

func.func @f(%x: f32, %n: i32) -> f32 attributes {diff.differentiable}
func.func @int_param(%px: !diff.pair<f32>, %n: i64) {
  // CHECK: invalid_fwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.fwd_diff' of @f: operand 1 has type i64, expected i32 (parameter 1 of @f has the non-differentiable type i32, so it is passed as its plain value)
  %r = diff.fwd_diff @f(%px, %n) : (!diff.pair<f32>, i64) -> !diff.pair<f32>
  func.return
}

// -----

func.func @f(%x: f32) -> (f32, f32 {diff.no_diff}) attributes {diff.differentiable}
func.func @pair_for_no_diff_result(%px: !diff.pair<f32>) {
  // CHECK: invalid_fwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.fwd_diff' of @f: result 1 has type !diff.pair<f32>, expected f32 (result 1 of @f is no_diff, so it is passed as its plain value)
  %r, %s = diff.fwd_diff @f(%px) : (!diff.pair<f32>) -> (!diff.pair<f32>, !diff.pair<f32>)
  func.return
}

// -----

func.func @f(%x: f32) -> f32 attributes {diff.differentiable}
func.func @plain_result(%px: !diff.pair<f32>) {
  // CHECK: invalid_fwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.fwd_diff' of @f: result 0 has type f32, expected !diff.pair<f32> (result 0 of @f is differentiable, so it is passed as a !diff.pair)
  %r = diff.fwd_diff @f(%px) : (!diff.pair<f32>) -> f32
  func.return
}

// -----

func.func @f(%x: f32) -> f32 attributes {diff.differentiable}
func.func @too_many_results(%px: !diff.pair<f32>) {
  // CHECK: invalid_fwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.fwd_diff' of @f expects 1 result (one per result of @f, a !diff.pair for each differentiable one), got 2
  %r, %s = diff.fwd_diff @f(%px) : (!diff.pair<f32>) -> (!diff.pair<f32>, !diff.pair<f32>)
  func.return
}

// -----

func.func @f(%x: f64) -> f64 attributes {diff.differentiable}
func.func @element_type(%px: !diff.pair<f32>) {
  // CHECK: invalid_fwd_diff.mlir:[[# @LINE + 1]]:3: error: 'diff.fwd_diff' of @f: operand 0 has type !diff.pair<f32>, expected !diff.pair<f64>
  %r = diff.fwd_diff @f(%px) : (!diff.pair<f32>) -> !diff.pair<f64>
  func.return
}
