"""diffc.interp: lowered IR run in float64, checked against Python's math and numpy."""

from __future__ import annotations

import math as pymath

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diffc
from diffc.interp import WhileLimitError, parse_module, run_function
from diffc.runtime.module import load_module_from_string

UNARY = {
    "exp": (pymath.exp, 0.7),
    "exp2": (lambda x: 2.0**x, 0.7),
    "expm1": (pymath.expm1, 1e-9),
    "log": (pymath.log, 2.5),
    "log2": (pymath.log2, 2.5),
    "log10": (pymath.log10, 2.5),
    "log1p": (pymath.log1p, 1e-9),
    "sqrt": (pymath.sqrt, 2.0),
    "rsqrt": (lambda x: 1 / pymath.sqrt(x), 2.0),
    "cbrt": (lambda x: x ** (1 / 3), 27.0),
    "sin": (pymath.sin, 0.3),
    "cos": (pymath.cos, 0.3),
    "tan": (pymath.tan, 0.3),
    "asin": (pymath.asin, 0.3),
    "acos": (pymath.acos, 0.3),
    "atan": (pymath.atan, 0.3),
    "sinh": (pymath.sinh, 0.3),
    "cosh": (pymath.cosh, 0.3),
    "tanh": (pymath.tanh, 0.3),
    "asinh": (pymath.asinh, 0.3),
    "acosh": (pymath.acosh, 1.3),
    "atanh": (pymath.atanh, 0.3),
    "absf": (abs, -0.3),
    "erf": (pymath.erf, 0.3),
    "floor": (pymath.floor, -1.5),
    "ceil": (pymath.ceil, -1.5),
    "trunc": (pymath.trunc, -1.5),
    "round": (lambda x: -3.0, -2.5),  # half away from zero
    "roundeven": (lambda x: -2.0, -2.5),  # half to even
}


def _unary_module(name: str, t: str = "f64") -> str:
    return f"""
    func.func @f(%x: {t}) -> {t} {{
      %y = math.{name} %x : {t}
      func.return %y : {t}
    }}"""


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_scalar_and_vector(name):
    ref, x = UNARY[name]
    (y,) = run_function(_unary_module(name), "f", x)
    assert isinstance(y, float)
    assert y == pytest.approx(ref(x), rel=1e-14, abs=1e-300)
    xs = [x, x * 1.05, x * 0.95]
    if name in ("round", "roundeven"):
        xs = [x, x, x]
    (v,) = run_function(_unary_module(name, "vector<3xf64>"), "f", xs)
    assert isinstance(v, np.ndarray) and v.shape == (3,)
    np.testing.assert_allclose(v, [ref(e) for e in xs], rtol=1e-14)


BINARY = """
func.func @f(%x: f64, %y: f64) -> (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64) {
  %a = arith.addf %x, %y : f64
  %s = arith.subf %x, %y : f64
  %m = arith.mulf %x, %y : f64
  %d = arith.divf %x, %y : f64
  %r = arith.remf %x, %y : f64
  %mn = arith.minimumf %x, %y : f64
  %mx = arith.maximumf %x, %y : f64
  %mnn = arith.minnumf %x, %y : f64
  %mxn = arith.maxnumf %x, %y : f64
  %p = math.powf %x, %y : f64
  %t = math.atan2 %x, %y : f64
  %c = math.copysign %x, %y : f64
  func.return %a, %s, %m, %d, %r, %mn, %mx, %mnn, %mxn, %p, %t, %c : f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64
}
"""


@settings(max_examples=30, deadline=None)
@given(x=st.floats(0.1, 10), y=st.floats(-5, 5).filter(lambda v: abs(v) > 1e-3))
def test_binary_float_ops(x, y):
    got = run_function(BINARY, "f", x, y)
    want = (x + y, x - y, x * y, x / y, pymath.fmod(x, y), min(x, y), max(x, y), min(x, y), max(x, y),
            x**y, pymath.atan2(x, y), pymath.copysign(x, y))
    assert got == pytest.approx(want, rel=1e-15)


def test_ieee_semantics_not_python_exceptions():
    m = parse_module(BINARY)
    got = run_function(m, "f", 1.0, 0.0)
    assert got[3] == pymath.inf  # 1 / 0
    assert pymath.isnan(got[4])  # fmod(1, 0)
    (y,) = run_function(_unary_module("log"), "f", -1.0)
    assert pymath.isnan(y)
    (y,) = run_function(_unary_module("log"), "f", 0.0)
    assert y == -pymath.inf


def test_remf_has_the_sign_of_the_dividend():
    m = parse_module(BINARY)
    assert run_function(m, "f", -5.5, 2.0)[4] == -1.5
    assert run_function(m, "f", 5.5, -2.0)[4] == 1.5


def test_min_max_nan_and_signed_zero():
    m = parse_module(BINARY)
    nan = float("nan")
    got = run_function(m, "f", nan, 1.0)
    assert pymath.isnan(got[5]) and pymath.isnan(got[6])  # minimumf / maximumf propagate NaN
    assert got[7] == 1.0 and got[8] == 1.0  # minnumf / maxnumf ignore it
    got = run_function(m, "f", 0.0, -0.0)
    assert pymath.copysign(1, got[5]) == -1 and pymath.copysign(1, got[6]) == 1


def test_fma_and_cmpf_select():
    src = """
    func.func @f(%a: f64, %b: f64, %c: f64) -> (f64, f64, i1, i1) {
      %r = math.fma %a, %b, %c : f64
      %lt = arith.cmpf olt, %a, %b : f64
      %uno = arith.cmpf uno, %a, %b : f64
      %s = arith.select %lt, %a, %b : f64
      func.return %r, %s, %lt, %uno : f64, f64, i1, i1
    }"""
    r, s, lt, uno = run_function(src, "f", 2.0, 3.0, 0.5)
    assert (r, s, bool(lt), bool(uno)) == (6.5, 2.0, True, False)
    r, s, lt, uno = run_function(src, "f", float("nan"), 3.0, 0.5)
    assert pymath.isnan(r) and s == 3.0 and not lt and uno


def test_casts():
    src = """
    func.func @f(%x: f64, %n: i8) -> (i32, i32, f64, f64, f64, i64, i8) {
      %si = arith.fptosi %x : f64 to i32
      %ui = arith.fptoui %x : f64 to i32
      %sf = arith.sitofp %n : i8 to f64
      %uf = arith.uitofp %n : i8 to f64
      %t = arith.truncf %x : f64 to f32
      %e = arith.extf %t : f32 to f64
      %w = arith.extsi %n : i8 to i64
      %back = arith.trunci %w : i64 to i8
      func.return %si, %ui, %sf, %uf, %e, %w, %back : i32, i32, f64, f64, f64, i64, i8
    }"""
    si, ui, sf, uf, e, w, back = run_function(src, "f", -2.75, -1)
    assert si == -2 and sf == -1.0 and uf == 255.0 and w == -1 and back == -1
    assert e == -2.75  # f32 values are kept in float64
    si, ui, *_ = run_function(src, "f", 7.9, 3)
    assert (si, ui) == (7, 7)


def test_integer_ops_xdsl_lacks():
    src = """
    func.func @f(%a: i32, %b: i32) -> (i32, i32, i32, i32, i32, i32) {
      %du = arith.divui %a, %b : i32
      %ru = arith.remui %a, %b : i32
      %mn = arith.minsi %a, %b : i32
      %mx = arith.maxui %a, %b : i32
      %sh = arith.shrui %a, %b : i32
      %cd = arith.ceildivsi %a, %b : i32
      func.return %du, %ru, %mn, %mx, %sh, %cd : i32, i32, i32, i32, i32, i32
    }"""
    du, ru, mn, mx, sh, cd = run_function(src, "f", 7, 2)
    assert (du, ru, mn, mx, sh, cd) == (3, 1, 2, 7, 1, 4)
    du, ru, mn, mx, sh, cd = run_function(src, "f", -8, 2)
    assert du == (2**32 - 8) // 2 and mn == -8 and mx == -8 and cd == -4
    assert sh == (2**32 - 8) >> 2


def test_vectors_elementwise_with_dense_constants():
    src = """
    func.func @f(%v: vector<4xf64>, %w: vector<4xf64>, %c: i1) -> (vector<4xf64>, vector<4xf64>, f64, vector<4xf64>) {
      %two = arith.constant dense<2.0> : vector<4xf64>
      %k = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf64>
      %a = arith.mulf %v, %two : vector<4xf64>
      %b = arith.addf %a, %k : vector<4xf64>
      %m = arith.minimumf %b, %w : vector<4xf64>
      %s = arith.select %c, %m, %k : vector<4xf64>
      %e = vector.extract %s[2] : f64 from vector<4xf64>
      %x = arith.constant 9.0 : f64
      %bc = vector.broadcast %x : f64 to vector<4xf64>
      %i = vector.insert %e, %bc[0] : f64 into vector<4xf64>
      func.return %s, %b, %e, %i : vector<4xf64>, vector<4xf64>, f64, vector<4xf64>
    }"""
    v = [1.0, -1.0, 0.5, 2.0]
    w = [10.0, 10.0, 0.0, 0.0]
    s, b, e, i = run_function(src, "f", v, w, 1)
    np.testing.assert_array_equal(b, [3.0, 0.0, 4.0, 8.0])
    np.testing.assert_array_equal(s, [3.0, 0.0, 0.0, 0.0])
    assert e == 0.0 and isinstance(e, float)
    np.testing.assert_array_equal(i, [0.0, 9.0, 9.0, 9.0])
    s, *_ = run_function(src, "f", v, w, 0)
    np.testing.assert_array_equal(s, [1.0, 2.0, 3.0, 4.0])
    # inputs are not modified
    assert v == [1.0, -1.0, 0.5, 2.0]


def test_scf_for_if_while_and_calls():
    src = """
    func.func @sq(%x: f64) -> f64 {
      %y = arith.mulf %x, %x : f64
      func.return %y : f64
    }
    func.func @f(%x: f64, %n: index) -> (f64, f64, i32) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %one = arith.constant 1.0 : f64
      %p = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one) -> (f64) {
        %a = arith.mulf %acc, %x : f64
        scf.yield %a : f64
      }
      %zero = arith.constant 0.0 : f64
      %pos = arith.cmpf ogt, %x, %zero : f64
      %r = scf.if %pos -> (f64) {
        %s = func.call @sq(%x) : (f64) -> f64
        scf.yield %s : f64
      } else {
        %ng = arith.negf %x : f64
        scf.yield %ng : f64
      }
      %i0 = arith.constant 0 : i32
      %lim = arith.constant 100.0 : f64
      %w:2 = scf.while (%v = %x, %k = %i0) : (f64, i32) -> (f64, i32) {
        %av = math.absf %v : f64
        %go = arith.cmpf olt, %av, %lim : f64
        scf.condition(%go) %v, %k : f64, i32
      } do {
      ^bb0(%v2: f64, %k2: i32):
        %two = arith.constant 2.0 : f64
        %v3 = arith.mulf %v2, %two : f64
        %c1i = arith.constant 1 : i32
        %k3 = arith.addi %k2, %c1i : i32
        scf.yield %v3, %k3 : f64, i32
      }
      func.return %p, %r, %w#1 : f64, f64, i32
    }"""
    p, r, k = run_function(src, "f", 1.5, 3)
    assert p == pytest.approx(1.5**3, rel=1e-15) and r == 2.25 and k == 7  # 1.5 * 2^7 = 192
    p, r, k = run_function(src, "f", 150.0, 2)  # the while loop runs no iteration
    assert p == 22500.0 and r == 22500.0 and k == 0
    p, r, k = run_function(src, "f", -3.0, 0)  # the for loop runs no iteration, else branch
    assert p == 1.0 and r == 3.0 and k == 6  # 3 * 2^6 = 192


def test_memref_alloc_store_load():
    src = """
    func.func @f(%x: f64) -> f64 {
      %m = memref.alloc() : memref<3xf64>
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %y = math.sin %x : f64
      memref.store %y, %m[%c2] : memref<3xf64>
      memref.store %x, %m[%c0] : memref<3xf64>
      %a = memref.load %m[%c2] : memref<3xf64>
      %b = memref.load %m[%c0] : memref<3xf64>
      %s = arith.addf %a, %b : f64
      func.return %s : f64
    }"""
    (s,) = run_function(src, "f", 0.5)
    assert s == pytest.approx(pymath.sin(0.5) + 0.5, rel=1e-15)


def test_argument_checks():
    with pytest.raises(TypeError):
        run_function(_unary_module("exp"), "f", 1.0, 2.0)
    with pytest.raises(ValueError):
        run_function(_unary_module("exp", "vector<3xf64>"), "f", [1.0, 2.0])


# ---- opt-in f32 / f16 rounding -----------------------------------------------------------------

ROUNDING = """
func.func @f(%x: f32, %y: f32, %z: f32) -> (f32, f32) {
  %tenth = arith.constant 0.1 : f32
  %a = arith.addf %x, %y : f32
  %b = arith.mulf %a, %z : f32
  %d = arith.subf %x, %y : f32
  %c = arith.mulf %b, %d : f32
  %q = arith.divf %c, %tenth : f32
  func.return %c, %q : f32, f32
}
func.func @h(%x: f16, %y: f16) -> f16 {
  %a = arith.addf %x, %y : f16
  func.return %a : f16
}
func.func @w(%x: f64, %y: f64) -> f64 {
  %a = arith.addf %x, %y : f64
  func.return %a : f64
}
func.func @v(%x: vector<4xf32>, %y: vector<4xf32>) -> vector<4xf32> {
  %a = arith.mulf %x, %y : vector<4xf32>
  func.return %a : vector<4xf32>
}
"""


def _float32_reference(x: float, y: float, z: float) -> tuple[float, float]:
    f = np.float32
    c = ((f(x) + f(y)) * f(z)) * (f(x) - f(y))
    return float(c), float(c / f(0.1))


def test_float_rounding_matches_float32_arithmetic():
    m = parse_module(ROUNDING)
    rng = np.random.default_rng(7)
    differs = 0
    for x, y, z in rng.uniform(-3, 3, size=(50, 3)):
        got = run_function(m, "f", x, y, z, float_rounding=True)
        assert got == _float32_reference(x, y, z)  # exactly
        differs += run_function(m, "f", x, y, z) != got
    assert differs > 40  # the default stays float64: the rounding is what makes them agree


def test_float_rounding_f16_vectors_and_f64():
    m = parse_module(ROUNDING)
    (h,) = run_function(m, "h", 0.1, 0.2, float_rounding=True)
    assert h == float(np.float16(0.1) + np.float16(0.2))
    assert run_function(m, "h", 0.1, 0.2) == (0.1 + 0.2,)
    assert run_function(m, "w", 0.1, 0.2, float_rounding=True) == (0.1 + 0.2,)  # f64 is untouched
    x, y = [0.1, 1 / 3, 2.0, -7.7], [0.3, 3.0, 1e-3, 1.1]
    (v,) = run_function(m, "v", x, y, float_rounding=True)
    np.testing.assert_array_equal(v, np.float32(x) * np.float32(y))


def test_float_rounding_agrees_with_opencl_float32():
    """+, - and * are correctly rounded in OpenCL C: the device's float32 results and the
    rounding interpreter's agree bit for bit (no mul feeds an add, so no fma contraction)."""
    src = ROUNDING.split("func.func @h")[0].replace("(f32, f32)", "f32").replace(
        "func.return %c, %q : f32, f32", "func.return %c : f32"
    ).replace("  %q = arith.divf %c, %tenth : f32\n", "")
    device = load_module_from_string(src, "rounding.mlir")
    rng = np.random.default_rng(11)
    xs, ys, zs = rng.uniform(-3, 3, size=(3, 64)).astype(np.float32)
    got = device.f(*(diffc.Tensor.from_numpy(a) for a in (xs, ys, zs)), _result="numpy")
    m = parse_module(src)
    want = [run_function(m, "f", float(x), float(y), float(z), float_rounding=True)[0] for x, y, z in zip(xs, ys, zs)]
    np.testing.assert_array_equal(got, np.array(want, dtype=np.float32))
    # rounding only the float64 result at the end would not do: some elements tell them apart
    once = [run_function(m, "f", float(x), float(y), float(z))[0] for x, y, z in zip(xs, ys, zs)]
    assert np.count_nonzero(got != np.array(once, dtype=np.float32)) > 3


# ---- scf.while step limit ----------------------------------------------------------------------

COUNTDOWN = """
func.func @count(%n: i64) -> i64 {
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %left = scf.while (%i = %n) : (i64) -> i64 {
    %c = arith.cmpi ne, %i, %zero : i64
    scf.condition(%c) %i : i64
  } do {
  ^bb0(%j: i64):
    %k = arith.subi %j, %one : i64
    scf.yield %k : i64
  }
  func.return %left : i64
}
"""


def test_while_within_the_step_limit_runs():
    assert run_function(COUNTDOWN, "count", 50, max_while_steps=50) == (0,)
    assert run_function(COUNTDOWN, "count", 20_000) == (0,)  # the default limit is large


def test_while_over_the_step_limit_names_function_and_loop():
    with pytest.raises(WhileLimitError) as e:
        run_function(COUNTDOWN, "count", 51, max_while_steps=50)
    msg = str(e.value)
    assert "in function @count" in msg and "scf.while defining %left" in msg and "50 iterations" in msg
    # a loop that never ends (counting down from -1) stops too
    with pytest.raises(WhileLimitError):
        run_function(COUNTDOWN, "count", -1, max_while_steps=1000)


def test_atomic_rmw_kinds_update_memory_and_return_the_old_value():
    from xdsl.interpreters.shaped_array import ShapedArray
    from xdsl.interpreters.utils.ptr import TypedPtr

    text = """
func.func @f(%m: memref<3xi32>, %v: i32) -> (i32, i32, i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = "memref.atomic_rmw"(%v, %m, %c0) <{kind = 5 : i64}> : (i32, memref<3xi32>, index) -> i32
  %b = "memref.atomic_rmw"(%v, %m, %c1) <{kind = 4 : i64}> : (i32, memref<3xi32>, index) -> i32
  %c = "memref.atomic_rmw"(%v, %m, %c2) <{kind = 8 : i64}> : (i32, memref<3xi32>, index) -> i32
  func.return %a, %b, %c : i32, i32, i32
}"""
    mem = ShapedArray(TypedPtr.new_int32([3, 3, 3]), [3])
    # -1 is the largest uint32 but the smallest of the two as a signed int
    assert run_function(text, "f", mem, -1) == (3, 3, 3)
    assert [mem.load((i,)) for i in range(3)] == [-1, 3, 3]


def test_bitcast_reinterprets_the_bits():
    text = """
func.func @f(%x: f32, %h: f16) -> (i32, f32, i16) {
  %i = arith.bitcast %x : f32 to i32
  %y = arith.bitcast %i : i32 to f32
  %j = arith.bitcast %h : f16 to i16
  func.return %i, %y, %j : i32, f32, i16
}"""
    assert run_function(text, "f", 1.0, -2.0) == (0x3F800000, 1.0, -0x4000)


def test_absi_scalar_and_vector_wraps_at_int_min():
    src = """
    func.func @f(%a: i32, %v: vector<4xi32>) -> (i32, vector<4xi32>) {
      %s = math.absi %a : i32
      %w = math.absi %v : vector<4xi32>
      func.return %s, %w : i32, vector<4xi32>
    }"""
    s, w = run_function(src, "f", -7, [3, -5, 0, -(2**31)])
    assert s == 7
    np.testing.assert_array_equal(w, [3, 5, 0, -(2**31)])
    s, _ = run_function(src, "f", 12, [0, 0, 0, 0])
    assert s == 12


def test_integer_vector_muli_addi_subi_wrap_lane_by_lane():
    src = """
    func.func @f(%a: vector<3xi32>, %b: vector<3xi32>) -> (vector<3xi32>, vector<3xi32>, vector<3xi32>) {
      %m = arith.muli %a, %b : vector<3xi32>
      %s = arith.addi %a, %b : vector<3xi32>
      %d = arith.subi %a, %b : vector<3xi32>
      func.return %m, %s, %d : vector<3xi32>, vector<3xi32>, vector<3xi32>
    }"""
    a, b = [3, -4, 65536], [5, 6, 65536]
    m, s, d = run_function(src, "f", a, b)
    np.testing.assert_array_equal(m, [15, -24, 0])  # 2**32 wraps to 0 in i32
    np.testing.assert_array_equal(s, [8, 2, 131072])
    np.testing.assert_array_equal(d, [-2, -10, 0])
    (m, *_) = run_function(src, "f", [2**30, 7, -1], [4, -3, -1])
    np.testing.assert_array_equal(m, [0, -21, 1])


def test_scalar_muli_still_wraps():
    src = """
    func.func @f(%a: i32, %b: i32) -> i32 {
      %m = arith.muli %a, %b : i32
      func.return %m : i32
    }"""
    assert run_function(src, "f", 65536, 65537) == (65536,)
    assert run_function(src, "f", -3, 7) == (-21,)
