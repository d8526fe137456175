// RUN: diffc-opt -t opencl %s | filecheck %s
// RUN: diffc-opt -t 'opencl{unroll=32}' %s | filecheck %s --check-prefix=CPU

func.func @sum_powers(%x: f32, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %acc, %p = scf.for %i = %c0 to %n step %c1 iter_args(%acc0 = %zero, %p0 = %one) -> (f32, f32) {
    %acc1 = arith.addf %acc0, %p0 : f32
    %p1 = arith.mulf %p0, %x : f32
    scf.yield %acc1, %p1 : f32, f32
  }
  func.return %acc : f32
}

func.func @swap(%a: f32, %b: f32, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ra, %rb = scf.for %i = %c0 to %n step %c1 iter_args(%u = %a, %v = %b) -> (f32, f32) {
    scf.yield %v, %u : f32, f32
  }
  %d = arith.subf %ra, %rb : f32
  func.return %d : f32
}

func.func @loop_kernel(%x: memref<?xf32>, %y: memref<?xi32>) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %v = memref.load %x[%i] : memref<?xf32>
  %c4 = arith.constant 4 : index
  %s = func.call @sum_powers(%v, %c4) : (f32, index) -> f32
  %t = func.call @swap(%s, %v, %c4) : (f32, f32, index) -> f32
  memref.store %t, %x[%i] : memref<?xf32>
  func.return
}

// A loop marked diffc.unroll (kept rolled for the device compiler to unroll) gets
// `#pragma unroll` when its trip count is a constant; without one, no pragma.
func.func @marked(%x: memref<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %zero, %x[%i] : memref<4xf32>
  } {diffc.unroll}
  scf.for %j = %c0 to %n step %c1 {
    memref.store %zero, %x[%c0] : memref<4xf32>
  } {diffc.unroll}
  func.return
}

// CHECK-LABEL: float sum_powers(float x, long n) {
// CHECK-NEXT:    float acc0 = 0.0f;
// CHECK-NEXT:    float p0 = 1.0f;
// CHECK-NEXT:    for (long i = 0L; i < n; i += 1L) {
// CHECK-NEXT:      float acc1 = acc0 + p0;
// CHECK-NEXT:      float p1 = p0 * x;
// CHECK-NEXT:      acc0 = acc1;
// CHECK-NEXT:      p0 = p1;
// CHECK-NEXT:    }
// CHECK-NEXT:    return acc0;

// Carried values that swap go through temporaries.
// CHECK-LABEL: float swap(float a, float b, long n) {
// CHECK-NEXT:    float u = a;
// CHECK-NEXT:    float v = b;
// CHECK-NEXT:    for (long i = 0L; i < n; i += 1L) {
// CHECK-NEXT:      float u_next = v;
// CHECK-NEXT:      float v_next = u;
// CHECK-NEXT:      u = u_next;
// CHECK-NEXT:      v = v_next;
// CHECK-NEXT:    }
// CHECK-NEXT:    return u - v;

// CHECK-LABEL: void marked(__global float* x, long n) {
// CHECK:         #pragma unroll
// CHECK-NEXT:    for (long i = 0L; i < 4L; i += 1L) {
// CHECK:         }
// CHECK-NEXT:    for (long j = 0L; j < n; j += 1L) {

// CHECK-LABEL: __kernel void loop_kernel(__global float* x, __global int* y) {
// CHECK:         float s = sum_powers(v, 4L);


// On a CPU (unroll=32) every constant loop up to 32 trips is unrolled, but not one that holds a
// barrier, marked or not (PoCL builds a loop over the work-items for each barrier of a copy).
func.func @barriers(%x: memref<4xf32, 3 : i32>) attributes {kernel.entry, kernel.reqd_work_group_size = [4 : i64, 1 : i64, 1 : i64]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %zero, %x[%i] : memref<4xf32, 3 : i32>
  }
  scf.for %j = %c0 to %c4 step %c1 {
    memref.store %zero, %x[%j] : memref<4xf32, 3 : i32>
    kernel.barrier
  } {diffc.unroll}
  func.return
}

// CPU-LABEL: void barriers(
// CPU:         #pragma unroll
// CPU-NEXT:    for (long i = 0L; i < 4L; i += 1L) {
// CPU:         }
// CPU-NEXT:    for (long j = 0L; j < 4L; j += 1L) {
