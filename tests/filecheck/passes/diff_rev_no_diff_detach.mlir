// RUN: diffc-opt %s -p diff-rev | filecheck %s
// no_diff parameters get no gradient, no_diff results take no derivative input, and
// diff.detach stops the adjoint: z's gradient only comes from its plain use.

func.func @f(%x: f32, %y: f32 {diff.no_diff}, %z: f32) -> (f32, f32 {diff.no_diff}) attributes {diff.differentiable} {
  %m = arith.mulf %x, %y : f32
  %d = diff.detach %z : f32
  %n = arith.mulf %m, %d : f32
  %p = arith.addf %n, %z : f32
  %e = math.exp %x : f32
  func.return %p, %e : f32, f32
}
func.func @main(%x: f32, %y: f32, %z: f32, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %z, %d) : (f32, f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// CHECK-LABEL: func.func @f_bwd(%x: f32, %y: f32, %z: f32, %d_out: f32) -> (f32, f32)
// CHECK:         %e = math.exp %x : f32
// adjoint of m = d * detach(z); nothing flows into z through %d:
// CHECK-NEXT:    %[[AM:.+]] = arith.mulf %d, %d_out : f32
// CHECK-NEXT:    %[[AX:.+]] = arith.mulf %y, %[[AM]] : f32
// CHECK-NEXT:    func.return %[[AX]], %d_out : f32, f32
