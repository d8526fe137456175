"""kernel.atomic_rmw and f16 <-> i16 bitcasts, built from kernel-form IR and run on the device
DIFFC_DEVICE picks (PoCL here), with that device's emitter options. Expected values come from
numpy (its float16 conversions are IEEE round-to-nearest-even)."""

from __future__ import annotations

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")

import diffc  # noqa: E402
from diffc.backend.opencl import build_options, emit_opencl, options_for_device  # noqa: E402
from diffc.runtime.module import parse_source  # noqa: E402


@pytest.fixture(scope="module")
def ctx():
    d = diffc.device()
    return d.context, d.queue, options_for_device(d.cl_device)


def run(ctx, ir: str, kernel: str, n: int, *arrays_and_scalars):
    """Builds `ir`, runs `kernel` over n work-items; returns the arrays as they are afterwards."""
    c, q, options = ctx
    source = emit_opencl(parse_source(ir, "test.mlir"), options)
    prg = cl.Program(c, source).build(options=build_options(options))
    args, bufs = [], []
    for a in arrays_and_scalars:
        if isinstance(a, np.ndarray):
            b = cl.Buffer(c, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
            args.append(b)
            bufs.append((a, b))
        else:
            args.append(a)
    getattr(prg, kernel)(q, (n,), None, *args)
    for a, b in bufs:
        cl.enqueue_copy(q, a, b)
    q.finish()
    return [a for a, _ in bufs]


HALF_BITS = """
func.func @half_bits_to_float(%bits: memref<?xi16>, %out: memref<?xf32>) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %b = memref.load %bits[%i] : memref<?xi16>
  %h = arith.bitcast %b : i16 to f16
  %f = arith.extf %h : f16 to f32
  memref.store %f, %out[%i] : memref<?xf32>
  func.return
}
func.func @float_to_half_bits(%x: memref<?xf32>, %bits: memref<?xi16>) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %f = memref.load %x[%i] : memref<?xf32>
  %h = arith.truncf %f : f32 to f16
  %b = arith.bitcast %h : f16 to i16
  memref.store %b, %bits[%i] : memref<?xi16>
  func.return
}
"""


def test_every_half_bit_pattern_converts_to_its_float(ctx):
    bits = np.arange(1 << 16, dtype=np.uint16).view(np.int16)
    (_, out) = run(ctx, HALF_BITS, "half_bits_to_float", bits.size, bits.copy(), np.zeros(bits.size, np.float32))
    want = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(out), nan)
    np.testing.assert_array_equal(out[~nan].view(np.uint32), want[~nan].view(np.uint32))  # -0.0 included


def test_floats_round_to_nearest_even_half_bits(ctx):
    rng = np.random.default_rng(7)
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    finite = halves[np.isfinite(halves)].astype(np.float32)
    ordered = np.unique(finite)
    # exactly halfway between neighbouring halves (ties), a bit either side, and random values
    # from the subnormal range to overflow
    mid = (ordered[:-1].astype(np.float64) + ordered[1:]) / 2
    mid = mid[np.abs(mid) < 65520].astype(np.float32)
    near = np.concatenate([np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf))])
    wide = (rng.standard_normal(20000) * np.exp2(rng.integers(-30, 20, 20000))).astype(np.float32)
    special = np.array([0.0, -0.0, 65504, 65519.99, 65520, -65520, 1e30, -np.inf, np.inf, 2.0**-25,
                        2.0**-25 * 1.0001, 2.0**-24, 3 * 2.0**-26, 2.0**-14 - 2.0**-25], np.float32)
    x = np.concatenate([mid, near, wide, special, finite]).astype(np.float32)
    (_, bits) = run(ctx, HALF_BITS, "float_to_half_bits", x.size, x, np.zeros(x.size, np.int16))
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.int16)
    bad = np.nonzero(bits != want)[0]
    assert bad.size == 0, [(float(x[k]), hex(bits[k] & 0xFFFF), hex(want[k] & 0xFFFF)) for k in bad[:5]]


def test_nan_stays_nan_through_half_bits(ctx):
    x = np.array([np.nan, -np.nan, np.float32(np.nan) * 0], np.float32)
    (_, bits) = run(ctx, HALF_BITS, "float_to_half_bits", x.size, x, np.zeros(x.size, np.int16))
    assert np.isnan(bits.view(np.float16)).all()


HALF_ADD = """
func.func @half_add(%acc: memref<?xf16>, %olds: memref<?xf32>, %values: memref<?xf32>, %off: index, %bins: index) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %v32 = memref.load %values[%i] : memref<?xf32>
  %v = arith.truncf %v32 : f32 to f16
  %bin = arith.remui %i, %bins : index
  %j = arith.addi %off, %bin : index
  %old = kernel.atomic_rmw addf %v, %acc[%j] : memref<?xf16>
  %o = arith.extf %old : f16 to f32
  memref.store %o, %olds[%i] : memref<?xf32>
  func.return
}
"""


@pytest.mark.parametrize("offset", [0, 1])
def test_half_atomic_add_on_both_halves_of_a_word(ctx, offset):
    # 4096 work-items add multiples of 1/4 into 4 neighbouring halves (two 32-bit words, both
    # halves of each): every partial sum is a half, so the result is exact in any order.
    n, bins = 4096, 4
    rng = np.random.default_rng(offset)
    values = (rng.integers(-8, 9, n) / 4).astype(np.float32)
    acc = np.full(8, 0.5, np.float16)
    acc[offset: offset + bins] = [1.0, -2.0, 0.25, 3.0]
    before = acc.copy()
    acc_after, olds, _ = run(ctx, HALF_ADD, "half_add", n, acc, np.zeros(n, np.float32), values, np.int64(offset), np.int64(bins))
    want = before.astype(np.float64)
    for b in range(bins):
        want[offset + b] += values[b::bins].sum()
    np.testing.assert_array_equal(acc_after.astype(np.float64), want)
    # untouched neighbours (the other half of a shared word) keep their value
    untouched = [k for k in range(8) if not offset <= k < offset + bins]
    np.testing.assert_array_equal(acc_after[untouched], before[untouched])
    # the adds of one bin form a chain start -> ... -> final: the old values they saw plus the
    # final value are the values they wrote plus the start value (as multisets)
    for b in range(bins):
        seen, steps = olds[b::bins].astype(np.float64), values[b::bins].astype(np.float64)
        start, final = float(before[offset + b]), want[offset + b]
        np.testing.assert_array_equal(np.sort(np.append(seen, final)), np.sort(np.append(seen + steps, start)))


def test_half_atomic_add_counts_every_work_item(ctx):
    # every work-item adds 1 to the same half: the old values are 0..n-1, each seen once
    n = 2048
    acc = np.zeros(2, np.float16)
    acc_after, olds, _ = run(ctx, HALF_ADD, "half_add", n, acc, np.zeros(n, np.float32),
                             np.ones(n, np.float32), np.int64(1), np.int64(1))
    assert acc_after[1] == n and acc_after[0] == 0
    np.testing.assert_array_equal(np.sort(olds), np.arange(n))


def test_half_atomic_add_random_values_match_numpy_sum(ctx):
    n, bins = 4096, 3
    rng = np.random.default_rng(3)
    values = rng.uniform(-1, 1, n).astype(np.float16).astype(np.float32)
    acc = np.zeros(4, np.float16)
    acc_after, _, _ = run(ctx, HALF_ADD, "half_add", n, acc, np.zeros(n, np.float32), values, np.int64(1), np.int64(bins))
    for b in range(bins):
        exact = values[b::bins].astype(np.float64).sum()
        # each of the n/bins adds rounds to half: at most half an ulp of a running sum (|sum| < 64)
        assert abs(float(acc_after[1 + b]) - exact) <= (n / bins) * 2.0**-5, (b, acc_after[1 + b], exact)


INT_ATOMICS = """
func.func @int_atomics(%acc: memref<?xi32>, %olds: memref<?xi32>, %values: memref<?xi32>) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %v = memref.load %values[%i] : memref<?xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %a = kernel.atomic_rmw maxu %v, %acc[%c0] : memref<?xi32>
  %b = kernel.atomic_rmw maxs %v, %acc[%c1] : memref<?xi32>
  %c = kernel.atomic_rmw minu %v, %acc[%c2] : memref<?xi32>
  %d = kernel.atomic_rmw mins %v, %acc[%c3] : memref<?xi32>
  %one = arith.constant 1 : i32
  %e = kernel.atomic_rmw addi %one, %acc[%c4] : memref<?xi32>
  memref.store %e, %olds[%i] : memref<?xi32>
  func.return
}
"""


def test_int_atomics_unsigned_and_signed(ctx):
    n = 1000
    rng = np.random.default_rng(11)
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    u[17] = 0xFFFFFFF0  # the largest unsigned, a negative int
    values = u.view(np.int32)
    acc = np.array([0, np.iinfo(np.int32).min, -1, np.iinfo(np.int32).max, 0], np.int32)
    acc_after, olds, _ = run(ctx, INT_ATOMICS, "int_atomics", n, acc, np.zeros(n, np.int32), values)
    assert acc_after.view(np.uint32)[0] == u.max() == 0xFFFFFFF0
    assert acc_after[1] == values.max()
    assert acc_after.view(np.uint32)[2] == u.min()
    assert acc_after[3] == values.min()
    assert acc_after[4] == n
    np.testing.assert_array_equal(np.sort(olds), np.arange(n))  # each add saw a distinct count


FLOAT_FETCH_ADD = """
func.func @count(%acc: memref<?xf32>, %olds: memref<?xf32>) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %old = kernel.atomic_rmw addf %one, %acc[%c0] : memref<?xf32>
  memref.store %old, %olds[%i] : memref<?xf32>
  func.return
}
"""


def test_float_fetch_add_returns_old_values(ctx):
    n = 3000
    acc, olds = run(ctx, FLOAT_FETCH_ADD, "count", n, np.zeros(1, np.float32), np.zeros(n, np.float32))
    assert acc[0] == n
    np.testing.assert_array_equal(np.sort(olds), np.arange(n))


# Adds whose old value is unused, from divergent work-items: items at or past `count` do nothing
# (as an entry point's `if (tid >= count) return;`), item i adds 1 + i % 3 times in a loop, to bin
# (i + 5k) % bins, and its int add only on even i + k. On NVIDIA ("ptx" atomics) these are the
# warp-aggregated red adds, so warps see partial active masks and lanes with mixed addresses.
SCATTER_ADD = """
func.func @scatter_add(%h: memref<?xf16>, %f: memref<?xf32>, %u: memref<?xi32>, %values: memref<?xi32>, %count: index, %bins: index) attributes {kernel.entry} {
  %i = kernel.global_id 0
  %live = arith.cmpi ult, %i, %count : index
  scf.if %live {
    %w = memref.load %values[%i] : memref<?xi32>
    %y = arith.sitofp %w : i32 to f32
    %x = arith.truncf %y : f32 to f16
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %r = arith.remui %i, %c3 : index
    %trips = arith.addi %r, %c1 : index
    scf.for %k = %c0 to %trips step %c1 {
      %k5 = arith.muli %k, %c5 : index
      %s = arith.addi %i, %k5 : index
      %bin = arith.remui %s, %bins : index
      %old = kernel.atomic_rmw addf %x, %h[%bin] : memref<?xf16>
      kernel.atomic_add %y, %f[%bin] : memref<?xf32>
      %ik = arith.addi %i, %k : index
      %parity = arith.remui %ik, %c2 : index
      %even = arith.cmpi eq, %parity, %c0 : index
      scf.if %even {
        kernel.atomic_add %w, %u[%bin] : memref<?xi32>
      }
    }
  }
  func.return
}
"""


@pytest.mark.parametrize("bins", [1, 2, 3, 32, 37])
def test_divergent_unused_adds_reach_every_bin(ctx, bins):
    n, count = 2000, 1987
    rng = np.random.default_rng(bins)
    values = rng.choice(np.array([-1, 0, 0, 0, 1], np.int32), n)
    want_f, want_u = np.zeros(bins, np.int64), np.zeros(bins, np.int64)
    reach = np.zeros(bins, np.int64)  # sum of |value| into each bin: bounds every partial sum
    for i in range(count):
        for k in range(1 + i % 3):
            b = (i + 5 * k) % bins
            want_f[b] += values[i]
            reach[b] += abs(values[i])
            if (i + k) % 2 == 0:
                want_u[b] += values[i]
    # every integer up to 2048 is a half, so the half sums are exact in any order of adding
    assert reach.max() <= 2048
    h, f, u, _ = run(ctx, SCATTER_ADD, "scatter_add", n, np.zeros(bins, np.float16), np.zeros(bins, np.float32),
                     np.zeros(bins, np.int32), values, np.int64(count), np.int64(bins))
    np.testing.assert_array_equal(f.astype(np.int64), want_f)
    np.testing.assert_array_equal(u.astype(np.int64), want_u)
    np.testing.assert_array_equal(h.astype(np.int64), want_f)
