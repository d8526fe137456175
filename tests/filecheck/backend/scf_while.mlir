// RUN: diffc-opt -t opencl %s | filecheck %s

func.func @halvings(%x: f32) -> i32 {
  %c0 = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %r:2 = scf.while (%v = %x, %k = %c0) : (f32, i32) -> (f32, i32) {
    %more = arith.cmpf ogt, %v, %one : f32
    scf.condition(%more) %v, %k : f32, i32
  } do {
  ^bb0(%w: f32, %count: i32):
    %w2 = arith.mulf %w, %half : f32
    %c1 = arith.constant 1 : i32
    %k2 = arith.addi %count, %c1 : i32
    scf.yield %w2, %k2 : f32, i32
  }
  func.return %r#1 : i32
}

// The before region runs first; the condition's operands become the results.
// CHECK-LABEL: int halvings(float x) {
// CHECK-NEXT:    float v = x;
// CHECK-NEXT:    int k = 0;
// CHECK-NEXT:    float w;
// CHECK-NEXT:    int count;
// CHECK-NEXT:    while (true) {
// CHECK-NEXT:      bool more = v > 1.0f;
// CHECK-NEXT:      w = v;
// CHECK-NEXT:      count = k;
// CHECK-NEXT:      if (!more) break;
// CHECK-NEXT:      float w2 = w * 0.5f;
// CHECK-NEXT:      int k2 = count + 1;
// CHECK-NEXT:      v = w2;
// CHECK-NEXT:      k = k2;
// CHECK-NEXT:    }
// CHECK-NEXT:    return count;
