"""Numeric tests of diff-rev: each program goes through the canonical pipeline, then diffc.interp;
gradients are compared with float64 central finite differences of the primal program.
The programs here are shared with test_diff_checkpoint.py."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import (
    CANONICAL,
    assert_no_diff,
    central,
    finite_difference,
    function_named,
    gradient,
    run,
    run_pipeline,
    with_bwd_main,
    with_fwd_main,
)

from diffc.dialects import diff

IF = """
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %c = arith.cmpf ogt, %x, %y : f32
  %r = scf.if %c -> (f32) {
    %a = arith.mulf %x, %y : f32
    %s = math.sin %a : f32
    scf.yield %s : f32
  } else {
    %b = arith.mulf %y, %y : f32
    scf.yield %b : f32
  }
  %o = arith.mulf %r, %x : f32
  func.return %o : f32
}
"""
FOR = """
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 5 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %a = arith.mulf %acc, %y : f32
    %s = math.sin %a : f32
    %t = arith.addf %s, %acc : f32
    scf.yield %t : f32
  }
  func.return %r : f32
}
"""
WHILE = """
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lim = arith.constant 10.0 : f32
  %r = scf.while (%a = %x) : (f32) -> f32 {
    %c = arith.cmpf olt, %a, %lim : f32
    scf.condition(%c) %a : f32
  } do {
  ^bb0(%b: f32):
    %m = arith.mulf %b, %y : f32
    %n = arith.addf %m, %b : f32
    scf.yield %n : f32
  } attributes {diff.max_iters = 20 : i64}
  func.return %r : f32
}
"""
NESTED = """
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %ub2 = arith.constant 4 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %q = scf.for %j = %lb to %ub2 step %st iter_args(%b = %acc) -> (f32) {
      %a = arith.mulf %b, %y : f32
      %s = math.sin %a : f32
      %t = arith.addf %s, %b : f32
      scf.yield %t : f32
    }
    %u = arith.mulf %q, %y : f32
    scf.yield %u : f32
  }
  func.return %r : f32
}
"""
CALL = """
func.func @g(%a: f32, %b: f32) -> f32 attributes {diff.differentiable} {
  %m = arith.mulf %a, %b : f32
  %s = math.sin %m : f32
  func.return %s : f32
}
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %t = func.call @g(%acc, %y) : (f32, f32) -> f32
    %u = arith.addf %t, %acc : f32
    scf.yield %u : f32
  }
  %z = func.call @g(%r, %x) : (f32, f32) -> f32
  func.return %z : f32
}
"""
CUSTOM = """
func.func @g(%a: f32) -> f32 attributes {diff.differentiable, diff.bwd_derivative = @g_custom} {
  %s = math.sin %a : f32
  func.return %s : f32
}
func.func @g_custom(%a: f32, %d: f32) -> f32 {
  %c = arith.constant 100.0 : f32
  %r = arith.mulf %c, %d : f32
  func.return %r : f32
}
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %m = arith.mulf %x, %y : f32
  %t = func.call @g(%m) : (f32) -> f32
  func.return %t : f32
}
"""
NODIFF = """
func.func @f(%x: f32, %y: f32 {diff.no_diff}, %z: f32) -> (f32, f32 {diff.no_diff}, f32) attributes {diff.differentiable} {
  %m = arith.mulf %x, %y : f32
  %d = diff.detach %z : f32
  %n = arith.mulf %m, %d : f32
  %p = arith.addf %n, %z : f32
  %e = math.exp %x : f32
  func.return %p, %e, %m : f32, f32, f32
}
"""
INTS = """
func.func @f(%x: f32, %n: i32) -> f32 attributes {diff.differentiable} {
  %nf = arith.sitofp %n : i32 to f32
  %k = arith.addi %n, %n : i32
  %kf = arith.sitofp %k : i32 to f32
  %a = arith.mulf %x, %nf : f32
  %b = arith.mulf %a, %kf : f32
  %c = arith.mulf %b, %x : f32
  func.return %c : f32
}
"""

SQUARES = """
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %a = arith.mulf %x, %x : f32
  %b = arith.mulf %y, %y : f32
  %c = arith.addf %a, %b : f32
  func.return %c : f32
}
"""
POLY = """
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %a = arith.mulf %x, %x : f32
  %b = arith.mulf %a, %y : f32
  %c = arith.addf %b, %y : f32
  %two = arith.constant 2.0 : f32
  %d = arith.addf %c, %two : f32
  func.return %d : f32
}
"""
MATH = """
func.func @f(%x: f32, %y: f32) -> (f32, f32) attributes {diff.differentiable} {
  %a = math.sin %x : f32
  %b = math.cos %y : f32
  %c = arith.divf %a, %b : f32
  %d = math.exp %c : f32
  %e = arith.subf %d, %x : f32
  %n = arith.negf %e : f32
  %p = arith.mulf %n, %a : f32
  func.return %p, %c : f32, f32
}
"""
CALLS_NESTED = """
func.func @h(%a: f32) -> f32 attributes {diff.differentiable} {
  %s = math.sin %a : f32
  %m = arith.mulf %s, %a : f32
  func.return %m : f32
}
func.func @g(%a: f32, %b: f32) -> (f32, f32) attributes {diff.differentiable} {
  %m = arith.mulf %a, %b : f32
  %t = func.call @h(%m) : (f32) -> f32
  %u = func.call @h(%a) : (f32) -> f32
  func.return %t, %u : f32, f32
}
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %p:2 = func.call @g(%x, %y) : (f32, f32) -> (f32, f32)
  %q = arith.mulf %p#0, %p#1 : f32
  %r = func.call @h(%q) : (f32) -> f32
  func.return %r : f32
}
"""
DYNFOR = """
func.func @f(%x: f32, %y: f32, %n: index) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 1 : index
  %st = arith.constant 2 : index
  %r = scf.for %i = %lb to %n step %st iter_args(%acc = %x) -> (f32) {
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %a = arith.mulf %acc, %y : f32
    %s = math.sin %a : f32
    %t = arith.mulf %s, %fi : f32
    %u = arith.addf %t, %acc : f32
    scf.yield %u : f32
  } {diff.max_iters = 8 : i64}
  func.return %r : f32
}
"""
IF_IN_LOOP = """
func.func @f(%x: f32, %y: f32) -> (f32, f32) attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 6 : index
  %st = arith.constant 1 : index
  %half = arith.constant 0.5 : f32
  %r:2 = scf.for %i = %lb to %ub step %st iter_args(%a = %x, %b = %y) -> (f32, f32) {
    %c = arith.cmpf ogt, %a, %half : f32
    %n:2 = scf.if %c -> (f32, f32) {
      %m = arith.mulf %a, %b : f32
      %s = math.sin %m : f32
      scf.yield %s, %a : f32, f32
    } else {
      %e = math.exp %b : f32
      %t = arith.addf %a, %half : f32
      scf.yield %t, %e : f32, f32
    }
    %w = arith.mulf %n#1, %half : f32
    scf.yield %n#0, %w : f32, f32
  }
  func.return %r#0, %r#1 : f32, f32
}
"""
WHILE_IN_FOR = """
func.func @f(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %st = arith.constant 1 : index
  %lim = arith.constant 4.0 : f32
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f32) {
    %w = scf.while (%a = %acc) : (f32) -> f32 {
      %c = arith.cmpf olt, %a, %lim : f32
      scf.condition(%c) %a : f32
    } do {
    ^bb0(%b: f32):
      %m = arith.mulf %b, %y : f32
      %n = arith.addf %m, %b : f32
      scf.yield %n : f32
    } attributes {diff.max_iters = 30 : i64}
    %d = arith.divf %w, %lim : f32
    %e = arith.mulf %d, %acc : f32
    scf.yield %e : f32
  }
  func.return %r : f32
}
"""


def check(src, args, douts, diff_args, rel=1e-6, abs_=1e-7):
    got = gradient(src, args, douts)
    want = finite_difference(src, args, douts, diff_args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == pytest.approx(w, rel=rel, abs=abs_), (got, want)
    return got


def test_seed_sum_of_squares():
    assert gradient(SQUARES, [3.0, 4.0], [1.0]) == (6.0, 8.0)


def test_seed_polynomial():
    assert gradient(POLY, [3.0, 4.0], [1.0]) == (24.0, 10.0)


def test_seed_scaled_by_dout():
    assert gradient(POLY, [3.0, 4.0], [0.5]) == (12.0, 5.0)


@pytest.mark.parametrize("args", [[0.3, 0.2], [1.1, -0.4]])
def test_straight_line_math_two_results(args):
    check(MATH, args, [1.0, -2.0], [0, 1])


@pytest.mark.parametrize("args", [[1.3, 0.7], [0.4, 0.9]])  # both branches
def test_branches(args):
    check(IF, args, [1.0], [0, 1])


@pytest.mark.parametrize("args", [[1.3, 0.7], [0.4, -0.9]])
def test_for_loop(args):
    check(FOR, args, [1.0], [0, 1])


@pytest.mark.parametrize("args", [[1.3, 0.7], [0.4, 0.9]])
def test_while_loop(args):
    check(WHILE, args, [1.0], [0, 1], rel=1e-5)


def _while_iterations(x: float, y: float) -> int:
    """How often WHILE's body runs: a <- a * (1 + y) while a < 10, counted in float64 as the
    interpreter computes."""
    a, k = x, 0
    while a < 10.0:
        a, k = a * y + a, k + 1
    return k


def test_while_loop_at_exactly_max_iters():
    # The bound is inclusive: 20 iterations of a loop with diff.max_iters = 20 are taped whole.
    assert _while_iterations(1.55, 0.1) == 20
    check(WHILE, [1.55, 0.1], [1.0], [0, 1], rel=1e-5)


def test_while_loop_beyond_max_iters_names_the_loop():
    from diffc.interp import MaxItersError

    assert _while_iterations(1.4, 0.1) == 21
    with pytest.raises(MaxItersError, match=r"@f_bwd: scf.while defining %r ran more than its diff.max_iters = 20"):
        gradient(WHILE, [1.4, 0.1], [1.0])


def test_while_loop_beyond_max_iters_on_device_is_nan_not_out_of_bounds(tmp_path):
    """On a device derivative code stops the loop one iteration past its bound (926 would run):
    the forward sweep keeps its stores inside the tape, the call raises LoopOverrunError
    (tests/test_loop_overrun.py), and what it left in the gradients is NaN for an overlong run;
    the other elements are right."""
    import diffc
    from diffc.runtime.status import LoopOverrunError

    path = tmp_path / "while.mlir"
    path.write_text(WHILE.replace("f32", "f64"))
    m = diffc.load_module(path)
    xs, ys = np.array([1.3, 1.55, 1.4, 0.001]), np.array([0.7, 0.1, 0.1, 0.01])
    assert [_while_iterations(*a) for a in zip(xs, ys)] == [4, 20, 21, 926]
    x = diffc.Tensor.from_numpy(xs).with_grads(zero=True)
    y = diffc.Tensor.from_numpy(ys).with_grads(zero=True)
    r = diffc.Tensor.from_numpy(np.zeros(4)).with_grads()
    r.grad.copy_from_numpy(np.ones(4))
    with pytest.raises(LoopOverrunError, match="stopped it after 21 iterations"):
        m.f.bwds(x=x, y=y, _result=r)
    gx, gy = x.grad.to_numpy(), y.grad.to_numpy()
    for i in (0, 1):  # within the bound: finite differences of the float64 primal
        want = finite_difference(WHILE, [xs[i], ys[i]], [1.0], [0, 1])
        assert [gx[i], gy[i]] == pytest.approx(want, rel=1e-5), i
    assert np.isnan(gx[2:]).all() and np.isnan(gy[2:]).all()


@pytest.mark.parametrize("args", [[1.3, 0.7], [0.4, 0.9]])
def test_nested_loops(args):
    check(NESTED, args, [1.0], [0, 1], rel=1e-5, abs_=1e-6)


def test_calls_in_loop():
    check(CALL, [1.3, 0.7], [1.0], [0, 1])


def test_nested_calls_several_results():
    check(CALLS_NESTED, [0.8, 0.6], [1.0], [0, 1])


@pytest.mark.parametrize("n", [1, 2, 6, 15])  # 0, 1, 3 and 7 iterations
def test_for_loop_runtime_bounds(n):
    got = gradient(DYNFOR, [0.9, 0.4, n], [1.0])
    want = finite_difference(DYNFOR, [0.9, 0.4, n], [1.0], [0, 1])
    assert got == pytest.approx(want, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("args", [[0.9, 0.3], [0.2, 0.5]])
def test_if_inside_loop(args):
    check(IF_IN_LOOP, args, [1.0, 0.5], [0, 1])


def test_while_inside_for():
    check(WHILE_IN_FOR, [1.5, 0.3], [1.0], [0, 1], rel=1e-5)


def test_custom_derivative_replaces_generated_one():
    # g_custom says dg/da = 100 whatever a is: the gradient must use it, not cos.
    assert gradient(CUSTOM, [0.5, 2.0], [1.0]) == (200.0, 50.0)


def test_no_diff_and_detach():
    # results: p = x*y*detach(z) + z, e (no_diff), m = x*y; params x, z (y is no_diff)
    gx, gz = gradient(NODIFF, [0.5, 2.0, 3.0], [1.0, 3.0])
    assert gx == pytest.approx(2.0 * 3.0 + 3.0 * 2.0)  # d p/dx + 3 * d m/dx
    assert gz == 1.0  # the detached use of z contributes nothing


def test_int_values_carry_no_adjoint():
    (gx,) = gradient(INTS, [0.5, 3], [1.0])
    assert gx == pytest.approx(2 * 0.5 * 3 * 6)


VECTOR_LOOP = """
func.func @f(%x: vector<4xf32>, %y: vector<4xf32>) -> vector<4xf32> attributes {diff.differentiable} {
  %a = arith.mulf %x, %y : vector<4xf32>
  %s = math.sin %a : vector<4xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %s) -> (vector<4xf32>) {
    %m = arith.mulf %acc, %x : vector<4xf32>
    scf.yield %m : vector<4xf32>
  }
  func.return %r : vector<4xf32>
}
"""


def test_vectors_through_a_taped_loop():
    import numpy as np

    x = np.array([0.1, 0.2, 0.3, 0.4])
    y = np.array([1.0, 2.0, 3.0, 4.0])
    gx, gy = gradient(VECTOR_LOOP, [x, y], [[1.0, 1.0, 1.0, 1.0]])
    # r = sin(x y) x^3 elementwise
    assert gx == pytest.approx(np.cos(x * y) * y * x**3 + 3 * np.sin(x * y) * x**2, rel=1e-12)
    assert gy == pytest.approx(np.cos(x * y) * x**4, rel=1e-12)


DOT_CASES = [
    ("MATH", MATH, [0.3, 0.2]),
    ("IF", IF, [1.3, 0.7]),
    ("IF2", IF, [0.4, 0.9]),
    ("FOR", FOR, [0.4, -0.9]),
    ("WHILE", WHILE, [1.3, 0.7]),
    ("NESTED", NESTED, [1.3, 0.7]),
    ("CALL", CALL, [1.3, 0.7]),
    ("CALLS_NESTED", CALLS_NESTED, [0.8, 0.6]),
    ("IF_IN_LOOP", IF_IN_LOOP, [0.9, 0.3]),
    ("WHILE_IN_FOR", WHILE_IN_FOR, [1.5, 0.3]),
    ("NODIFF", NODIFF, [0.5, 2.0, 3.0]),
]


@pytest.mark.parametrize("name,src,args", DOT_CASES, ids=[c[0] for c in DOT_CASES])
def test_dot_product_forward_vs_reverse(name, src, args):
    """<u, J v> (diff-fwd) == <J^T u, v> (diff-rev), through the canonical pipeline."""
    module = run_pipeline(with_fwd_main(src), CANONICAL)
    assert_no_diff(module)
    fn = function_named(src, "f")
    n_din = sum(diff.arg_is_differentiable(fn, i) for i in range(len(fn.function_type.inputs.data)))
    n_dout = sum(diff.result_is_differentiable(fn, i) for i in range(len(fn.function_type.outputs.data)))
    v = [0.3 - 0.7 * k for k in range(n_din)]
    u = [1.1 + 0.4 * k for k in range(n_dout)]
    jv = run(module, "main_fwd", *args, *v)
    jtu = run(module, "main", *args, *u)
    lhs = sum(a * b for a, b in zip(u, jv))
    rhs = sum(a * b for a, b in zip(jtu, v))
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-12)


# ---- random programs (hypothesis) --------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

UNARY = ["math.sin", "math.cos", "math.tanh", "math.atan", "arith.negf"]
BINARY = ["arith.addf", "arith.subf", "arith.mulf", "div"]


@st.composite
def straight_ops(draw, pool: list[str], fresh, lines: list[str], n_min: int, n_max: int) -> None:
    for _ in range(draw(st.integers(n_min, n_max))):
        kind = draw(st.sampled_from(["u", "b", "b"]))
        name = fresh()
        if kind == "u":
            op = draw(st.sampled_from(UNARY))
            a = draw(st.sampled_from(pool))
            lines.append(f"{name} = {op} {a} : f64")
        else:
            op = draw(st.sampled_from(BINARY))
            a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
            if op == "div":  # a / (2.5 + cos b): a denominator far from zero
                c, d = fresh(), fresh()
                lines += [f"{c} = math.cos {b} : f64", f"{d} = arith.addf {c}, %k : f64", f"{name} = arith.divf {a}, {d} : f64"]
            else:
                lines.append(f"{name} = {op} {a}, {b} : f64")
        pool.append(name)


@st.composite
def random_program(draw) -> str:
    counter = [0]

    def fresh() -> str:
        counter[0] += 1
        return f"%v{counter[0]}"

    pool = ["%x", "%y", "%z"]
    lines = ["%k = arith.constant 2.5 : f64", "%zero = arith.constant 0.0 : f64"]
    for _ in range(draw(st.integers(1, 3))):
        draw(straight_ops(pool, fresh, lines, 1, 3))
        if draw(st.booleans()):
            cond = fresh()
            lines.append(f"{cond} = arith.cmpf ogt, %x, %zero : f64")
            branches = []
            for _ in range(2):
                inner_pool = list(pool)
                inner: list[str] = []
                draw(straight_ops(inner_pool, fresh, inner, 0, 3))
                branches.append((inner, draw(st.sampled_from([inner_pool[-1], inner_pool[-1], *inner_pool]))))
            res = fresh()
            lines.append(f"{res} = scf.if {cond} -> (f64) {{")
            lines += ["  " + l for l in branches[0][0]] + [f"  scf.yield {branches[0][1]} : f64", "} else {"]
            lines += ["  " + l for l in branches[1][0]] + [f"  scf.yield {branches[1][1]} : f64", "}"]
            pool.append(res)
    outs = [pool[-1], draw(st.sampled_from(pool))]
    body = "\n".join("  " + l for l in lines)
    return (
        "func.func @f(%x: f64, %y: f64, %z: f64) -> (f64, f64) attributes {diff.differentiable} {\n"
        f"{body}\n  func.return {outs[0]}, {outs[1]} : f64, f64\n}}\n"
    )


point = st.tuples(
    st.one_of(st.floats(0.2, 1.5), st.floats(-1.5, -0.2)),  # x decides the branches: away from 0
    st.floats(-1.5, 1.5),
    st.floats(-1.5, 1.5),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=random_program(), xs=point, u=st.tuples(st.floats(-2, 2), st.floats(-2, 2)))
def test_random_programs_against_finite_differences_and_forward_mode(src, xs, u):
    args = list(xs)
    module = run_pipeline(with_fwd_main(src), CANONICAL)
    assert_no_diff(module)
    grads = run(module, "main", *args, *u)
    want = finite_difference(src, args, list(u), [0, 1, 2], h=1e-5)
    assert list(grads) == pytest.approx(want, rel=1e-5, abs=1e-6), src
    v = [0.7, -0.4, 0.25]
    jv = run(module, "main_fwd", *args, *v)
    lhs = sum(a * b for a, b in zip(u, jv))
    rhs = sum(a * b for a, b in zip(grads, v))
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-11), src


# ---- loops that carry !diff.pair (forward mode inside a loop, then reverse over it) -------------

H_FWD = """
func.func @h(%a: f64, %y: f64) -> f64 attributes {diff.differentiable} {
  %m = arith.mulf %a, %y : f64
  %s = math.sin %m : f64
  %t = arith.addf %s, %a : f64
  func.return %t : f64
}
"""
PAIR_FOR = H_FWD + """
func.func @f(%x: f64, %y: f64) -> f64 attributes {diff.differentiable} {
  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  %px = diff.make_pair %x, %one : f64
  %py = diff.make_pair %y, %zero : f64
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %px) -> (!diff.pair<f64>) {
    %q = diff.fwd_diff @h(%acc, %py) : (!diff.pair<f64>, !diff.pair<f64>) -> !diff.pair<f64>
    scf.yield %q : !diff.pair<f64>
  }
  %p = diff.primal %r : !diff.pair<f64>
  %d = diff.differential %r : !diff.pair<f64>
  %o = arith.mulf %p, %d : f64
  func.return %o : f64
}
"""
PAIR_WHILE = H_FWD + """
func.func @f(%x: f64, %y: f64) -> f64 attributes {diff.differentiable} {
  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  %lim = arith.constant 3.0 : f64
  %px = diff.make_pair %x, %one : f64
  %py = diff.make_pair %y, %zero : f64
  %r = scf.while (%a = %px) : (!diff.pair<f64>) -> !diff.pair<f64> {
    %p = diff.primal %a : !diff.pair<f64>
    %c = arith.cmpf olt, %p, %lim : f64
    scf.condition(%c) %a : !diff.pair<f64>
  } do {
  ^bb0(%b: !diff.pair<f64>):
    %q = diff.fwd_diff @h(%b, %py) : (!diff.pair<f64>, !diff.pair<f64>) -> !diff.pair<f64>
    scf.yield %q : !diff.pair<f64>
  } attributes {diff.max_iters = 30 : i64}
  %d = diff.differential %r : !diff.pair<f64>
  func.return %d : f64
}
"""


# bwd_diff(fwd_diff(loop)): diff-fwd splits the carried pairs of @inner_fwd's loop into two
# carried values, so diff-rev meets plain floats there.
BWD_OF_FWD_FOR = """
func.func @inner(%x: f64, %y: f64) -> f64 attributes {diff.differentiable} {
  %lb = arith.constant 0 : index
  %ub = arith.constant 4 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%acc = %x) -> (f64) {
    %a = arith.mulf %acc, %y : f64
    %s = math.sin %a : f64
    %t = arith.addf %s, %acc : f64
    scf.yield %t : f64
  }
  func.return %r : f64
}
func.func @f(%x: f64, %y: f64) -> f64 attributes {diff.differentiable} {
  %one = arith.constant 1.0 : f64
  %half = arith.constant 0.5 : f64
  %px = diff.make_pair %x, %one : f64
  %py = diff.make_pair %y, %half : f64
  %r = diff.fwd_diff @inner(%px, %py) : (!diff.pair<f64>, !diff.pair<f64>) -> !diff.pair<f64>
  %d = diff.differential %r : !diff.pair<f64>
  func.return %d : f64
}
"""


@pytest.mark.parametrize(
    "src,args",
    [
        (PAIR_FOR, [0.7, 1.3]),
        (PAIR_FOR, [-0.4, 0.6]),
        (PAIR_WHILE, [0.9, 0.8]),
        (PAIR_WHILE, [1.4, 0.3]),
        (BWD_OF_FWD_FOR, [0.7, 1.3]),
        (BWD_OF_FWD_FOR, [-0.2, 0.9]),
    ],
    ids=["pair-for", "pair-for-negative", "pair-while", "pair-while-short", "bwd-of-fwd-for", "bwd-of-fwd-for-negative"],
)
def test_reverse_over_forward_with_loops_against_finite_differences(src, args):
    module = run_pipeline(with_bwd_main(src), CANONICAL)
    assert_no_diff(module)
    got = run(module, "main", *args, 1.0)
    # the primal @f holds diff ops itself: differentiate its lowered copy numerically
    f = lambda xs: run(module, "f", *xs)[0]  # noqa: E731
    want = [central(f, args, [1.0 if j == i else 0.0 for j in range(len(args))]) for i in range(len(args))]
    assert got == pytest.approx(want, rel=1e-6, abs=1e-7)
