// --pass-pipeline='builtin.module(...)' runs the same passes as -p, with the same output.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(canonicalize,cse)' > %t.mlir-syntax.mlir
// RUN: diffc-opt %s -p canonicalize,cse > %t.xdsl-syntax.mlir
// RUN: diff %t.mlir-syntax.mlir %t.xdsl-syntax.mlir
// RUN: filecheck %s --input-file=%t.mlir-syntax.mlir
// Spaces around the pass names are allowed, and the empty pipeline changes nothing.
// RUN: diffc-opt %s --pass-pipeline=' builtin.module( canonicalize , cse ) ' | diff %t.mlir-syntax.mlir -
// RUN: diffc-opt %s --pass-pipeline='builtin.module()' | filecheck %s --check-prefix=NONE

func.func @f(%x: f32, %px: !diff.pair<f32>) -> f32 {
  %a = arith.constant 2.0 : f32
  %b = arith.constant 2.0 : f32
  %unused = arith.mulf %x, %x : f32
  %p = diff.primal %px : !diff.pair<f32>
  %m = arith.mulf %a, %p : f32
  %n = arith.mulf %b, %p : f32
  %s = arith.addf %m, %n : f32
  func.return %s : f32
}
// CHECK-LABEL: func.func @f(%x: f32, %px: !diff.pair<f32>) -> f32 {
// CHECK-NEXT:    %[[C:.+]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    %[[P:.+]] = diff.primal %px : !diff.pair<f32>
// CHECK-NEXT:    %[[M:.+]] = arith.mulf %[[C]], %[[P]] : f32
// CHECK-NEXT:    %[[S:.+]] = arith.addf %[[M]], %[[M]] : f32
// CHECK-NEXT:    func.return %[[S]] : f32
// CHECK-NEXT:  }

// NONE:      %a = arith.constant 2.000000e+00 : f32
// NONE-NEXT: %b = arith.constant 2.000000e+00 : f32
// NONE-NEXT: %unused = arith.mulf %x, %x : f32
