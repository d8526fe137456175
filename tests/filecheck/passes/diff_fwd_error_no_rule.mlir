// A derivative-carrying value reaching an op without a derivative rule (a store to memory).
// RUN: not diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' 2>&1 | filecheck %s
// CHECK: {{.*}}diff_fwd_error_no_rule.mlir:9:3: error: pass 'diff-fwd' failed: in function @f: 'memref.store' has no derivative rule, but its operand #0 carries a derivative
// CHECK-NEXT: {{^}}    memref.store %y, %m[%c0] : memref<4xf32>{{$}}

func.func @f(%x: f32, %m: memref<4xf32>) -> f32 attributes {diff.differentiable} {
  %c0 = arith.constant 0 : index
  %y = math.sin %x : f32
  memref.store %y, %m[%c0] : memref<4xf32>
  func.return %y : f32
}
func.func @main(%x: !diff.pair<f32>, %m: memref<4xf32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x, %m) : (!diff.pair<f32>, memref<4xf32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
// The caret under the op's first character:
// CHECK-NEXT: {{^}}      ^{{$}}
// CHECK-NOT: Traceback
