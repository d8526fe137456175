"""`printf.print_format` -> OpenCL C `printf`.

The front end puts the C format on the op (`c_format = "dResult: %f\\n"`). Without it (IR
written by hand) each `{}` of the Python-style format becomes a conversion for its value's
type: %f for floats (and %v<N>hlf for float vectors), %d / %ld for integers, %ld for index.
"""

from __future__ import annotations

import re

from xdsl.dialects.builtin import IndexType, IntegerType, StringAttr, VectorType
from xdsl.ir import Attribute, Operation

from .function_context import FunctionContext
from .naming import ctype, lane


def c_string(text: str) -> str:
    """`text` as a C string literal."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode())
    return '"' + "".join(out) + '"'


def _conversion(t: Attribute) -> str | None:
    if isinstance(t, VectorType):
        n = t.get_shape()[0]
        inner = _conversion(t.element_type)
        if n not in (2, 3, 4, 8, 16) or inner not in ("%f", "%d"):
            return None
        return f"%v{n}hl{inner[-1]}"  # hl: 32-bit elements (OpenCL printf vector conversions)
    if isinstance(t, IndexType):
        return "%ld"
    if isinstance(t, IntegerType):
        if t.width.data == 1:
            return "%d"
        return "%ld" if t.width.data == 64 else "%d"
    if getattr(t, "bitwidth", None) in (16, 32, 64):
        return "%f"
    return None


_VECTOR_CONVERSION = re.compile(r"%v(\d+)hl([fd])")


def c_format_of(op: Operation) -> str:
    attr = op.attributes.get("c_format")
    if isinstance(attr, StringAttr):
        return attr.data
    fmt = op.format_str.data  # type: ignore[attr-defined]
    parts = fmt.split("{}")
    out = [parts[0].replace("%", "%%")]
    for v, rest in zip(op.operands, parts[1:]):
        conv = _conversion(v.type)
        if conv is None:
            raise TypeError(str(v.type))
        out += [conv, rest.replace("%", "%%")]
    return "".join(out)


def emit_printf(fe: FunctionContext, op: Operation) -> None:
    try:
        fmt = c_format_of(op)
    except TypeError as e:
        raise fe.error(op, f"prints a value of type {e}, which printf cannot print") from None
    args = []
    for v in op.operands:
        fe.ctype(v.type, op)
        e = fe.expr(v)
        # i1 values are C bools; printf's varargs want an int
        if isinstance(v.type, IntegerType) and v.type.width.data == 1:
            e = f"(int)({e})"
        if fe.options.cuda and isinstance(v.type, VectorType):  # CUDA's printf has no vector conversions
            args += [f"{e}.{lane(k, fe.options)}" for k in range(v.type.get_shape()[0])]
            continue
        args.append(e)
    if fe.options.cuda:
        fmt = _VECTOR_CONVERSION.sub(lambda m: ",".join([f"%{m.group(2)}"] * int(m.group(1))), fmt)
    fe.line(f"printf({', '.join([c_string(fmt), *args])});")


__all__ = ["c_format_of", "c_string", "ctype", "emit_printf"]
