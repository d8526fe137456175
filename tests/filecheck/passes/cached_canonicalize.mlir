// cached-canonicalize rewrites as xDSL's canonicalize does (folds, patterns, dead ops, dead
// loops and branches); the two print the same module.
// RUN: diffc-opt %s -p cached-canonicalize | filecheck %s
// RUN: diffc-opt %s -p cached-canonicalize > %t.cached && diffc-opt %s -p canonicalize > %t.xdsl && diff %t.cached %t.xdsl

// CHECK-LABEL: func.func @fold
// CHECK-NEXT:    %[[C:.*]] = arith.constant 5.000000e+00 : f32
// CHECK-NEXT:    %[[S:.*]] = arith.addf %x, %[[C]] : f32
// CHECK-NEXT:    func.return %[[S]] : f32
func.func @fold(%x: f32) -> f32 {
  %a = arith.constant 2.0 : f32
  %b = arith.constant 3.0 : f32
  %c = arith.addf %a, %b : f32
  %unused = math.sin %x : f32
  %chain = arith.mulf %unused, %unused : f32
  %s = arith.addf %x, %c : f32
  func.return %s : f32
}

// A loop and a branch whose results nobody reads go; a store stays, and so does what it reads.
// CHECK-LABEL: func.func @dead_regions
// CHECK-NOT:     scf.if
// CHECK-NOT:     scf.for
// CHECK:         memref.store
// CHECK-NEXT:    func.return
func.func @dead_regions(%x: f32, %c: i1, %m: memref<4xf32>) {
  %lo = arith.constant 0 : index
  %hi = arith.constant 4 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lo to %hi step %st iter_args(%acc = %x) -> (f32) {
    %n = arith.mulf %acc, %acc : f32
    scf.yield %n : f32
  }
  %b = scf.if %c -> (f32) {
    scf.yield %x : f32
  } else {
    %y = math.cos %x : f32
    scf.yield %y : f32
  }
  %kept = math.exp %x : f32
  memref.store %kept, %m[%lo] : memref<4xf32>
  func.return
}

// A select on a constant condition folds to its operand.
// CHECK-LABEL: func.func @select
// CHECK-NEXT:    func.return %a : f32
func.func @select(%a: f32, %b: f32) -> f32 {
  %t = arith.constant true
  %s = arith.select %t, %a, %b : f32
  func.return %s : f32
}
