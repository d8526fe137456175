// A memref result that is always the parameter it was given (a mutating method of a struct
// holding a buffer returns its `this`) is dropped; callers use the memref they passed. One that
// may be another memref stays.
// RUN: diffc-opt %s -p forward-handle-results | filecheck %s

// CHECK-LABEL: func.func @set(%d: memref<?xf32>, %i: index, %v: f32) {
// CHECK-NEXT:    memref.store %v, %d[%i] : memref<?xf32>
// CHECK-NEXT:    func.return
func.func @set(%d: memref<?xf32>, %i: index, %v: f32) -> memref<?xf32> {
  memref.store %v, %d[%i] : memref<?xf32>
  func.return %d : memref<?xf32>
}

// calls another mutating method: its result becomes the parameter in the first round
// CHECK-LABEL: func.func @twice(%d: memref<?xf32>, %n: i32, %i: index, %v: f32) -> i32 {
// CHECK-NEXT:    func.call @set(%d, %i, %v) : (memref<?xf32>, index, f32) -> ()
// CHECK-NEXT:    func.call @set(%d, %i, %v) : (memref<?xf32>, index, f32) -> ()
// CHECK-NEXT:    func.return %n : i32
func.func @twice(%d: memref<?xf32>, %n: i32, %i: index, %v: f32) -> (memref<?xf32>, i32) {
  %a = func.call @set(%d, %i, %v) : (memref<?xf32>, index, f32) -> memref<?xf32>
  %b = func.call @set(%a, %i, %v) : (memref<?xf32>, index, f32) -> memref<?xf32>
  func.return %b, %n : memref<?xf32>, i32
}

// CHECK-LABEL: func.func @pick(%c: i1, %a: memref<?xf32>, %b: memref<?xf32>) -> memref<?xf32> {
func.func @pick(%c: i1, %a: memref<?xf32>, %b: memref<?xf32>) -> memref<?xf32> {
  %r = arith.select %c, %a, %b : memref<?xf32>
  func.return %r : memref<?xf32>
}

// CHECK-LABEL: func.func @user(%d: memref<?xf32>, %i: index, %v: f32) -> f32 {
// CHECK-NEXT:    %n = arith.constant 3 : i32
// CHECK-NEXT:    %{{.*}} = func.call @twice(%d, %n, %i, %v) : (memref<?xf32>, i32, index, f32) -> i32
// CHECK-NEXT:    %x = memref.load %d[%i] : memref<?xf32>
func.func @user(%d: memref<?xf32>, %i: index, %v: f32) -> f32 {
  %n = arith.constant 3 : i32
  %e, %m = func.call @twice(%d, %n, %i, %v) : (memref<?xf32>, i32, index, f32) -> (memref<?xf32>, i32)
  %x = memref.load %e[%i] : memref<?xf32>
  func.return %x : f32
}

// a branch and a loop that carried the handle through a mutating call yield the one they got
// CHECK-LABEL: func.func @carried(%c: i1, %d: memref<?xf32>, %i: index, %v: f32) {
// CHECK-NEXT:    scf.if %c {
// CHECK-NEXT:      func.call @set(%d, %i, %v) : (memref<?xf32>, index, f32) -> ()
// CHECK-NEXT:    } else {
// CHECK-NEXT:    }
// CHECK:         scf.for %k = %lo to %hi step %one {
// CHECK-NEXT:      func.call @set(%d, %k, %v) : (memref<?xf32>, index, f32) -> ()
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @carried(%c: i1, %d: memref<?xf32>, %i: index, %v: f32) {
  %r = scf.if %c -> (memref<?xf32>) {
    %a = func.call @set(%d, %i, %v) : (memref<?xf32>, index, f32) -> memref<?xf32>
    scf.yield %a : memref<?xf32>
  } else {
    scf.yield %d : memref<?xf32>
  }
  %lo = arith.constant 0 : index
  %hi = arith.constant 4 : index
  %one = arith.constant 1 : index
  %l = scf.for %k = %lo to %hi step %one iter_args(%e = %r) -> (memref<?xf32>) {
    %b = func.call @set(%e, %k, %v) : (memref<?xf32>, index, f32) -> memref<?xf32>
    scf.yield %b : memref<?xf32>
  }
  func.return
}
