// Nested scf.for: the inner loop's iter_arg starts from the outer one's, so both carry tangents;
// the index counter carries none.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse)' | filecheck %s --check-prefix=LOW

func.func @nest(%x: f32, %n: index) -> f32 attributes {diff.differentiable} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one) -> (f32) {
    %in = scf.for %j = %c0 to %n step %c1 iter_args(%b = %acc) -> (f32) {
      %m = arith.mulf %b, %x : f32
      scf.yield %m : f32
    }
    scf.yield %in : f32
  }
  func.return %r : f32
}
// CHECK-LABEL: func.func @nest_fwd
// CHECK:         %r, %r_d = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one, %acc_d = %{{.*}}) -> (f32, f32) {
// CHECK-NEXT:      %in, %in_d = scf.for %j = %c0 to %n step %c1 iter_args(%b = %acc, %b_d = %acc_d) -> (f32, f32) {
// CHECK-NEXT:        %m = arith.mulf %b, %x : f32
// CHECK:             %m_d = arith.addf
// CHECK-NEXT:        scf.yield %m, %m_d : f32, f32
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.yield %in, %in_d : f32, f32
// CHECK-NEXT:    }

// LOW-LABEL: func.func @nest_fwd(%x: f32, %x_d: f32, %n: index) -> (f32, f32)
// LOW:         func.return %r, %r_d : f32, f32
func.func @main(%x: !diff.pair<f32>, %n: index) -> !diff.pair<f32> {
  %r = diff.fwd_diff @nest(%x, %n) : (!diff.pair<f32>, index) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
