// nan-check: after each op of the named functions that computes a float, a non-finite result
// made from finite operands records its site (I32_MAX - 2k for a NaN, - 2k - 1 for an
// infinity) in one status global; selects, constants, calls of checked functions are no sites.
// RUN: diffc-opt %s -p 'nan-check{functions="g,f_bwd"}' | filecheck %s

func.func @f(%x: f32) -> f32 {
  %l = math.log %x : f32
  func.return %l : f32
}
func.func @g(%x: f32, %y: vector<2xf32>) -> vector<2xf32> {
  %s = arith.mulf %y, %y : vector<2xf32>
  func.return %s : vector<2xf32>
}
func.func @f_bwd(%x: f32, %d: f32, %c: i1) -> f32 {
  %l = math.log %x : f32
  %q = arith.divf %d, %x : f32
  %z = arith.constant 0.0 : f32
  %s = arith.select %c, %q, %z : f32
  %v = vector.broadcast %s : f32 to vector<2xf32>
  %w = func.call @g(%s, %v) : (f32, vector<2xf32>) -> vector<2xf32>
  %p = func.call @f(%l) : (f32) -> f32
  func.return %p : f32
}

// CHECK: builtin.module attributes {diffc.nan_sites = ["g|arith.mulf|{{.*}}nan_check.mlir:11:3", "f_bwd|math.log|{{.*}}nan_check.mlir:15:3", "f_bwd|arith.divf|{{.*}}nan_check.mlir:16:3", "f_bwd|func.call|{{.*}}nan_check.mlir:21:3"]}
// @f is not named: left alone
// CHECK-LABEL: func.func @f(
// CHECK-NEXT: math.log
// CHECK-NEXT: func.return
// a vector result: one check per lane
// CHECK-LABEL: func.func @g(
// CHECK: %s = arith.mulf %y, %y
// CHECK: vector.extract %s[0]
// CHECK: vector.extract %s[1]
// CHECK: arith.ori
// CHECK: scf.if
// CHECK: arith.constant 2147483647 : i32
// CHECK: arith.constant 2147483646 : i32
// CHECK: "memref.atomic_rmw"({{.*}}) <{kind = 4 : i64}>
// CHECK-LABEL: func.func @f_bwd(
// CHECK: %l = math.log %x : f32
// CHECK-NEXT: %[[BIG:.*]] = arith.constant 3.40282347e+38 : f32
// CHECK-NEXT: %[[ABS:.*]] = math.absf %l : f32
// CHECK-NEXT: %[[BAD:.*]] = arith.cmpf ugt, %[[ABS]], %[[BIG]] : f32
// CHECK-NEXT: scf.if %[[BAD]] {
// the operand %x must be finite for log to be where the value went bad
// CHECK: math.absf %x
// CHECK: arith.cmpf uno, %l, %l
// CHECK: arith.constant 2147483645 : i32
// CHECK: arith.constant 2147483644 : i32
// CHECK: %q = arith.divf %d, %x
// CHECK: arith.constant 2147483643 : i32
// select, broadcast and the call of the checked @g are no sites
// CHECK: %s = arith.select
// CHECK-NEXT: %v = vector.broadcast
// CHECK-NEXT: %w = func.call @g
// CHECK-NEXT: %p = func.call @f
// CHECK: arith.constant 2147483641 : i32
// CHECK: "memref.global"() <{sym_name = "diffc_status_0", type = memref<1xi32>{{.*}}{diffc.status = "nan"

