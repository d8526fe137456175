// RUN: diffc-opt -t opencl %s | filecheck %s

func.func @sincos(%x: f64) -> (f64, f64) {
  %s = math.sin %x : f64
  %c = math.cos %x : f64
  func.return %s, %c : f64, f64
}

func.func @k(%x: memref<?xf64>, %out: memref<?x2xf64>) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %v = memref.load %x[%i] : memref<?xf64>
  %s, %c = func.call @sincos(%v) : (f64) -> (f64, f64)
  %zero = arith.constant 0 : index
  %one = arith.constant 1 : index
  memref.store %s, %out[%i, %zero] : memref<?x2xf64>
  memref.store %c, %out[%i, %one] : memref<?x2xf64>
  func.return
}

// Several results come back in a struct; doubles turn cl_khr_fp64 on; `sincos` is an OpenCL
// builtin, so the helper is renamed.
// CHECK:       #pragma OPENCL EXTENSION cl_khr_fp64 : enable
// CHECK:       typedef struct {
// CHECK-NEXT:      double r0, r1;
// CHECK-NEXT:  } sincos_1_result;
// CHECK-LABEL: sincos_1_result sincos_1(double x) {
// CHECK-NEXT:    double s = sin(x);
// CHECK-NEXT:    double c = cos(x);
// CHECK-NEXT:    sincos_1_result ret;
// CHECK-NEXT:    ret.r0 = s;
// CHECK-NEXT:    ret.r1 = c;
// CHECK-NEXT:    return ret;
// CHECK-LABEL: __kernel void k(__global double* x, __global double* out) {
// CHECK:         sincos_1_result [[R:.+]] = sincos_1(v);
// CHECK-NEXT:    out[i * 2] = [[R]].r0;
// CHECK-NEXT:    out[i * 2 + 1L] = [[R]].r1;
