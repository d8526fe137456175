"""Slang's `__atomic_add(dest, value)`: adds value into `dest` atomically and gives dest's value
from before. dest is an element of memory behind a pointer, `p[i]` or `*p`, of a scalar type with
device atomics (float, int, uint); the call is `((Atomic<T>*)(p + i)).add(value)`, the atomic
pointer's method (Checker.replace), so it lowers as that does. Any other dest (a local, a buffer
element, a field) is a located E0008. Likewise `p[i].add(v)` of an `Atomic<T>*` p is `(p + i).add(v)`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.checker.symbols import count_args, err
from diffc.frontend.errors import UNSUPPORTED
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

ATOMIC_SCALARS = (T.FLOAT, T.INT, T.UINT)


def _address(c: Checking, dest: A.Expr) -> tuple[A.Expr, T.Type] | None:
    """The pointer expression of `p[i]` / `*p` and its element type, or None."""
    if isinstance(dest, A.Index) and not dest.more:
        base = c.expr(dest.base)
        if isinstance(base, T.Pointer) and not base.atomic:
            return A.Binary("+", dest.base, dest.index, span=dest.span), base.elem
    if isinstance(dest, A.Unary) and dest.op == "*":
        p = c.expr(dest.operand)
        if isinstance(p, T.Pointer) and not p.atomic:
            return dest.operand, p.elem
    return None


def _check_call(c: Checking, e: A.Call, name: str) -> T.Type | None:
    if name != "__atomic_add" or not isinstance(e.callee, A.Name):
        return None
    count_args(e, name, 2)
    found = _address(c, e.args[0])
    if found is None or found[1] not in ATOMIC_SCALARS:
        raise err(UNSUPPORTED, "__atomic_add into anything but a float, int or uint element behind a pointer "
                  "(p[i] or *p) is not supported", e.args[0])
    address, elem = found
    atomic = A.TypeRef("Atomic", [A.TypeRef(elem.name(), span=e.span)], pointer=1, span=e.span)
    add = A.Member(A.Cast(atomic, address, span=e.args[0].span), "add", e.callee.span, span=e.span)
    return c.expr(c.replace(e, A.Call(add, [e.args[1]], span=e.span)))


def _check_method(c: Checking, e: A.Call, callee: A.Member, base: T.Type) -> T.Type | None:
    """`p[i].add(v)` with p an `Atomic<T>*`: the atomic pointer's method on `p + i`."""
    b = callee.base
    if not (isinstance(b, A.Index) and not b.more and isinstance(b.base.ty, T.Pointer) and b.base.ty.atomic):
        return None
    at = A.Member(A.Binary("+", b.base, b.index, span=b.span), callee.name, callee.name_span, span=callee.span)
    return c.expr(c.replace(e, A.Call(at, e.args, span=e.span)))


FEATURE = Feature("atomic_intrinsics", check_call=_check_call, check_method=_check_method)
