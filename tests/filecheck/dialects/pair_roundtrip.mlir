// RUN: diffc-opt %s | filecheck %s
// RUN: diffc-opt %s --print-op-generic | diffc-opt | filecheck %s
// RUN: diffc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// CHECK-LABEL: func.func @pairs
// GENERIC-LABEL: "func.func"
func.func @pairs(%x: f32, %dx: f32, %v: vector<4xf32>) -> (f32, f32) {
  // CHECK-NEXT: %[[P:.+]] = diff.make_pair %x, %dx : f32
  // GENERIC: %[[P:.+]] = "diff.make_pair"(%{{.*}}, %{{.*}}) : (f32, f32) -> !diff.pair<f32>
  %p = "diff.make_pair"(%x, %dx) : (f32, f32) -> !diff.pair<f32>
  // CHECK-NEXT: %{{.*}} = diff.primal %[[P]] : !diff.pair<f32>
  // GENERIC: "diff.primal"(%[[P]]) : (!diff.pair<f32>) -> f32
  %a = "diff.primal"(%p) : (!diff.pair<f32>) -> f32
  // CHECK-NEXT: %{{.*}} = diff.differential %[[P]] : !diff.pair<f32>
  // GENERIC: "diff.differential"(%[[P]]) : (!diff.pair<f32>) -> f32
  %b = "diff.differential"(%p) : (!diff.pair<f32>) -> f32
  // CHECK-NEXT: %{{.*}} = diff.make_pair %v, %v : vector<4xf32>
  %q = diff.make_pair %v, %v : vector<4xf32>
  // CHECK-NEXT: %{{.*}} = diff.make_pair %[[P]], %[[P]] : !diff.pair<f32>
  %pp = diff.make_pair %p, %p : !diff.pair<f32>
  func.return %a, %b : f32, f32
}
