// kernel.atomic_rmw: half adds run a compare-and-swap loop on the enclosing 32-bit word with
// integer half <-> float conversions; unsigned max/min go through uint pointers; the old value
// is declared only when used. f16 <-> i16 bitcasts use the same conversions.
// RUN: diffc-opt -t opencl %s | filecheck %s

func.func @accumulate(%h: memref<?xf16>, %f: memref<?xf32>, %u: memref<?xi32>, %x: f16, %y: f32, %w: i32, %i: index, %off: index) attributes {kernel.entry} {
  %j = arith.addi %off, %i : index
  %old = kernel.atomic_rmw addf %x, %h[%j] : memref<?xf16>
  %oldf = kernel.atomic_rmw addf %y, %f[%i] : memref<?xf32>
  %a = kernel.atomic_rmw maxu %w, %u[%i] : memref<?xi32>
  %b = kernel.atomic_rmw maxs %w, %u[%i] : memref<?xi32>
  %c = kernel.atomic_rmw minu %w, %u[%i] : memref<?xi32>
  %d = kernel.atomic_rmw mins %w, %u[%i] : memref<?xi32>
  %e = kernel.atomic_rmw addi %w, %u[%i] : memref<?xi32>
  %s = arith.addf %old, %old : f16
  memref.store %s, %h[%i] : memref<?xf16>
  func.return
}

func.func @bits(%x: f32, %h: f16) -> (i32, f32, i16, f16) {
  %a = arith.bitcast %x : f32 to i32
  %b = arith.bitcast %a : i32 to f32
  %c = arith.bitcast %h : f16 to i16
  %d = arith.bitcast %c : i16 to f16
  func.return %a, %b, %c, %d : i32, f32, i16, f16
}

func.func @private_max(%w: i32, %i: index) -> i32 {
  %p = memref.alloca() : memref<4xi32>
  %old = kernel.atomic_rmw maxu %w, %p[%i] : memref<4xi32>
  func.return %old : i32
}

// CHECK:       float diffc_half_bits_to_float(uint h) {
// CHECK:       uint diffc_float_to_half_bits(float f) {
// CHECK:       float diffc_atomic_fetch_add_half_global(volatile __global half* p, float v) {
// CHECK:           volatile __global uint* word = (volatile __global uint*)(address & ~(uintptr_t)3);
// CHECK:               uint seen = atomic_cmpxchg(word, expected, desired);
// CHECK:       float diffc_atomic_fetch_add_float_global(volatile __global float* p, float v) {
// CHECK-LABEL: bits_result bits(float x, float h) {
// CHECK:         int a = as_int(x);
// CHECK-NEXT:    float b = as_float(a);
// CHECK-NEXT:    short c = (short)diffc_float_to_half_bits(h);
// CHECK-NEXT:    float d = diffc_half_bits_to_float((ushort)c);
// CHECK-LABEL: int private_max(int w, long i) {
// CHECK-NEXT:    int p[4];
// CHECK-NEXT:    int old = p[i];
// CHECK-NEXT:    p[i] = (int)max((uint)old, (uint)w);
// CHECK-LABEL: __kernel void accumulate(__global half* h, __global float* f, __global int* u, float x, float y, int w, long i, long off)
// CHECK-NEXT:    long j = off + i;
// CHECK-NEXT:    float old = diffc_atomic_fetch_add_half_global(h + j, x);
// CHECK-NEXT:    diffc_atomic_fetch_add_float_global(&f[i], y);
// CHECK-NEXT:    atomic_max((volatile __global uint*)&u[i], (uint)w);
// CHECK-NEXT:    atomic_max(&u[i], w);
// CHECK-NEXT:    atomic_min((volatile __global uint*)&u[i], (uint)w);
// CHECK-NEXT:    atomic_min(&u[i], w);
// CHECK-NEXT:    atomic_add(&u[i], w);
