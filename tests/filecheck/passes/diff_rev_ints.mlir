// RUN: diffc-opt %s -p diff-rev | filecheck %s
// Integer and index values take part in the forward sweep but carry no adjoint; a float made
// from an integer (sitofp) is not differentiable either.

func.func @f(%x: f32, %n: i32) -> f32 attributes {diff.differentiable} {
  %k = arith.addi %n, %n : i32
  %kf = arith.sitofp %k : i32 to f32
  %a = arith.mulf %x, %kf : f32
  func.return %a : f32
}
func.func @main(%x: f32, %n: i32, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %n, %d) : (f32, i32, f32) -> f32
  func.return %g : f32
}

// CHECK-LABEL: func.func @f_bwd(%x: f32, %n: i32, %d_out: f32) -> f32
// CHECK-NEXT:    %k = arith.addi %n, %n : i32
// CHECK-NEXT:    %kf = arith.sitofp %k : i32 to f32
// CHECK-NEXT:    %a = arith.mulf %x, %kf : f32
// CHECK-NEXT:    %[[AX:.+]] = arith.mulf %kf, %d_out : f32
// CHECK-NEXT:    func.return %[[AX]] : f32
