// Differential pointer pairs: make_ptr_pair, ptr_primal, ptr_gradient, accumulate with
// zero, one and two indices, custom and generic.
// RUN: diffc-opt %s | filecheck %s
// RUN: diffc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: diffc-opt %s --print-op-generic | diffc-opt | filecheck %s

// CHECK-LABEL: func.func @ptrs(
func.func @ptrs(%m: memref<?xf32>, %g: memref<?xf32>, %i: index, %j: index, %v: f32, %s: memref<f64>, %t: memref<4x4xf32>, %w: f64) {
  // CHECK-NEXT: %[[PP:.+]] = diff.make_ptr_pair %m, %g : memref<?xf32>
  // GENERIC: %[[PP:.+]] = "diff.make_ptr_pair"(%m, %g) : (memref<?xf32>, memref<?xf32>) -> !diff.ptr_pair<memref<?xf32>>
  %pp = "diff.make_ptr_pair"(%m, %g) : (memref<?xf32>, memref<?xf32>) -> !diff.ptr_pair<memref<?xf32>>
  // CHECK-NEXT: %{{.+}} = diff.ptr_primal %[[PP]] : !diff.ptr_pair<memref<?xf32>>
  // GENERIC-NEXT: "diff.ptr_primal"(%[[PP]]) : (!diff.ptr_pair<memref<?xf32>>) -> memref<?xf32>
  %a = "diff.ptr_primal"(%pp) : (!diff.ptr_pair<memref<?xf32>>) -> memref<?xf32>
  // CHECK-NEXT: %{{.+}} = diff.ptr_gradient %[[PP]] : !diff.ptr_pair<memref<?xf32>>
  // GENERIC-NEXT: "diff.ptr_gradient"(%[[PP]]) : (!diff.ptr_pair<memref<?xf32>>) -> memref<?xf32>
  %b = "diff.ptr_gradient"(%pp) : (!diff.ptr_pair<memref<?xf32>>) -> memref<?xf32>
  // CHECK-NEXT: diff.accumulate %v, %[[PP]][%i] : !diff.ptr_pair<memref<?xf32>>, f32, index
  // GENERIC-NEXT: "diff.accumulate"(%v, %[[PP]], %i) : (f32, !diff.ptr_pair<memref<?xf32>>, index) -> ()
  "diff.accumulate"(%v, %pp, %i) : (f32, !diff.ptr_pair<memref<?xf32>>, index) -> ()
  // CHECK-NEXT: %[[SP:.+]] = diff.make_ptr_pair %s, %s : memref<f64>
  %sp = diff.make_ptr_pair %s, %s : memref<f64>
  // CHECK-NEXT: diff.accumulate %w, %[[SP]][] : !diff.ptr_pair<memref<f64>>, f64
  // GENERIC: "diff.accumulate"(%w, %{{.+}}) : (f64, !diff.ptr_pair<memref<f64>>) -> ()
  diff.accumulate %w, %sp[] : !diff.ptr_pair<memref<f64>>, f64
  // CHECK-NEXT: %[[TP:.+]] = diff.make_ptr_pair %t, %t : memref<4x4xf32>
  %tp = diff.make_ptr_pair %t, %t : memref<4x4xf32>
  // CHECK-NEXT: diff.accumulate %v, %[[TP]][%i, %j] : !diff.ptr_pair<memref<4x4xf32>>, f32, index, index
  // GENERIC: "diff.accumulate"(%v, %{{.+}}, %i, %j) : (f32, !diff.ptr_pair<memref<4x4xf32>>, index, index) -> ()
  diff.accumulate %v, %tp[%i, %j] : !diff.ptr_pair<memref<4x4xf32>>, f32, index, index
  // CHECK-NEXT: func.return
  func.return
}
