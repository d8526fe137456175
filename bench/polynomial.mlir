// Seed 003's polynomial: a*x*x + b*x + c, differentiable in every parameter.
func.func @polynomial(%a: f32, %b: f32, %c: f32, %x: f32) -> f32 attributes {diff.differentiable} {
  %ax = arith.mulf %a, %x : f32
  %axx = arith.mulf %ax, %x : f32
  %bx = arith.mulf %b, %x : f32
  %s = arith.addf %axx, %bx : f32
  %r = arith.addf %s, %c : f32
  func.return %r : f32
}
