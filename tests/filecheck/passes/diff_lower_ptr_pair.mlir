// Pointer pairs: two memrefs; diff.accumulate adds into the gradient location.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-lower)' | filecheck %s

// CHECK-LABEL: func.func @acc(%m: memref<8xf32>, %g: memref<8xf32>, %i: index, %v: f32) -> f32
func.func @acc(%m: memref<8xf32>, %g: memref<8xf32>, %i: index, %v: f32) -> f32 {
  %pp = diff.make_ptr_pair %m, %g : memref<8xf32>
  // CHECK-NEXT: %[[OLD:.+]] = memref.load %g[%i] : memref<8xf32>
  // CHECK-NEXT: %[[NEW:.+]] = arith.addf %[[OLD]], %v : f32
  // CHECK-NEXT: memref.store %[[NEW]], %g[%i] : memref<8xf32>
  diff.accumulate %v, %pp[%i] : !diff.ptr_pair<memref<8xf32>>, f32, index
  %p = diff.ptr_primal %pp : !diff.ptr_pair<memref<8xf32>>
  // CHECK-NEXT: %x = memref.load %m[%i] : memref<8xf32>
  %x = memref.load %p[%i] : memref<8xf32>
  func.return %x : f32
}
