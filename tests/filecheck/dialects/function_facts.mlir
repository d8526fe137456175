// Function-level facts survive the printer and the parser, in both forms:
// diff.differentiable, diff.no_diff on parameters and results, custom derivatives,
// diff.prefer, and diff.max_iters on scf.for / scf.while.
// RUN: diffc-opt %s | filecheck %s
// RUN: diffc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: diffc-opt %s --print-op-generic | diffc-opt | filecheck %s

// CHECK-LABEL: func.func @f(%x: f32, %n: i32 {diff.no_diff}, %s: f32 {diff.no_diff}) -> (f32, f32 {diff.no_diff}) attributes {diff.differentiable, diff.prefer = "checkpoint", diff.fwd_derivative = @f_fwd, diff.bwd_derivative = @f_bwd} {
// GENERIC-LABEL: "func.func"() <{sym_name = "f", function_type = (f32, i32, f32) -> (f32, f32), arg_attrs = [{}, {diff.no_diff}, {diff.no_diff}], res_attrs = [{}, {diff.no_diff}]}> ({
func.func @f(%x: f32, %n: i32 {diff.no_diff}, %s: f32 {diff.no_diff}) -> (f32, f32 {diff.no_diff}) attributes {diff.differentiable, diff.prefer = "checkpoint", diff.fwd_derivative = @f_fwd, diff.bwd_derivative = @f_bwd} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  // CHECK: %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %x) -> (f32) {
  // CHECK: } {diff.max_iters = 4 : i64}
  // GENERIC: }) {diff.max_iters = 4 : i64} : (index, index, index, f32) -> f32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %x) -> (f32) {
    %b = arith.mulf %a, %a : f32
    scf.yield %b : f32
  } {diff.max_iters = 4 : i64}
  // CHECK: %w = scf.while
  // CHECK: } attributes {diff.max_iters = 8 : i64}
  // GENERIC: }) {diff.max_iters = 8 : i64} : (f32) -> f32
  %w = scf.while (%a = %r) : (f32) -> f32 {
    %c = arith.constant true
    scf.condition(%c) %a : f32
  } do {
  ^bb0(%a: f32):
    scf.yield %a : f32
  } attributes {diff.max_iters = 8 : i64}
  func.return %w, %x : f32, f32
}
// GENERIC: }) {diff.differentiable, diff.prefer = "checkpoint", diff.fwd_derivative = @f_fwd, diff.bwd_derivative = @f_bwd} : () -> ()

// The custom derivatives have fwd_diff's and bwd_diff's signatures of @f.
// CHECK-LABEL: func.func @f_fwd(!diff.pair<f32>, i32, f32) -> (!diff.pair<f32>, f32)
func.func @f_fwd(%x: !diff.pair<f32>, %n: i32, %s: f32) -> (!diff.pair<f32>, f32)
// CHECK-LABEL: func.func @f_bwd(f32, i32, f32, f32) -> f32
func.func @f_bwd(%x: f32, %n: i32, %s: f32, %dr: f32) -> f32

// CHECK-LABEL: func.func @recompute(%x: f32) -> f32 attributes {diff.differentiable, diff.prefer = "recompute"} {
func.func @recompute(%x: f32) -> f32 attributes {diff.differentiable, diff.prefer = "recompute"} {
  func.return %x : f32
}
