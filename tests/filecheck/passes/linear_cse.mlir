// linear-cse replaces what xDSL's cse replaces (equal pure ops in scope, equal reads with no
// write between, equal branches) and erases the same dead ops; the two print the same module.
// RUN: diffc-opt %s -p linear-cse | filecheck %s
// RUN: diffc-opt %s -p linear-cse > %t.linear && diffc-opt %s -p cse > %t.xdsl && diff %t.linear %t.xdsl

// CHECK-LABEL: func.func @pure
// CHECK-NEXT:    %[[M:.*]] = arith.mulf %a, %b : f32
// CHECK-NEXT:    %[[R:.*]] = scf.if %c -> (f32) {
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[M]], %[[M]] : f32
// CHECK-NEXT:      scf.yield %[[S]] : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %a : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[T:.*]] = arith.addf %[[R]], %[[R]] : f32
// CHECK-NEXT:    func.return %[[T]] : f32
func.func @pure(%a: f32, %b: f32, %c: i1) -> f32 {
  %x = arith.mulf %a, %b : f32
  %y = arith.mulf %a, %b : f32
  %dead = arith.subf %a, %b : f32
  %r1 = scf.if %c -> (f32) {
    %p = arith.addf %x, %y : f32
    scf.yield %p : f32
  } else {
    scf.yield %a : f32
  }
  %r2 = scf.if %c -> (f32) {
    %q = arith.addf %x, %y : f32
    scf.yield %q : f32
  } else {
    scf.yield %a : f32
  }
  %t = arith.addf %r1, %r2 : f32
  func.return %t : f32
}

// An op in a loop's body reuses an equal one outside it; one in a sibling region does not.
// CHECK-LABEL: func.func @scopes
// CHECK:         %[[O:.*]] = arith.mulf %a, %a : f32
// CHECK:         scf.for
// CHECK-NEXT:      %[[N:.*]] = arith.addf %{{.*}}, %[[O]] : f32
// CHECK:         scf.if
// CHECK-NEXT:      %[[I:.*]] = arith.subf %a, %a : f32
// CHECK:         } else {
// CHECK-NEXT:      %[[E:.*]] = arith.subf %a, %a : f32
func.func @scopes(%a: f32, %c: i1) -> f32 {
  %lo = arith.constant 0 : index
  %hi = arith.constant 4 : index
  %st = arith.constant 1 : index
  %o = arith.mulf %a, %a : f32
  %s = scf.for %i = %lo to %hi step %st iter_args(%acc = %a) -> (f32) {
    %inner = arith.mulf %a, %a : f32
    %n = arith.addf %acc, %inner : f32
    scf.yield %n : f32
  }
  %r = scf.if %c -> (f32) {
    %u = arith.subf %a, %a : f32
    scf.yield %u : f32
  } else {
    %v = arith.subf %a, %a : f32
    scf.yield %v : f32
  }
  %t = arith.addf %s, %r : f32
  %w = arith.addf %t, %o : f32
  func.return %w : f32
}

// Two loads of one place are one while nothing is stored between them.
// CHECK-LABEL: func.func @reads
// CHECK-NEXT:    %[[L1:.*]] = memref.load %m[%i] : memref<?xf32>
// CHECK-NEXT:    memref.store %[[L1]], %m[%j] : memref<?xf32>
// CHECK-NEXT:    %[[L3:.*]] = memref.load %m[%i] : memref<?xf32>
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[L1]], %[[L1]] : f32
// CHECK-NEXT:    %[[T:.*]] = arith.addf %[[S]], %[[L3]] : f32
func.func @reads(%m: memref<?xf32>, %i: index, %j: index) -> f32 {
  %l1 = memref.load %m[%i] : memref<?xf32>
  %l2 = memref.load %m[%i] : memref<?xf32>
  memref.store %l1, %m[%j] : memref<?xf32>
  %l3 = memref.load %m[%i] : memref<?xf32>
  %s = arith.addf %l1, %l2 : f32
  %t = arith.addf %s, %l3 : f32
  func.return %t : f32
}
