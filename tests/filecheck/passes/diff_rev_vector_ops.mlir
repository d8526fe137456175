// Adjoints of the vector lane moves (diffc/rules/vector_rules.py): a broadcast sums the
// adjoint's lanes, an extract inserts its adjoint into zeros, an insert splits its adjoint into
// the inserted lane (to the source) and the rest (to the destination).
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-rev)' | filecheck %s

func.func @f(%x: f32, %v: vector<2xf32>) -> f32 attributes {diff.differentiable} {
  %s = vector.broadcast %x : f32 to vector<2xf32>
  %w = vector.insert %x, %v [0] : f32 into vector<2xf32>
  %p = arith.mulf %s, %w : vector<2xf32>
  %e = vector.extract %p[1] : f32 from vector<2xf32>
  func.return %e : f32
}
// CHECK-LABEL: func.func @f_bwd(%x: f32, %v: vector<2xf32>, %d_out: f32) -> (f32, vector<2xf32>)
// extract: the adjoint goes into lane 1 of a zero vector
// CHECK:         %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<2xf32>
// CHECK-NEXT:    %[[AP:.*]] = vector.insert %d_out, %[[Z]] [1] : f32 into vector<2xf32>
// mulf: both factors
// CHECK-NEXT:    %[[AS:.*]] = arith.mulf %w, %[[AP]] : vector<2xf32>
// CHECK-NEXT:    %[[AW:.*]] = arith.mulf %s, %[[AP]] : vector<2xf32>
// insert: lane 0 to %x, the other lanes (lane 0 zeroed) to %v
// CHECK-NEXT:    %[[AX1:.*]] = vector.extract %[[AW]][0] : f32 from vector<2xf32>
// CHECK-NEXT:    %[[Z0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[AV:.*]] = vector.insert %[[Z0]], %[[AW]] [0] : f32 into vector<2xf32>
// broadcast: the sum of the lanes
// CHECK-NEXT:    %[[L0:.*]] = vector.extract %[[AS]][0] : f32 from vector<2xf32>
// CHECK-NEXT:    %[[L1:.*]] = vector.extract %[[AS]][1] : f32 from vector<2xf32>
// CHECK-NEXT:    %[[AX2:.*]] = arith.addf %[[L0]], %[[L1]] : f32
// CHECK-NEXT:    %[[AX:.*]] = arith.addf %[[AX1]], %[[AX2]] : f32
// CHECK-NEXT:    func.return %[[AX]], %[[AV]] : f32, vector<2xf32>

func.func @main(%x: f32, %v: vector<2xf32>, %d: f32) -> (f32, vector<2xf32>) {
  %g:2 = diff.bwd_diff @f(%x, %v, %d) : (f32, vector<2xf32>, f32) -> (f32, vector<2xf32>)
  func.return %g#0, %g#1 : f32, vector<2xf32>
}
