// A ModulePass defined in a Python file, loaded with --load-pass-plugin, runs in the pipeline
// under its name, alone or next to built-in passes.
// RUN: diffc-opt %s --load-pass-plugin=%S/../Inputs/tag_functions_plugin.py --pass-pipeline='builtin.module(tag-functions)' | filecheck %s
// RUN: diffc-opt %s --load-pass-plugin %S/../Inputs/tag_functions_plugin.py -p 'canonicalize,tag-functions{tag=fwd}' | filecheck %s --check-prefix=OPT
// The class in the plugin that is no ModulePass does not become a pass.
// RUN: not diffc-opt %s --load-pass-plugin=%S/../Inputs/tag_functions_plugin.py -p not-a-pass 2>&1 | filecheck %s --check-prefix=NOTPASS
// Without the plugin the pass is unknown.
// RUN: not diffc-opt %s -p tag-functions 2>&1 | filecheck %s --check-prefix=UNKNOWN

func.func @square(%x: f32) -> f32 attributes {diff.differentiable} {
  %r = arith.mulf %x, %x : f32
  func.return %r : f32
}
func.func @caller(%px: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @square(%px) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
// CHECK-LABEL: func.func @square(%x: f32) -> f32 attributes {diff.differentiable, plugin.tag = "tagged"} {
// CHECK-LABEL: func.func @caller(%px: !diff.pair<f32>) -> !diff.pair<f32> attributes {plugin.tag = "tagged"} {
// CHECK-NEXT:    %r = diff.fwd_diff @square(%px) : (!diff.pair<f32>) -> !diff.pair<f32>

// OPT: func.func @square(%x: f32) -> f32 attributes {diff.differentiable, plugin.tag = "fwd"} {
// OPT: func.func @caller(%px: !diff.pair<f32>) -> !diff.pair<f32> attributes {plugin.tag = "fwd"} {

// NOTPASS: error: unknown pass 'not-a-pass'
// UNKNOWN: error: unknown pass 'tag-functions'
