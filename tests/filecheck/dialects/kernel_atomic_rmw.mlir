// kernel.atomic_rmw: custom form round-trips.
// RUN: diffc-opt %s | diffc-opt | filecheck %s

func.func @kinds(%u: memref<?xi32>, %h: memref<?xf16>, %f: memref<16xf32, 3 : i32>, %v: i32, %x: f16, %y: f32, %i: index) {
  %a = kernel.atomic_rmw maxu %v, %u[%i] : memref<?xi32>
  %b = kernel.atomic_rmw mins %v, %u[%i] {note} : memref<?xi32>
  %c = kernel.atomic_rmw addf %x, %h[%i] : memref<?xf16>
  %d = kernel.atomic_rmw addf %y, %f[%i] : memref<16xf32, 3 : i32>
  func.return
}
// CHECK-LABEL: func.func @kinds
// CHECK-NEXT:    %a = kernel.atomic_rmw maxu %v, %u[%i] : memref<?xi32>
// CHECK-NEXT:    %b = kernel.atomic_rmw mins %v, %u[%i] {note} : memref<?xi32>
// CHECK-NEXT:    %c = kernel.atomic_rmw addf %x, %h[%i] : memref<?xf16>
// CHECK-NEXT:    %d = kernel.atomic_rmw addf %y, %f[%i] : memref<16xf32, 3 : i32>
