// RUN: not diffc-opt -t opencl %s 2>&1 | filecheck %s

func.func @f(%x: memref<?xf32>) -> index {
  %c0 = arith.constant 0 : index
  %d = memref.dim %x, %c0 : memref<?xf32>
  func.return %d : index
}

// CHECK: unsupported.mlir:5:3: error: 'memref.dim' is not supported by the OpenCL emitter
// CHECK-NEXT: {{^}}    %d = memref.dim %x, %c0 : memref<?xf32>{{$}}
// CHECK-NEXT: {{^}}      ^{{$}}
// CHECK-NOT: Traceback
