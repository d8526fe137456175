"""arith and math ops as C expressions: each handler takes (emitter, op) and returns the right-
hand side of `T result = ...;` (or a literal, for constants)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    DenseIntOrFPElementsAttr,
    Float16Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    VectorType,
)
from xdsl.ir import Attribute, Operation

from .atomics import FLOAT_TO_HALF_BITS, HALF_BITS_TO_FLOAT
from .function_context import FunctionContext
from .naming import ctype, float_literal, int_literal, pointer_ctype, unsigned_ctype, vector_value
from .naming import lane as lane_name

Handler = Callable[[FunctionContext, Operation], str]
EXPRESSIONS: dict[str, Handler] = {}  # keyed by op name, so ops xDSL lacks (arith.remf) fit


def _binary(symbol: str) -> Handler:
    return lambda fe, op: f"{fe.expr(op.operands[0])} {symbol} {fe.expr(op.operands[1])}"


def _call(name: str) -> Handler:
    return lambda fe, op: f"{name}({', '.join(fe.bare(v) for v in op.operands)})"


def _integer(template: str, vector_template: str | None = None) -> Handler:
    """A binary integer op as `template`, which sees {t} (the result's C type), {a} and {b}
    (the operands), {ua} and {ub} (the operands as the unsigned type of the result) and {as_t}
    (what turns such an unsigned value back into the result's type). A vector's bits are
    reinterpreted with as_<type>: OpenCL C refuses a cast between vector types."""

    def emit(fe: FunctionContext, op: Operation) -> str:
        t = op.results[0].type
        u, c = unsigned_ctype(t, fe.options), ctype(t, fe.options)
        a, b = (fe.expr(v) for v in op.operands)
        if isinstance(t, VectorType):
            return (vector_template or template).format(t=c, a=a, b=b, ua=f"as_{u}({a})", ub=f"as_{u}({b})",
                                                        as_t=f"as_{c}")
        return template.format(t=c, a=a, b=b, ua=f"({u}){a}", ub=f"({u}){b}", as_t=f"({c})")

    return emit


def _unsigned_binary(symbol: str) -> Handler:
    return _integer(f"{{as_t}}({{ua}} {symbol} {{ub}})")


def _unsigned_call(name: str) -> Handler:
    return _integer(f"({{t}}){name}({{ua}}, {{ub}})", f"{{as_t}}({name}({{ua}}, {{ub}}))")


def _cast(to: Attribute, value: str, fe: FunctionContext) -> str:
    c = ctype(to, fe.options)
    if isinstance(to, VectorType):
        return f"convert_{c}({value})"
    return f"({c}){value}"


def _convert(fe: FunctionContext, op: Operation) -> str:
    src, dst = op.operands[0].type, op.results[0].type
    if ctype(src, fe.options) == ctype(dst, fe.options):
        return fe.expr(op.operands[0])  # f16 <-> f32 are both float here
    return _cast(dst, fe.expr(op.operands[0]), fe)


def _unsigned_source(fe: FunctionContext, op: Operation) -> str:
    """uitofp, extui, index_castui, fptoui: go through the unsigned type of the narrower side."""
    src, dst = op.operands[0].type, op.results[0].type
    value = fe.expr(op.operands[0])
    if isinstance(src, IntegerType) and src.width.data == 1:
        return _cast(dst, value, fe)
    if op.name == "arith.fptoui":
        return _cast(dst, f"({unsigned_ctype(dst, fe.options)}){value}", fe)
    return _cast(dst, f"({unsigned_ctype(src, fe.options)}){value}", fe)


def _extsi(fe: FunctionContext, op: Operation) -> str:
    src = op.operands[0].type
    value = fe.expr(op.operands[0])
    if isinstance(src, IntegerType) and src.width.data == 1:
        return f"-{_cast(op.results[0].type, value, fe)}"
    return _cast(op.results[0].type, value, fe)


def _trunci(fe: FunctionContext, op: Operation) -> str:
    dst = op.results[0].type
    if isinstance(dst, IntegerType) and dst.width.data == 1:
        return f"({fe.expr(op.operands[0])} & 1) != 0"
    return _cast(dst, fe.expr(op.operands[0]), fe)


def _bitcast(fe: FunctionContext, op: Operation) -> str:
    src, dst = op.operands[0].type, op.results[0].type
    value = fe.expr(op.operands[0])
    # f16 values are floats in C: their bits come from / go to half with integer arithmetic
    if isinstance(src, Float16Type) and isinstance(dst, IntegerType):
        fe.module.half_conversions()
        return f"({ctype(dst, fe.options)}){FLOAT_TO_HALF_BITS}({value})"
    if isinstance(src, IntegerType) and isinstance(dst, Float16Type):
        fe.module.half_conversions()
        return f"{HALF_BITS_TO_FLOAT}((ushort){value})"
    if any(isinstance(t, VectorType) and isinstance(t.element_type, Float16Type) for t in (src, dst)):
        raise fe.error(op, "bitcasts a vector of f16; only scalar f16 <-> i16 bitcasts are supported")
    return f"as_{ctype(dst, fe.options)}({value})"


def constant_literal(fe: FunctionContext, op: arith.ConstantOp) -> str:
    value = op.value
    t = op.result.type
    if isinstance(value, FloatAttr):
        return float_literal(value.value.data, t)
    if isinstance(value, IntegerAttr):
        return int_literal(value.value.data, t, fe.options)
    if isinstance(value, DenseIntOrFPElementsAttr) and isinstance(t, VectorType):
        el = t.element_type
        values = value.get_values()
        if isinstance(el, AnyFloat):
            items = [float_literal(float(v), el) for v in values]
        else:
            items = [int_literal(int(v), el, fe.options) for v in values]
        if len(set(items)) == 1:
            items = items[:1]
        fe.module.note_type(t)
        return vector_value(ctype(t, fe.options), items, fe.options)
    raise fe.error(op, f"has a constant value the OpenCL emitter cannot print: {value}")


def _select(fe: FunctionContext, op: Operation) -> str:
    c, a, b = (fe.expr(v) for v in op.operands)
    if isinstance(op.operands[0].type, VectorType):
        return f"select({b}, {a}, {c})"
    return f"{c} ? {a} : {b}"


_CMPF = {
    "oeq": "{a} == {b}", "ogt": "{a} > {b}", "oge": "{a} >= {b}", "olt": "{a} < {b}",
    "ole": "{a} <= {b}", "one": "islessgreater({a}, {b})", "ord": "!isunordered({a}, {b})",
    "ueq": "!islessgreater({a}, {b})", "ugt": "!({a} <= {b})", "uge": "!({a} < {b})",
    "ult": "!({a} >= {b})", "ule": "!({a} > {b})", "une": "{a} != {b}",
    "uno": "isunordered({a}, {b})", "false": "false", "true": "true",
}
_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}


def _cmpf(fe: FunctionContext, op: arith.CmpfOp) -> str:
    pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
    a, b = (fe.expr(v) for v in op.operands)
    return _CMPF[pred].format(a=a, b=b)


def _cmpi(fe: FunctionContext, op: arith.CmpiOp) -> str:
    pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    a, b = (fe.expr(v) for v in op.operands)
    if pred.startswith("u"):
        u = unsigned_ctype(op.operands[0].type, fe.options)
        a, b = f"({u}){a}", f"({u}){b}"
    return f"{a} {_CMPI[pred]} {b}"


# C's / truncates: add or subtract one where the remainder is non-zero and the exact quotient
# lies on the other side.
_ceildivsi = _integer("{a} / {b} + ({a} % {b} != 0 && ({a} % {b} > 0) == ({b} > 0))")
_floordivsi = _integer("{a} / {b} - ({a} % {b} != 0 && ({a} % {b} < 0) != ({b} < 0))")
_ceildivui = _integer("{as_t}({ua} / {ub} + ({ua} % {ub} != 0))")
_shrui = _integer("{as_t}({ua} >> {b})")


def _absi(fe: FunctionContext, op: Operation) -> str:
    return f"({ctype(op.results[0].type, fe.options)})abs({fe.expr(op.operands[0])})"


def _cttz(fe: FunctionContext, op: Operation) -> str:
    t = op.results[0].type
    a = fe.expr(op.operands[0])
    return f"({ctype(t, fe.options)})popcount(({a} & -{a}) - 1)"


def _fpowi(fe: FunctionContext, op: Operation) -> str:
    a, b = (fe.expr(v) for v in op.operands)
    return f"pown({a}, (int){b})"


_ARITH: dict[type[Operation], Handler] = {
    arith.AddfOp: _binary("+"), arith.SubfOp: _binary("-"), arith.MulfOp: _binary("*"),
    arith.DivfOp: _binary("/"),
    arith.NegfOp: lambda fe, op: f"-{fe.expr(op.operands[0])}",
    arith.MaximumfOp: _call("fmax"), arith.MinimumfOp: _call("fmin"),
    arith.MaxnumfOp: _call("fmax"), arith.MinnumfOp: _call("fmin"),
    arith.AddiOp: _binary("+"), arith.SubiOp: _binary("-"), arith.MuliOp: _binary("*"),
    arith.DivSIOp: _binary("/"), arith.RemSIOp: _binary("%"),
    arith.DivUIOp: _unsigned_binary("/"), arith.RemUIOp: _unsigned_binary("%"),
    arith.CeilDivSIOp: _ceildivsi, arith.FloorDivSIOp: _floordivsi, arith.CeilDivUIOp: _ceildivui,
    arith.MaxSIOp: _call("max"), arith.MinSIOp: _call("min"),
    arith.MaxUIOp: _unsigned_call("max"), arith.MinUIOp: _unsigned_call("min"),
    arith.AndIOp: _binary("&"), arith.OrIOp: _binary("|"), arith.XOrIOp: _binary("^"),
    arith.ShLIOp: _binary("<<"), arith.ShRSIOp: _binary(">>"), arith.ShRUIOp: _shrui,
    arith.CmpfOp: _cmpf, arith.CmpiOp: _cmpi, arith.SelectOp: _select,
    arith.SIToFPOp: _convert, arith.FPToSIOp: _convert, arith.ExtFOp: _convert,
    arith.TruncFOp: _convert, arith.IndexCastOp: _convert,
    arith.UIToFPOp: _unsigned_source, arith.FPToUIOp: _unsigned_source,
    arith.ExtUIOp: _unsigned_source,
    arith.ExtSIOp: _extsi, arith.TruncIOp: _trunci, arith.BitcastOp: _bitcast,
}
EXPRESSIONS.update({op.name: handler for op, handler in _ARITH.items()})

_MATH_CALLS = {
    math.AbsFOp: "fabs", math.AcosOp: "acos", math.AcoshOp: "acosh", math.AsinOp: "asin",
    math.AsinhOp: "asinh", math.AtanOp: "atan", math.AtanhOp: "atanh", math.Atan2Op: "atan2",
    math.CbrtOp: "cbrt", math.CeilOp: "ceil", math.CopySignOp: "copysign", math.CosOp: "cos",
    math.CoshOp: "cosh", math.ErfOp: "erf", math.ExpOp: "exp", math.Exp2Op: "exp2",
    math.ExpM1Op: "expm1", math.FloorOp: "floor", math.FmaOp: "fma", math.Log10Op: "log10",
    math.Log1pOp: "log1p", math.Log2Op: "log2", math.LogOp: "log", math.PowFOp: "pow",
    math.RoundEvenOp: "rint", math.RoundOp: "round", math.RsqrtOp: "rsqrt", math.SinOp: "sin",
    math.SinhOp: "sinh", math.SqrtOp: "sqrt", math.TanOp: "tan", math.TanhOp: "tanh",
    math.TruncOp: "trunc", math.CountLeadingZerosOp: "clz", math.CtPopOp: "popcount",
}
EXPRESSIONS.update({op.name: _call(name) for op, name in _MATH_CALLS.items()})
EXPRESSIONS.update({math.AbsIOp.name: _absi, math.CountTrailingZerosOp.name: _cttz, math.FPowIOp.name: _fpowi})
EXPRESSIONS.update({"arith.remf": _call("fmod"), "arith.index_castui": _unsigned_source})


def _broadcast(fe: FunctionContext, op: Operation) -> str:
    t = op.results[0].type
    if not isinstance(op.operands[0].type, VectorType):
        fe.module.note_type(t)
        return vector_value(ctype(t, fe.options), [fe.bare(op.operands[0])], fe.options)
    raise fe.error(op, "broadcasts a vector; only scalars to vectors are supported")


def _lane_position(fe: FunctionContext, op: Operation) -> tuple[int | None, str | None]:
    """The one position of a vector.extract / insert on a 1-d vector: (lane, None) when it is
    static, (None, C expression of the index) when it is a runtime value."""
    position = op.static_position.get_values()  # type: ignore[attr-defined]
    dynamic = list(op.dynamic_position)  # type: ignore[attr-defined]
    if len(position) != 1:
        raise fe.error(op, "needs one position on a 1-d vector")
    if position[0] == DYNAMIC_INDEX and len(dynamic) == 1:
        return None, f"({fe.expr(dynamic[0])})"
    if position[0] < 0 or dynamic:
        raise fe.error(op, "needs one position on a 1-d vector")
    return position[0], None


def _lanes_of(expr: str) -> str:
    """A vector expression that `.sN` can follow (a literal such as `(float3)(1.0f)` needs parentheses)."""
    return expr if expr.replace("_", "a").isalnum() else f"({expr})"


def _extract(fe: FunctionContext, op: Operation) -> str:
    lane, index = _lane_position(fe, op)
    vec = _lanes_of(fe.expr(op.operands[0]))
    if index is None:
        return f"{vec}.{lane_name(lane, fe.options)}"
    # OpenCL C has no runtime subscript on vectors: a chain of selects over the lanes (an index
    # out of range reads the last lane, where MLIR leaves the result undefined).
    n = op.operands[0].type.get_shape()[0]  # type: ignore[attr-defined]
    out = f"{vec}.{lane_name(n - 1, fe.options)}"
    for k in reversed(range(n - 1)):
        out = f"{index} == {k} ? {vec}.{lane_name(k, fe.options)} : {out}"
    return f"({out})"


def _insert(fe: FunctionContext, op: Operation) -> str:
    lane, index = _lane_position(fe, op)
    t = op.results[0].type
    n = t.get_shape()[0]  # type: ignore[attr-defined]
    src, dest = f"({fe.expr(op.operands[0])})", _lanes_of(fe.expr(op.operands[1]))
    if index is None:
        parts = [src if k == lane else f"{dest}.{lane_name(k, fe.options)}" for k in range(n)]
    else:  # each lane takes the source where the runtime index names it
        parts = [f"{index} == {k} ? {src} : {dest}.{lane_name(k, fe.options)}" for k in range(n)]
    return vector_value(fe.ctype(t, op), parts, fe.options)


EXPRESSIONS.update({"vector.broadcast": _broadcast, "vector.extract": _extract, "vector.insert": _insert})


def _reinterpret(fe: FunctionContext, op: Operation) -> str:
    """kernel.reinterpret: the bytes' address as a pointer to the new element type."""
    t = op.results[0].type
    assert isinstance(t, MemRefType)
    fe.module.note_type(t)
    return f"(({pointer_ctype(t, fe.options)}){fe.expr(op.operands[0])})"


EXPRESSIONS["kernel.reinterpret"] = _reinterpret


def _memref_cast(fe: FunctionContext, op: Operation) -> str:
    """memref.cast (a static shape seen as a dynamic one: a group-shared pointer): the same address."""
    fe.module.note_type(op.results[0].type)
    return fe.expr(op.operands[0])


EXPRESSIONS["memref.cast"] = _memref_cast
