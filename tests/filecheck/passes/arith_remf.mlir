// arith.remf (C's fmod; diffc defines it, xDSL 0.74 lacks it): parsed by diffc-opt and stock
// xdsl-opt, differentiated by both modes (d/dx = 1, d/dy = -trunc(x/y)), printed as fmod.
// RUN: diffc-opt %s | filecheck %s --check-prefix=ROUND
// RUN: xdsl-opt %s | filecheck %s --check-prefix=ROUND
// RUN: diffc-opt %s --print-op-generic | diffc-opt | filecheck %s --check-prefix=ROUND
// RUN: diffc-opt %s -p diff-fwd | filecheck %s --check-prefix=FWD
// RUN: diffc-opt %s -p diff-rev | filecheck %s --check-prefix=REV
// RUN: diffc-opt %s -p diff-fwd,diff-rev,diff-checkpoint,diff-lower,canonicalize,cse -t opencl | filecheck %s --check-prefix=CL

func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %r = arith.remf %x, %y : f32
  func.return %r : f32
}
func.func @vec(%x: vector<4xf32>, %y: vector<4xf32>) -> vector<4xf32> {
  %r = arith.remf %x, %y fastmath<fast> : vector<4xf32>
  func.return %r : vector<4xf32>
}
func.func @jvp(%x: !diff.pair<f32>, %y: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
func.func @vjp(%x: f32, %y: f32, %d: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %d) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}

// ROUND-LABEL: func.func @f(
// ROUND-NEXT:    %r = arith.remf %x, %y : f32
// ROUND-LABEL: func.func @vec(
// ROUND-NEXT:    %r = arith.remf %x, %y fastmath<fast> : vector<4xf32>

// FWD-LABEL: func.func @f_fwd(
// FWD:         %x = diff.primal %0
// FWD-NEXT:    %x_d = diff.differential %0
// FWD-NEXT:    %y = diff.primal %1
// FWD-NEXT:    %y_d = diff.differential %1
// FWD-NEXT:    %r = arith.remf %x, %y : f32
// FWD-NEXT:    %[[Q:.+]] = arith.divf %x, %y : f32
// FWD-NEXT:    %[[T:.+]] = math.trunc %[[Q]] : f32
// FWD-NEXT:    %[[N:.+]] = arith.negf %[[T]] : f32
// FWD-NEXT:    %[[DY:.+]] = arith.mulf %[[N]], %y_d : f32
// FWD-NEXT:    %r_d = arith.addf %x_d, %[[DY]] : f32
// FWD-NEXT:    %[[P:.+]] = diff.make_pair %r, %r_d : f32
// FWD-NEXT:    func.return %[[P]] : !diff.pair<f32>

// REV-LABEL: func.func @f_bwd(%x: f32, %y: f32, %d_out: f32) -> (f32, f32)
// REV-NEXT:    %r = arith.remf %x, %y : f32
// REV-NEXT:    %[[Q:.+]] = arith.divf %x, %y : f32
// REV-NEXT:    %[[T:.+]] = math.trunc %[[Q]] : f32
// REV-NEXT:    %[[N:.+]] = arith.negf %[[T]] : f32
// REV-NEXT:    %[[GY:.+]] = arith.mulf %[[N]], %d_out : f32
// REV-NEXT:    func.return %d_out, %[[GY]] : f32, f32

// (single-use values are printed inside their use)
// CL-LABEL: float f(float x, float y) {
// CL-NEXT:      return fmod(x, y);
// CL-LABEL: f_bwd_result f_bwd(float x, float y, float d_out) {
// CL-NEXT:      float [[GY:.+]] = (-(trunc(x / y))) * d_out;
// CL-NEXT:      f_bwd_result ret;
// CL-NEXT:      ret.r0 = d_out;
// CL-NEXT:      ret.r1 = [[GY]];
// CL-LABEL: float4 vec(float4 x, float4 y) {
// CL-NEXT:      float4 r = fmod(x, y);
