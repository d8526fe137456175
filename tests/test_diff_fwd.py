"""Numeric checks of diff-fwd: the lowered forward derivatives, run by diffc.interp in float64,
against central finite differences of the primal functions (and, for second derivatives,
finite differences of first derivatives)."""

from __future__ import annotations

import math

import pytest
from conftest import CANONICAL, central, run_pipeline
from conftest import lower_reparsed
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from diffc.interp import run_function


def lower(src: str) -> ModuleOp:
    """diff-fwd, diff-lower, canonicalize, cse; printed and parsed back."""
    return lower_reparsed(src, "diff-fwd,diff-lower,canonicalize,cse")


def close(a: float, b: float, rel: float = 1e-5) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


SEED = """
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %a = arith.mulf %x, %x : f32
  %c2 = arith.constant 2.0 : f32
  %b = arith.mulf %c2, %y : f32
  %s = arith.addf %a, %b : f32
  %s2 = arith.addf %s, %c2 : f32
  %e = math.exp %s2 : f32
  func.return %e : f32
}
func.func @main(%x: !diff.pair<f32>, %y: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
"""


def test_seed_example():
    m = lower(SEED)
    p, d = run_function(m, "main", 3.0, 1.0, 4.0, 0.0)
    assert close(p, math.exp(19)) and close(d, 6 * math.exp(19))
    p, d = run_function(m, "main", 3.0, 1.0, 4.0, 1.0)
    assert close(d, 8 * math.exp(19))


def check_scalar_fn(src: str, name: str, x: list[float], v: list[float], extra_after=()):
    """f: all-float differentiable params, one result; f_fwd called with (x0, v0, x1, v1, ...)."""
    m = lower(src)
    args = [a for pair in zip(x, v) for a in pair]
    p, d = run_function(m, f"{name}_fwd", *args, *extra_after)
    f = lambda xs: run_function(m, name, *xs, *extra_after)[0]  # noqa: E731
    assert close(p, f(x))
    fd = central(f, x, v)
    assert close(d, fd), (d, fd)
    return d


MATH = """
func.func @g(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %x : f32
  %c = math.cos %y : f32
  %q = arith.divf %s, %y : f32
  %l = math.log %y : f32
  %t = math.tanh %q : f32
  %r = math.sqrt %y : f32
  %m = arith.mulf %t, %l : f32
  %n = arith.subf %m, %c : f32
  %o = arith.mulf %n, %r : f32
  %z = arith.negf %o : f32
  func.return %z : f32
}
func.func @main(%x: !diff.pair<f32>, %y: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @g(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
"""


@pytest.mark.parametrize("x,v", [([0.3, 1.7], [1.0, 0.0]), ([0.3, 1.7], [0.0, 1.0]), ([-1.2, 0.4], [0.5, -2.0])])
def test_straight_line_math(x, v):
    check_scalar_fn(MATH, "g", x, v)


BRANCH = """
func.func @b(%x: f32) -> f32 attributes {diff.differentiable} {
  %zero = arith.constant 0.0 : f32
  %c = arith.cmpf ogt, %x, %zero : f32
  %r = scf.if %c -> (f32) {
    %s = math.sin %x : f32
    %s2 = arith.mulf %s, %x : f32
    scf.yield %s2 : f32
  } else {
    %e = math.exp %x : f32
    scf.yield %e : f32
  }
  %k = arith.constant 3.0 : f32
  %r2 = scf.if %c -> (f32) {
    scf.yield %k : f32
  } else {
    scf.yield %r : f32
  }
  %out = arith.addf %r, %r2 : f32
  func.return %out : f32
}
func.func @main(%x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @b(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
"""


@pytest.mark.parametrize("x", [0.8, -0.6, 2.5])
def test_branches(x):
    d = check_scalar_fn(BRANCH, "b", [x], [1.0])
    expected = math.cos(x) * x + math.sin(x) if x > 0 else 2 * math.exp(x)
    assert close(d, expected)


LOOPS = """
func.func @p(%x: f32, %n: index) -> f32 attributes {diff.differentiable} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one) -> (f32) {
    %inner = scf.for %j = %c0 to %n step %c1 iter_args(%a2 = %acc) -> (f32) {
      %s = math.sin %x : f32
      %m = arith.mulf %a2, %s : f32
      %m2 = arith.addf %m, %x : f32
      scf.yield %m2 : f32
    }
    %h = arith.constant 0.5 : f32
    %hh = arith.mulf %inner, %h : f32
    scf.yield %hh : f32
  }
  func.return %r : f32
}
func.func @w(%x: f32, %lim: f32 {diff.no_diff}) -> f32 attributes {diff.differentiable} {
  %q = arith.constant 0.75 : f32
  %r:2 = scf.while (%a = %x, %t = %x) : (f32, f32) -> (f32, f32) {
    %big = arith.cmpf ogt, %a, %lim : f32
    scf.condition(%big) %a, %t : f32, f32
  } do {
  ^bb0(%b: f32, %u: f32):
    %h = arith.mulf %b, %q : f32
    %s = math.sin %h : f32
    %u2 = arith.addf %u, %s : f32
    scf.yield %h, %u2 : f32, f32
  }
  func.return %r#1 : f32
}
func.func @main(%x: !diff.pair<f32>, %n: index, %lim: f32) -> (!diff.pair<f32>, !diff.pair<f32>) {
  %r = diff.fwd_diff @p(%x, %n) : (!diff.pair<f32>, index) -> !diff.pair<f32>
  %s = diff.fwd_diff @w(%x, %lim) : (!diff.pair<f32>, f32) -> !diff.pair<f32>
  func.return %r, %s : !diff.pair<f32>, !diff.pair<f32>
}
"""


@pytest.mark.parametrize("x,n", [(0.7, 3), (1.3, 1), (-0.4, 4), (0.5, 0)])
def test_nested_for_loops(x, n):
    check_scalar_fn(LOOPS, "p", [x], [1.0], extra_after=(n,))


@pytest.mark.parametrize("x", [5.0, 17.0, 0.5])
def test_while_loop(x):
    d = check_scalar_fn(LOOPS, "w", [x], [1.0], extra_after=(1.0,))
    if x < 1.0:  # no iteration: the result is x itself
        assert close(d, 1.0)


CALLS = """
func.func @h(%x: f32) -> f32 attributes {diff.differentiable} {
  %e = math.exp %x : f32
  func.return %e : f32
}
func.func @g(%x: f32, %y: f32) -> (f32, i32) attributes {diff.differentiable} {
  %a = func.call @h(%x) : (f32) -> f32
  %b = func.call @h(%y) : (f32) -> f32
  %m = arith.mulf %a, %b : f32
  %k = arith.constant 7 : i32
  func.return %m, %k : f32, i32
}
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %r, %k = func.call @g(%x, %y) : (f32, f32) -> (f32, i32)
  %s = math.sin %r : f32
  %t = func.call @h(%s) : (f32) -> f32
  func.return %t : f32
}
func.func @main(%x: !diff.pair<f32>, %y: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
"""


def test_nested_calls():
    check_scalar_fn(CALLS, "f", [0.2, -0.3], [1.0, 0.5])
    m = lower(CALLS)
    names = [op.sym_name.data for op in m.ops]
    assert names.count("h_fwd") == 1 and "g_fwd" in names


CUSTOM = """
func.func @sq(%x: f32) -> f32 attributes {diff.differentiable, diff.fwd_derivative = @sq_custom} {
  %m = arith.mulf %x, %x : f32
  func.return %m : f32
}
// Deliberately not the true derivative (3x dx instead of 2x dx), so its use is visible.
func.func @sq_custom(%p: !diff.pair<f32>) -> !diff.pair<f32> {
  %x = diff.primal %p : !diff.pair<f32>
  %dx = diff.differential %p : !diff.pair<f32>
  %m = arith.mulf %x, %x : f32
  %three = arith.constant 3.0 : f32
  %t = arith.mulf %three, %x : f32
  %d = arith.mulf %t, %dx : f32
  %r = diff.make_pair %m, %d : f32
  func.return %r : !diff.pair<f32>
}
func.func @user(%x: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %x : f32
  %q = func.call @sq(%s) : (f32) -> f32
  func.return %q : f32
}
func.func @main(%x: !diff.pair<f32>) -> (!diff.pair<f32>, !diff.pair<f32>) {
  %a = diff.fwd_diff @sq(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  %b = diff.fwd_diff @user(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %a, %b : !diff.pair<f32>, !diff.pair<f32>
}
"""


def test_custom_derivative_replaces_generated_everywhere():
    m = lower(CUSTOM)
    x = 0.9
    pa, da, pb, db = run_function(m, "main", x, 1.0)
    assert close(pa, x * x) and close(da, 3 * x)
    s = math.sin(x)
    assert close(pb, s * s) and close(db, 3 * s * math.cos(x))
    assert "sq_fwd" not in [op.sym_name.data for op in m.ops]


NODIFF = """
func.func @f(%x: f32, %k: f32 {diff.no_diff}) -> (f32, f32 {diff.no_diff}) attributes {diff.differentiable} {
  %m = arith.mulf %x, %k : f32
  %d = diff.detach %x : f32
  %e = math.exp %d : f32
  %r = arith.mulf %m, %e : f32
  %s = arith.addf %x, %k : f32
  func.return %r, %s : f32, f32
}
func.func @main(%x: !diff.pair<f32>, %k: f32) -> (!diff.pair<f32>, f32) {
  %r:2 = diff.fwd_diff @f(%x, %k) : (!diff.pair<f32>, f32) -> (!diff.pair<f32>, f32)
  func.return %r#0, %r#1 : !diff.pair<f32>, f32
}
"""


def test_no_diff_and_detach():
    m = lower(NODIFF)
    x, k = 0.4, 2.5
    p, d, s = run_function(m, "main", x, 1.0, k)
    assert close(p, x * k * math.exp(x))
    # exp(detach(x)) is a constant for differentiation: d/dx = k e^x, not k e^x (1 + x).
    assert close(d, k * math.exp(x))
    assert close(s, x + k)
    # f_fwd takes k as a plain value and returns the no_diff result as a plain value.
    fwd = next(op for op in m.ops if op.sym_name.data == "f_fwd")
    assert len(fwd.function_type.inputs.data) == 3 and len(fwd.function_type.outputs.data) == 3


HIGHER = """
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %a = arith.mulf %x, %x : f32
  %b = arith.mulf %a, %y : f32
  %s = math.sin %b : f32
  func.return %s : f32
}
// d f / dx along (1, 0), as a function of (x, y).
func.func @dfdx(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %px = diff.make_pair %x, %one : f32
  %py = diff.make_pair %y, %zero : f32
  %r = diff.fwd_diff @f(%px, %py) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  %d = diff.differential %r : !diff.pair<f32>
  func.return %d : f32
}
func.func @main(%x: !diff.pair<f32>, %y: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @dfdx(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
// Direct pair-of-pair use: fwd_diff of f_fwd-like function through a wrapper.
func.func @ff(%x: !diff.pair<!diff.pair<f32>>, %y: !diff.pair<!diff.pair<f32>>) -> !diff.pair<!diff.pair<f32>> {
  %r = diff.fwd_diff @dfwrap(%x, %y) : (!diff.pair<!diff.pair<f32>>, !diff.pair<!diff.pair<f32>>) -> !diff.pair<!diff.pair<f32>>
  func.return %r : !diff.pair<!diff.pair<f32>>
}
func.func @dfwrap(%x: !diff.pair<f32>, %y: !diff.pair<f32>) -> !diff.pair<f32> attributes {diff.differentiable} {
  %r = diff.fwd_diff @f(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}
"""


@pytest.mark.parametrize("x,y,v", [(0.7, 1.1, (1.0, 0.0)), (0.3, -0.8, (0.4, 1.5))])
def test_fwd_of_fwd_second_derivative(x, y, v):
    m = lower(HIGHER)
    first = lambda xs: run_function(m, "dfdx", *xs)[0]  # noqa: E731
    p, d2 = run_function(m, "main", x, v[0], y, v[1])
    # the primal of the outer derivative is the first derivative, which is 2xy cos(x^2 y)
    assert close(p, 2 * x * y * math.cos(x * x * y))
    fd = central(first, [x, y], list(v))
    assert close(d2, fd, rel=1e-4), (d2, fd)


def test_pairs_of_pairs_four_values():
    m = lower(HIGHER)
    x, y = 0.6, 0.9
    # ff(x: ((x, dx), (ex, dex)), ...) with dx = 1, ex = 1 (the second direction along x too)
    r = run_function(m, "ff", x, 1.0, 1.0, 0.0, y, 0.0, 0.0, 0.0)
    assert len(r) == 4
    f = lambda xs: run_function(m, "f", *xs)[0]  # noqa: E731
    first = lambda xs: run_function(m, "dfdx", *xs)[0]  # noqa: E731
    assert close(r[0], f([x, y]))
    assert close(r[1], first([x, y]))
    assert close(r[2], first([x, y]))
    assert close(r[3], central(first, [x, y], [1.0, 0.0]), rel=1e-4)


VECTOR = """
func.func @v(%x: vector<4xf32>) -> vector<4xf32> attributes {diff.differentiable} {
  %s = math.sin %x : vector<4xf32>
  %m = arith.mulf %s, %x : vector<4xf32>
  func.return %m : vector<4xf32>
}
func.func @main(%x: !diff.pair<vector<4xf32>>) -> !diff.pair<vector<4xf32>> {
  %r = diff.fwd_diff @v(%x) : (!diff.pair<vector<4xf32>>) -> !diff.pair<vector<4xf32>>
  func.return %r : !diff.pair<vector<4xf32>>
}
"""


def test_vector_tangents():
    m = lower(VECTOR)
    xs = [0.1, -0.5, 1.2, 2.0]
    p, d = run_function(m, "main", xs, [1.0, 1.0, 1.0, 1.0])
    for i, x in enumerate(xs):
        assert close(float(d[i]), math.cos(x) * x + math.sin(x))


def expect_failure(src: str, *needles: str):
    with pytest.raises(PassFailedException) as e:
        run_pipeline(src, "diff-fwd")
    for n in needles:
        assert n in str(e.value)


def test_error_nondifferentiable_callee():
    expect_failure(
        """
func.func @h(%x: f32) -> f32 {
  func.return %x : f32
}
func.func @f(%x: f32) -> f32 attributes {diff.differentiable} {
  %y = func.call @h(%x) : (f32) -> f32
  func.return %y : f32
}
func.func @main(%x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}""",
        "in function @f",
        "func.call",
        "@h",
    )


def test_error_fwd_diff_of_nondifferentiable():
    expect_failure(
        """
func.func @f(%x: f32) -> f32 {
  func.return %x : f32
}
func.func @main(%x: !diff.pair<f32>) -> !diff.pair<f32> {
  %r = diff.fwd_diff @f(%x) : (!diff.pair<f32>) -> !diff.pair<f32>
  func.return %r : !diff.pair<f32>
}""",
        "in function @main",
        "diff.fwd_diff",
        "@f is not differentiable",
    )


# ---------------------------------------------------------------------------------------------
# Random straight-line programs.

UNARY = {"sin": math.sin, "cos": math.cos, "exp": math.exp, "tanh": math.tanh}
BINARY = ("addf", "subf", "mulf")


@st.composite
def programs(draw):
    n = draw(st.integers(2, 8))
    lines, names = [], ["%x", "%y"]
    for i in range(n):
        if draw(st.booleans()):
            op = draw(st.sampled_from(sorted(UNARY)))
            a = draw(st.sampled_from(names))
            lines.append(f"  %v{i} = math.{op} {a} : f64")
        else:
            op = draw(st.sampled_from(BINARY))
            a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
            lines.append(f"  %v{i} = arith.{op} {a}, {b} : f64")
        names.append(f"%v{i}")
    body = "\n".join(lines)
    return f"""
func.func @r(%x: f64, %y: f64) -> f64 attributes {{diff.differentiable}} {{
{body}
  func.return {names[-1]} : f64
}}
func.func @main(%x: !diff.pair<f64>, %y: !diff.pair<f64>) -> !diff.pair<f64> {{
  %r = diff.fwd_diff @r(%x, %y) : (!diff.pair<f64>, !diff.pair<f64>) -> !diff.pair<f64>
  func.return %r : !diff.pair<f64>
}}
"""


@settings(max_examples=25, deadline=None)
@given(
    programs(),
    st.floats(-1.0, 1.0),
    st.floats(-1.0, 1.0),
    st.floats(-1.0, 1.0),
    st.floats(-1.0, 1.0),
)
def test_random_straight_line(src, x, y, vx, vy):
    m = lower(src)
    p, d = run_function(m, "main", x, vx, y, vy)
    f = lambda xs: run_function(m, "r", *xs)[0]  # noqa: E731
    fd = central(f, [x, y], [vx, vy])
    assert math.isclose(d, fd, rel_tol=1e-4, abs_tol=1e-5), (d, fd)


# ---------------------------------------------------------------------------------------------
# Forward against reverse (the canonical pipeline, diff-rev included).

FWD_REV = """
func.func @f(%x: f32, %y: f32) -> (f32, f32) attributes {diff.differentiable} {
  %a = arith.mulf %x, %y : f32
  %s = math.sin %a : f32
  %e = math.exp %y : f32
  %b = arith.addf %s, %e : f32
  %c = arith.divf %x, %e : f32
  func.return %b, %c : f32, f32
}
func.func @jv(%x: !diff.pair<f32>, %y: !diff.pair<f32>) -> (!diff.pair<f32>, !diff.pair<f32>) {
  %r:2 = diff.fwd_diff @f(%x, %y) : (!diff.pair<f32>, !diff.pair<f32>) -> (!diff.pair<f32>, !diff.pair<f32>)
  func.return %r#0, %r#1 : !diff.pair<f32>, !diff.pair<f32>
}
func.func @vj(%x: f32, %y: f32, %u0: f32, %u1: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @f(%x, %y, %u0, %u1) : (f32, f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}
// d/dx f0 along x, as a function: then reverse mode over it (bwd of fwd).
func.func @d0(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %px = diff.make_pair %x, %one : f32
  %py = diff.make_pair %y, %zero : f32
  %r:2 = diff.fwd_diff @f(%px, %py) : (!diff.pair<f32>, !diff.pair<f32>) -> (!diff.pair<f32>, !diff.pair<f32>)
  %d = diff.differential %r#0 : !diff.pair<f32>
  func.return %d : f32
}
func.func @grad_d0(%x: f32, %y: f32, %u: f32) -> (f32, f32) {
  %g:2 = diff.bwd_diff @d0(%x, %y, %u) : (f32, f32, f32) -> (f32, f32)
  func.return %g#0, %g#1 : f32, f32
}
"""


@pytest.mark.parametrize("x,y,v,u", [(0.4, 0.9, (1.0, -0.5), (0.3, 2.0)), (-1.1, 0.2, (0.7, 1.3), (-1.0, 0.5))])
def test_dot_product_forward_vs_reverse(x, y, v, u):
    pytest.importorskip("diffc.passes.diff_rev")
    m = lower_reparsed(FWD_REV, CANONICAL)
    _, t0, _, t1 = run_function(m, "jv", x, v[0], y, v[1])
    gx, gy = run_function(m, "vj", x, y, u[0], u[1])
    assert close(u[0] * t0 + u[1] * t1, gx * v[0] + gy * v[1], rel=1e-9)


def test_bwd_of_fwd_against_finite_differences():
    pytest.importorskip("diffc.passes.diff_rev")
    m = lower_reparsed(FWD_REV, CANONICAL)
    x, y = 0.6, -0.4
    d0 = lambda xs: run_function(m, "d0", *xs)[0]  # noqa: E731
    gx, gy = run_function(m, "grad_d0", x, y, 1.0)
    assert close(gx, central(d0, [x, y], [1.0, 0.0]), rel=1e-4)
    assert close(gy, central(d0, [x, y], [0.0, 1.0]), rel=1e-4)
