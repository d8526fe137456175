// scf.for: an iter_arg whose init has no tangent gets one when the body gives it one (fixed
// point); an index iter_arg never carries a tangent.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse)' | filecheck %s --check-prefix=LOW

func.func @pow(%x: f32, %n: index) -> f32 attributes {diff.differentiable, diff.max_iters = 8 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %r, %k = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one, %j = %c0) -> (f32, index) {
    %m = arith.mulf %acc, %x : f32
    %j2 = arith.addi %j, %c1 : index
    scf.yield %m, %j2 : f32, index
  } {diff.max_iters = 8 : i64}
  func.return %r : f32
}
// CHECK-LABEL: func.func @pow_fwd
// CHECK:         %[[Z:.+]] = diff.zero : f32
// CHECK-NEXT:    %r, %k, %r_d = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one, %j = %c0, %acc_d = %[[Z]]) -> (f32, index, f32) {
// CHECK-NEXT:      %m = arith.mulf %acc, %x : f32
// CHECK-NEXT:      %[[A:.+]] = arith.mulf %x, %acc_d : f32
// CHECK-NEXT:      %[[B:.+]] = arith.mulf %acc, %x_d : f32
// CHECK-NEXT:      %m_d = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:      %j2 = arith.addi %j, %c1 : index
// CHECK-NEXT:      scf.yield %m, %j2, %m_d : f32, index, f32
// CHECK-NEXT:    } {diff.max_iters = 8 : i64}
// CHECK-NEXT:    %[[P:.+]] = diff.make_pair %r, %r_d : f32

// LOW-LABEL: func.func @pow_fwd(%x: f32, %x_d: f32, %n: index) -> (f32, f32)
// LOW:         scf.for {{.*}} iter_args(%acc = %one, %j = %c0, %acc_d = %{{.*}}) -> (f32, index, f32)
func.func @main(%x: !diff.pair<f32>, %n: index) -> !diff.pair<f32> {
  %r = diff.fwd_diff @pow(%x, %n) : (!diff.pair<f32>, index) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
