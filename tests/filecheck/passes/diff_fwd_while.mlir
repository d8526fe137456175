// scf.while: tangents ride along the before-region arguments, the values scf.condition passes
// on, the after-region arguments and the results.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse)' | filecheck %s --check-prefix=LOW

func.func @halve(%x: f32, %lim: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable} {
  %half = arith.constant 0.5 : f32
  %r = scf.while (%a = %x) : (f32) -> f32 {
    %big = arith.cmpf ogt, %a, %lim : f32
    scf.condition(%big) %a : f32
  } do {
  ^bb0(%b: f32):
    %h = arith.mulf %b, %half : f32
    scf.yield %h : f32
  } attributes {diff.max_iters = 64 : i64}
  func.return %r : f32
}
// CHECK-LABEL: func.func @halve_fwd
// CHECK:         %r, %r_d = scf.while (%a = %x, %a_d = %x_d) : (f32, f32) -> (f32, f32) {
// CHECK-NEXT:      %big = arith.cmpf ogt, %a, %lim : f32
// CHECK-NEXT:      scf.condition(%big) %a, %a_d : f32, f32
// CHECK-NEXT:    } do {
// CHECK-NEXT:    ^{{.*}}(%b: f32, %b_d: f32):
// CHECK-NEXT:      %h = arith.mulf %b, %half : f32
// CHECK-NEXT:      %h_d = arith.mulf %half, %b_d : f32
// CHECK-NEXT:      scf.yield %h, %h_d : f32, f32
// CHECK-NEXT:    } attributes {diff.max_iters = 64 : i64}

// LOW-LABEL: func.func @halve_fwd(%x: f32, %x_d: f32, %lim: f32 {diff.no_diff}) -> (f32, f32)
// LOW:         func.return %r, %r_d : f32, f32
func.func @main(%x: !diff.pair<f32>, %lim: f32) -> !diff.pair<f32> {
  %r = diff.fwd_diff @halve(%x, %lim) : (!diff.pair<f32>, f32) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
