// generic -> custom -> generic gives back the generic text unchanged, and custom -> generic ->
// custom the custom text, for a module that uses every diff op and type.
// RUN: diffc-opt %s --print-op-generic > %t.generic.mlir
// RUN: diffc-opt %t.generic.mlir | diffc-opt --print-op-generic > %t.generic2.mlir
// RUN: diff %t.generic.mlir %t.generic2.mlir
// RUN: diffc-opt %s > %t.custom.mlir
// RUN: diffc-opt %t.custom.mlir --print-op-generic | diffc-opt > %t.custom2.mlir
// RUN: diff %t.custom.mlir %t.custom2.mlir
// RUN: filecheck %s --input-file=%t.generic2.mlir --check-prefix=GENERIC
// RUN: filecheck %s --input-file=%t.custom2.mlir

"builtin.module"() ({
  "func.func"() <{sym_name = "square", function_type = (f32, f32) -> f32, arg_attrs = [{}, {diff.no_diff}]}> ({
  ^bb0(%x: f32, %y: f32):
    %r = "arith.mulf"(%x, %y) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
    "func.return"(%r) : (f32) -> ()
  }) {diff.differentiable} : () -> ()
  "func.func"() <{sym_name = "all_ops", function_type = (f32, f32, f32, !diff.pair<f32>, memref<?xf32>, memref<?xf32>, index) -> ()}> ({
  ^bb0(%x: f32, %y: f32, %one: f32, %px: !diff.pair<f32>, %m: memref<?xf32>, %g: memref<?xf32>, %i: index):
    %p = "diff.make_pair"(%x, %one) : (f32, f32) -> !diff.pair<f32>
    %pp = "diff.make_pair"(%p, %p) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<!diff.pair<f32>>
    %a = "diff.primal"(%p) : (!diff.pair<f32>) -> f32
    %b = "diff.differential"(%pp) : (!diff.pair<!diff.pair<f32>>) -> !diff.pair<f32>
    %gx = "diff.bwd_diff"(%x, %y, %one) <{callee = @square}> : (f32, f32, f32) -> f32
    %r = "diff.fwd_diff"(%px, %y) <{callee = @square}> : (!diff.pair<f32>, f32) -> !diff.pair<f32>
    %d = "diff.detach"(%x) : (f32) -> f32
    %z = "diff.zero"() : () -> f32
    %s = "diff.add"(%z, %d) : (f32, f32) -> f32
    %q = "diff.make_ptr_pair"(%m, %g) : (memref<?xf32>, memref<?xf32>) -> !diff.ptr_pair<memref<?xf32>>
    %qa = "diff.ptr_primal"(%q) : (!diff.ptr_pair<memref<?xf32>>) -> memref<?xf32>
    %qb = "diff.ptr_gradient"(%q) : (!diff.ptr_pair<memref<?xf32>>) -> memref<?xf32>
    "diff.accumulate"(%s, %q, %i) : (f32, !diff.ptr_pair<memref<?xf32>>, index) -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()

// GENERIC:      "diff.make_pair"(%x, %one) : (f32, f32) -> !diff.pair<f32>
// GENERIC:      "diff.bwd_diff"(%x, %y, %one) <{callee = @square}> : (f32, f32, f32) -> f32
// GENERIC-NEXT: "diff.fwd_diff"(%px, %y) <{callee = @square}> : (!diff.pair<f32>, f32) -> !diff.pair<f32>
// GENERIC:      "diff.accumulate"(%s, %q, %i) : (f32, !diff.ptr_pair<memref<?xf32>>, index) -> ()

// CHECK-LABEL: func.func @square(%x: f32, %y: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable} {
// CHECK-LABEL: func.func @all_ops(
// CHECK-NEXT:    %p = diff.make_pair %x, %one : f32
// CHECK-NEXT:    %pp = diff.make_pair %p, %p : !diff.pair<f32>
// CHECK-NEXT:    %a = diff.primal %p : !diff.pair<f32>
// CHECK-NEXT:    %b = diff.differential %pp : !diff.pair<!diff.pair<f32>>
// CHECK-NEXT:    %gx = diff.bwd_diff @square(%x, %y, %one) : (f32, f32, f32) -> f32
// CHECK-NEXT:    %r = diff.fwd_diff @square(%px, %y) : (!diff.pair<f32>, f32) -> !diff.pair<f32>
// CHECK-NEXT:    %d = diff.detach %x : f32
// CHECK-NEXT:    %z = diff.zero : f32
// CHECK-NEXT:    %s = diff.add %z, %d : f32
// CHECK-NEXT:    %q = diff.make_ptr_pair %m, %g : memref<?xf32>
// CHECK-NEXT:    %qa = diff.ptr_primal %q : !diff.ptr_pair<memref<?xf32>>
// CHECK-NEXT:    %qb = diff.ptr_gradient %q : !diff.ptr_pair<memref<?xf32>>
// CHECK-NEXT:    diff.accumulate %s, %q[%i] : !diff.ptr_pair<memref<?xf32>>, f32, index
// CHECK-NEXT:    func.return
