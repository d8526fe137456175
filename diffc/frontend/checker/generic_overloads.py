"""Several generic overloads of one method (`__init<S : IReal>(S x)` beside `__init<S : IReal>(Vec<S, N> x)`).

The first is the struct's method template under the method's name; each further one is kept
under `name__g2`, `name__g3`, ... (its instances are named after that, so two overloads' instances
for the same arguments do not collide). A call takes, of the templates whose generic arguments
can be inferred from the call's arguments and meet their constraints, the most specific (the
fewest parameters that are a bare type parameter), the first in declaration order among equals;
when none fits, the first one, whose error then says why."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import FrontendError

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

OVERLOAD_TAG = "__g"


def declare_method_template(s: T.Struct, m: A.Func) -> None:
    if m.name not in s.method_templates:
        s.method_templates[m.name] = m
        return
    k = 2
    while f"{m.name}{OVERLOAD_TAG}{k}" in s.method_templates:
        k += 1
    alt = dataclasses.replace(m, name=f"{m.name}{OVERLOAD_TAG}{k}")
    s.method_templates[alt.name] = alt


def method_template(c: Checking, s: T.Struct, name: str, args: list[A.Expr], named: A.Name) -> A.Func | None:
    """The generic method `name` of s that a call `named(args)` means (see the module's docstring)."""
    first = s.method_templates.get(name)
    if first is None or f"{name}{OVERLOAD_TAG}2" not in s.method_templates:
        return first  # type: ignore[return-value]
    templates, k = [first], 2
    while f"{name}{OVERLOAD_TAG}{k}" in s.method_templates:
        templates.append(s.method_templates[f"{name}{OVERLOAD_TAG}{k}"])
        k += 1
    fits = []
    for d in templates:
        if len(d.params) != len(args):
            continue
        try:
            env, missing = c.generic_env(name, named, args, d)
            if missing:
                continue
            c.bind_generics(name, d, env, named)
        except FrontendError:
            continue
        fits.append(d)
    if not fits:
        return first  # type: ignore[return-value]
    return min(fits, key=lambda d: _open_params(d))  # type: ignore[return-value]


def _open_params(d: A.Func) -> int:
    """How many of d's parameters are a bare type parameter (`T x`, which takes anything): the
    fewer, the more specific the overload (`f<N>(vector<float, N> v)` beats `f<T>(T x)`)."""
    return sum(1 for p in d.params if not p.type.args and not p.type.dims and p.type.name in d.type_params)
