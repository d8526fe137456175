// RUN: diffc-opt %s -p diff-rev | filecheck %s
// The custom backward derivative sits one call deeper: @outer's arguments carry no derivative,
// but @outer calls @getParam, whose backward derivative acts on state of its own. The call to
// @outer is active, so the reverse sweep calls @inner_bwd and from it @getParamBwd.

func.func @getParam(%idx: i32) -> f32 attributes {diff.bwd_derivative = @getParamBwd} {
  %c = arith.constant 2.0 : f32
  func.return %c : f32
}
func.func @getParamBwd(%idx: i32, %dout: f32) {
  func.return
}
func.func @inner(%idx: i32) -> f32 attributes {diff.differentiable} {
  %w = func.call @getParam(%idx) : (i32) -> f32
  func.return %w : f32
}
func.func @compute(%idx: i32) -> f32 attributes {diff.differentiable} {
  %w = func.call @inner(%idx) : (i32) -> f32
  %r = arith.mulf %w, %w : f32
  func.return %r : f32
}
func.func @main(%idx: i32) {
  %one = arith.constant 1.0 : f32
  "diff.bwd_diff"(%idx, %one) <{callee = @compute}> : (i32, f32) -> ()
  func.return
}

// CHECK-LABEL: func.func @inner_bwd(%idx: i32, %d_out: f32)
// CHECK:         func.call @getParamBwd(%idx, %d_out) : (i32, f32) -> ()
// CHECK-LABEL: func.func @compute_bwd(%idx: i32, %d_out: f32)
// CHECK:         %[[S:.+]] = arith.addf
// CHECK-NEXT:    func.call @inner_bwd(%idx, %[[S]]) : (i32, f32) -> ()
