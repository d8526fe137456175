// diff.fwd_diff / diff.bwd_diff against callees with differentiable, no_diff and
// non-differentiable parameters and results, generic form in, both forms out.
// RUN: diffc-opt %s | filecheck %s
// RUN: diffc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: diffc-opt %s | diffc-opt | filecheck %s

func.func @square(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %r = arith.mulf %x, %y : f32
  func.return %r : f32
}

func.func @mixed(%x: f32, %k: f32 {diff.no_diff}, %n: i32, %v: vector<4xf32>) -> (f32, f32 {diff.no_diff}, i32) attributes {diff.differentiable} {
  func.return %x, %k, %n : f32, f32, i32
}

// CHECK-LABEL: func.func @calls(
func.func @calls(%x: f32, %y: f32, %one: f32, %px: !diff.pair<f32>, %py: !diff.pair<f32>) -> (f32, f32) {
  // CHECK-NEXT: %gx, %gy = diff.bwd_diff @square(%x, %y, %one) : (f32, f32, f32) -> (f32, f32)
  // GENERIC: %gx, %gy = "diff.bwd_diff"(%x, %y, %one) <{callee = @square}> : (f32, f32, f32) -> (f32, f32)
  %gx, %gy = "diff.bwd_diff"(%x, %y, %one) <{callee = @square}> : (f32, f32, f32) -> (f32, f32)
  // CHECK-NEXT: %r = diff.fwd_diff @square(%px, %py) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  // GENERIC-NEXT: %r = "diff.fwd_diff"(%px, %py) <{callee = @square}> : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  %r = "diff.fwd_diff"(%px, %py) <{callee = @square}> : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  func.return %gx, %gy : f32, f32
}

// no_diff and integer parameters pass plainly; only differentiable results become pairs and
// take a derivative in bwd_diff; only differentiable parameters get a gradient.
// CHECK-LABEL: func.func @marks(
func.func @marks(%px: !diff.pair<f32>, %k: f32, %n: i32, %pv: !diff.pair<vector<4xf32>>, %x: f32, %v: vector<4xf32>, %dr: f32) {
  // CHECK-NEXT: %[[A:.+]], %[[B:.+]], %[[C:.+]] = diff.fwd_diff @mixed(%px, %k, %n, %pv) : (!diff.pair<f32>, f32, i32, !diff.pair<vector<4xf32>>) -> (!diff.pair<f32>, f32, i32)
  // GENERIC: "diff.fwd_diff"(%px, %k, %n, %pv) <{callee = @mixed}> : (!diff.pair<f32>, f32, i32, !diff.pair<vector<4xf32>>) -> (!diff.pair<f32>, f32, i32)
  %a, %b, %c = "diff.fwd_diff"(%px, %k, %n, %pv) <{callee = @mixed}> : (!diff.pair<f32>, f32, i32, !diff.pair<vector<4xf32>>) -> (!diff.pair<f32>, f32, i32)
  // CHECK-NEXT: %[[GX:.+]], %[[GV:.+]] = diff.bwd_diff @mixed(%x, %k, %n, %v, %dr) : (f32, f32, i32, vector<4xf32>, f32) -> (f32, vector<4xf32>)
  // GENERIC-NEXT: "diff.bwd_diff"(%x, %k, %n, %v, %dr) <{callee = @mixed}> : (f32, f32, i32, vector<4xf32>, f32) -> (f32, vector<4xf32>)
  %gx, %gv = "diff.bwd_diff"(%x, %k, %n, %v, %dr) <{callee = @mixed}> : (f32, f32, i32, vector<4xf32>, f32) -> (f32, vector<4xf32>)
  // CHECK-NEXT: func.return
  func.return
}

// Higher order: fwd_diff of a function over pairs takes pairs of pairs.
func.func @square_fwd(%x: !diff.pair<f32>) -> !diff.pair<f32> attributes {diff.differentiable}
// CHECK-LABEL: func.func @second_order(
func.func @second_order(%ppx: !diff.pair<!diff.pair<f32>>) -> !diff.pair<!diff.pair<f32>> {
  // CHECK-NEXT: %[[R:.+]] = diff.fwd_diff @square_fwd(%ppx) : (!diff.pair<!diff.pair<f32>>) -> !diff.pair<!diff.pair<f32>>
  // CHECK-NEXT: func.return %[[R]] : !diff.pair<!diff.pair<f32>>
  %r = diff.fwd_diff @square_fwd(%ppx) : (!diff.pair<!diff.pair<f32>>) -> !diff.pair<!diff.pair<f32>>
  func.return %r : !diff.pair<!diff.pair<f32>>
}

// A callee with no differentiable result: bwd_diff takes only primals, fwd_diff returns nothing.
func.func @sink(%x: f32) attributes {diff.differentiable}
// CHECK-LABEL: func.func @no_results(
func.func @no_results(%x: f32, %px: !diff.pair<f32>) {
  // CHECK-NEXT: diff.fwd_diff @sink(%px) : (!diff.pair<f32>) -> ()
  // CHECK-NEXT: %{{.*}} = diff.bwd_diff @sink(%x) : (f32) -> f32
  diff.fwd_diff @sink(%px) : (!diff.pair<f32>) -> ()
  %g = diff.bwd_diff @sink(%x) : (f32) -> f32
  func.return
}
