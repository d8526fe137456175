"""Reference parameters: `Ref<T> p` and `ConstRef<T> p`, as Slang's core library declares them.

A `Ref<T>` parameter refers to the caller's variable: what the function writes through it, the
caller sees. Here it is an `inout T` parameter (copied in and back out), which is the same for
every program that does not reach one variable through two names at once. `ConstRef<T>` is
read-only, so it is a plain `T`. The parameter is rewritten before its type is resolved; a `Ref`
anywhere else (a local, a field, a result) is an unknown type, as before."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend.errors import ARG_COUNT
from diffc.frontend.checker.symbols import err
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

REFERENCES = {"Ref": "inout", "ConstRef": None}


def _declare_param(c: Checking, p: A.Param) -> None:
    t = p.type
    if t.name not in REFERENCES or t.dims or t.pointer:
        return
    if len(t.args) != 1 or not isinstance(t.args[0], A.TypeRef):
        raise err(ARG_COUNT, f"{t.name}<T> takes one type argument", t)
    if p.mods & {"in", "out", "inout"}:
        raise err(ARG_COUNT, f"a {t.name}<T> parameter takes no '{sorted(p.mods & {'in', 'out', 'inout'})[0]}' "
                  "(it is already passed by reference)", t)
    direction = REFERENCES[t.name]
    p.type = t.args[0]
    if direction is not None:
        p.mods = set(p.mods) | {direction}


FEATURE = Feature("ref_params", declare_param=_declare_param)
