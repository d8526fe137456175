// --split-input-file handles each chunk on its own; diff IR round-trips through every chunk and
// the chunks come back separated.
// RUN: diffc-opt %s --split-input-file | filecheck %s

func.func @one(%x: f32, %d: f32) -> !diff.pair<f32> {
  %p = diff.make_pair %x, %d : f32
  func.return %p : !diff.pair<f32>
}
// CHECK-LABEL: func.func @one(
// CHECK-NEXT:    %p = diff.make_pair %x, %d : f32
// CHECK:       {{^}}// {{-----}}

// -----

func.func @two(%x: f64) -> f64 {
  %z = diff.zero : f64
  %s = diff.add %z, %x : f64
  func.return %s : f64
}
// CHECK-LABEL: func.func @two(
// CHECK-NEXT:    %z = diff.zero : f64
// CHECK-NEXT:    %s = diff.add %z, %x : f64
