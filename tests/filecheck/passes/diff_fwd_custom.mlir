// A custom forward derivative replaces the generated one everywhere: at fwd_diff and at calls
// inside other differentiated functions. No @sq_fwd is generated.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse)' | filecheck %s --check-prefix=LOW

// CHECK-NOT: @sq_fwd
func.func @sq(%x: f32) -> f32 attributes {diff.differentiable, diff.fwd_derivative = @sq_d} {
  %m = arith.mulf %x, %x : f32
  func.return %m : f32
}
func.func @sq_d(%p: !diff.pair<f32>) -> !diff.pair<f32> {
  %x = diff.primal %p : !diff.pair<f32>
  %dx = diff.differential %p : !diff.pair<f32>
  %m = arith.mulf %x, %x : f32
  %t = arith.addf %x, %x : f32
  %d = arith.mulf %t, %dx : f32
  %r = diff.make_pair %m, %d : f32
  func.return %r : !diff.pair<f32>
}
func.func @user(%x: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %x : f32
  %q = func.call @sq(%s) : (f32) -> f32
  func.return %q : f32
}
// CHECK-LABEL: func.func @user_fwd
// CHECK:         func.call @sq_d(%{{.*}}) : (!diff.pair<f32>) -> !diff.pair<f32>
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %a = func.call @sq_d(%x)
// CHECK-NEXT:    %b = func.call @user_fwd(%x)

// The custom derivative is lowered like any other function.
// LOW-LABEL: func.func @sq_d(%p: f32, %p_d: f32) -> (f32, f32)
// LOW-LABEL: func.func @main(%x: f32, %x_d: f32) -> (f32, f32, f32, f32)
// LOW-NEXT:    %a, %a_d = func.call @sq_d(%x, %x_d) : (f32, f32) -> (f32, f32)
func.func @main(%x: !diff.pair<f32>) -> (!diff.pair<f32>, !diff.pair<f32>) {
  %a = diff.fwd_diff @sq(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  %b = diff.fwd_diff @user(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %a, %b : !diff.pair<f32>, !diff.pair<f32>
}
