// A vector wider than OpenCL's (a wide CoopVec) becomes pieces of OpenCL's widths: 16-lane
// pieces and the rest (20 = 16 + 4, 7 = 4 + 2 + 1, a one-lane piece being a scalar), in
// signatures, calls, loops, elementwise ops, constants, broadcasts and static / runtime lanes.
// RUN: diffc-opt %s -p split-wide-vectors | filecheck %s
// RUN: diffc-opt %s -t opencl | filecheck %s --check-prefix=CL

// CHECK-LABEL: func.func @scale(%{{.*}}: vector<16xf32>, %{{.*}}: vector<4xf32>, %{{.*}}: f32) -> (vector<16xf32>, vector<4xf32>)
// CHECK-NEXT:    %[[S0:.+]] = vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK-NEXT:    %[[S1:.+]] = vector.broadcast %{{.*}} : f32 to vector<4xf32>
// CHECK-NEXT:    %[[M0:.+]] = arith.mulf %{{.*}}, %[[S0]] : vector<16xf32>
// CHECK-NEXT:    %[[M1:.+]] = arith.mulf %{{.*}}, %[[S1]] : vector<4xf32>
// CHECK-NEXT:    func.return %[[M0]], %[[M1]] : vector<16xf32>, vector<4xf32>
func.func @scale(%x: vector<20xf32>, %s: f32) -> vector<20xf32> {
  %b = vector.broadcast %s : f32 to vector<20xf32>
  %y = arith.mulf %x, %b : vector<20xf32>
  func.return %y : vector<20xf32>
}

// CHECK-LABEL: func.func @lanes(%{{.*}}: vector<4xf32>, %{{.*}}: vector<2xf32>, %{{.*}}: f32, %{{.*}}: index) -> f32
// CHECK:         %[[C:.+]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : vector<4xf32>
// CHECK:         %{{.*}} = arith.constant 7.000000e+00 : f32
// CHECK:         %{{.*}} = vector.extract %{{.*}}[1] : f32 from vector<2xf32>
// CHECK:         arith.cmpi ult
// CHECK:         arith.select
func.func @lanes(%x: vector<7xf32>, %i: index) -> f32 {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]> : vector<7xf32>
  %y = arith.addf %x, %c : vector<7xf32>
  %a = vector.extract %y[5] : f32 from vector<7xf32>
  %b = vector.extract %y[%i] : f32 from vector<7xf32>
  %r = arith.addf %a, %b : f32
  func.return %r : f32
}

// CHECK-LABEL: func.func @loop(%{{.*}}: vector<16xf32>, %{{.*}}: vector<4xf32>) -> (vector<16xf32>, vector<4xf32>)
// CHECK:         %[[R0:.+]], %[[R1:.+]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (vector<16xf32>, vector<4xf32>) {
// CHECK:           %[[I0:.+]] = vector.insert %{{.*}}, %{{.*}} [%{{.*}}] : f32 into vector<16xf32>
// CHECK:           %[[I1:.+]] = vector.insert %{{.*}}, %{{.*}} [%{{.*}}] : f32 into vector<4xf32>
// CHECK-NEXT:      scf.yield %[[I0]], %[[I1]] : vector<16xf32>, vector<4xf32>
// CHECK:         %{{.*}}, %{{.*}} = func.call @scale(%[[R0]], %[[R1]], %{{.*}}) : (vector<16xf32>, vector<4xf32>, f32) -> (vector<16xf32>, vector<4xf32>)
func.func @loop(%x: vector<20xf32>) -> vector<20xf32> {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %h = arith.constant 0.5 : f32
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%v = %x) -> (vector<20xf32>) {
    %w = arith.mulf %v, %v : vector<20xf32>
    %n = arith.index_cast %i : index to i32
    %f = arith.sitofp %n : i32 to f32
    %u = vector.insert %f, %w[%i] : f32 into vector<20xf32>
    scf.yield %u : vector<20xf32>
  }
  %s = func.call @scale(%r, %h) : (vector<20xf32>, f32) -> vector<20xf32>
  func.return %s : vector<20xf32>
}

// The emitter splits a module with wide vectors itself.
// CL-LABEL: scale_result scale(float16 arg0, float4 arg1, float s) {
// CL-NEXT:     float16 v = (float16)(s);
// CL-NEXT:     float4 v_1 = (float4)(s);
// CL-NEXT:     float16 v_2 = arg0 * v;
// CL-NEXT:     float4 v_3 = arg1 * v_1;
