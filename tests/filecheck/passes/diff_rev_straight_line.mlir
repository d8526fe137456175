// RUN: diffc-opt %s -p diff-rev | filecheck %s
// d(x*x*y + y + 2): the forward sweep, then the adjoints in reverse order from the rules.

func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %a = arith.mulf %x, %x : f32
  %b = arith.mulf %a, %y : f32
  %c = arith.addf %b, %y : f32
  %two = arith.constant 2.0 : f32
  %d = arith.addf %c, %two : f32
  func.return %d : f32
}

// CHECK-LABEL: func.func @f_bwd(%x: f32, %y: f32, %d_out: f32) -> (f32, f32)
// CHECK-NEXT:    %a = arith.mulf %x, %x : f32
// CHECK-NEXT:    %b = arith.mulf %a, %y : f32
// CHECK-NEXT:    %c = arith.addf %b, %y : f32
// CHECK-NEXT:    %two = arith.constant
// CHECK-NEXT:    %d = arith.addf %c, %two : f32
// adjoint of b = dout (addf partials are 1: no multiply); b = a*y:
// CHECK-NEXT:    %[[AA:.+]] = arith.mulf %y, %d_out : f32
// CHECK-NEXT:    %[[AY1:.+]] = arith.mulf %a, %d_out : f32
// CHECK-NEXT:    %[[AY:.+]] = arith.addf %d_out, %[[AY1]] : f32
// a = x*x: both operands are x
// CHECK-NEXT:    %[[X1:.+]] = arith.mulf %x, %[[AA]] : f32
// CHECK-NEXT:    %[[X2:.+]] = arith.mulf %x, %[[AA]] : f32
// CHECK-NEXT:    %[[AX:.+]] = arith.addf %[[X1]], %[[X2]] : f32
// CHECK-NEXT:    func.return %[[AX]], %[[AY]] : f32, f32

func.func @main(%x: f32, %y: f32) -> (f32, f32) {
  %one = arith.constant 1.0 : f32
  %g:2 = diff.bwd_diff @f(%x, %y, %one) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}
// CHECK-LABEL: func.func @main
// CHECK:         %{{.*}}, %{{.*}} = func.call @f_bwd(%x, %y, %one) : (f32, f32, f32) -> (f32, f32)
// CHECK-NOT:     diff.bwd_diff
