// RUN: diffc-opt %s -p diff-rev | filecheck %s
// A call to a differentiable function calls its own backward function, generated once for
// all call sites, with the primal arguments and the adjoint of the result.

func.func @g(%a: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %a : f32
  func.return %s : f32
}
func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %u = func.call @g(%x) : (f32) -> f32
  %v = func.call @g(%u) : (f32) -> f32
  func.return %v : f32
}
func.func @main(%x: f32, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %d) : (f32, f32) -> f32
  func.return %g : f32
}

// CHECK:       func.func @g_bwd(%a: f32, %d_out: f32) -> f32
// CHECK:         math.cos %a
// CHECK-NOT:   func.func @g_bwd
// CHECK-LABEL: func.func @f_bwd(%x: f32, %d_out: f32) -> f32
// CHECK-NEXT:    %u = func.call @g(%x) : (f32) -> f32
// CHECK-NEXT:    %v = func.call @g(%u) : (f32) -> f32
// CHECK-NEXT:    %[[DU:.+]] = func.call @g_bwd(%u, %d_out) : (f32, f32) -> f32
// CHECK-NEXT:    %[[DX:.+]] = func.call @g_bwd(%x, %[[DU]]) : (f32, f32) -> f32
// CHECK-NEXT:    func.return %[[DX]] : f32
// CHECK-NOT:   func.func @g_bwd
