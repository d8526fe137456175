// RUN: not diffc-opt %s -p diff-rev 2>&1 | filecheck %s
// An scf.for with a runtime bound and no diff.max_iters is unbounded under reverse mode.

func.func @f(%x: f32, %n: index) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %n step %st iter_args(%acc = %x) -> (f32) {
    %a = arith.mulf %acc, %acc : f32
    scf.yield %a : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %n: index, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %n, %d) : (f32, index, f32) -> f32
  func.return %g : f32
}

// CHECK: {{.*}}diff_rev_error_unbounded_for.mlir:7:3: error: pass 'diff-rev' failed: in function @f: unbounded loop (scf.for without constant bounds and no diff.max_iters)
// CHECK-NOT: Traceback
