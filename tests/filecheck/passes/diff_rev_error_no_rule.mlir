// RUN: not diffc-opt %s -p diff-rev 2>&1 | filecheck %s
// A derivative-carrying value reaching an op without a derivative rule (here a store into
// memory, which would silently lose the gradient) is an error.

func.func @f(%x: f32, %m: memref<4xf32>) -> f32 attributes {diff.differentiable} {
  %c0 = arith.constant 0 : index
  memref.store %x, %m[%c0] : memref<4xf32>
  func.return %x : f32
}
func.func @main(%x: f32, %m: memref<4xf32>, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %m, %d) : (f32, memref<4xf32>, f32) -> f32
  func.return %g : f32
}

// CHECK: {{.*}}diff_rev_error_no_rule.mlir:7:3: error: pass 'diff-rev' failed: in function @f: 'memref.store' has no derivative rule but receives a derivative-carrying value
// CHECK-NOT: Traceback
