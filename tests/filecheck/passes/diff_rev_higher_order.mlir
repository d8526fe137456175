// RUN: diffc-opt %s -p diff-fwd,diff-rev | filecheck %s
// RUN: diffc-opt %s -p 'diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse' | filecheck %s --check-prefix=FINAL
// bwd_diff of a function that uses fwd_diff: diff-fwd makes @g_fwd over pairs, diff-rev
// differentiates it like any differentiable call; pair ops are linear, the adjoint of a pair
// is a pair of adjoints.

func.func @g(%a: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %a : f32
  func.return %s : f32
}
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %p = diff.make_pair %x, %y : f32
  %q = diff.fwd_diff @g(%p) : (!diff.pair<f32>) -> !diff.pair<f32>
  %d = diff.differential %q : !diff.pair<f32>
  func.return %d : f32
}
func.func @main(%x: f32, %y: f32, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %d) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// CHECK:       func.func @g_fwd_bwd(%{{.+}}: !diff.pair<f32>, %{{.+}}: !diff.pair<f32>) -> !diff.pair<f32>
// CHECK-LABEL: func.func @f_bwd(%x: f32, %y: f32, %d_out: f32) -> (f32, f32)
// CHECK:         %p = diff.make_pair %x, %y : f32
// CHECK:         %q = func.call @g_fwd(%p)
// CHECK:         %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[AQ:.+]] = diff.make_pair %[[Z]], %d_out : f32
// CHECK-NEXT:    %[[AP:.+]] = func.call @g_fwd_bwd(%p, %[[AQ]]) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
// CHECK-NEXT:    %[[AX:.+]] = diff.primal %[[AP]] : !diff.pair<f32>
// CHECK-NEXT:    %[[AY:.+]] = diff.differential %[[AP]] : !diff.pair<f32>
// CHECK-NEXT:    func.return %[[AX]], %[[AY]] : f32, f32

// FINAL-LABEL: func.func @f_bwd
// FINAL-NOT:     diff.
// FINAL:         func.return
