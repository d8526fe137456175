// RUN: diffc-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @wrong_differential(%x: f32, %d: f64) {
  %p = "diff.make_pair"(%x, %d) : (f32, f64) -> !diff.pair<f32>
  func.return
}
// CHECK: invalid_pair.mlir:4:3: error: 'diff.make_pair' differential type f64 does not match the differential of the pair's element type f32

// -----

func.func @wrong_primal(%x: f32) -> f64 {
  %p = "diff.make_pair"(%x, %x) : (f32, f32) -> !diff.pair<f32>
  %a = "diff.primal"(%p) : (!diff.pair<f32>) -> f64
  func.return %a : f64
}
// CHECK: invalid_pair.mlir:13:3: error: 'diff.primal' result type f64 does not match f32, the primal type of !diff.pair<f32>
