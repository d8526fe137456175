// RUN: diffc-opt -t opencl %s | filecheck %s

func.func @casts(%a: i32, %b: i64, %f: f32, %d: f64, %u: ui32, %c: i1, %x: index) -> f64 {
  %0 = arith.sitofp %a : i32 to f32
  %1 = arith.uitofp %a : i32 to f32
  %2 = arith.fptosi %f : f32 to i32
  %3 = arith.fptoui %f : f32 to i32
  %4 = arith.extf %f : f32 to f64
  %5 = arith.truncf %d : f64 to f32
  %6 = arith.extsi %a : i32 to i64
  %7 = arith.extui %a : i32 to i64
  %8 = arith.trunci %b : i64 to i32
  %9 = arith.index_cast %x : index to i32
  %10 = arith.bitcast %f : f32 to i32
  %11 = arith.extui %c : i1 to i32
  %12 = arith.trunci %a : i32 to i1
  %13 = arith.extsi %c : i1 to i32
  %14 = arith.trunci %a : i32 to i8
  %15 = arith.trunci %a : i32 to i16
  %r = arith.addf %4, %d : f64
  func.return %r : f64
}

func.func @ints(%a: i32, %b: i32) -> i32 {
  %0 = arith.divsi %a, %b : i32
  %1 = arith.divui %a, %b : i32
  %2 = arith.remsi %a, %b : i32
  %3 = arith.remui %a, %b : i32
  %4 = arith.ceildivsi %a, %b : i32
  %5 = arith.floordivsi %a, %b : i32
  %6 = arith.shrui %a, %b : i32
  %7 = arith.shrsi %a, %b : i32
  %8 = arith.shli %a, %b : i32
  %9 = arith.maxsi %a, %b : i32
  %10 = arith.minui %a, %b : i32
  %11 = arith.andi %a, %b : i32
  %12 = arith.ori %a, %b : i32
  %13 = arith.xori %a, %b : i32
  %lt = arith.cmpi slt, %a, %b : i32
  %ult = arith.cmpi ult, %a, %b : i32
  %both = arith.andi %lt, %ult : i1
  %min = arith.constant -2147483648 : i32
  %s = arith.select %both, %0, %min : i32
  func.return %s : i32
}

func.func @floats(%a: f32, %b: f32) -> f32 {
  %oeq = arith.cmpf oeq, %a, %b : f32
  %one = arith.cmpf one, %a, %b : f32
  %ult = arith.cmpf ult, %a, %b : f32
  %uno = arith.cmpf uno, %a, %b : f32
  %une = arith.cmpf une, %a, %b : f32
  %mx = arith.maximumf %a, %b : f32
  %mn = arith.minnumf %a, %b : f32
  %neg = arith.negf %mx : f32
  %sel = arith.select %ult, %neg, %mn : f32
  %inf = arith.constant 0x7F800000 : f32
  %m = arith.minimumf %sel, %inf : f32
  %small = arith.constant -1.5e-7 : f32
  %q = arith.divf %m, %small : f32
  func.return %q : f32
}

func.func @vectors(%a: vector<4xf32>, %b: vector<4xf32>) -> vector<4xf32> {
  %c = arith.constant dense<2.0> : vector<4xf32>
  %d = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  %m = arith.mulf %a, %c : vector<4xf32>
  %s = arith.addf %m, %d : vector<4xf32>
  %r = arith.maximumf %s, %b : vector<4xf32>
  %e = math.exp %r : vector<4xf32>
  func.return %e : vector<4xf32>
}

// Unsigned ops on integer vectors reinterpret the bits (OpenCL C refuses a cast between vector types)
func.func @unsigned_vectors(%a: vector<4xi32>, %b: vector<4xi32>) -> vector<4xi32> {
  %0 = arith.remui %a, %b : vector<4xi32>
  %1 = arith.minui %0, %b : vector<4xi32>
  func.return %1 : vector<4xi32>
}

func.func @k(%x: memref<?xf64>, %n: i32, %flag: i1, %h: f16) attributes {kernel.entry} {
  func.return
}

// CHECK:       #pragma OPENCL EXTENSION cl_khr_fp64 : enable
// CHECK-LABEL: double casts(int a, long b, float f, double d, uint u, bool c, long x) {
// CHECK-NEXT:    float v = (float)a;
// CHECK-NEXT:    float v_1 = (float)(uint)a;
// CHECK-NEXT:    int v_2 = (int)f;
// CHECK-NEXT:    int v_3 = (int)(uint)f;
// CHECK-NEXT:    float v_4 = (float)d;
// CHECK-NEXT:    long v_5 = (long)a;
// CHECK-NEXT:    long v_6 = (long)(uint)a;
// CHECK-NEXT:    int v_7 = (int)b;
// CHECK-NEXT:    int v_8 = (int)x;
// CHECK-NEXT:    int v_9 = as_int(f);
// CHECK-NEXT:    int v_10 = (int)c;
// CHECK-NEXT:    bool v_11 = (a & 1) != 0;
// CHECK-NEXT:    int v_12 = -(int)c;
// CHECK-NEXT:    char v_13 = (char)a;
// CHECK-NEXT:    short v_14 = (short)a;
// The extf, used once, is printed inside the add.
// CHECK-NEXT:    return ((double)f) + d;
// CHECK-LABEL: int ints(int a, int b) {
// CHECK-NEXT:    int v = (int)((uint)a / (uint)b);
// CHECK-NEXT:    int v_1 = a % b;
// CHECK-NEXT:    int v_2 = (int)((uint)a % (uint)b);
// CHECK-NEXT:    int v_3 = a / b + (a % b != 0 && (a % b > 0) == (b > 0));
// CHECK-NEXT:    int v_4 = a / b - (a % b != 0 && (a % b < 0) != (b < 0));
// CHECK-NEXT:    int v_5 = (int)((uint)a >> b);
// CHECK-NEXT:    int v_6 = a >> b;
// CHECK-NEXT:    int v_7 = a << b;
// CHECK-NEXT:    int v_8 = max(a, b);
// CHECK-NEXT:    int v_9 = (int)min((uint)a, (uint)b);
// CHECK:         return ((a < b) & ((uint)a < (uint)b)) ? (a / b) : (-2147483647 - 1);
// CHECK-LABEL: float floats(float a, float b) {
// CHECK-NEXT:    bool oeq = a == b;
// CHECK-NEXT:    bool one = islessgreater(a, b);
// CHECK-NEXT:    bool uno = isunordered(a, b);
// CHECK-NEXT:    bool une = a != b;
// CHECK-NEXT:    return (fmin((!(a >= b)) ? (-(fmax(a, b))) : (fmin(a, b)), INFINITY)) / (-1.5e-07f);
// CHECK-LABEL: float4 vectors(float4 a, float4 b) {
// CHECK-NEXT:    float4 m = a * (float4)(2.0f);
// CHECK-NEXT:    float4 s = m + (float4)(1.0f, 2.0f, 3.0f, 4.0f);
// CHECK-NEXT:    float4 r = fmax(s, b);
// CHECK-NEXT:    float4 e = exp(r);
// Kernel arguments: no bool (int instead), f16 scalars are passed as float.
// CHECK-LABEL: int4 unsigned_vectors(int4 a, int4 b) {
// CHECK-NEXT:    int4 v = as_int4(as_uint4(a) % as_uint4(b));
// CHECK-NEXT:    int4 v_1 = as_int4(min(as_uint4(v), as_uint4(b)));
// CHECK-LABEL: __kernel void k(__global double* x, int n, int flag, float h) {

