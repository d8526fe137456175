// RUN: diffc-opt -t opencl %s | filecheck %s

// Four elements per work-item: vector index i covers elements 4i .. 4i+3.
func.func @poly4(%x: memref<?xf32>, %y: memref<?xf32>) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %v = kernel.vload %x[%i] : memref<?xf32> -> vector<4xf32>
  %two = arith.constant dense<2.0> : vector<4xf32>
  %eight = arith.constant dense<8.0> : vector<4xf32>
  %one = arith.constant dense<1.0> : vector<4xf32>
  %x2 = arith.mulf %v, %v : vector<4xf32>
  %a = arith.mulf %two, %x2 : vector<4xf32>
  %b = arith.mulf %eight, %v : vector<4xf32>
  %s = arith.addf %a, %b : vector<4xf32>
  %r = arith.subf %s, %one : vector<4xf32>
  kernel.vstore %r, %y[%i] : vector<4xf32>, memref<?xf32>
  func.return
}

func.func @copy3(%x: memref<?xf32>, %y: memref<?xf32>) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %v = kernel.vload %x[%i] : memref<?xf32> -> vector<3xf32>
  kernel.vstore %v, %y[%i] : vector<3xf32>, memref<?xf32>
  func.return
}

func.func @lanes(%v: vector<4xf32>, %s: f32) -> f32 {
  %b = vector.broadcast %s : f32 to vector<4xf32>
  %p = arith.mulf %v, %b : vector<4xf32>
  %e0 = vector.extract %p[0] : f32 from vector<4xf32>
  %e3 = vector.extract %p[3] : f32 from vector<4xf32>
  %r = arith.addf %e0, %e3 : f32
  func.return %r : f32
}

// CHECK-LABEL: float lanes(float4 v, float s) {
// CHECK-NEXT:    float4 b = (float4)(s);
// CHECK-NEXT:    float4 p = v * b;
// The lanes, each used once, are printed inside their sum.
// CHECK-NEXT:    return p.s0 + p.s3;
// Global float4 access through an aligned vector pointer (what reaches copy bandwidth).
// CHECK-LABEL: __kernel void poly4(__global float* x, __global float* y) {
// CHECK-NEXT:    long i = (long)get_global_id(0);
// CHECK-NEXT:    float4 v = ((__global float4*)x)[i];
// CHECK-NEXT:    float4 x2 = v * v;
// CHECK-NEXT:    float4 a = (float4)(2.0f) * x2;
// CHECK-NEXT:    float4 b = (float4)(8.0f) * v;
// CHECK-NEXT:    float4 s = a + b;
// CHECK-NEXT:    float4 r = s - (float4)(1.0f);
// CHECK-NEXT:    ((__global float4*)y)[i] = r;
// float3 is padded to four in memory: vload3/vstore3 instead.
// CHECK-LABEL: __kernel void copy3(__global float* x, __global float* y) {
// CHECK:         float3 v = vload3(i, x);
// CHECK-NEXT:    vstore3(v, i, y);
