"""Runs lowered IR (func/arith/math/scf/memref, a little of vector) with xDSL's interpreter.

    module = parse_module(text)
    (y,) = run_function(module, "f", 1.5, [1.0, 2.0])

Values while interpreting:
  * floats (any width: f16/f32/f64) are Python floats computed in float64: by default no
    rounding to the narrower type, so arith.truncf / extf are identities on the value. This
    makes the interpreter a float64-exact reference for finite-difference tests. With
    `float_rounding=True` every f32 / f16 value (arguments and each op's results, vectors
    elementwise) is rounded to its width, as a device computing in that width would: the
    basic operations then match OpenCL's float bit for bit (the float64 result of +, -, *, /
    and sqrt rounds correctly to float32); math functions within the device's ulp error.
  * integers, index and i1 are Python ints / bools, as in xDSL.
  * vector<... x float> values are float64 numpy arrays of the vector's shape; arith and math
    ops work elementwise on them; `dense<...>` constants (splat or not) become arrays; results
    come back as arrays. Pass vectors as lists, tuples or arrays.
  * memrefs are xDSL's ShapedArray (memref.alloc/load/store/get_global as in xDSL).

Float arithmetic follows IEEE (x / 0 = inf, log(-1) = NaN), not Python's exceptions.
An scf.while that runs more than `max_while_steps` iterations (default MAX_WHILE_STEPS) raises
WhileLimitError naming the function and the loop, instead of hanging; one that runs more than
its `diff.max_iters = N` raises MaxItersError naming the loop and N.
On top of xDSL's own implementations this module adds the math ops xDSL lacks, arith.divf,
remf (diffc.rules.arith_ext), minnumf/maxnumf, extf/truncf, int<->float casts, the integer
ops xDSL lacks (divui, remui, min/max, shrui, ext/trunc, ceildiv, math.absi, and addi/subi/muli
on integer vectors), memref.alloca (diff-rev's
tapes), memref.atomic_rmw (one thread runs, so an atomic is a read-modify-write), arith.bitcast
between floats and integers of one width, and numpy-aware versions of the float ops so that
vectors work.
"""

from __future__ import annotations

import math as pymath
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, math, memref, scf, vector
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    FileLineColLoc,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    OpImplResult,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.builtin import BuiltinFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.math import MathFunctions
from xdsl.interpreters.memref import MemRefFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.ir import Attribute, Operation
from xdsl.utils.comparisons import to_signed, to_unsigned

from diffc.rules.arith_ext import RemFOp
from diffc.xdsl_adapter import ResultHookInterpreter

# ---------------------------------------------------------------------------------------------
# Parsing


def make_context() -> Context:
    """The compiler's context (diffc.compiler.make_context): lowered IR, and diff so that
    unlowered IR parses too."""
    from diffc.compiler import make_context as compiler_context

    return compiler_context()


def parse_module(text: str) -> ModuleOp:
    """Parses IR text into a verified module (the compiler's parser; ops are not located, so
    messages about them name no place)."""
    from diffc.compiler import parse_ir

    module = parse_ir(text, locate=False)
    module.verify()
    return module


# ---------------------------------------------------------------------------------------------
# Value helpers

MAX_WHILE_STEPS = 1_000_000


def _describe_while(op: scf.WhileOp) -> tuple[str, str]:
    """(`@function`, `scf.while defining %r at file:line:col`) for messages about a loop."""
    fn = op.parent_op()
    while fn is not None and not isinstance(fn, func.FuncOp):
        fn = fn.parent_op()
    where = f"@{fn.sym_name.data}" if isinstance(fn, func.FuncOp) else "<module>"
    loc = op.location
    at = f" at {loc.filename.data}:{loc.line.data}:{loc.column.data}" if isinstance(loc, FileLineColLoc) else ""
    names = ", ".join(f"%{r.name_hint}" for r in op.results if r.name_hint)
    return where, f"scf.while{' defining ' + names if names else ''}{at}"


class WhileLimitError(RuntimeError):
    """An scf.while ran more iterations than the interpreter allows."""

    def __init__(self, op: scf.WhileOp, limit: int):
        where, loop = _describe_while(op)
        super().__init__(
            f"in function {where}: {loop} did not finish within {limit} iterations "
            f"(max_while_steps={limit}; pass a larger max_while_steps if it is meant to run longer)"
        )
        self.function = where
        self.limit = limit


class MaxItersError(RuntimeError):
    """An scf.while ran more iterations than its `diff.max_iters` bound declares. Reverse mode
    tapes that many iterations only: on a device the gradient of such a run is NaN."""

    def __init__(self, op: scf.WhileOp, bound: int):
        where, loop = _describe_while(op)
        super().__init__(
            f"in function {where}: {loop} ran more than its diff.max_iters = {bound} iterations "
            f"([MaxIters({bound})] in Slang); raise the bound to cover every run of the loop"
        )
        self.function = where
        self.bound = bound


def _round_to(x: Any, dtype: type) -> Any:
    if _is_vec(x):
        return x.astype(dtype).astype(np.float64)
    return float(dtype(x))


_ROUNDING: dict[type, type] = {Float32Type: np.float32, Float16Type: np.float16}


def _round_value(x: Any, t: Attribute) -> Any:
    """`x` rounded to the width of float type `t` (or of its vector elements); else `x`."""
    elem = t.element_type if isinstance(t, VectorType) else t
    dtype = _ROUNDING.get(type(elem))
    if dtype is None or not isinstance(x, float | np.ndarray | np.floating):
        return x
    with np.errstate(all="ignore"):
        return _round_to(x, dtype)


class RoundingInterpreter(ResultHookInterpreter):
    """Rounds each f32 / f16 result to its width after every op."""

    def after_op(self, op: Operation, result: OpImplResult) -> OpImplResult:
        if not any(type(_elem(r.type)) in _ROUNDING for r in op.results):
            return result
        values = tuple(_round_value(v, r.type) for v, r in zip(result.values, op.results, strict=True))
        return OpImplResult(values, result.terminator_value)


def _elem(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t



# memref.atomic_rmw kinds (MLIR's numbering) -> new value from (old, value, integer width)
_ATOMIC_UPDATE: dict[int, Callable[[Any, Any, int], Any]] = {
    0: lambda old, v, w: old + v,  # addf
    1: lambda old, v, w: to_signed(old + v, w),  # addi
    2: lambda old, v, w: v,  # assign
    3: lambda old, v, w: max(old, v),  # maximumf
    4: lambda old, v, w: max(to_signed(old, w), to_signed(v, w)),  # maxs
    5: lambda old, v, w: v if to_unsigned(v, w) > to_unsigned(old, w) else old,  # maxu
    6: lambda old, v, w: min(old, v),  # minimumf
    7: lambda old, v, w: min(to_signed(old, w), to_signed(v, w)),  # mins
    8: lambda old, v, w: v if to_unsigned(v, w) < to_unsigned(old, w) else old,  # minu
}
# struct formats of the scalar types arith.bitcast converts between
_BITS = {"f16": "<e", "f32": "<f", "f64": "<d", "i16": "<h", "i32": "<i", "i64": "<q"}


def _bit_format(t: Attribute) -> str:
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    return f"f{t.bitwidth}"  # type: ignore[attr-defined]


def _is_vec(x: Any) -> bool:
    return isinstance(x, np.ndarray)


def _out(x: Any) -> Any:
    """A numpy scalar back to a Python float / bool; arrays stay arrays."""
    if isinstance(x, np.ndarray):
        return x if x.ndim else x.item()
    if isinstance(x, np.generic):
        return x.item()
    return x


def _fl(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Lifts a numpy function over floats: IEEE semantics, scalars back to Python floats."""

    def run(*args: Any) -> Any:
        with np.errstate(all="ignore"):
            conv = [a if _is_vec(a) else np.float64(a) for a in args]
            return _out(fn(*conv))

    return run


def _int_width(interp: Interpreter, t: Attribute) -> int:
    if isinstance(t, VectorType):
        t = t.element_type
    if isinstance(t, IndexType):
        return interp.index_bitwidth
    assert isinstance(t, IntegerType), t
    return t.width.data


def _round_half_away(x: Any) -> Any:
    return np.copysign(np.floor(np.abs(x) + 0.5), x)


def _erf(x: Any) -> Any:
    if _is_vec(x):
        return np.vectorize(pymath.erf, otypes=[np.float64])(x)
    return pymath.erf(float(x))


_UNARY: dict[type[Operation], Callable[..., Any]] = {
    math.AbsFOp: np.abs,
    math.AcosOp: np.arccos,
    math.AcoshOp: np.arccosh,
    math.AsinOp: np.arcsin,
    math.AsinhOp: np.arcsinh,
    math.AtanOp: np.arctan,
    math.AtanhOp: np.arctanh,
    math.CbrtOp: np.cbrt,
    math.CeilOp: np.ceil,
    math.CosOp: np.cos,
    math.CoshOp: np.cosh,
    math.ErfOp: _erf,
    math.Exp2Op: np.exp2,
    math.ExpM1Op: np.expm1,
    math.ExpOp: np.exp,
    math.FloorOp: np.floor,
    math.Log10Op: np.log10,
    math.Log1pOp: np.log1p,
    math.Log2Op: np.log2,
    math.LogOp: np.log,
    math.RoundEvenOp: np.rint,
    math.RoundOp: _round_half_away,
    math.RsqrtOp: lambda x: 1.0 / np.sqrt(x),
    math.SinOp: np.sin,
    math.SinhOp: np.sinh,
    math.SqrtOp: np.sqrt,
    math.TanOp: np.tan,
    math.TanhOp: np.tanh,
    math.TruncOp: np.trunc,
    arith.NegfOp: np.negative,
}


def _minimum(x: Any, y: Any) -> Any:
    # NaN-propagating; -0 < +0
    r = np.minimum(x, y)
    both_zero = (x == 0) & (y == 0)
    return np.where(both_zero, np.where(np.signbit(x) | np.signbit(y), -0.0, 0.0), r)


def _maximum(x: Any, y: Any) -> Any:
    r = np.maximum(x, y)
    both_zero = (x == 0) & (y == 0)
    return np.where(both_zero, np.where(np.signbit(x) & np.signbit(y), -0.0, 0.0), r)


_BINARY: dict[type[Operation], Callable[..., Any]] = {
    arith.AddfOp: np.add,
    arith.SubfOp: np.subtract,
    arith.MulfOp: np.multiply,
    arith.DivfOp: np.divide,
    RemFOp: np.fmod,
    arith.MinimumfOp: _minimum,
    arith.MaximumfOp: _maximum,
    arith.MinnumfOp: np.fmin,
    arith.MaxnumfOp: np.fmax,
    math.Atan2Op: np.arctan2,
    math.CopySignOp: np.copysign,
    math.PowFOp: np.power,
}


def _cmpf(pred: int, x: Any, y: Any) -> Any:
    o = ~(np.isnan(x) | np.isnan(y))
    u = ~o
    table = {
        0: lambda: np.zeros_like(o),
        1: lambda: (x == y) & o,
        2: lambda: (x > y) & o,
        3: lambda: (x >= y) & o,
        4: lambda: (x < y) & o,
        5: lambda: (x <= y) & o,
        6: lambda: (x != y) & o,
        7: lambda: o,
        8: lambda: (x == y) | u,
        9: lambda: (x > y) | u,
        10: lambda: (x >= y) | u,
        11: lambda: (x < y) | u,
        12: lambda: (x <= y) | u,
        13: lambda: (x != y) | u,
        14: lambda: u,
        15: lambda: np.ones_like(o),
    }
    return table[pred]()


@register_impls
class DiffcFunctions(InterpreterFunctions):
    """Implementations that replace or complete xDSL's (registered with override=True)."""

    # --- constants -------------------------------------------------------------------------
    @impl(arith.ConstantOp)
    def run_constant(self, interp: Interpreter, op: arith.ConstantOp, args: PythonValues):
        value = op.value
        if isinstance(value, DenseIntOrFPElementsAttr):
            t = value.get_type()
            vals = value.get_values()
            shape = tuple(t.get_shape())
            n = int(np.prod(shape)) if shape else 1
            if len(vals) == 1 and n != 1:
                vals = list(vals) * n
            dtype = np.float64 if isinstance(t.element_type, AnyFloat) else np.int64
            return (np.array(vals, dtype=dtype).reshape(shape),)
        if isinstance(value, FloatAttr):
            return (float(value.value.data),)
        if isinstance(value, IntegerAttr):
            if isinstance(value.type, IndexType):
                return (to_signed(value.value.data, interp.index_bitwidth),)
            return (value.value.data,)
        raise NotImplementedError(f"arith.constant of {value}")

    # --- float comparisons and selects -----------------------------------------------------
    @impl(arith.CmpfOp)
    def run_cmpf(self, interp: Interpreter, op: arith.CmpfOp, args: PythonValues):
        with np.errstate(all="ignore"):
            r = _cmpf(op.predicate.value.data, np.asarray(args[0], dtype=np.float64), np.asarray(args[1], dtype=np.float64))
        return (bool(r) if np.ndim(r) == 0 else r,)

    @impl(arith.SelectOp)
    def run_select(self, interp: Interpreter, op: arith.SelectOp, args: PythonValues):
        cond, a, b = args
        if _is_vec(cond):
            return (np.where(cond, a, b),)
        return (a if cond else b,)

    # --- float casts -----------------------------------------------------------------------
    @impl(arith.ExtFOp)
    def run_extf(self, interp: Interpreter, op: arith.ExtFOp, args: PythonValues):
        return (args[0],)

    @impl(arith.TruncFOp)
    def run_truncf(self, interp: Interpreter, op: arith.TruncFOp, args: PythonValues):
        return (args[0],)

    @impl(arith.SIToFPOp)
    def run_sitofp(self, interp: Interpreter, op: arith.SIToFPOp, args: PythonValues):
        return (float(to_signed(int(args[0]), _int_width(interp, op.input.type))),)

    @impl(arith.UIToFPOp)
    def run_uitofp(self, interp: Interpreter, op: arith.UIToFPOp, args: PythonValues):
        return (float(to_unsigned(int(args[0]), _int_width(interp, op.input.type))),)

    @impl(arith.FPToSIOp)
    def run_fptosi(self, interp: Interpreter, op: arith.FPToSIOp, args: PythonValues):
        return (to_signed(int(pymath.trunc(args[0])), _int_width(interp, op.result.type)),)

    @impl(arith.FPToUIOp)
    def run_fptoui(self, interp: Interpreter, op: arith.FPToUIOp, args: PythonValues):
        return (to_unsigned(int(pymath.trunc(args[0])), _int_width(interp, op.result.type)),)

    # --- integer ops xDSL lacks ------------------------------------------------------------
    def _ints(self, interp: Interpreter, op: Operation, args: PythonValues, signed: bool):
        w = _int_width(interp, op.operands[0].type)
        conv = to_signed if signed else to_unsigned
        return w, [conv(int(a), w) for a in args]

    @impl(arith.DivUIOp)
    def run_divui(self, interp: Interpreter, op: arith.DivUIOp, args: PythonValues):
        w, (a, b) = self._ints(interp, op, args, False)
        return (to_signed(a // b, w),)

    @impl(arith.RemUIOp)
    def run_remui(self, interp: Interpreter, op: arith.RemUIOp, args: PythonValues):
        w, (a, b) = self._ints(interp, op, args, False)
        return (to_signed(a % b, w),)

    @impl(arith.CeilDivSIOp)
    def run_ceildivsi(self, interp: Interpreter, op: arith.CeilDivSIOp, args: PythonValues):
        w, (a, b) = self._ints(interp, op, args, True)
        return (to_signed(-((-a) // b), w),)

    @impl(arith.CeilDivUIOp)
    def run_ceildivui(self, interp: Interpreter, op: arith.CeilDivUIOp, args: PythonValues):
        w, (a, b) = self._ints(interp, op, args, False)
        return (to_signed(-((-a) // b), w),)

    @impl(arith.MinSIOp)
    def run_minsi(self, interp: Interpreter, op: arith.MinSIOp, args: PythonValues):
        w, (a, b) = self._ints(interp, op, args, True)
        return (min(a, b),)

    @impl(arith.MaxSIOp)
    def run_maxsi(self, interp: Interpreter, op: arith.MaxSIOp, args: PythonValues):
        w, (a, b) = self._ints(interp, op, args, True)
        return (max(a, b),)

    @impl(arith.MinUIOp)
    def run_minui(self, interp: Interpreter, op: arith.MinUIOp, args: PythonValues):
        w, (a, b) = self._ints(interp, op, args, False)
        return (to_signed(min(a, b), w),)

    @impl(arith.MaxUIOp)
    def run_maxui(self, interp: Interpreter, op: arith.MaxUIOp, args: PythonValues):
        w, (a, b) = self._ints(interp, op, args, False)
        return (to_signed(max(a, b), w),)

    @impl(arith.ShRUIOp)
    def run_shrui(self, interp: Interpreter, op: arith.ShRUIOp, args: PythonValues):
        w, (a, b) = self._ints(interp, op, args, False)
        return (to_signed(a >> b, w) if b < w else 0,)

    # xDSL's addi/subi/muli take scalars only; integer vectors are float64 arrays here
    # (as vector.broadcast makes them), computed lane by lane with the type's wrap-around.
    def _int_lanes(self, interp: Interpreter, op: Operation, args: PythonValues, fn: Callable[[int, int], int]):
        w = _int_width(interp, op.results[0].type)
        if not isinstance(op.results[0].type, VectorType):
            return (to_signed(fn(to_signed(int(args[0]), w), to_signed(int(args[1]), w)), w),)
        a, b = (np.broadcast_to(np.asarray(x, dtype=np.float64), op.results[0].type.get_shape()) for x in args)
        lanes = [to_signed(fn(to_signed(int(x), w), to_signed(int(y), w)), w) for x, y in zip(a.flat, b.flat)]
        return (np.array(lanes, dtype=np.float64).reshape(a.shape),)

    @impl(arith.AddiOp)
    def run_addi(self, interp: Interpreter, op: arith.AddiOp, args: PythonValues):
        return self._int_lanes(interp, op, args, lambda x, y: x + y)

    @impl(arith.SubiOp)
    def run_subi(self, interp: Interpreter, op: arith.SubiOp, args: PythonValues):
        return self._int_lanes(interp, op, args, lambda x, y: x - y)

    @impl(arith.MuliOp)
    def run_muli(self, interp: Interpreter, op: arith.MuliOp, args: PythonValues):
        return self._int_lanes(interp, op, args, lambda x, y: x * y)

    @impl(math.AbsIOp)
    def run_absi(self, interp: Interpreter, op: math.AbsIOp, args: PythonValues):
        w = _int_width(interp, op.results[0].type)
        if not isinstance(op.results[0].type, VectorType):
            return (to_signed(abs(to_signed(int(args[0]), w)), w),)
        x = np.asarray(args[0], dtype=np.float64)
        lanes = [to_signed(abs(to_signed(int(v), w)), w) for v in x.flat]  # abs(INT_MIN) wraps to INT_MIN
        return (np.array(lanes, dtype=np.float64).reshape(x.shape),)

    @impl(arith.ExtSIOp)
    def run_extsi(self, interp: Interpreter, op: arith.ExtSIOp, args: PythonValues):
        return (to_signed(int(args[0]), _int_width(interp, op.input.type)),)

    @impl(arith.ExtUIOp)
    def run_extui(self, interp: Interpreter, op: arith.ExtUIOp, args: PythonValues):
        return (to_unsigned(int(args[0]), _int_width(interp, op.input.type)),)

    @impl(arith.TruncIOp)
    def run_trunci(self, interp: Interpreter, op: arith.TruncIOp, args: PythonValues):
        return (to_signed(int(args[0]), _int_width(interp, op.result.type)),)

    # --- memory and loops --------------------------------------------------------------------
    @impl(memref.AllocaOp)
    def run_alloca(self, interp: Interpreter, op: memref.AllocaOp, args: PythonValues):
        shape = list(op.memref.type.get_shape())
        return (ShapedArray([0] * int(np.prod(shape, dtype=np.int64)), shape),)

    @impl(memref.AtomicRMWOp)
    def run_atomic_rmw(self, interp: Interpreter, op: memref.AtomicRMWOp, args: PythonValues):
        value, mem, *idx = args
        old = mem.load(tuple(idx))
        kind = op.kind.value.data
        if kind not in _ATOMIC_UPDATE:
            raise NotImplementedError(f"memref.atomic_rmw kind {kind} is not interpreted")
        width = _int_width(interp, op.value.type) if isinstance(op.value.type, IntegerType) else 0
        mem.store(tuple(idx), _ATOMIC_UPDATE[kind](old, value, width))
        return (old,)

    @impl(arith.BitcastOp)
    def run_bitcast(self, interp: Interpreter, op: arith.BitcastOp, args: PythonValues):
        src, dst = op.input.type, op.result.type
        if isinstance(src, VectorType):  # lane by lane (vectors are float64 arrays here)
            sf, df = _BITS[_bit_format(src.element_type)], _BITS[_bit_format(dst.element_type)]
            to_src = int if isinstance(src.element_type, IntegerType) else float
            lanes = [struct.unpack(df, struct.pack(sf, to_src(x)))[0] for x in np.asarray(args[0]).ravel()]
            return (np.array(lanes, dtype=np.float64).reshape(np.shape(args[0])),)
        raw = struct.pack(_BITS[_bit_format(src)], args[0])
        return (struct.unpack(_BITS[_bit_format(dst)], raw)[0],)

    @impl(scf.WhileOp)
    def run_while(self, interp: Interpreter, op: scf.WhileOp, args: PythonValues):
        limit = getattr(interp, "max_while_steps", MAX_WHILE_STEPS)
        bound = op.attributes.get("diff.max_iters")
        bound = bound.value.data if isinstance(bound, IntegerAttr) else None
        loop_args = args
        for step in range(limit + 1):
            cond, *forwarded = interp.run_ssacfg_region(op.before_region, loop_args, "while.before_region")
            if not cond:
                return tuple(forwarded)
            if bound is not None and step >= bound:
                raise MaxItersError(op, bound)
            loop_args = interp.run_ssacfg_region(op.after_region, tuple(forwarded), "while.after_region")
        raise WhileLimitError(op, limit)

    # --- math ------------------------------------------------------------------------------
    @impl(math.FmaOp)
    def run_fma(self, interp: Interpreter, op: math.FmaOp, args: PythonValues):
        return (_fl(lambda a, b, c: a * b + c)(*args),)

    # --- vector (1-D and n-D, static positions) -------------------------------------------
    @impl(vector.BroadcastOp)
    def run_broadcast(self, interp: Interpreter, op: vector.BroadcastOp, args: PythonValues):
        shape = tuple(op.vector.type.get_shape())
        return (np.broadcast_to(np.asarray(args[0], dtype=np.float64), shape).copy(),)

    @impl(vector.ExtractOp)
    def run_extract(self, interp: Interpreter, op: vector.ExtractOp, args: PythonValues):
        vec, *dyn = args
        dyn_it = iter(dyn)
        pos = tuple(p if isinstance(p, int) else next(dyn_it) for p in _positions(op))
        lane = _out(np.asarray(vec)[pos])
        if isinstance(op.result.type, IntegerType):  # integer lanes are held as float64
            lane = int(lane)
        return (lane,)

    @impl(vector.InsertOp)
    def run_insert(self, interp: Interpreter, op: vector.InsertOp, args: PythonValues):
        src, dest, *dyn = args
        dyn_it = iter(dyn)
        pos = tuple(p if isinstance(p, int) else next(dyn_it) for p in _positions(op))
        out = np.array(dest, dtype=np.float64, copy=True)
        out[pos] = src
        return (out,)


def _positions(op: Operation) -> list[int | None]:
    """Static positions of vector.extract/insert, None where the position is dynamic."""
    return [None if p == DYNAMIC_INDEX else p for p in op.static_position.get_values()]



def _make_unary(fn: Callable[..., Any]):
    lifted = _fl(fn)

    def run(self, interp: Interpreter, op: Operation, args: PythonValues):
        return (lifted(args[0]),)

    return run


def _make_binary(fn: Callable[..., Any]):
    lifted = _fl(fn)

    def run(self, interp: Interpreter, op: Operation, args: PythonValues):
        return (lifted(args[0], args[1]),)

    return run


# Register the table-driven float ops on the class (impl() marks the functions for
# register_impls, which we run again below).
for _op_type, _fn in _UNARY.items():
    setattr(DiffcFunctions, f"run_{_op_type.name.replace('.', '_')}", impl(_op_type)(_make_unary(_fn)))
for _op_type, _fn in _BINARY.items():
    setattr(DiffcFunctions, f"run_{_op_type.name.replace('.', '_')}", impl(_op_type)(_make_binary(_fn)))
DiffcFunctions = register_impls(DiffcFunctions)


# ---------------------------------------------------------------------------------------------
# Running


def make_interpreter(
    module: ModuleOp,
    extra: Sequence[InterpreterFunctions] = (),
    *,
    float_rounding: bool = False,
    max_while_steps: int = MAX_WHILE_STEPS,
) -> Interpreter:
    """An interpreter over `module` with xDSL's func/arith/math/scf/memref/builtin functions,
    completed by diffc's, then `extra` (for plugin ops) on top. `float_rounding`: round f32 /
    f16 values to their width after each op; `max_while_steps`: iterations an scf.while may
    run before WhileLimitError."""
    interp = RoundingInterpreter(module) if float_rounding else Interpreter(module)
    interp.max_while_steps = max_while_steps  # type: ignore[attr-defined]
    for fns in (FuncFunctions(), ArithFunctions(), MathFunctions(), ScfFunctions(), MemRefFunctions(), BuiltinFunctions()):
        interp.register_implementations(fns)
    interp.register_implementations(DiffcFunctions(), override=True)
    for fns in extra:
        interp.register_implementations(fns, override=True)
    return interp


def _to_value(arg: Any, t: Attribute) -> Any:
    if isinstance(t, VectorType):
        arr = np.asarray(arg, dtype=np.float64 if isinstance(t.element_type, AnyFloat) else np.int64)
        shape = tuple(t.get_shape())
        if arr.shape != shape:
            raise ValueError(f"expected a vector of shape {shape}, got {arr.shape}")
        return arr.copy()
    if isinstance(t, AnyFloat):
        return float(arg)
    return arg


def run_function(
    module: ModuleOp | str,
    name: str,
    *args: Any,
    extra: Sequence[InterpreterFunctions] = (),
    float_rounding: bool = False,
    max_while_steps: int = MAX_WHILE_STEPS,
) -> tuple[Any, ...]:
    """Calls function `name` of `module` (a module or IR text) with `args`; returns its results
    as a tuple (floats as Python floats, vectors as numpy arrays). `float_rounding` and
    `max_while_steps` as in make_interpreter (rounding also applies to the arguments)."""
    if isinstance(module, str):
        module = parse_module(module)
    interp = make_interpreter(module, extra, float_rounding=float_rounding, max_while_steps=max_while_steps)
    fn = interp.get_op_for_symbol(name)
    assert isinstance(fn, func.FuncOp), f"@{name} is not a func.func"
    types = fn.function_type.inputs.data
    if len(types) != len(args):
        raise TypeError(f"@{name} takes {len(types)} arguments, got {len(args)}")
    values = tuple(_to_value(a, t) for a, t in zip(args, types, strict=True))
    if float_rounding:
        values = tuple(_round_value(v, t) for v, t in zip(values, types, strict=True))
    return tuple(_out(r) for r in interp.call_op(name, values))
