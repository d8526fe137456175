// RUN: diffc-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s

func.func @bad_dim() attributes {kernel.entry} {
  %i = kernel.global_id 3
  func.return
}
// CHECK: 'kernel.global_id' dimension must be 0, 1 or 2, got 3

// -----

func.func @bad_atomic(%x: memref<?xf64>, %v: f64, %i: index) attributes {kernel.entry} {
  kernel.atomic_add %v, %x[%i] : memref<?xf64>
  func.return
}
// CHECK: 'kernel.atomic_add' supports f32 and i32 elements, got f64

// -----

func.func @bad_vload(%x: memref<?xf32>, %i: index) -> vector<4xf64> {
  %v = kernel.vload %x[%i] : memref<?xf32> -> vector<4xf64>
  func.return %v : vector<4xf64>
}
// CHECK: 'kernel.vload' vector element type must be f32 for memref<?xf32>, got f64

// -----

func.func @not_a_kernel() {
  %b = kernel.local_alloc : memref<16xf32, 3 : i32>
  func.return
}
// CHECK: 'kernel.local_alloc' must be at the top level of a func.func with kernel.entry

// -----

func.func @bad_space() attributes {kernel.entry} {
  %b = kernel.local_alloc : memref<16xf32>
  func.return
}
// CHECK: 'kernel.local_alloc' result must have memory space 3 (local), got memref<16xf32>
