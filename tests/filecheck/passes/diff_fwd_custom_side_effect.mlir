// RUN: diffc-opt %s -p diff-fwd | filecheck %s
// A call whose arguments carry no tangent still goes through its custom forward derivative (also
// one reached through a differentiable callee): the custom derivative may read tangents of its
// own (a Slang DifferentialPtrPair's memory), so the call's result gets the tangent it returns.

func.func @first(%p: memref<?xf32>, %dp: memref<?xf32>) -> f32 attributes {diff.differentiable, diff.fwd_derivative = @firstFwd} {
  %c0 = arith.constant 0 : index
  %v = memref.load %p[%c0] : memref<?xf32>
  func.return %v : f32
}
func.func @firstFwd(%p: memref<?xf32>, %dp: memref<?xf32>) -> !diff.pair<f32> {
  %c0 = arith.constant 0 : index
  %v = memref.load %p[%c0] : memref<?xf32>
  %dv = memref.load %dp[%c0] : memref<?xf32>
  %r = diff.make_pair %v, %dv : f32
  func.return %r : !diff.pair<f32>
}
func.func @inner(%p: memref<?xf32>, %dp: memref<?xf32>) -> f32 attributes {diff.differentiable} {
  %v = func.call @first(%p, %dp) : (memref<?xf32>, memref<?xf32>) -> f32
  func.return %v : f32
}
func.func @scaled(%p: memref<?xf32>, %dp: memref<?xf32>, %x: f32) -> f32 attributes {diff.differentiable} {
  %v = func.call @inner(%p, %dp) : (memref<?xf32>, memref<?xf32>) -> f32
  %r = arith.mulf %v, %x : f32
  func.return %r : f32
}
func.func @main(%p: memref<?xf32>, %dp: memref<?xf32>, %x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = "diff.fwd_diff"(%p, %dp, %x) <{callee = @scaled}> : (memref<?xf32>, memref<?xf32>, !diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}

// CHECK-LABEL: func.func @inner_fwd(%p: memref<?xf32>, %dp: memref<?xf32>) -> !diff.pair<f32>
// CHECK:         func.call @firstFwd(%p, %dp) : (memref<?xf32>, memref<?xf32>) -> !diff.pair<f32>
// CHECK-LABEL: func.func @scaled_fwd(%p: memref<?xf32>, %dp: memref<?xf32>, %{{.*}}: !diff.pair<f32>) -> !diff.pair<f32>
// CHECK:         %[[V:.+]] = func.call @inner_fwd(%p, %dp) : (memref<?xf32>, memref<?xf32>) -> !diff.pair<f32>
// CHECK-NEXT:    %{{.*}} = diff.primal %[[V]] : !diff.pair<f32>
// CHECK-NEXT:    %{{.*}} = diff.differential %[[V]] : !diff.pair<f32>
