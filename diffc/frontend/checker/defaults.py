"""Default parameter values (`float f(float x, float s = 2.0)`): checked once with their function;
a call that omits trailing defaulted arguments gets them filled in, also through fwd_diff (a pair
with a zero derivative) and bwd_diff (a pair whose gradient is dropped; `dOut` still comes last)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import SYNTAX, UNSUPPORTED

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking
    from diffc.frontend.checker.symbols import PInfo

_DEFAULT_MARK = "is_default_arg"


def check_defaults(c: Checking, d: A.Func, params: list[PInfo]) -> None:
    """Types each default against its parameter; defaults must be trailing and on `in` parameters."""
    from diffc.frontend.checker.symbols import err

    declared = params[len(params) - len(d.params):]
    seen_default: A.Param | None = None
    for info, p in zip(declared, d.params):
        if p.default is None:
            if seen_default is not None:
                raise err(SYNTAX, f"parameter '{p.name}' follows a parameter with a default value "
                          f"('{seen_default.name}'), so it needs one too", p)
            continue
        if info.direction != "in":
            raise err(UNSUPPORTED, f"{info.direction} parameter '{p.name}' cannot have a default value", p.default)
        c.expect_type(p.default, info.ty)
        info.default = p.default
        seen_default = p


def is_default_arg(a: A.Expr) -> bool:
    return bool(getattr(a, _DEFAULT_MARK, False))


def fill_defaults(c: Checking, e: A.Call, params: list[PInfo]) -> None:
    """Adds the defaults of the last omitted defaulted parameters to `e.args`, in place. Leaves
    the arguments alone when too few parameters have defaults (the count check reports it)."""
    missing = len(params) - len(e.args)
    defaulted = [i for i, p in enumerate(params) if p.default is not None]
    if missing <= 0 or missing > len(defaulted):
        return
    omitted = set(defaulted[-missing:])
    given = iter(e.args)
    args: list[A.Expr] = []
    for i, p in enumerate(params):
        if i not in omitted:
            args.append(next(given))
            continue
        value = p.default
        assert value is not None
        if isinstance(p.ty, T.Pair):  # a derivative's parameter: the default with a zero derivative
            value = A.Call(A.Name("diffPair", span=value.span), [value], span=value.span)
            c.expr(value)
        setattr(value, _DEFAULT_MARK, True)
        args.append(value)
    e.args = args
