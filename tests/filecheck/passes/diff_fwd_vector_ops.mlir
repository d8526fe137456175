// Tangents of vector.broadcast / extract / insert are the same lane moves on the tangents
// (diffc/rules/vector_rules.py); a dynamic position is reused as is.
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-lower)' | filecheck %s

func.func @f(%x: f32, %v: vector<3xf32>, %i: index) -> vector<3xf32> attributes {diff.differentiable} {
  %s = vector.broadcast %x : f32 to vector<3xf32>
  %e = vector.extract %v[%i] : f32 from vector<3xf32>
  %w = vector.insert %e, %s [1] : f32 into vector<3xf32>
  func.return %w : vector<3xf32>
}
// CHECK-LABEL: func.func @f_fwd(%x: f32, %x_d: f32, %v: vector<3xf32>, %v_d: vector<3xf32>, %i: index) -> (vector<3xf32>, vector<3xf32>)
// CHECK-NEXT:    %[[S:.*]] = vector.broadcast %x : f32 to vector<3xf32>
// CHECK-NEXT:    %[[SD:.*]] = vector.broadcast %x_d : f32 to vector<3xf32>
// CHECK-NEXT:    %[[E:.*]] = vector.extract %v[%i] : f32 from vector<3xf32>
// CHECK-NEXT:    %[[ED:.*]] = vector.extract %v_d[%i] : f32 from vector<3xf32>
// CHECK-NEXT:    %[[W:.*]] = vector.insert %[[E]], %[[S]] [1] : f32 into vector<3xf32>
// CHECK-NEXT:    %[[WD:.*]] = vector.insert %[[ED]], %[[SD]] [1] : f32 into vector<3xf32>
// CHECK-NEXT:    func.return %[[W]], %[[WD]] : vector<3xf32>, vector<3xf32>

func.func @main(%x: !diff.pair<f32>, %v: !diff.pair<vector<3xf32>>, %i: index) -> !diff.pair<vector<3xf32>> {
  %r = diff.fwd_diff @f(%x, %v, %i) : (!diff.pair<f32>, !diff.pair<vector<3xf32>>, index) -> !diff.pair<vector<3xf32>>
  func.return %r : !diff.pair<vector<3xf32>>
}
