"""Slang's `__realCast<T>(x)`: a real number (half, float, double, or a vector of them) converted to
the real type T, as `T(x)` converts it (differentiable as that conversion is)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import ARG_COUNT, TYPE_MISMATCH
from diffc.frontend.checker.symbols import err
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking


def check_real_cast(c: Checking, e: A.Call, name: str) -> T.Type | None:
    if name != "__realCast" or not isinstance(e.callee, A.Name):
        return None
    targs = e.callee.targs
    if len(targs) != 1 or not isinstance(targs[0], A.TypeRef) or len(e.args) != 1:
        raise err(ARG_COUNT, "__realCast takes one type and one value: __realCast<T>(x)", e.callee)
    to = c.resolve(targs[0])
    src = c.expr(e.args[0])
    for t, where in ((to, targs[0]), (src, e.args[0])):
        if not T.is_numeric(t) or not T.is_float_scalar(T.elem_of(t)):
            raise err(TYPE_MISMATCH, f"__realCast converts between real types (half, float, double), got {t}", where)
    return c.expr(c.replace(e, A.Call(A.TypeExpr(targs[0], span=e.callee.span), e.args, span=e.span)))


FEATURE = Feature("real casts", check_call=check_real_cast)
