// Well-formed function facts: diff.prefer, diff.max_iters, unit diff.differentiable / diff.no_diff.
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=NOMODULE
// NOMODULE-NOT: builtin.module

// CHECK: invalid_facts.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: diff.prefer must be "recompute" or "checkpoint", got "fast"
func.func @f(%x: f32) -> f32 attributes {diff.differentiable, diff.prefer = "fast"}

// -----

// CHECK: invalid_facts.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: diff.prefer must be "recompute" or "checkpoint", got 1 : i64
func.func @f(%x: f32) -> f32 attributes {diff.differentiable, diff.prefer = 1 : i64}

// -----

// CHECK: invalid_facts.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: diff.differentiable is a unit attribute, got true
func.func @f(%x: f32) -> f32 attributes {diff.differentiable = true}

// -----

// CHECK: invalid_facts.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: diff.no_diff on parameter 1 is a unit attribute, got 0 : i64
func.func @f(%x: f32, %k: f32 {diff.no_diff = 0 : i64}) -> f32 attributes {diff.differentiable}

// -----

// CHECK: invalid_facts.mlir:[[# @LINE + 1]]:1: error: 'func.func' @f: diff.no_diff on result 0 is a unit attribute, got "yes"
func.func @f(%x: f32) -> (f32 {diff.no_diff = "yes"}) attributes {diff.differentiable}

// -----

func.func @zero_bound(%n: index, %x: f32) -> f32 attributes {diff.differentiable} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: invalid_facts.mlir:[[# @LINE + 1]]:3: error: 'scf.for': diff.max_iters must be a positive iteration bound, got 0
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f32) {
    scf.yield %a : f32
  } {diff.max_iters = 0 : i64}
  func.return %r : f32
}

// -----

func.func @negative_bound(%x: f32) -> f32 attributes {diff.differentiable} {
  // CHECK: invalid_facts.mlir:[[# @LINE + 1]]:3: error: 'scf.while': diff.max_iters must be a positive iteration bound, got -3
  %w = scf.while (%a = %x) : (f32) -> f32 {
    %c = arith.constant true
    scf.condition(%c) %a : f32
  } do {
  ^bb0(%b: f32):
    scf.yield %b : f32
  } attributes {diff.max_iters = -3 : i64}
  func.return %w : f32
}

// -----

func.func @string_bound(%x: f32) -> f32 attributes {diff.differentiable} {
  // CHECK: invalid_facts.mlir:[[# @LINE + 1]]:3: error: 'scf.while': diff.max_iters must be an integer loop bound such as `16 : i64`, got "many"
  %w = scf.while (%a = %x) : (f32) -> f32 {
    %c = arith.constant true
    scf.condition(%c) %a : f32
  } do {
  ^bb0(%b: f32):
    scf.yield %b : f32
  } attributes {diff.max_iters = "many"}
  func.return %w : f32
}

// -----

func.func @float_bound(%n: index) attributes {diff.differentiable} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: invalid_facts.mlir:[[# @LINE + 1]]:3: error: 'scf.for': diff.max_iters must be an integer loop bound such as `16 : i64`, got 1.600000e+01 : f64
  scf.for %i = %c0 to %n step %c1 {
  } {diff.max_iters = 16.0 : f64}
  func.return
}
