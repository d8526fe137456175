"""`DifferentialPair`'s accessor methods, as Slang's core library declares them: `p.getPrimal()`
and `p.getDifferential()` (also of a `DifferentialPtrPair`) are `p.p` and `p.d`. The call becomes
that member access (Checker.replace), so everything after sees a field read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.checker.symbols import count_args
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

ACCESSORS = {"getPrimal": "p", "getDifferential": "d"}


def _check_method(c: Checking, e: A.Call, callee: A.Member, base: T.Type) -> T.Type | None:
    if not isinstance(base, T.Pair | T.PtrPair) or callee.name not in ACCESSORS:
        return None
    count_args(e, callee.name, 0)
    field = A.Member(callee.base, ACCESSORS[callee.name], callee.name_span, span=e.span)
    return c.expr(c.replace(e, field))


FEATURE = Feature("pair_accessors", check_method=_check_method)
