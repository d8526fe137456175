// RUN: diffc-opt -t opencl %s | filecheck %s
// RUN: diffc-opt -t 'opencl{reassociate=true}' %s | filecheck %s --check-prefix=CPU

// A dot product marked diffc.reassociate opens with clang's reassociation pragma where the
// options ask for it (CPU devices: the loop vectorizer may then split its sum); an unmarked
// sum keeps its order either way.
func.func @dots(%w: memref<64xf32>, %x: memref<64xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %dot = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
    %a = memref.load %w[%k] : memref<64xf32>
    %b = memref.load %x[%k] : memref<64xf32>
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    scf.yield %s : f32
  } {diffc.reassociate}
  %plain = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %dot) -> (f32) {
    %a = memref.load %w[%k] : memref<64xf32>
    %s = arith.addf %acc, %a : f32
    scf.yield %s : f32
  }
  func.return %plain : f32
}

// CHECK-NOT: pragma clang

// CPU:      for (long [[K:.*]] = 0L; [[K]] < 64L; [[K]] += 1L) {
// CPU-NEXT:     #pragma clang fp reassociate(on)
// CPU-NEXT:     float {{.*}} = w[[[K]]];
// CPU:      for (long [[J:.*]] = 0L; [[J]] < 64L; [[J]] += 1L) {
// CPU-NEXT:     float {{.*}} = w[[[J]]];
// CPU-NOT:  pragma clang
