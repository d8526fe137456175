// Every !diff.pair / !diff.ptr_pair type, in signatures, custom and generic form.
// RUN: diffc-opt %s | filecheck %s
// RUN: diffc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: diffc-opt %s --print-op-generic | diffc-opt | filecheck %s

// CHECK-LABEL: func.func @scalar(%x: !diff.pair<f32>, %y: !diff.pair<f64>) -> (!diff.pair<f32>, !diff.pair<f64>) {
// CHECK-NEXT:    func.return %x, %y : !diff.pair<f32>, !diff.pair<f64>
// GENERIC-LABEL: "func.func"() <{sym_name = "scalar", function_type = (!diff.pair<f32>, !diff.pair<f64>) -> (!diff.pair<f32>, !diff.pair<f64>)}>
func.func @scalar(%x: !diff.pair<f32>, %y: !diff.pair<f64>) -> (!diff.pair<f32>, !diff.pair<f64>) {
  func.return %x, %y : !diff.pair<f32>, !diff.pair<f64>
}

// CHECK-LABEL: func.func @other_floats(%h: !diff.pair<f16>, %b: !diff.pair<bf16>) {
// GENERIC-LABEL: function_type = (!diff.pair<f16>, !diff.pair<bf16>) -> ()
func.func @other_floats(%h: !diff.pair<f16>, %b: !diff.pair<bf16>) {
  func.return
}

// CHECK-LABEL: func.func @vectors(%v: !diff.pair<vector<4xf32>>, %w: !diff.pair<vector<2x2xf64>>) -> !diff.pair<vector<4xf32>> {
// GENERIC-LABEL: function_type = (!diff.pair<vector<4xf32>>, !diff.pair<vector<2x2xf64>>) -> !diff.pair<vector<4xf32>>
func.func @vectors(%v: !diff.pair<vector<4xf32>>, %w: !diff.pair<vector<2x2xf64>>) -> !diff.pair<vector<4xf32>> {
  func.return %v : !diff.pair<vector<4xf32>>
}

// CHECK-LABEL: func.func @nested(%p: !diff.pair<!diff.pair<f32>>, %q: !diff.pair<!diff.pair<!diff.pair<f64>>>) {
// GENERIC-LABEL: function_type = (!diff.pair<!diff.pair<f32>>, !diff.pair<!diff.pair<!diff.pair<f64>>>) -> ()
func.func @nested(%p: !diff.pair<!diff.pair<f32>>, %q: !diff.pair<!diff.pair<!diff.pair<f64>>>) {
  func.return
}

// CHECK-LABEL: func.func @pointers(%a: !diff.ptr_pair<memref<?xf32>>, %b: !diff.ptr_pair<memref<4x4xf64>>, %c: !diff.ptr_pair<memref<f32>>) {
// GENERIC-LABEL: function_type = (!diff.ptr_pair<memref<?xf32>>, !diff.ptr_pair<memref<4x4xf64>>, !diff.ptr_pair<memref<f32>>) -> ()
func.func @pointers(%a: !diff.ptr_pair<memref<?xf32>>, %b: !diff.ptr_pair<memref<4x4xf64>>, %c: !diff.ptr_pair<memref<f32>>) {
  func.return
}
