// The "ptx" atomics mode (NVIDIA): a global add whose old value is unused is a warp-aggregated
// `red` (lanes adding to one address sum with shuffles among the active lanes, the lowest issues
// it); a half add rounds the float sum to half once and uses red.global.add.noftz.f16. Local
// memory and adds whose old value is used keep the compare-and-swap helpers.
// RUN: diffc-opt -t 'opencl{atomics=ptx}' %s | filecheck %s
// RUN: diffc-opt -t opencl %s | filecheck %s --check-prefix=CMPXCHG

func.func @accumulate(%h: memref<?xf16>, %f: memref<?xf32>, %u: memref<?xi32>, %l: memref<8xf32, 3>, %x: f16, %y: f32, %w: i32, %i: index, %off: index) attributes {kernel.entry} {
  %j = arith.addi %off, %i : index
  %unused = kernel.atomic_rmw addf %x, %h[%j] : memref<?xf16>
  %old = kernel.atomic_rmw addf %x, %h[%i] : memref<?xf16>
  %unusedf = kernel.atomic_rmw addf %y, %f[%i] : memref<?xf32>
  %unusedi = kernel.atomic_rmw addi %w, %u[%i] : memref<?xi32>
  %maxed = kernel.atomic_rmw maxs %w, %u[%i] : memref<?xi32>
  kernel.atomic_add %y, %f[%j] : memref<?xf32>
  kernel.atomic_add %w, %u[%j] : memref<?xi32>
  %c0 = arith.constant 0 : index
  kernel.atomic_add %y, %l[%c0] : memref<8xf32, 3>
  memref.store %old, %h[%j] : memref<?xf16>
  func.return
}

// CHECK:       void diffc_warp_atomic_add_f16(volatile __global half* p, float v) {
// CHECK-NEXT:      uint active, peers, lower;
// CHECK-NEXT:      asm volatile("activemask.b32 %0;" : "=r"(active));
// CHECK-NEXT:      asm volatile("match.any.sync.b64 %0, %1, %2;" : "=r"(peers) : "l"(p), "r"(active));
// CHECK-NEXT:      asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lower));
// CHECK-NEXT:      float sum = v;
// CHECK-NEXT:      if (active == 0xffffffffu && peers == active) {
// CHECK:               asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(other) : "f"(sum), "r"(step));
// CHECK:           } else {
// CHECK-NEXT:          sum = 0.0f;
// CHECK-NEXT:          for (uint rest = active; rest != 0u; rest &= rest - 1u) {
// CHECK-NEXT:              uint lane = 31u - clz(rest & (0u - rest));
// CHECK:                   asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, %3;" : "=f"(other) : "f"(v), "r"(lane), "r"(active));
// CHECK-NEXT:              if (peers & (1u << lane)) sum += other;
// CHECK:           if ((peers & lower) == 0u)
// CHECK-NEXT:          asm volatile("{ .reg .b16 hsum; cvt.rn.f16.f32 hsum, %1; red.global.add.noftz.f16 [%0], hsum; }" : : "l"(p), "f"(sum) : "memory");
// CHECK:       float diffc_atomic_fetch_add_half_global(volatile __global half* p, float v) {
// CHECK:       void diffc_warp_atomic_add_f32(volatile __global float* p, float v) {
// CHECK:               asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(other) : "f"(sum), "r"(step));
// CHECK:          asm volatile("red.global.add.f32 [%0], %1;" : : "l"(p), "f"(sum) : "memory");
// CHECK:       void diffc_warp_atomic_add_i32(volatile __global int* p, int v) {
// CHECK:               asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(other) : "r"(sum), "r"(step));
// CHECK:              sum = 0;
// CHECK:          asm volatile("red.global.add.s32 [%0], %1;" : : "l"(p), "r"(sum) : "memory");
// CHECK:       void diffc_atomic_add_cmpxchg_local(volatile __local float* p, float v) {
// CHECK-LABEL: __kernel void accumulate(
// CHECK-NEXT:    long j = off + i;
// CHECK-NEXT:    diffc_warp_atomic_add_f16(h + j, x);
// CHECK-NEXT:    float old = diffc_atomic_fetch_add_half_global(h + i, x);
// CHECK-NEXT:    diffc_warp_atomic_add_f32(&f[i], y);
// CHECK-NEXT:    diffc_warp_atomic_add_i32(&u[i], w);
// CHECK-NEXT:    atomic_max(&u[i], w);
// CHECK-NEXT:    diffc_warp_atomic_add_f32(&f[j], y);
// CHECK-NEXT:    diffc_warp_atomic_add_i32(&u[j], w);
// CHECK-NEXT:    diffc_atomic_add_cmpxchg_local(&l[0L], y);

// CMPXCHG-NOT:   diffc_warp_atomic_add
// CMPXCHG-NOT:   red.global
// CMPXCHG-LABEL: __kernel void accumulate(
// CMPXCHG:         diffc_atomic_fetch_add_half_global(h + j, x);
// CMPXCHG-NEXT:    float old = diffc_atomic_fetch_add_half_global(h + i, x);
// CMPXCHG-NEXT:    diffc_atomic_fetch_add_float_global(&f[i], y);
// CMPXCHG-NEXT:    atomic_add(&u[i], w);
