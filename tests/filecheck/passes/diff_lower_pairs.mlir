// diff-lower on hand-written pair code: signatures, calls, returns, make_pair / primal /
// differential, zero, add, detach.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-lower)' | filecheck %s

// CHECK-LABEL: func.func @callee(%p: f32, %p_d: f32, %n: index) -> (f32, f32, index)
// CHECK-NEXT:    func.return %p, %p_d, %n : f32, f32, index
func.func @callee(%p: !diff.pair<f32>, %n: index) -> (!diff.pair<f32>, index) {
  func.return %p, %n : !diff.pair<f32>, index
}

// CHECK-LABEL: func.func @ops(%x: f32, %y: f32, %n: index) -> (f32, f32, index)
func.func @ops(%x: f32, %y: f32, %n: index) -> (!diff.pair<f32>, index) {
  // CHECK-NEXT: %z = arith.constant 0.000000e+00 : f32
  %z = diff.zero : f32
  // CHECK-NEXT: %s = arith.addf %y, %z : f32
  %s = diff.add %y, %z : f32
  %d = diff.detach %x : f32
  %p = diff.make_pair %d, %s : f32
  // CHECK-NEXT: %r, %r_d, %m = func.call @callee(%x, %s, %n) : (f32, f32, index) -> (f32, f32, index)
  %r, %m = func.call @callee(%p, %n) : (!diff.pair<f32>, index) -> (!diff.pair<f32>, index)
  %a = diff.primal %r : !diff.pair<f32>
  %b = diff.differential %r : !diff.pair<f32>
  // CHECK-NEXT: %c = arith.mulf %r, %r_d : f32
  %c = arith.mulf %a, %b : f32
  %q = diff.make_pair %c, %b : f32
  // CHECK-NEXT: func.return %c, %r_d, %m : f32, f32, index
  func.return %q, %m : !diff.pair<f32>, index
}
// CHECK-NOT: diff.
