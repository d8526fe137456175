// Two plugin files at once; their passes combine in one pipeline, in the order given.
// RUN: diffc-opt %s --load-pass-plugin=%S/../Inputs/tag_functions_plugin.py --load-pass-plugin=%S/../Inputs/rename_functions_plugin.py --pass-pipeline='builtin.module(rename-functions{prefix=my_},tag-functions{tag=done})' | filecheck %s
// RUN: diffc-opt %s --load-pass-plugin=%S/../Inputs/rename_functions_plugin.py --load-pass-plugin=%S/../Inputs/tag_functions_plugin.py -p rename-functions | filecheck %s --check-prefix=DEFAULT

func.func @square(%x: f32) -> f32 attributes {diff.differentiable, diff.bwd_derivative = @square_bwd} {
  %r = arith.mulf %x, %x : f32
  func.return %r : f32
}
func.func @square_bwd(%x: f32, %d: f32) -> f32 {
  func.return %d : f32
}
func.func @caller(%x: f32, %one: f32) -> f32 {
  %g = diff.bwd_diff @square(%x, %one) : (f32, f32) -> f32
  func.return %g : f32
}
// CHECK-LABEL: func.func @my_square(%x: f32) -> f32 attributes {diff.differentiable, diff.bwd_derivative = @my_square_bwd, plugin.tag = "done"} {
// CHECK-LABEL: func.func @my_square_bwd(%x: f32, %d: f32) -> f32 attributes {plugin.tag = "done"} {
// CHECK-LABEL: func.func @my_caller(%x: f32, %one: f32) -> f32 attributes {plugin.tag = "done"} {
// CHECK-NEXT:    %g = diff.bwd_diff @my_square(%x, %one) : (f32, f32) -> f32

// DEFAULT: func.func @renamed_square(%x: f32) -> f32 attributes {diff.differentiable, diff.bwd_derivative = @renamed_square_bwd} {
// DEFAULT-NOT: plugin.tag
