// RUN: diffc-opt -t opencl %s | filecheck %s

func.func @polynomial(%x: f32) -> f32 {
  %two = arith.constant 2.0 : f32
  %eight = arith.constant 8.0 : f32
  %one = arith.constant 1.0 : f32
  %x2 = arith.mulf %x, %x : f32
  %a = arith.mulf %two, %x2 : f32
  %b = arith.mulf %eight, %x : f32
  %s = arith.addf %a, %b : f32
  %r = arith.subf %s, %one : f32
  func.return %r : f32
}

func.func @poly_kernel(%x: memref<?xf32>, %y: memref<?xf32>, %n: index) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %in = arith.cmpi slt, %i, %n : index
  scf.if %in {
    %v = memref.load %x[%i] : memref<?xf32>
    %r = func.call @polynomial(%v) : (f32) -> f32
    memref.store %r, %y[%i] : memref<?xf32>
  }
  func.return
}

// CHECK:       float polynomial(float x);
// CHECK-LABEL: float polynomial(float x) {
// Values used once are printed inside their use, but a product stays its own statement before
// a sum (in one expression OpenCL C may contract them into an fma, which rounds once).
// CHECK-NEXT:    float a = 2.0f * (x * x);
// CHECK-NEXT:    float b = 8.0f * x;
// CHECK-NEXT:    return (a + b) - 1.0f;
// CHECK-NEXT:  }
// CHECK-LABEL: __kernel void poly_kernel(__global float* x, __global float* y, long n) {
// CHECK-NEXT:    long i = (long)get_global_id(0);
// CHECK-NEXT:    if (i < n) {
// CHECK-NEXT:      float v = x[i];
// CHECK-NEXT:      float r = polynomial(v);
// CHECK-NEXT:      y[i] = r;
// CHECK-NEXT:    }
// CHECK-NEXT:  }
