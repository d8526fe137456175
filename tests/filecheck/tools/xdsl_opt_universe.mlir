// Stock xdsl-opt knows the diff dialect through the `xdsl.universe` entry point.
// RUN: xdsl-opt %s | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | diffc-opt | filecheck %s
// RUN: xdsl-opt %s -p canonicalize,cse | filecheck %s --check-prefix=CSE

func.func @square(%x: f32) -> f32 attributes {diff.differentiable} {
  %r = arith.mulf %x, %x : f32
  func.return %r : f32
}
func.func @all(%px: !diff.pair<f32>, %x: f32, %one: f32, %m: memref<?xf32>, %i: index) -> !diff.pair<f32> {
  %r = "diff.fwd_diff"(%px) <{callee = @square}> : (!diff.pair<f32>) -> !diff.pair<f32>
  %g = "diff.bwd_diff"(%x, %one) <{callee = @square}> : (f32, f32) -> f32
  %p = "diff.primal"(%r) : (!diff.pair<f32>) -> f32
  %pp = diff.make_ptr_pair %m, %m : memref<?xf32>
  diff.accumulate %g, %pp[%i] : !diff.ptr_pair<memref<?xf32>>, f32, index
  func.return %r : !diff.pair<f32>
}
// CHECK-LABEL: func.func @all(
// CHECK-NEXT:    %r = diff.fwd_diff @square(%px) : (!diff.pair<f32>) -> !diff.pair<f32>
// CHECK-NEXT:    %g = diff.bwd_diff @square(%x, %one) : (f32, f32) -> f32
// CHECK-NEXT:    %p = diff.primal %r : !diff.pair<f32>
// CHECK-NEXT:    %pp = diff.make_ptr_pair %m, %m : memref<?xf32>
// CHECK-NEXT:    diff.accumulate %g, %pp[%i] : !diff.ptr_pair<memref<?xf32>>, f32, index
// CHECK-NEXT:    func.return %r : !diff.pair<f32>

// The unused pure diff.primal goes away; accumulate has an effect and stays.
// CSE-LABEL: func.func @all(
// CSE-NOT:     diff.primal
// CSE:         diff.accumulate
