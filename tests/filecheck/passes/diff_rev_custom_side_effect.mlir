// RUN: diffc-opt %s -p diff-rev | filecheck %s
// A call whose arguments carry no derivative still gets its custom backward derivative called:
// the custom derivative acts on state of its own (seed 000's getParam adds into a gradient
// buffer), so the reverse sweep passes it the adjoint of the call's result.

func.func @getParam(%idx: i32) -> f32 attributes {diff.bwd_derivative = @getParamBwd} {
  %c = arith.constant 2.0 : f32
  func.return %c : f32
}
func.func @getParamBwd(%idx: i32, %dout: f32) {
  func.return
}
func.func @compute(%idx: i32) -> f32 attributes {diff.differentiable} {
  %w = func.call @getParam(%idx) : (i32) -> f32
  %r = arith.mulf %w, %w : f32
  func.return %r : f32
}
func.func @main(%idx: i32) {
  %one = arith.constant 1.0 : f32
  "diff.bwd_diff"(%idx, %one) <{callee = @compute}> : (i32, f32) -> ()
  func.return
}

// CHECK-LABEL: func.func @compute_bwd(%idx: i32, %d_out: f32)
// CHECK-NEXT:    %[[W:.+]] = func.call @getParam(%idx) : (i32) -> f32
// CHECK:         %[[A:.+]] = arith.mulf %[[W]], %d_out : f32
// CHECK-NEXT:    %[[B:.+]] = arith.mulf %[[W]], %d_out : f32
// CHECK-NEXT:    %[[S:.+]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:    func.call @getParamBwd(%idx, %[[S]]) : (i32, f32) -> ()
