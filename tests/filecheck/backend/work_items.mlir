// RUN: diffc-opt -t opencl %s | filecheck %s
// RUN: diffc-opt -t 'opencl{index_type=int}' %s | filecheck %s --check-prefix=INT

func.func @ids(%out: memref<?x6xi64>) attributes {kernel.entry} {
  %g = kernel.global_id 0
  %l = kernel.local_id 1
  %w = kernel.group_id 2
  %gs = kernel.global_size 0
  %ls = kernel.local_size 1
  %ng = kernel.num_groups 2
  %c0 = arith.constant 0 : index
  %c5 = arith.constant 5 : index
  %a = arith.index_cast %l : index to i64
  memref.store %a, %out[%g, %c0] : memref<?x6xi64>
  %b = arith.index_cast %ng : index to i64
  memref.store %b, %out[%g, %c5] : memref<?x6xi64>
  kernel.barrier global
  func.return
}

// CHECK-LABEL: __kernel void ids(__global long* out) {
// CHECK-NEXT:    long g = (long)get_global_id(0);
// CHECK-NEXT:    long l = (long)get_local_id(1);
// CHECK-NEXT:    long w = (long)get_group_id(2);
// CHECK-NEXT:    long gs = (long)get_global_size(0);
// CHECK-NEXT:    long ls = (long)get_local_size(1);
// CHECK-NEXT:    long ng = (long)get_num_groups(2);
// CHECK-NEXT:    out[g * 6] = l;
// CHECK-NEXT:    out[g * 6 + 5L] = ng;
// CHECK-NEXT:    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
// CHECK-NEXT:  }

// INT:         int g = (int)get_global_id(0);
// INT:         out[g * 6] = (long)l;
// INT:         out[g * 6 + 5] = (long)ng;
