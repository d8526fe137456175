// RUN: diffc-opt -t opencl %s | filecheck %s

func.func @math_ops(%x: f32, %y: f32, %z: f32, %n: i32) -> f32 {
  %0 = math.exp %x : f32
  %1 = math.log %0 : f32
  %2 = math.sin %1 : f32
  %3 = math.powf %2, %y : f32
  %4 = math.atan2 %3, %y : f32
  %5 = math.fma %4, %y, %z : f32
  %6 = math.erf %5 : f32
  %7 = math.copysign %6, %y : f32
  %8 = math.rsqrt %7 : f32
  %9 = math.absf %8 : f32
  %10 = math.sqrt %9 : f32
  %11 = math.tanh %10 : f32
  %12 = math.floor %11 : f32
  %13 = math.roundeven %12 : f32
  %14 = math.fpowi %13, %n : f32, i32
  %15 = math.log1p %14 : f32
  %16 = math.exp2 %15 : f32
  %17 = math.cos %16 : f32
  %18 = math.absi %n : i32
  %19 = math.ctpop %18 : i32
  %20 = math.ctlz %19 : i32
  %21 = math.cttz %20 : i32
  %22 = arith.sitofp %21 : i32 to f32
  %23 = arith.addf %17, %22 : f32
  func.return %23 : f32
}

// CHECK-LABEL: float math_ops(float x, float y, float z, int n) {
// Each value is used once: the chain is printed as nested calls (up to 100 characters a
// statement); cttz names its operand twice, so that operand stays a variable.
// CHECK-NEXT:    float [[V:.+]] = rint(floor(tanh(sqrt(fabs(rsqrt(copysign(erf(fma(atan2(pow(sin(log(exp(x))), y), y), y, z)), y)))))));
// CHECK-NEXT:    int [[N:.+]] = clz(popcount((int)abs(n)));
// CHECK-NEXT:    return (cos(exp2(log1p(pown([[V]], (int)n))))) + ((float)((int)popcount(([[N]] & -[[N]]) - 1)));
