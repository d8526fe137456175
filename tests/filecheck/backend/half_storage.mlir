// RUN: diffc-opt -t opencl %s | filecheck %s

// f16 buffers are storage only: loads widen to float, stores round to half.
func.func @scale_half(%x: memref<?xf16>, %y: memref<?xf16>, %s: f32) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %h = memref.load %x[%i] : memref<?xf16>
  %f = arith.extf %h : f16 to f32
  %r = arith.mulf %f, %s : f32
  %t = arith.truncf %r : f32 to f16
  memref.store %t, %y[%i] : memref<?xf16>
  func.return
}

func.func @scale_half4(%x: memref<?xf16>, %y: memref<?xf16>, %s: f32) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %v = kernel.vload %x[%i] : memref<?xf16> -> vector<4xf32>
  %b = vector.broadcast %s : f32 to vector<4xf32>
  %r = arith.mulf %v, %b : vector<4xf32>
  kernel.vstore %r, %y[%i] : vector<4xf32>, memref<?xf16>
  func.return
}

// CHECK-NOT:   cl_khr_fp16
// CHECK-LABEL: __kernel void scale_half(__global half* x, __global half* y, float s) {
// CHECK-NEXT:    long i = (long)get_global_id(0);
// CHECK-NEXT:    float h = vload_half(i, x);
// CHECK-NEXT:    float r = h * s;
// CHECK-NEXT:    vstore_half(r, i, y);
// CHECK-LABEL: __kernel void scale_half4(__global half* x, __global half* y, float s) {
// CHECK-NEXT:    long i = (long)get_global_id(0);
// CHECK-NEXT:    float4 v = vload_half4(i, x);
// CHECK-NEXT:    float4 b = (float4)(s);
// CHECK-NEXT:    float4 r = v * b;
// CHECK-NEXT:    vstore_half4(r, i, y);
