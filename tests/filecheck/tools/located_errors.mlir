// Without --verify-diagnostics a verifier failure is one located error on stderr: file:line:col,
// the op and the rule, the source line and a caret; exit code 1, no traceback, no output.
// RUN: not diffc-opt %s 2>&1 | filecheck %s
// RUN: not diffc-opt %s -p canonicalize,cse 2>&1 | filecheck %s
// RUN: not diffc-opt %s 2>/dev/null | filecheck %s --check-prefix=NOOUT --allow-empty

func.func @square(%x: f32, %y: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable}
func.func @caller(%x: f32, %y: f32, %one: f32) -> (f32, f32) {
  %gx, %gy = "diff.bwd_diff"(%x, %y, %one) <{callee = @square}> : (f32, f32, f32) -> (f32, f32)
  func.return %gx, %gy : f32, f32
}
// CHECK:      located_errors.mlir:9:3: error: 'diff.bwd_diff' of @square expects 1 result (one gradient per differentiable parameter of @square; no_diff parameters get none), got 2
// CHECK-NEXT:   %gx, %gy = "diff.bwd_diff"(%x, %y, %one) <{callee = @square}> : (f32, f32, f32) -> (f32, f32)
// CHECK-NEXT:   ^
// CHECK-NOT: Traceback
// NOOUT-NOT: {{.}}
