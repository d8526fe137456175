// bounds-check over memory of bytes: a kernel.reinterpret of a host buffer of bytes has the bytes'
// length divided by its element size, and its accesses are sites of the bytes' buffer.
// RUN: diffc-opt %s -p lower-entry-points,bounds-check{prove=false} | filecheck %s

func.func @main(%tid: vector<3xi32> {diffc.semantic = "SV_DispatchThreadID"}, %s: memref<?xi8>) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %x = vector.extract %tid[0] : i32 from vector<3xi32>
  %j = arith.index_cast %x : i32 to index
  %h = kernel.reinterpret %s : memref<?xi8> to memref<?xf16>
  %v = memref.load %h[%j] : memref<?xf16>
  %w = kernel.reinterpret %s : memref<?xi8> to memref<?xi32>
  %k = arith.constant 1 : i32
  memref.store %k, %w[%j] : memref<?xi32>
  func.return
}

// CHECK: diffc.bounds_sites = ["main|s|load|{{.*}}bounds_check_bytes.mlir:9:3", "main|s|store|{{.*}}bounds_check_bytes.mlir:12:3"]
// CHECK: %s: memref<?xi8> {diff.abi = #diff.abi<buffer>}, %[[LEN:.*]]: index {diffc.name = "diffc_len_s"
// CHECK: %h = kernel.reinterpret %s : memref<?xi8> to memref<?xf16>
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[HLEN:.*]] = arith.divui %[[LEN]], %[[TWO]] : index
// CHECK: arith.cmpi ult, %j, %[[HLEN]] : index
// CHECK: memref.load %h[%j] : memref<?xf16>
// CHECK: %w = kernel.reinterpret %s : memref<?xi8> to memref<?xi32>
// CHECK-NEXT: %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[WLEN:.*]] = arith.divui %[[LEN]], %[[FOUR]] : index
// CHECK: arith.cmpi ult, %j, %[[WLEN]] : index
// CHECK: memref.store %k, %w[%j] : memref<?xi32>
