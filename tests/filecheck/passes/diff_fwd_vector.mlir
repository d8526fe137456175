// Vectors of floats carry vector tangents; zeros are vector zeros (splats after lowering).
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd)' | filecheck %s
// RUN: diffc-opt %s --pass-pipeline='builtin.module(diff-fwd,diff-lower)' | filecheck %s --check-prefix=LOW

func.func @v(%x: vector<4xf32>, %c: i1) -> vector<4xf32> attributes {diff.differentiable} {
  %r = scf.if %c -> (vector<4xf32>) {
    %s = math.sin %x : vector<4xf32>
    scf.yield %s : vector<4xf32>
  } else {
    %k = arith.constant dense<1.0> : vector<4xf32>
    scf.yield %k : vector<4xf32>
  }
  func.return %r : vector<4xf32>
}
// CHECK-LABEL: func.func @v_fwd(%0: !diff.pair<vector<4xf32>>, %c: i1) -> !diff.pair<vector<4xf32>>
// CHECK:         %s_d = arith.mulf %{{.*}}, %x_d : vector<4xf32>
// CHECK:         diff.zero : vector<4xf32>
// LOW-LABEL: func.func @v_fwd(%x: vector<4xf32>, %x_d: vector<4xf32>, %c: i1) -> (vector<4xf32>, vector<4xf32>)
// LOW:         arith.constant dense<0.000000e+00> : vector<4xf32>
func.func @main(%x: !diff.pair<vector<4xf32>>, %c: i1) -> !diff.pair<vector<4xf32>> {
  %r = diff.fwd_diff @v(%x, %c) : (!diff.pair<vector<4xf32>>, i1) -> !diff.pair<vector<4xf32>>
  func.return %r : !diff.pair<vector<4xf32>>
}
