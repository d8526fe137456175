"""Every derivative rule, checked numerically: one-op functions, their JVP and VJP built with
emit_jvp / emit_vjp, run by diffc.interp, compared with float64 central finite differences and
with each other (dot-product test <u, J v> == <J^T u, v>)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import AnyFloat, FloatAttr, ModuleOp, VectorType, f32, f64, i1, i32
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def
from xdsl.rewriter import InsertPoint

from diffc.interp import run_function
from diffc.rules import (
    CONVERT,
    RULES,
    RuleBuilder,
    emit_jvp,
    emit_vjp,
    lookup_rule,
    register_nondifferentiable,
    register_rule,
)
from diffc.rules.arith_ext import RemFOp

V4 = VectorType(f64, [4])
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------------------------------------
# Harness: primal, JVP and VJP functions of one op


def _is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat) or (isinstance(t, VectorType) and isinstance(t.element_type, AnyFloat))


def _zero(b: RuleBuilder, t: Attribute) -> SSAValue:
    return b.const(0.0, t)


def _func(name: str, arg_types: list[Attribute], body: Callable[[Block, RuleBuilder], list[SSAValue]]) -> func.FuncOp:
    block = Block(arg_types=arg_types)
    b = RuleBuilder(InsertPoint.at_end(block))
    results = body(block, b)
    block.add_op(func.ReturnOp(*results))
    return func.FuncOp.from_region(name, arg_types, [r.type for r in results], Region(block))


def build_module(factory: Callable[..., Operation], types: list[Attribute]) -> ModuleOp:
    """@primal(x...) -> y; @jvp(x..., dx for float x...) -> dy; @vjp(x..., ybar) -> xbar..."""
    n = len(types)
    fidx = [i for i, t in enumerate(types) if _is_float(t)]

    def primal(block: Block, b: RuleBuilder):
        return [b.insert(factory(*block.args)).results[0]]

    def jvp(block: Block, b: RuleBuilder):
        op = b.insert(factory(*block.args[:n]))
        tangents: list[SSAValue | None] = [None] * n
        for k, i in enumerate(fidx):
            tangents[i] = block.args[n + k]
        dy = emit_jvp(b, op, tangents)
        rtype = op.results[0].type
        if dy is None:
            dy = _zero(b, rtype)
        assert dy.type == rtype, f"tangent type {dy.type} != result type {rtype}"
        return [dy]

    def vjp(block: Block, b: RuleBuilder):
        op = b.insert(factory(*block.args[:n]))
        adj = emit_vjp(b, op, block.args[n])
        assert len(adj) == n
        out = []
        for i in fidx:
            a = adj[i] if adj[i] is not None else _zero(b, types[i])
            assert a.type == types[i], f"adjoint type {a.type} != operand type {types[i]}"
            out.append(a)
        for i in range(n):
            if i not in fidx:
                assert adj[i] is None, "a non-float operand got an adjoint"
        return out

    probe = factory(*Block(arg_types=types).args)
    rtype = probe.results[0].type
    module = ModuleOp(
        [
            _func("primal", types, primal),
            _func("jvp", types + [types[i] for i in fidx], jvp),
            _func("vjp", types + [rtype], vjp),
        ]
    )
    module.verify()
    return module


def _arr(x) -> np.ndarray:
    return np.atleast_1d(np.asarray(x, dtype=np.float64))


def check_op(module: ModuleOp, types: list[Attribute], xs: list, extra=(), rtol=2e-6, atol=2e-6):
    """JVP and VJP at xs against central differences, then the dot-product test."""
    fidx = [i for i, t in enumerate(types) if _is_float(t)]
    rng = np.random.default_rng(abs(hash(tuple(float(np.sum(_arr(x))) for x in xs))) % 2**32)

    def f(args):
        return _arr(run_function(module, "primal", *args, extra=extra)[0])

    def shaped(v, t):
        return v if isinstance(t, VectorType) else float(v[0])

    y0 = f(xs)
    # directional FD for a random direction per float operand
    dirs = {i: rng.standard_normal(_arr(xs[i]).shape) for i in fidx}
    scale = max(1.0, max(float(np.max(np.abs(_arr(xs[i])))) for i in fidx))
    h = 1e-6 * scale
    plus = list(xs)
    minus = list(xs)
    for i in fidx:
        plus[i] = shaped(_arr(xs[i]) + h * dirs[i], types[i])
        minus[i] = shaped(_arr(xs[i]) - h * dirs[i], types[i])
    fd = (f(plus) - f(minus)) / (2 * h)
    (jv,) = run_function(module, "jvp", *xs, *[shaped(dirs[i], types[i]) for i in fidx], extra=extra)
    np.testing.assert_allclose(_arr(jv), fd, rtol=1e-5, atol=1e-5 * scale * max(1.0, float(np.max(np.abs(y0)))))

    # VJP against per-operand FD gradients of <u, f>
    u = rng.standard_normal(y0.shape)
    ybar = u if isinstance(module.ops.first.function_type.outputs.data[0], VectorType) else float(u[0])
    grads = run_function(module, "vjp", *xs, ybar, extra=extra)
    assert len(grads) == len(fidx)
    for g, i in zip(grads, fidx):
        xi = _arr(xs[i])
        fd_g = np.zeros_like(xi)
        for k in range(xi.size):
            e = np.zeros_like(xi)
            e.flat[k] = h
            p, m = list(xs), list(xs)
            p[i] = shaped(xi + e, types[i])
            m[i] = shaped(xi - e, types[i])
            fd_g.flat[k] = float(np.dot(u, f(p) - f(m))) / (2 * h)
        np.testing.assert_allclose(_arr(g), fd_g, rtol=1e-5, atol=1e-5 * scale * max(1.0, float(np.max(np.abs(y0)))))

    # dot-product test, exact up to rounding
    lhs = float(np.dot(u, _arr(jv)))
    rhs = sum(float(np.dot(_arr(g), dirs[i].ravel())) for g, i in zip(grads, fidx))
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# The ops and their domains


def R(lo: float, hi: float):
    return (lo, hi)


@dataclass
class Spec:
    name: str
    factory: Callable[..., Operation]
    domains: list  # one strategy per float operand
    ok: Callable[..., bool] = lambda *xs: True  # away from kinks, for every element
    vector: bool = False


def _not_near_int(v: float, eps=1e-3) -> bool:
    return abs(v - round(v)) > eps


U = lambda cls: (lambda x: cls(x))  # noqa: E731
B = lambda cls: (lambda x, y: cls(x, y))  # noqa: E731
W = R(-3, 3)

SPECS = [
    Spec("addf", B(arith.AddfOp), [W, W], vector=True),
    Spec("subf", B(arith.SubfOp), [W, W], vector=True),
    Spec("mulf", B(arith.MulfOp), [W, W], vector=True),
    Spec("divf", B(arith.DivfOp), [W, R(0.3, 3)], vector=True),
    Spec("negf", U(arith.NegfOp), [W], vector=True),
    Spec("remf", B(RemFOp), [R(-8, 8), R(0.7, 3)], ok=lambda x, y: _not_near_int(x / y, 1e-2), vector=True),
    Spec("minimumf", B(arith.MinimumfOp), [W, W], ok=lambda x, y: abs(x - y) > 1e-3, vector=True),
    Spec("maximumf", B(arith.MaximumfOp), [W, W], ok=lambda x, y: abs(x - y) > 1e-3, vector=True),
    Spec("minnumf", B(arith.MinnumfOp), [W, W], ok=lambda x, y: abs(x - y) > 1e-3, vector=True),
    Spec("maxnumf", B(arith.MaxnumfOp), [W, W], ok=lambda x, y: abs(x - y) > 1e-3, vector=True),
    Spec("exp", U(math.ExpOp), [W], vector=True),
    Spec("exp2", U(math.Exp2Op), [W]),
    Spec("expm1", U(math.ExpM1Op), [W]),
    Spec("log", U(math.LogOp), [R(0.1, 5)], vector=True),
    Spec("log2", U(math.Log2Op), [R(0.1, 5)]),
    Spec("log10", U(math.Log10Op), [R(0.1, 5)]),
    Spec("log1p", U(math.Log1pOp), [R(-0.9, 5)]),
    Spec("sqrt", U(math.SqrtOp), [R(0.1, 5)], vector=True),
    Spec("rsqrt", U(math.RsqrtOp), [R(0.1, 5)]),
    Spec("cbrt", U(math.CbrtOp), [R(0.1, 5)]),
    Spec("powf", B(math.PowFOp), [R(0.2, 3), R(-2, 2)], vector=True),
    Spec("sin", U(math.SinOp), [W], vector=True),
    Spec("cos", U(math.CosOp), [W]),
    Spec("tan", U(math.TanOp), [R(-1.2, 1.2)]),
    Spec("asin", U(math.AsinOp), [R(-0.9, 0.9)]),
    Spec("acos", U(math.AcosOp), [R(-0.9, 0.9)]),
    Spec("atan", U(math.AtanOp), [W]),
    Spec("atan2", B(math.Atan2Op), [W, W], ok=lambda y, x: x * x + y * y > 0.01 and not (x < 0 and abs(y) < 1e-2), vector=True),
    Spec("sinh", U(math.SinhOp), [W]),
    Spec("cosh", U(math.CoshOp), [W]),
    Spec("tanh", U(math.TanhOp), [W], vector=True),
    Spec("asinh", U(math.AsinhOp), [W]),
    Spec("acosh", U(math.AcoshOp), [R(1.1, 5)]),
    Spec("atanh", U(math.AtanhOp), [R(-0.9, 0.9)]),
    Spec("absf", U(math.AbsFOp), [W], ok=lambda x: abs(x) > 1e-3, vector=True),
    Spec("erf", U(math.ErfOp), [W], vector=True),
    Spec("copysign", B(math.CopySignOp), [W, W], ok=lambda x, y: abs(x) > 1e-3 and abs(y) > 1e-3, vector=True),
    Spec("fma", lambda a, b, c: math.FmaOp(a, b, c), [W, W, W], vector=True),
    Spec("floor", U(math.FloorOp), [W], ok=_not_near_int, vector=True),
    Spec("ceil", U(math.CeilOp), [W], ok=_not_near_int),
    Spec("round", U(math.RoundOp), [W], ok=lambda x: _not_near_int(x + 0.5)),
    Spec("roundeven", U(math.RoundEvenOp), [W], ok=lambda x: _not_near_int(x + 0.5)),
    Spec("trunc", U(math.TruncOp), [W], ok=_not_near_int),
]
BY_NAME = {s.name: s for s in SPECS}
CASES = [(s.name, f64) for s in SPECS] + [(s.name, V4) for s in SPECS if s.vector]


def _draw_point(data, spec: Spec, t: Attribute) -> list:
    """Random points in the op's domain; an element at a kink is redrawn (deterministically
    from the drawn seed) rather than filtered, since hypothesis favours 0 and integers."""
    n = 4 if isinstance(t, VectorType) else 1
    cols = [[data.draw(st.floats(lo, hi)) for _ in range(n)] for lo, hi in spec.domains]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    for k in range(n):
        for _ in range(50):
            if spec.ok(*[c[k] for c in cols]):
                break
            for c, (lo, hi) in zip(cols, spec.domains):
                c[k] = float(rng.uniform(lo, hi))
        assert spec.ok(*[c[k] for c in cols])
    return [c if isinstance(t, VectorType) else c[0] for c in cols]


_MODULES: dict = {}


def _module(name: str, t: Attribute) -> ModuleOp:
    key = (name, str(t))
    if key not in _MODULES:
        spec = BY_NAME[name]
        _MODULES[key] = build_module(spec.factory, [t] * len(spec.domains))
    return _MODULES[key]


@pytest.mark.parametrize("name,t", CASES, ids=[f"{n}-{'vec' if isinstance(t, VectorType) else 'f64'}" for n, t in CASES])
@SETTINGS
@given(data=st.data())
def test_rule_against_finite_differences(name, t, data):
    spec = BY_NAME[name]
    xs = _draw_point(data, spec, t)
    check_op(_module(name, t), [t] * len(spec.domains), xs)


# ---------------------------------------------------------------------------------------------
# Ops with non-float operands or a change of type


@pytest.mark.parametrize("t", [f64, V4], ids=["f64", "vec"])
@pytest.mark.parametrize("cond", [0, 1])
def test_select(t, cond):
    m = build_module(lambda c, a, b: arith.SelectOp(c, a, b), [i1, t, t])
    a = [0.5, -1.0, 2.0, 3.0] if t == V4 else 0.5
    b = [1.5, 4.0, -2.0, 0.25] if t == V4 else -1.25
    check_op(m, [i1, t, t], [cond, a, b])
    # the adjoint goes wholly to the chosen value
    ybar = [1.0, 2.0, 3.0, 4.0] if t == V4 else 7.0
    ga, gb = run_function(m, "vjp", cond, a, b, ybar)
    chosen, other = (ga, gb) if cond else (gb, ga)
    np.testing.assert_array_equal(_arr(chosen), _arr(ybar))
    np.testing.assert_array_equal(_arr(other), 0.0)


def test_select_jvp_with_one_zero_tangent():
    block = Block(arg_types=[i1, f64, f64, f64])
    c, a, bb, da = block.args
    b = RuleBuilder(InsertPoint.at_end(block))
    op = b.insert(arith.SelectOp(c, a, bb))
    dy = emit_jvp(b, op, [None, da, None])
    block.add_op(func.ReturnOp(dy))
    f = func.FuncOp.from_region("f", [i1, f64, f64, f64], [f64], Region(block))
    m = ModuleOp([f])
    m.verify()
    assert run_function(m, "f", 1, 1.0, 2.0, 3.0) == (3.0,)
    assert run_function(m, "f", 0, 1.0, 2.0, 3.0) == (0.0,)
    assert emit_jvp(b, op, [None, None, None]) is None


@pytest.mark.parametrize(
    "src,dst,cls",
    [(f32, f64, arith.ExtFOp), (f64, f32, arith.TruncFOp), (VectorType(f32, [4]), V4, arith.ExtFOp)],
    ids=["extf", "truncf", "extf-vec"],
)
def test_float_casts_convert_the_derivative(src, dst, cls):
    m = build_module(lambda x: cls(x, dst), [src])  # build_module asserts the types
    x = [0.5, -1.0, 2.0, 3.0] if isinstance(src, VectorType) else 1.25
    (dy,) = run_function(m, "jvp", x, [1.0, 2.0, 3.0, 4.0] if isinstance(src, VectorType) else 3.0)
    np.testing.assert_array_equal(_arr(dy), [1.0, 2.0, 3.0, 4.0] if isinstance(src, VectorType) else [3.0])
    (g,) = run_function(m, "vjp", x, [4.0, 3.0, 2.0, 1.0] if isinstance(src, VectorType) else -2.0)
    np.testing.assert_array_equal(_arr(g), [4.0, 3.0, 2.0, 1.0] if isinstance(src, VectorType) else [-2.0])
    # exactly one conversion op in each derivative function, of the right kind
    ops = {f.sym_name.data: [type(o) for o in f.body.ops] for f in m.ops}
    assert ops["jvp"].count(arith.ExtFOp) + ops["jvp"].count(arith.TruncFOp) == 2  # primal + tangent
    assert ops["vjp"].count(arith.ExtFOp) + ops["vjp"].count(arith.TruncFOp) == 2  # primal + adjoint
    back = arith.TruncFOp if cls is arith.ExtFOp else arith.ExtFOp
    assert back in ops["vjp"] and back not in ops["jvp"]


def test_convert_partial_of_same_type_is_free():
    block = Block(arg_types=[f64, f64])
    b = RuleBuilder(InsertPoint.at_end(block))
    assert b.convert(block.args[1], f64) is block.args[1]
    assert repr(CONVERT) == "CONVERT"


# ---------------------------------------------------------------------------------------------
# Non-differentiable ops and coverage


def _one_op_block(types):
    block = Block(arg_types=types)
    return block, RuleBuilder(InsertPoint.at_end(block))


@pytest.mark.parametrize(
    "make",
    [
        lambda x, y, n: arith.CmpfOp(x, y, "olt"),
        lambda x, y, n: arith.FPToSIOp(x, i32),
        lambda x, y, n: arith.FPToUIOp(x, i32),
        lambda x, y, n: arith.SIToFPOp(n, f64),
        lambda x, y, n: arith.UIToFPOp(n, f64),
        lambda x, y, n: arith.AddiOp(n, n),
        lambda x, y, n: arith.CmpiOp(n, n, "slt"),
        lambda x, y, n: math.FloorOp(x),
        lambda x, y, n: math.RoundOp(x),
        lambda x, y, n: arith.ConstantOp(FloatAttr(1.0, f64)),
    ],
)
def test_nondifferentiable_ops_have_zero_derivative(make):
    block, b = _one_op_block([f64, f64, i32])
    x, y, n = block.args
    op = b.insert(make(x, y, n))
    rule = lookup_rule(op)
    assert rule is not None and not rule.differentiable
    tangents = [x if _is_float(o.type) else None for o in op.operands]
    assert emit_jvp(b, op, tangents) is None
    assert emit_vjp(b, op, x) == [None] * len(op.operands)


def test_every_listed_op_has_a_rule():
    from xdsl.dialects import arith as A
    from xdsl.dialects import math as M

    differentiable = [
        A.AddfOp, A.SubfOp, A.MulfOp, A.DivfOp, A.NegfOp, RemFOp, A.MinimumfOp, A.MaximumfOp,
        A.MinnumfOp, A.MaxnumfOp, A.SelectOp, A.ExtFOp, A.TruncFOp,
        M.ExpOp, M.Exp2Op, M.LogOp, M.Log2Op, M.Log10Op, M.Log1pOp, M.ExpM1Op, M.SqrtOp,
        M.RsqrtOp, M.PowFOp, M.SinOp, M.CosOp, M.TanOp, M.AsinOp, M.AcosOp, M.AtanOp,
        M.Atan2Op, M.SinhOp, M.CoshOp, M.TanhOp, M.AbsFOp, M.ErfOp, M.CopySignOp, M.FmaOp,
    ]
    zero = [
        M.FloorOp, M.CeilOp, M.RoundOp, M.RoundEvenOp, M.TruncOp, A.SIToFPOp, A.UIToFPOp,
        A.FPToSIOp, A.FPToUIOp, A.CmpfOp, A.CmpiOp, A.ConstantOp, A.AddiOp, A.MuliOp, A.DivSIOp,
        A.RemSIOp, A.AndIOp, A.ShLIOp, A.IndexCastOp, A.ExtSIOp, A.TruncIOp,
    ]
    for t in differentiable:
        rule = lookup_rule(t)
        assert rule is not None and rule.differentiable and rule.partials is not None, t.name
    for t in zero:
        rule = lookup_rule(t)
        assert rule is not None and not rule.differentiable, t.name
    # every spec above is numerically tested
    tested = {type(s.factory(*Block(arg_types=[f64] * len(s.domains)).args)) for s in SPECS}
    assert set(differentiable) - {A.SelectOp, A.ExtFOp, A.TruncFOp} <= tested


def test_unknown_op_raises():
    @irdl_op_definition
    class UnknownOp(IRDLOperation):
        name = "test.unknown"
        x = operand_def(f64)
        y = result_def(f64)

    block, b = _one_op_block([f64])
    op = b.insert(UnknownOp(operands=[block.args[0]], result_types=[f64]))
    assert lookup_rule(op) is None
    with pytest.raises(KeyError):
        emit_jvp(b, op, [block.args[0]])
    with pytest.raises(KeyError):
        emit_vjp(b, op, block.args[0])


def test_register_rule_needs_something():
    with pytest.raises(ValueError):
        register_rule(arith.AddfOp)


# ---------------------------------------------------------------------------------------------
# A plugin op: defined here, registered in one line, differentiated by both emitters


@irdl_op_definition
class CubeOp(IRDLOperation):
    """test.cube: x^3 * y (a plugin's own op)."""

    name = "test.cube"
    x = operand_def(f64)
    y = operand_def(f64)
    result = result_def(f64)

    def __init__(self, x: SSAValue, y: SSAValue):
        super().__init__(operands=[x, y], result_types=[f64])


@register_impls
class CubeFunctions(InterpreterFunctions):
    @impl(CubeOp)
    def run_cube(self, interpreter: Interpreter, op: CubeOp, args: PythonValues):
        return (args[0] ** 3 * args[1],)


@SETTINGS
@given(x=st.floats(-2, 2), y=st.floats(-2, 2))
def test_plugin_rule_both_modes(x, y):
    register_rule(CubeOp, lambda b, op: [b.mul(3.0, b.mul(b.mul(op.x, op.x), op.y)), b.mul(b.mul(op.x, op.x), op.x)])
    try:
        m = build_module(lambda a, c: CubeOp(a, c), [f64, f64])
        check_op(m, [f64, f64], [x, y], extra=[CubeFunctions()])
        # and against the hand derivative
        (dy,) = run_function(m, "jvp", x, y, 1.0, 0.0, extra=[CubeFunctions()])
        assert dy == pytest.approx(3 * x * x * y, abs=1e-12)
        gx, gy = run_function(m, "vjp", x, y, 1.0, extra=[CubeFunctions()])
        assert gx == pytest.approx(3 * x * x * y, abs=1e-12) and gy == pytest.approx(x**3, abs=1e-12)
    finally:
        del RULES[CubeOp]


def test_plugin_nondifferentiable_and_hooks():
    register_nondifferentiable(CubeOp)
    try:
        block, b = _one_op_block([f64, f64])
        op = b.insert(CubeOp(*block.args))
        assert emit_jvp(b, op, list(block.args)) is None
        # a hook-only rule: forward mode works, reverse mode says it has none
        register_rule(CubeOp, jvp=lambda b, op, ts: ts[0])
        assert emit_jvp(b, op, list(block.args)) is block.args[0]
        with pytest.raises(NotImplementedError):
            emit_vjp(b, op, block.args[0])
    finally:
        del RULES[CubeOp]
