// fwd_diff / bwd_diff name a func.func that exists.
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOMODULE
// NOMODULE-NOT: builtin.module

func.func @missing_fwd(%px: !diff.pair<f32>) {
  // CHECK: invalid_callee.mlir:[[# @LINE + 1]]:3: error: 'diff.fwd_diff' callee @nope does not exist: no function of that name in the enclosing module
  %r = diff.fwd_diff @nope(%px) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return
}

// -----

func.func @missing_bwd(%x: f32, %one: f32) {
  // CHECK: invalid_callee.mlir:[[# @LINE + 1]]:3: error: 'diff.bwd_diff' callee @nope does not exist: no function of that name in the enclosing module
  %g = "diff.bwd_diff"(%x, %one) <{callee = @nope}> : (f32, f32) -> f32
  func.return
}

// -----

"memref.global"() <{sym_name = "weights", sym_visibility = "private", type = memref<4xf32>, initial_value}> : () -> ()
func.func @not_a_func(%x: f32, %one: f32) {
  // CHECK: invalid_callee.mlir:[[# @LINE + 1]]:3: error: 'diff.bwd_diff' callee @weights is a 'memref.global', not a func.func
  %g = diff.bwd_diff @weights(%x, %one) : (f32, f32) -> f32
  func.return
}

// -----

"memref.global"() <{sym_name = "weights", sym_visibility = "private", type = memref<4xf32>, initial_value}> : () -> ()
func.func @not_a_func_fwd(%px: !diff.pair<f32>) {
  // CHECK: invalid_callee.mlir:[[# @LINE + 1]]:3: error: 'diff.fwd_diff' callee @weights is a 'memref.global', not a func.func
  %r = "diff.fwd_diff"(%px) <{callee = @weights}> : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return
}
