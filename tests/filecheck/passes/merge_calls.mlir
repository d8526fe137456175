// A kernel computes each read-only call once: repeated calls with the same operands merge,
// wrappers are inlined so the calls inside them merge too, and a store the callee could read
// between two calls keeps both (a store into a private array it is not given does not).
// RUN: diffc-opt %s -p merge-calls | filecheck %s

func.func @layer(%w: memref<?xf32>, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.load %w[%c0] : memref<?xf32>
  %y = arith.mulf %a, %x : f32
  func.return %y : f32
}

// a wrapper: squares its input, then calls the layer
func.func @net(%w: memref<?xf32>, %x: f32) -> f32 {
  %sq = arith.mulf %x, %x : f32
  %y = func.call @layer(%w, %sq) : (memref<?xf32>, f32) -> f32
  func.return %y : f32
}

func.func @writes(%w: memref<?xf32>, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  memref.store %x, %w[%c0] : memref<?xf32>
  func.return %x : f32
}

// prints: an effect, so each call stays
func.func @say(%x: f32) -> f32 {
  printf.print_format "x = {}", %x : f32
  func.return %x : f32
}

func.func @talk(%x: f32) attributes {kernel.entry} {
  %a = func.call @say(%x) : (f32) -> f32
  %b = func.call @say(%x) : (f32) -> f32
  func.return
}

func.func @k(%w: memref<?xf32>, %out: memref<?xf32>, %x: f32) attributes {kernel.entry} {
  %c0 = arith.constant 0 : index
  %sq = arith.mulf %x, %x : f32
  %a = func.call @layer(%w, %sq) : (memref<?xf32>, f32) -> f32
  %b = func.call @net(%w, %x) : (memref<?xf32>, f32) -> f32
  %priv = memref.alloca() : memref<1xf32>
  memref.store %a, %priv[%c0] : memref<1xf32>
  %c = func.call @layer(%w, %sq) : (memref<?xf32>, f32) -> f32
  %d = func.call @writes(%out, %x) : (memref<?xf32>, f32) -> f32
  %e = func.call @layer(%w, %sq) : (memref<?xf32>, f32) -> f32
  %s1 = arith.addf %a, %b : f32
  %s2 = arith.addf %s1, %c : f32
  %s3 = arith.addf %s2, %d : f32
  %s4 = arith.addf %s3, %e : f32
  memref.store %s4, %out[%c0] : memref<?xf32>
  func.return
}

// CHECK-LABEL: func.func @talk(
// CHECK-NEXT: func.call @say(%x)
// CHECK-NEXT: func.call @say(%x)

// CHECK-LABEL: func.func @k(
// CHECK: %[[SQ:.+]] = arith.mulf %x, %x : f32
// CHECK-NEXT: %[[A:.+]] = func.call @layer(%w, %[[SQ]])
// CHECK-NOT: func.call @net
// CHECK-NOT: func.call @layer
// CHECK: memref.store %[[A]], %{{.+}}[%{{.+}}] : memref<1xf32>
// CHECK-NEXT: %[[D:.+]] = func.call @writes(%out, %x)
// CHECK-NEXT: %[[E:.+]] = func.call @layer(%w, %[[SQ]])
// CHECK-NEXT: %[[S1:.+]] = arith.addf %[[A]], %[[A]] : f32
// CHECK-NEXT: %[[S2:.+]] = arith.addf %[[S1]], %[[A]] : f32
// CHECK-NEXT: %[[S3:.+]] = arith.addf %[[S2]], %[[D]] : f32
// CHECK-NEXT: arith.addf %[[S3]], %[[E]] : f32
