"""Default values of struct fields: `struct S { float a = 1.0; float3 c = float3(1, 0, 0); int n; }`.

As in Slang, a field's default is the value it has wherever the program does not give one:

* `S s;` (no `__init()` to run) and `S s = {};` start from the defaults, a field without one at
  zero, as every declaration here;
* `S s = {x};` gives the leading fields in order and the rest their defaults;
* inside a constructor `__init(...)`, `this` starts from the defaults before the body runs.

Each use checks and lowers its own copy of the default's expression (it is written once, in the
struct, and may be lowered in many functions); the declaration checks one copy so that a bad
default is reported where it is written, used or not."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

INIT = "__init"


def _declare_struct(c: Checking, d: A.Struct, s: T.Struct) -> None:
    for f in d.fields:
        if f.init is None or "static" in f.mods:
            continue
        found = s.field(f.name)
        if found is None:
            continue
        c.scopes.append({})  # (checked as if in a function of no locals: it may use constants only)
        try:
            c.expect_type(copy.deepcopy(f.init), found[1])
        finally:
            c.scopes.pop()
        s.field_defaults[f.name] = f.init


class FieldwiseList(A.InitList):
    """An initializer list that sets the fields themselves, even of a struct with constructors:
    what `S this;` in a constructor and `S s;` without `__init()` start from."""


def _fieldwise(s: T.Struct, given: list[A.Expr], span) -> FieldwiseList:
    items = list(given)
    for name, _, _ in s.fields[len(given):]:
        d = s.field_defaults.get(name)
        items.append(copy.deepcopy(d) if d is not None else A.InitList([], span=span))
    return FieldwiseList(items, span=span)


def _default_init(c: Checking, v: A.VarDecl, t: T.Struct) -> A.Expr | None:
    return _fieldwise(t, [], v.span) if t.field_defaults else None


def _whole_values(c: Checking, items: list[A.Expr], s: T.Struct) -> bool:
    """Whether each item initializes one field (no brace elision spreads it over several)."""
    for x, (_, ft, _) in zip(items, s.fields):
        if isinstance(x, A.InitList) or not isinstance(ft, T.Array | T.Struct | T.Vector):
            continue
        if not T.convertible(c.expr(x), ft):
            return False
    return True


def _check_init_list(c: Checking, e: A.InitList, want: T.Type) -> bool | None:
    if not isinstance(want, T.Struct) or not want.field_defaults:
        return None
    if not isinstance(e, FieldwiseList):
        if INIT in want.methods or len(e.items) >= len(want.fields) or not _whole_values(c, e.items, want):
            return None  # a constructor's, or every field given: the checker's own
        e.items = _fieldwise(want, e.items, e.span).items
    e.ty = want
    for item, (_, ft, _) in zip(e.items, want.fields):
        c.expect_type(item, ft)
    return True


FEATURE = Feature(
    "field_defaults",
    declare_struct=_declare_struct,
    default_init=_default_init,
    check_init_list=_check_init_list,
)
