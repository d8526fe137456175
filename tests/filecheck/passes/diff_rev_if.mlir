// RUN: diffc-opt %s -p diff-rev | filecheck %s
// RUN: diffc-opt %s -p 'diff-rev,diff-checkpoint,diff-lower,canonicalize,cse' | filecheck %s --check-prefix=FINAL
// scf.if: the forward sweep keeps the branch; the reverse sweep is an scf.if on the same
// condition that recomputes the branch and yields the adjoints of the outside values it uses.

func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %c = arith.cmpf ogt, %x, %y : f32
  %r = scf.if %c -> (f32) {
    %a = arith.mulf %x, %y : f32
    %s = math.sin %a : f32
    scf.yield %s : f32
  } else {
    %b = arith.mulf %y, %y : f32
    scf.yield %b : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %y: f32, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %d) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// CHECK-LABEL: func.func @f_bwd(%x: f32, %y: f32, %d_out: f32) -> (f32, f32)
// CHECK:         %[[C:.+]] = arith.cmpf ogt, %x, %y : f32
// CHECK-NEXT:    %r = scf.if %[[C]] -> (f32) {
// CHECK-NEXT:      %a = arith.mulf %x, %y {diff.primal_id = [[A:[0-9]+]] : i64} : f32
// CHECK-NEXT:      %s = math.sin %a {diff.primal_id = {{[0-9]+}} : i64} : f32
// CHECK-NEXT:      scf.yield %s : f32
// CHECK:         %[[ADJ:.+]], %[[ADJY:.+]] = scf.if %[[C]] -> (f32, f32) {
// CHECK-NEXT:      %[[A2:.+]] = arith.mulf %x, %y {diff.recompute = [[A]] : i64} : f32
// CHECK:           %[[COS:.+]] = math.cos %[[A2]] : f32
// CHECK:           scf.yield
// CHECK-NEXT:    } else {
// CHECK:           scf.yield
// CHECK:         func.return %[[ADJ]], %[[ADJY]] : f32, f32

// FINAL-LABEL: func.func @f_bwd
// FINAL-NOT:     diff.
// FINAL:         scf.if
// FINAL-NOT:     diff.
// FINAL:         func.return
