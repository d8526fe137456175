// RUN: diffc-opt %s -p diff-fwd | filecheck %s
// RUN: diffc-opt %s -p diff-fwd,diff-lower,canonicalize,cse | filecheck %s --check-prefix=FINAL
// scf.index_switch in forward mode: one switch whose results are the primal results, then the
// tangent of each result that has one in some case; each case computes its own tangent.

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
func.func @main_fwd(%x: !diff.pair<f32>, %y: !diff.pair<f32>, %k: index) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x, %y, %k) : (!diff.pair<f32>, !diff.pair<f32>, index) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}

// CHECK-LABEL: func.func @f_fwd(%0: !diff.pair<f32>, %1: !diff.pair<f32>, %k: index) -> !diff.pair<f32>
// CHECK:         %r, %r_d = scf.index_switch %k -> f32, f32
// CHECK-NEXT:    case 0 {
// CHECK-NEXT:      %a = arith.mulf %x, %y : f32
// CHECK:           %a_d = arith.addf
// CHECK-NEXT:      scf.yield %a, %a_d : f32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    case 2 {
// CHECK-NEXT:      %b = math.sin %x : f32
// CHECK-NEXT:      %[[COS:.+]] = math.cos %x : f32
// CHECK-NEXT:      %b_d = arith.mulf %[[COS]], %x_d : f32
// CHECK-NEXT:      scf.yield %b, %b_d : f32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    default {
// CHECK-NEXT:      scf.yield %y, %y_d : f32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    diff.make_pair %r, %r_d : f32

// FINAL-LABEL: func.func @f_fwd(
// FINAL-SAME:    %x: f32, %x_d: f32, %y: f32, %y_d: f32, %k: index) -> (f32, f32)
// FINAL:         scf.index_switch %k -> f32, f32
// FINAL-NOT:     diff.
