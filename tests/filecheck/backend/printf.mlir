// printf.print_format prints with OpenCL printf: the front end's c_format, else one conversion
// per `{}` from the value's type (literal % doubled); the format is a C string literal.
// RUN: diffc-opt -t opencl %s | filecheck %s

func.func @p(%x: f32, %n: i32, %i: index) attributes {kernel.entry} {
  printf.print_format "dResult: {}\n", %x : f32 {c_format = "dResult: %f\n"}
  printf.print_format "n={} i={} 100% \"q\"\n", %n : i32, %i : index
  printf.print_format "x={}", %x : f32
  func.return
}
// CHECK:      __kernel void p(float x, int n, long i) {
// CHECK-NEXT:   printf("dResult: %f\n", x);
// CHECK-NEXT:   printf("n=%d i=%ld 100%% \"q\"\n", n, i);
// CHECK-NEXT:   printf("x=%f", x);
