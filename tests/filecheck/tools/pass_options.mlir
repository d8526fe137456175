// Pass options written `{opt=value}` reach the pass, in --pass-pipeline and in -p.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(arith-add-fastmath{flags=nnan,ninf})' | filecheck %s --check-prefix=FLAGS
// RUN: diffc-opt %s -p 'arith-add-fastmath{flags=nnan,ninf}' | filecheck %s --check-prefix=FLAGS
// RUN: diffc-opt %s --pass-pipeline='builtin.module(arith-add-fastmath)' | filecheck %s --check-prefix=DEFAULT
// RUN: diffc-opt %s --pass-pipeline='builtin.module(arith-add-fastmath{flags=contract},cse)' | filecheck %s --check-prefix=CONTRACT
// A plugin pass's options too, with a quoted value.
// RUN: diffc-opt %s --load-pass-plugin=%S/../Inputs/tag_functions_plugin.py --pass-pipeline='builtin.module(tag-functions{tag="with space"})' | filecheck %s --check-prefix=TAG

func.func @f(%a: f32) -> f32 {
  %r = arith.mulf %a, %a : f32
  func.return %r : f32
}
// FLAGS:    %r = arith.mulf %a, %a fastmath<nnan,ninf> : f32
// DEFAULT:  %r = arith.mulf %a, %a fastmath<fast> : f32
// CONTRACT: %r = arith.mulf %a, %a fastmath<contract> : f32
// TAG:      func.func @f(%a: f32) -> f32 attributes {plugin.tag = "with space"} {
