"""The methods of Slang's IArithmetic and IComparable on built-in numbers and vectors (also
CoopVecs, which are vectors here): `a.add(b)`, `a.sub(b)`, `a.mul(b)`, `a.div(b)`, `a.mod(b)`,
`a.neg()`, and `a.equals(b)`, `a.lessThan(b)`, `a.lessThanOrEquals(b)`.

Each is the operator it names (`a.add(b)` is `a + b`, elementwise, differentiable as `+` is); the
comparisons answer one bool, for vectors whether it holds for every element (`all(a < b)`).

The other way round, on two values of a struct that conforms to IArithmetic (IComparable), the
operators call those methods, as Slang's generic operators do: `a + b` is `a.add(b)`, `-a` is
`a.neg()`, `a < b` is `a.lessThan(b)`, `a > b` is `b.lessThan(a)`, `a != b` is `!a.equals(b)`.
An operator declared for the struct's own type (operators.py) is not looked for first: such a
struct's arithmetic is its methods."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import ARG_COUNT
from diffc.frontend.checker.symbols import err
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}
COMPARISONS = {"equals": "==", "lessThan": "<", "lessThanOrEquals": "<="}


def check_method(c: Checking, e: A.Call, callee: A.Member, t: T.Type) -> T.Type | None:
    name = callee.name
    if not (isinstance(t, T.Scalar | T.Vector) and T.is_numeric(t)) or name not in {*BINARY, *COMPARISONS, "neg"}:
        return None
    want = 0 if name == "neg" else 1
    if len(e.args) != want:
        raise err(ARG_COUNT, f"'{name}' takes {want} argument{'s' if want != 1 else ''}, got {len(e.args)}", e)
    if name == "neg":
        new: A.Expr = A.Unary("-", callee.base, span=e.span)
    elif name in BINARY:
        new = A.Binary(BINARY[name], callee.base, e.args[0], span=e.span)
    else:
        new = A.Binary(COMPARISONS[name], callee.base, e.args[0], span=e.span)
        if isinstance(t, T.Vector):
            new = A.Call(A.Name("all", span=callee.name_span), [new], span=e.span)
    return c.expr(c.replace(e, new))


OPERATOR_METHODS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod"}
COMPARISON_METHODS = {"==": ("equals", False, False), "!=": ("equals", False, True), "<": ("lessThan", False, False),
                      "<=": ("lessThanOrEquals", False, False), ">": ("lessThan", True, False),
                      ">=": ("lessThanOrEquals", True, False)}


def _arithmetic_struct(c: Checking, t: T.Type, interface: str) -> bool:
    return isinstance(t, T.Struct) and c.ifaces.conforms(t, interface)


def check_binary(c: Checking, e: A.Binary, a: T.Type, b: T.Type) -> T.Type | None:
    if a != b:
        return None
    if e.op in OPERATOR_METHODS and _arithmetic_struct(c, a, "IArithmetic"):
        new: A.Expr = A.Call(A.Member(e.lhs, OPERATOR_METHODS[e.op], e.span, span=e.span), [e.rhs], span=e.span)
    elif e.op in COMPARISON_METHODS and (_arithmetic_struct(c, a, "IComparable") or
                                         _arithmetic_struct(c, a, "IArithmetic")):
        name, swapped, negated = COMPARISON_METHODS[e.op]
        x, y = (e.rhs, e.lhs) if swapped else (e.lhs, e.rhs)
        new = A.Call(A.Member(x, name, e.span, span=e.span), [y], span=e.span)
        if negated:
            new = A.Unary("!", new, span=e.span)
    else:
        return None
    return c.expr(c.replace(e, new))


def check_unary(c: Checking, e: A.Unary, t: T.Type) -> T.Type | None:
    if e.op != "-" or not _arithmetic_struct(c, t, "IArithmetic"):
        return None
    return c.expr(c.replace(e, A.Call(A.Member(e.operand, "neg", e.span, span=e.span), [], span=e.span)))


FEATURE = Feature("arithmetic methods", check_method=check_method, check_binary=check_binary,
                  check_unary=check_unary)
