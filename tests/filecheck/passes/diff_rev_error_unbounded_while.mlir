// RUN: not diffc-opt %s -p diff-rev 2>&1 | filecheck %s
// An scf.while without diff.max_iters cannot be reversed: the error names the function and
// the loop's location.

func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %lim = arith.constant 10.0 : f32
  %r = scf.while (%a = %x) : (f32) -> f32 {
    %c = arith.cmpf olt, %a, %lim : f32
    scf.condition(%c) %a : f32
  } do {
  ^bb0(%b: f32):
    %n = arith.addf %b, %b : f32
    scf.yield %n : f32
  }
  func.return %r : f32
}
func.func @main(%x: f32, %d: f32) -> f32 {
  %g = diff.bwd_diff @f(%x, %d) : (f32, f32) -> f32
  func.return %g : f32
}

// CHECK: {{.*}}diff_rev_error_unbounded_while.mlir:7:3: error: pass 'diff-rev' failed: in function @f: unbounded loop (scf.while and no diff.max_iters) cannot be reversed
// CHECK-NOT: Traceback
