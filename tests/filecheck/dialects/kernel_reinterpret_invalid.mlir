// kernel.reinterpret reads bytes as a rank-1 dynamic memref in the same memory space.
// RUN: diffc-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

func.func @not_bytes(%b: memref<?xf32>) {
  %h = kernel.reinterpret %b : memref<?xf32> to memref<?xf16>
  func.return
}
// CHECK: 'kernel.reinterpret' reads bytes (memref<?xi8>), got memref<?xf32>

// -----

func.func @static_result(%b: memref<?xi8>) {
  %h = kernel.reinterpret %b : memref<?xi8> to memref<4xf16>
  func.return
}
// CHECK: 'kernel.reinterpret' result must be a rank-1 memref of dynamic size, got memref<4xf16>

// -----

func.func @other_space(%b: memref<?xi8>) {
  %h = kernel.reinterpret %b : memref<?xi8> to memref<?xf16, 3 : i32>
  func.return
}
// CHECK: 'kernel.reinterpret' keeps the memory space
