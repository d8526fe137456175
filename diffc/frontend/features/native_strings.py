"""Slang's `NativeString` (a C string): parameters and variables that hold one of the program's
string literals, and `printf("%s", s)` of them (`float debugGrad(NativeString s, float x)`).

OpenCL C prints only literal strings with %s, so a NativeString is the number of its literal among
the program's string literals (`T.NATIVE_STRING`, one i32 leaf, no derivative), and a printf
whose %s takes one prints through a chain of ifs on that number, each branch a printf with the
literal written into the format. Only literals convert to a NativeString; other string operations
(`length`, indexing, concatenation) are not supported (E0004 / E0003 as for any other type)."""

from __future__ import annotations

from xdsl.dialects import arith

from diffc.frontend import ast as A
from diffc.frontend import types as T

from diffc.frontend.feature import Feature


def literals(lw) -> list[str]:
    """The program's string literals but printf formats, in order: a NativeString's numbers."""
    table = getattr(lw, "native_strings", None)
    if table is None:
        formats = set()
        found: list[str] = []
        for node in A.walk(lw.program):
            if isinstance(node, A.Call) and isinstance(node.callee, A.Name) and node.callee.id == "printf" \
                    and node.args and isinstance(node.args[0], A.Str):
                formats.add(id(node.args[0]))
            elif isinstance(node, A.Str) and id(node) not in formats and node.value not in found:
                found.append(node.value)
        table = lw.native_strings = found
    return table


def literal(lw, e: A.Str) -> list:
    """A literal as a NativeString: its number (one the program's tree does not hold, from a
    generic instance's copy of a body, is numbered after the others)."""
    table = literals(lw)
    if e.value not in table:
        table.append(e.value)
    return lw.const(table.index(e.value), T.INT)


def printf(lw, e: A.Call, spec) -> None:
    """A printf whose first NativeString argument's %s is written out: one printf per literal
    that argument may name, chosen by ifs on its number (`lw.printf` then writes the others)."""
    from diffc.frontend.errors import TYPE_MISMATCH, FrontendError

    table = literals(lw)
    fmt, args = e.args[0], e.args[1:]
    at = next(i for i, a in enumerate(args) if a.ty == T.NATIVE_STRING)
    convs = [m for m in spec.finditer(fmt.value) if m.group() != "%%"]  # type: ignore[attr-defined]
    if at >= len(convs) or convs[at].group() != "%s":
        raise FrontendError(TYPE_MISMATCH, "a NativeString is printed with %s", *args[at].span)
    (number,) = lw.expr(args[at])
    m = convs[at]

    def with_text(text: str) -> A.Call:
        value = fmt.value[:m.start()] + text.replace("%", "%%") + fmt.value[m.end():]  # type: ignore[attr-defined]
        new = A.Str(value, span=fmt.span, ty=fmt.ty)
        return A.Call(e.callee, [new, *args[:at], *args[at + 1:]], span=e.span, ty=e.ty, kind=e.kind)

    def chain(k: int) -> None:
        if k == len(table):
            lw.printf(with_text("(?)"))
            return
        hit = lw.v(arith.CmpiOp(number, lw.const(k, T.INT)[0], "eq"))
        lw.region_if(hit, lambda: lw.printf(with_text(table[k])), lambda: chain(k + 1))

    chain(0)


FEATURE = Feature(
    "native strings",
    resolve_type=lambda c, n, t: T.NATIVE_STRING if n == "NativeString" else None,
)
