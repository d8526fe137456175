// RUN: diffc-opt %s -p diff-rev | filecheck %s
// RUN: diffc-opt %s -p diff-rev,diff-checkpoint,diff-lower,canonicalize,cse | filecheck %s --check-prefix=FINAL
// scf.index_switch in reverse mode: the forward sweep keeps the switch (case ops marked for
// diff-checkpoint); the adjoint is a switch on the same index and cases that recomputes its
// case and yields the adjoints of the outside values the switch uses (zero where unused).

func.func @f(%x: f32, %y: f32, %k: index) -> f32 attributes {diff.differentiable} {
  %r = scf.index_switch %k -> f32
  case 0 {
    %a = arith.mulf %x, %y : f32
    scf.yield %a : f32
  }
  case 2 {
    %b = math.sin %x : f32
    scf.yield %b : f32
  }
  default {
    scf.yield %y : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %y: f32, %k: index, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %k, %d) : (f32, f32, index, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// CHECK-LABEL: func.func @f_bwd(%x: f32, %y: f32, %k: index, %d_out: f32) -> (f32, f32)
// CHECK:         %r = scf.index_switch %k -> f32
// CHECK-NEXT:    case 0 {
// CHECK-NEXT:      %a = arith.mulf %x, %y {diff.primal_id = [[A:[0-9]+]] : i64} : f32
// CHECK:         case 2 {
// CHECK-NEXT:      %b = math.sin %x {diff.primal_id = [[B:[0-9]+]] : i64} : f32
// CHECK:         %[[GY:.+]], %[[GX:.+]] = scf.index_switch %k -> f32, f32
// CHECK-NEXT:    case 0 {
// CHECK-NEXT:      arith.mulf %x, %y {diff.recompute = [[A]] : i64} : f32
// CHECK-NEXT:      %[[DX:.+]] = arith.mulf %y, %d_out : f32
// CHECK-NEXT:      %[[DY:.+]] = arith.mulf %x, %d_out : f32
// CHECK-NEXT:      scf.yield %[[DY]], %[[DX]] : f32, f32
// CHECK:         case 2 {
// CHECK-NEXT:      math.sin %x {diff.recompute = [[B]] : i64} : f32
// CHECK-NEXT:      %[[COS:.+]] = math.cos %x : f32
// CHECK-NEXT:      %[[SX:.+]] = arith.mulf %[[COS]], %d_out : f32
// CHECK-NEXT:      %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      scf.yield %[[Z]], %[[SX]] : f32, f32
// CHECK:         default {
// CHECK-NEXT:      %[[Z2:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      scf.yield %d_out, %[[Z2]] : f32, f32
// CHECK:         func.return %[[GX]], %[[GY]] : f32, f32

// FINAL-LABEL: func.func @f_bwd(
// FINAL-NOT:     diff.
// FINAL:         scf.index_switch %k -> f32, f32
// FINAL-NOT:     diff.
// FINAL:         func.return
