// The generic form of every pair op, exactly as the dialect's contract writes it, read and
// printed back both ways.
// RUN: diffc-opt %s | filecheck %s
// RUN: diffc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

func.func @pairs(%p: f32, %d: f32, %v: vector<4xf32>, %e: f64) -> f32 {
  %pair = "diff.make_pair"(%p, %d) : (f32, f32) -> !diff.pair<f32>
  %a = "diff.primal"(%pair) : (!diff.pair<f32>) -> f32
  %b = "diff.differential"(%pair) : (!diff.pair<f32>) -> f32
  %vp = "diff.make_pair"(%v, %v) : (vector<4xf32>, vector<4xf32>) -> !diff.pair<vector<4xf32>>
  %vd = "diff.differential"(%vp) : (!diff.pair<vector<4xf32>>) -> vector<4xf32>
  %ep = "diff.make_pair"(%e, %e) : (f64, f64) -> !diff.pair<f64>
  %pp = "diff.make_pair"(%pair, %pair) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<!diff.pair<f32>>
  %inner = "diff.differential"(%pp) : (!diff.pair<!diff.pair<f32>>) -> !diff.pair<f32>
  func.return %a : f32
}
// CHECK-LABEL: func.func @pairs(
// CHECK-NEXT:    %[[PAIR:.+]] = diff.make_pair %p, %d : f32
// CHECK-NEXT:    %a = diff.primal %[[PAIR]] : !diff.pair<f32>
// CHECK-NEXT:    %b = diff.differential %[[PAIR]] : !diff.pair<f32>
// CHECK-NEXT:    %[[VP:.+]] = diff.make_pair %v, %v : vector<4xf32>
// CHECK-NEXT:    %vd = diff.differential %[[VP]] : !diff.pair<vector<4xf32>>
// CHECK-NEXT:    %ep = diff.make_pair %e, %e : f64
// CHECK-NEXT:    %[[PP:.+]] = diff.make_pair %[[PAIR]], %[[PAIR]] : !diff.pair<f32>
// CHECK-NEXT:    %inner = diff.differential %[[PP]] : !diff.pair<!diff.pair<f32>>
// CHECK-NEXT:    func.return %a : f32

// GENERIC-LABEL: "func.func"() <{sym_name = "pairs"
// GENERIC:         %[[PAIR:.+]] = "diff.make_pair"(%p, %d) : (f32, f32) -> !diff.pair<f32>
// GENERIC-NEXT:    %a = "diff.primal"(%[[PAIR]]) : (!diff.pair<f32>) -> f32
// GENERIC-NEXT:    %b = "diff.differential"(%[[PAIR]]) : (!diff.pair<f32>) -> f32
// GENERIC-NEXT:    %[[VP:.+]] = "diff.make_pair"(%v, %v) : (vector<4xf32>, vector<4xf32>) -> !diff.pair<vector<4xf32>>
// GENERIC-NEXT:    %vd = "diff.differential"(%[[VP]]) : (!diff.pair<vector<4xf32>>) -> vector<4xf32>
// GENERIC-NEXT:    %ep = "diff.make_pair"(%e, %e) : (f64, f64) -> !diff.pair<f64>
// GENERIC-NEXT:    %[[PP:.+]] = "diff.make_pair"(%[[PAIR]], %[[PAIR]]) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<!diff.pair<f32>>
// GENERIC-NEXT:    %inner = "diff.differential"(%[[PP]]) : (!diff.pair<!diff.pair<f32>>) -> !diff.pair<f32>
// GENERIC-NEXT:    "func.return"(%a) : (f32) -> ()

func.func @derivative_values(%x: f32, %v: vector<4xf32>) -> vector<4xf32> {
  %d = "diff.detach"(%x) : (f32) -> f32
  %z = "diff.zero"() : () -> f32
  %s = "diff.add"(%z, %d) : (f32, f32) -> f32
  %vz = "diff.zero"() : () -> vector<4xf32>
  %vs = "diff.add"(%vz, %v) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
  %pz = "diff.zero"() : () -> !diff.pair<f64>
  %vdet = "diff.detach"(%vs) : (vector<4xf32>) -> vector<4xf32>
  func.return %vdet : vector<4xf32>
}
// CHECK-LABEL: func.func @derivative_values(
// CHECK-NEXT:    %d = diff.detach %x : f32
// CHECK-NEXT:    %z = diff.zero : f32
// CHECK-NEXT:    %s = diff.add %z, %d : f32
// CHECK-NEXT:    %vz = diff.zero : vector<4xf32>
// CHECK-NEXT:    %vs = diff.add %vz, %v : vector<4xf32>
// CHECK-NEXT:    %pz = diff.zero : !diff.pair<f64>
// CHECK-NEXT:    %vdet = diff.detach %vs : vector<4xf32>

// GENERIC-LABEL: "func.func"() <{sym_name = "derivative_values"
// GENERIC:         %d = "diff.detach"(%x) : (f32) -> f32
// GENERIC-NEXT:    %z = "diff.zero"() : () -> f32
// GENERIC-NEXT:    %s = "diff.add"(%z, %d) : (f32, f32) -> f32
// GENERIC-NEXT:    %vz = "diff.zero"() : () -> vector<4xf32>
// GENERIC-NEXT:    %vs = "diff.add"(%vz, %v) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// GENERIC-NEXT:    %pz = "diff.zero"() : () -> !diff.pair<f64>
// GENERIC-NEXT:    %vdet = "diff.detach"(%vs) : (vector<4xf32>) -> vector<4xf32>
