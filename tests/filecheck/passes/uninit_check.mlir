// uninit-check: each host buffer gets a shadow (an int per element) and a track number, and each
// function a status buffer, threaded through calls; stores set the shadow, loads check it,
// atomics check then set, all only where the host tracks the buffer (track != 0). It runs after
// bounds-check, so its shadow accesses sit under the access's bounds guard.
// RUN: diffc-opt %s -p lower-entry-points,bounds-check{prove=false},uninit-check | filecheck %s

func.func @get(%p: memref<?xf32>, %p_off: index, %i: i32) -> f32 {
  %j = arith.index_cast %i : i32 to index
  %k = arith.addi %p_off, %j : index
  %v = memref.load %p[%k] : memref<?xf32>
  func.return %v : f32
}

func.func @main(%tid: i32 {diffc.semantic = "SV_DispatchThreadID"}, %src: memref<?xf32> {diff.abi = #diff.abi<pointer of "src">}, %src_off: index {diff.abi = #diff.abi<offset of "src">}, %dst: memref<?xf32> {diff.abi = #diff.abi<pointer of "dst">}, %dst_off: index {diff.abi = #diff.abi<offset of "dst">}) attributes {diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>} {
  %i = arith.index_cast %tid : i32 to index
  %a = arith.addi %dst_off, %i : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %dst[%a] : memref<?xf32>
  %v = func.call @get(%src, %src_off, %tid) : (memref<?xf32>, index, i32) -> f32
  %w = func.call @get(%dst, %dst_off, %tid) : (memref<?xf32>, index, i32) -> f32
  %s = arith.addf %v, %w : f32
  %old = kernel.atomic_rmw addf %s, %dst[%a] : memref<?xf32>
  func.return
}

// CHECK: diffc.uninit_sites = ["get|p|load|{{.*}}uninit_check.mlir:10:3", "main|dst|atomic|{{.*}}uninit_check.mlir:22:3"]
// CHECK-LABEL: func.func @get(%p: memref<?xf32>, %p_off: index, %i: i32, %diffc_len_p: index {diffc.name = "diffc_len_p"}, %diffc_bounds: memref<?xi32> {diffc.name = "diffc_bounds"}, %diffc_written_p: memref<?xi32> {diffc.name = "diffc_written_p"}, %diffc_track_p: i32 {diffc.name = "diffc_track_p"}, %diffc_uninit: memref<?xi32> {diffc.name = "diffc_uninit"}) -> f32
// the check sits under the bounds guard, before the load
// CHECK: arith.cmpi ult, %k, %diffc_len_p
// CHECK: scf.if
// CHECK: %[[ON:.*]] = arith.cmpi ne, %diffc_track_p, %{{.*}} : i32
// CHECK-NEXT: scf.if %[[ON]] {
// CHECK-NEXT: %[[SEEN:.*]] = memref.load %diffc_written_p[%k] : memref<?xi32>
// CHECK: %[[NONE:.*]] = arith.cmpi eq, %[[SEEN]], %{{.*}} : i32
// CHECK-NEXT: scf.if %[[NONE]] {
// CHECK: func.call @diffc_record_site(%k, %{{.*}}, %diffc_uninit, %{{.*}})
// CHECK: memref.load %p[%k]
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %diffc_written_src: memref<?xi32> {diffc.name = "diffc_written_src", diff.abi = #diff.abi<shadow of "src">}, %diffc_track_src: i32 {diffc.name = "diffc_track_src", diff.abi = #diff.abi<track of "src">}, %diffc_written_dst: memref<?xi32> {diffc.name = "diffc_written_dst", diff.abi = #diff.abi<shadow of "dst">}, %diffc_track_dst: i32 {diffc.name = "diffc_track_dst", diff.abi = #diff.abi<track of "dst">}, %diffc_uninit: memref<?xi32>
// the store sets the shadow after it
// CHECK: memref.store %{{.*}}, %dst[%a]
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[T:.*]] = arith.cmpi ne, %diffc_track_dst, %[[Z]] : i32
// CHECK-NEXT: scf.if %[[T]] {
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-NEXT: memref.store %[[ONE]], %diffc_written_dst[%a] : memref<?xi32>
// calls pass each buffer's shadow and track number, and the status
// CHECK: func.call @get(%src, %src_off, %tid, %{{.*}}, %diffc_bounds, %diffc_written_src, %diffc_track_src, %diffc_uninit)
// CHECK: func.call @get(%dst, %dst_off, %tid, %{{.*}}, %diffc_bounds, %diffc_written_dst, %diffc_track_dst, %diffc_uninit)
// the atomic checks, then sets
// CHECK: memref.load %diffc_written_dst[%a]
// CHECK: func.call @diffc_record_site(%a, %{{.*}}, %diffc_uninit, %{{.*}})
// CHECK: kernel.atomic_rmw addf %{{.*}}, %dst[%a]
// CHECK: memref.store %{{.*}}, %diffc_written_dst[%a]
