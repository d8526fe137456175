// RUN: diffc-opt -t opencl %s | filecheck %s --check-prefix=CMPXCHG
// RUN: diffc-opt -t 'opencl{atomics=ptx}' %s | filecheck %s --check-prefix=PTX
// RUN: diffc-opt -t 'opencl{atomics=ext}' %s | filecheck %s --check-prefix=EXT

// Every work-item adds its value into one of 4 bins; counts are integer atomics.
func.func @histogram(%x: memref<?xf32>, %sums: memref<4xf32>, %counts: memref<4xi32>) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %v = memref.load %x[%i] : memref<?xf32>
  %c4 = arith.constant 4 : index
  %bin = arith.remui %i, %c4 : index
  kernel.atomic_add %v, %sums[%bin] : memref<4xf32>
  %one = arith.constant 1 : i32
  kernel.atomic_add %one, %counts[%bin] : memref<4xi32>
  func.return
}

// CMPXCHG:       void diffc_atomic_add_cmpxchg_global(volatile __global float* p, float v) {
// CMPXCHG:           uint seen = atomic_cmpxchg(bits, expected, desired);
// CMPXCHG-LABEL: __kernel void histogram(
// CMPXCHG:         long bin = (long)((ulong)i % (ulong)4L);
// CMPXCHG-NEXT:    diffc_atomic_add_cmpxchg_global(&sums[bin], v);
// CMPXCHG-NEXT:    atomic_add(&counts[bin], 1);

// PTX-NOT:       atomic_cmpxchg
// PTX:           void diffc_warp_atomic_add_f32(volatile __global float* p, float v) {
// PTX:               asm volatile("red.global.add.f32 [%0], %1;" : : "l"(p), "f"(sum) : "memory");
// PTX:           void diffc_warp_atomic_add_i32(volatile __global int* p, int v) {
// PTX:               asm volatile("red.global.add.s32 [%0], %1;" : : "l"(p), "r"(sum) : "memory");
// PTX:             diffc_warp_atomic_add_f32(&sums[bin], v);
// PTX-NEXT:        diffc_warp_atomic_add_i32(&counts[bin], 1);

// EXT-NOT:       atomic_cmpxchg
// EXT:           atomic_fetch_add_explicit((volatile __global atomic_float*)p, v, memory_order_relaxed, memory_scope_device);
// EXT:             diffc_atomic_add_ext_global(&sums[bin], v);
