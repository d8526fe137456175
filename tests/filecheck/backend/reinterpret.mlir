// RUN: diffc-opt -t opencl %s | filecheck %s
// RUN: diffc-opt %s | filecheck %s --check-prefix=IR

// kernel.reinterpret: bytes read as another element type, a pointer cast in OpenCL C (halves
// stay storage: vload_half / vstore_half through the cast pointer).
func.func @fields(%b: memref<?xi8>, %i: index) attributes {kernel.entry} {
  %h = kernel.reinterpret %b : memref<?xi8> to memref<?xf16>
  %w = kernel.reinterpret %b : memref<?xi8> to memref<?xi32>
  %x = memref.load %h[%i] : memref<?xf16>
  %n = memref.load %w[%i] : memref<?xi32>
  %j = arith.index_cast %n : i32 to index
  memref.store %x, %h[%j] : memref<?xf16>
  func.return
}

// CHECK: __kernel void fields(__global char* b, long i)
// CHECK: __global half* h = ((__global half*)b);
// CHECK: __global int* w = ((__global int*)b);
// CHECK: float x = vload_half(i, h);
// CHECK: int n = w[i];
// CHECK: vstore_half(x, (long)n, h);
// IR: %h = kernel.reinterpret %b : memref<?xi8> to memref<?xf16>
