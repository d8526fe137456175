// --time-passes reports on stderr, as mlir-opt does: the IR on stdout still pipes into FileCheck.
// RUN: diffc-opt %s --time-passes -p diff-fwd,canonicalize 2>%t.err | filecheck %s
// RUN: filecheck %s --check-prefix=TIME < %t.err

func.func @square(%x: f32) -> f32 attributes {diff.differentiable} {
  %r = arith.mulf %x, %x : f32
  func.return %r : f32
}
func.func @use(%x: f32, %dx: f32) -> f32 {
  %p = diff.make_pair %x, %dx : f32
  %q = diff.fwd_diff @square(%p) : (!diff.pair<f32>) -> !diff.pair<f32>
  %d = diff.differential %q : !diff.pair<f32>
  func.return %d : f32
}
// CHECK-NOT: Pass {{.*}} took
// CHECK: func.func @square_fwd
// CHECK-NOT: took
// TIME: Pass diff-fwd took {{[0-9.e-]+}} seconds
// TIME-NEXT: Pass canonicalize took {{[0-9.e-]+}} seconds
