// RUN: not diffc-opt %s -p diff-rev 2>&1 | filecheck %s
// Reverse mode works on structured control flow only: a body of cf branches is refused, located.

func.func @f(%x: f32, %c: i1) -> f32 attributes {diff.differentiable} {
  cf.cond_br %c, ^bb1, ^bb2(%x : f32)
^bb1:
  %a = arith.mulf %x, %x : f32
  cf.br ^bb2(%a : f32)
^bb2(%r: f32):
  func.return %r : f32
}
func.func @main(%x: f32, %c: i1, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %c, %d) : (f32, i1, f32) -> f32
  func.return %g : f32
}

// CHECK: {{.*}}diff_rev_error_multi_block.mlir:4:1: error: pass 'diff-rev' failed: in function @f: reverse mode needs a function body of one block; this one has 3
// CHECK-NOT: Traceback
