// RUN: diffc-opt %s -p diff-rev | filecheck %s
// diff.bwd_derivative replaces the generated derivative everywhere: at bwd_diff of @g and at a
// call to @g inside another differentiated function. No @g_bwd is generated.

func.func @g(%a: f32) -> f32 attributes {diff.differentiable, diff.bwd_derivative = @g_custom} {
  %s = math.sin %a : f32
  func.return %s : f32
}
func.func @g_custom(%a: f32, %d: f32) -> f32 {
  %c = arith.constant 100.0 : f32
  %r = arith.mulf %c, %d : f32
  func.return %r : f32
}
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %m = arith.mulf %x, %y : f32
  %t = func.call @g(%m) : (f32) -> f32
  func.return %t : f32
}
func.func @main(%x: f32, %y: f32, %d: f32) -> (f32, f32, f32) {
  %a:2 = diff.bwd_diff @f(%x, %y, %d) : (f32, f32, f32) -> (f32, f32)
  %b = diff.bwd_diff @g(%x, %d) : (f32, f32) -> f32
  func.return %a#0, %a#1, %b : f32, f32, f32
}

// CHECK-NOT:   func.func @g_bwd
// CHECK-LABEL: func.func @f_bwd(%x: f32, %y: f32, %d_out: f32) -> (f32, f32)
// CHECK:         %[[DM:.+]] = func.call @g_custom(%m, %d_out) : (f32, f32) -> f32
// CHECK-NEXT:    %{{.+}} = arith.mulf %y, %[[DM]] : f32
// CHECK-NEXT:    %{{.+}} = arith.mulf %x, %[[DM]] : f32
// CHECK-LABEL: func.func @main
// CHECK:         func.call @f_bwd(%x, %y, %d)
// CHECK:         func.call @g_custom(%x, %d) : (f32, f32) -> f32
// CHECK-NOT:   func.func @g_bwd
