// RUN: diffc-opt -t opencl %s | filecheck %s

// Names come from the IR's name hints, sanitized, never a C keyword or an OpenCL builtin, unique.
// (Each value is used twice, so that it is a variable rather than printed inside its use.)
func.func @exp(%int: f32, %x: f32) -> f32 {
  %exp = math.exp %int : f32
  %x_1 = arith.addf %exp, %exp : f32
  %x_2 = arith.addf %x_1, %x_1 : f32
  %r = arith.mulf %x_2, %x_2 : f32
  func.return %r : f32
}

func.func @user(%float: f32, %k: memref<2x3xf32>) -> f32 {
  %y = func.call @exp(%float, %float) : (f32, f32) -> f32
  %0 = arith.constant 1 : index
  %1 = arith.constant 2 : index
  %tmp = memref.alloca() : memref<2x3xf32>
  memref.store %y, %tmp[%0, %1] : memref<2x3xf32>
  %v = memref.load %tmp[%0, %1] : memref<2x3xf32>
  func.return %v : f32
}

// CHECK:       float exp_1(float int_1, float x);
// CHECK-LABEL: float exp_1(float int_1, float x) {
// CHECK-NEXT:    float exp_2 = exp(int_1);
// CHECK-NEXT:    float x_1 = exp_2 + exp_2;
// CHECK-NEXT:    float x_2 = x_1 + x_1;
// CHECK-NEXT:    return x_2 * x_2;
// Private arrays for memref.alloca; static shapes are linearized row-major.
// CHECK-LABEL: float user(float float_1, __global float* k) {
// CHECK-NEXT:    float y = exp_1(float_1, float_1);
// CHECK-NEXT:    float tmp[6];
// CHECK-NEXT:    tmp[1L * 3 + 2L] = y;
// CHECK-NEXT:    float v = tmp[1L * 3 + 2L];
