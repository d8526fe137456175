// diff.fwd_derivative = @g and diff.bwd_derivative = @h name existing functions whose
// signatures are fwd_diff's and bwd_diff's of the function that carries them.
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOMODULE
// NOMODULE-NOT: builtin.module

// CHECK: invalid_custom_derivative.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: diff.fwd_derivative names @f_fwd, which does not exist
func.func @f(%x: f32) -> f32 attributes {diff.differentiable, diff.fwd_derivative = @f_fwd}

// -----

// CHECK: invalid_custom_derivative.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: diff.bwd_derivative names @f_bwd, which does not exist
func.func @f(%x: f32) -> f32 attributes {diff.differentiable, diff.bwd_derivative = @f_bwd}

// -----

// CHECK: invalid_custom_derivative.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: custom derivative @f_fwd (diff.fwd_derivative) has signature (f32) -> f32, but fwd_diff of @f has signature (!diff.pair<f32>) -> !diff.pair<f32>
func.func @f(%x: f32) -> f32 attributes {diff.differentiable, diff.fwd_derivative = @f_fwd}
func.func @f_fwd(%x: f32) -> f32

// -----

// The no_diff parameter stays plain in the forward derivative.
// CHECK: invalid_custom_derivative.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: custom derivative @f_fwd (diff.fwd_derivative) has signature (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>, but fwd_diff of @f has signature (!diff.pair<f32>, f32) -> !diff.pair<f32>
func.func @f(%x: f32, %k: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable, diff.fwd_derivative = @f_fwd}
func.func @f_fwd(%x: !diff.pair<f32>, %k: !diff.pair<f32>) -> !diff.pair<f32>

// -----

// The backward derivative takes the output derivative and returns the gradients.
// CHECK: invalid_custom_derivative.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: custom derivative @f_bwd (diff.bwd_derivative) has signature (f32) -> f32, but bwd_diff of @f has signature (f32, f32) -> f32
func.func @f(%x: f32) -> f32 attributes {diff.differentiable, diff.bwd_derivative = @f_bwd}
func.func @f_bwd(%x: f32) -> f32

// -----

// CHECK: invalid_custom_derivative.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: custom derivative @f_bwd (diff.bwd_derivative) has signature (f32, f32, f32) -> (f32, f32), but bwd_diff of @f has signature (f32, f32, f32) -> f32
func.func @f(%x: f32, %k: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable, diff.bwd_derivative = @f_bwd}
func.func @f_bwd(%x: f32, %k: f32, %dr: f32) -> (f32, f32)

// -----

"memref.global"() <{sym_name = "g", sym_visibility = "private", type = memref<4xf32>, initial_value}> : () -> ()
// CHECK: invalid_custom_derivative.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: diff.fwd_derivative names @g, which is a 'memref.global', not a func.func
func.func @f(%x: f32) -> f32 attributes {diff.differentiable, diff.fwd_derivative = @g}

// -----

// CHECK: invalid_custom_derivative.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: diff.bwd_derivative must be a symbol reference such as @g, got "f_bwd"
func.func @f(%x: f32) -> f32 attributes {diff.differentiable, diff.bwd_derivative = "f_bwd"}
