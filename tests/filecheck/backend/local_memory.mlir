// RUN: diffc-opt -t opencl %s | filecheck %s

// A work-group tree reduction in local memory, then one atomic add per group.
func.func @reduce(%x: memref<?xf32>, %total: memref<1xf32>) attributes {kernel.entry, kernel.reqd_work_group_size = [64, 1, 1]} {
  %buf = kernel.local_alloc : memref<64xf32, 3 : i32>
  %gid = kernel.global_id 0
  %lid = kernel.local_id 0
  %grp = kernel.group_id 0
  %v = memref.load %x[%gid] : memref<?xf32>
  memref.store %v, %buf[%lid] : memref<64xf32, 3 : i32>
  kernel.barrier
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %w = scf.while (%stride = %c32) : (index) -> index {
    %more = arith.cmpi sgt, %stride, %c0 : index
    scf.condition(%more) %stride : index
  } do {
  ^bb0(%s: index):
    %active = arith.cmpi slt, %lid, %s : index
    scf.if %active {
      %j = arith.addi %lid, %s : index
      %a = memref.load %buf[%lid] : memref<64xf32, 3 : i32>
      %b = memref.load %buf[%j] : memref<64xf32, 3 : i32>
      %sum = arith.addf %a, %b : f32
      memref.store %sum, %buf[%lid] : memref<64xf32, 3 : i32>
    }
    kernel.barrier
    %half = arith.shrui %s, %c1 : index
    scf.yield %half : index
  }
  %first = arith.cmpi eq, %lid, %c0 : index
  scf.if %first {
    %r = memref.load %buf[%c0] : memref<64xf32, 3 : i32>
    kernel.atomic_add %r, %total[%c0] : memref<1xf32>
  }
  func.return
}

// CHECK-LABEL: __kernel __attribute__((reqd_work_group_size(64, 1, 1))) void reduce(__global float* x, __global float* total) {
// CHECK-NEXT:    __local float buf[64];
// CHECK-NEXT:    long gid = (long)get_global_id(0);
// CHECK-NEXT:    long lid = (long)get_local_id(0);
// CHECK-NEXT:    long grp = (long)get_group_id(0);
// a load that the next op stores (or stores an expression of) is read inside that store
// CHECK-NEXT:    buf[lid] = x[gid];
// CHECK-NEXT:    barrier(CLK_LOCAL_MEM_FENCE);
// CHECK:         while (true) {
// CHECK:           if (lid < s) {
// CHECK:             float a = buf[lid];
// CHECK-NEXT:        buf[lid] = a + buf[lid + s];
// CHECK:           barrier(CLK_LOCAL_MEM_FENCE);
// CHECK-NEXT:      long half_1 = (long)((ulong)s >> 1L);
// CHECK:         if (lid == 0L) {
// CHECK-NEXT:      float r = buf[0L];
// CHECK-NEXT:      diffc_atomic_add_cmpxchg_global(&total[0L], r);
