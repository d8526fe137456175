// RUN: diffc-opt %s --pass-pipeline="builtin.module(diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse)" | filecheck %s
// The canonical pipeline over a bounded while loop: plain func/arith/math/scf/memref, the
// stored context in allocas, no diff type, op or mark left.

func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lim = arith.constant 10.0 : f32
  %r = scf.while (%a = %x) : (f32) -> f32 {
    %c = arith.cmpf olt, %a, %lim : f32
    scf.condition(%c) %a : f32
  } do {
  ^bb0(%b: f32):
    %m = arith.mulf %b, %y : f32
    %n = arith.addf %m, %b : f32
    scf.yield %n : f32
  } attributes {diff.max_iters = 20 : i64}
  func.return %r : f32
}
func.func @main(%x: f32, %y: f32, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %d) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// CHECK-LABEL: func.func @f_bwd(%x: f32, %y: f32, %d_out: f32) -> (f32, f32)
// CHECK-DAG:     memref.alloca() : memref<21xf32>
// CHECK-DAG:     memref.alloca() : memref<1xindex>
// CHECK:         scf.while
// CHECK:         scf.for
// CHECK:         func.return
// CHECK-NOT:   diff.
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    func.call @f_bwd(%x, %y, %d)
