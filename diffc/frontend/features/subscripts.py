"""Subscript operators: `__subscript(int i, int j) -> T { get {...} set {...} }` in a struct, and
`__subscript(int i) -> T { get; set; }` as an interface requirement. Parsing turns the accessors
into methods, as properties.py does for properties: `get` is `T __subscript_get(int i, int j)`,
`set` a `[mutating] void __subscript_set(int i, int j, T newValue)`; attributes on an accessor stay
on its method, so `[Differentiable] get` is a differentiable method and a custom derivative names
it as `fwd_diff(S::__subscript::get)`. The checker rewrites `obj[i, j]` into the getter's call and
`obj[i, j] = v` (or `op=`) into the setter's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend.errors import SYNTAX, UNSUPPORTED, FrontendError
from diffc.frontend import types as T
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking
    from diffc.frontend.parser.parser import Parser

KEYWORD = "__subscript"
GET, SET = "__subscript_get", "__subscript_set"
ACCESSORS = {"get": GET, "set": SET}


def parse_subscript(p: Parser, mods: set[str], start: int, requirement: bool,
                    prefix: tuple[list[str], dict[str, list[str]]] | None = None) -> list[A.Func]:
    """At `__subscript`: its accessor methods (without bodies when `requirement`, in an interface);
    `prefix`: the generic parameters of a `__generic<...>` before it."""
    kw = p.expect(KEYWORD)
    gparams, type_params = prefix or ([], {})
    params = p.param_list()
    ret_mods = set(mods) & {"no_diff"}
    p.expect("->")
    while p.tok.text == "no_diff":
        ret_mods.add("no_diff")
        p.i += 1
    ret = p.array_dims(p.type_ref(), type_position=True)
    if p.accept(";"):  # `__subscript(int i) -> T;`: a getter
        if not requirement:
            raise FrontendError(SYNTAX, "a subscript in a struct needs accessors: '{ get { ... } }'", kw.start, kw.end)
        return [_method(p, [], ret_mods, ret, GET, params, None, start, (kw.start, kw.end), mods, gparams, type_params)]
    p.expect("{")
    methods: list[A.Func] = []
    while not p.accept("}"):
        astart = p.tok.start
        attrs = p.attributes()
        acc = p.ident("'get' or 'set'")
        if acc.text not in ACCESSORS:
            raise FrontendError(UNSUPPORTED if acc.text == "ref" else SYNTAX,
                                f"a subscript accessor '{acc.text}' is not supported (only 'get' and 'set')"
                                if acc.text == "ref" else f"expected 'get' or 'set', found '{acc.text}'",
                                acc.start, acc.end)
        span = (acc.start, acc.end)
        body = None
        if not p.accept(";"):
            body = p.block()
        elif not requirement:
            raise FrontendError(UNSUPPORTED, f"a subscript accessor without a body ('{acc.text};') is not "
                                "supported in a struct", acc.start, acc.end)
        # a getter never mutates here; a `[nonmutating] set` (a handle's, writing memory it points at)
        # leaves `this` as it is
        keeps_this = any(a.name == "nonmutating" for a in attrs)
        attrs = [a for a in attrs if a.name != "nonmutating"]
        if acc.text == "get":
            methods.append(_method(p, attrs, ret_mods, ret, GET, list(params), body, astart, span, mods,
                                   gparams, type_params))
        else:
            value = A.Param(set(), ret, "newValue", span=span)
            mutating = [] if keeps_this else [A.Attr("mutating", span=span)]
            methods.append(_method(p, attrs + mutating, set(), A.TypeRef("void", span=span),
                                   SET, list(params) + [value], body, astart, span, mods, gparams, type_params))
    p.accept(";")
    if not methods:
        raise FrontendError(SYNTAX, "a subscript has no accessor", kw.start, kw.end)
    return methods


def _method(p: Parser, attrs, ret_mods, ret, name, params, body, start, span, mods, gparams, type_params) -> A.Func:
    return A.Func(attrs, set(ret_mods), ret, name, params, body, span=p.span_from(start), name_span=span,
                  generic_params=list(gparams), mods=set(mods) - {"no_diff"}, type_params=dict(type_params))


def accessor_name(p: Parser, target: A.Member) -> None:
    """After `S::__subscript` in `fwd_diff(S::__subscript::get)`: names the accessor's method."""
    p.expect("::")
    acc = p.ident("'get' or 'set'")
    if acc.text not in ACCESSORS:
        raise FrontendError(SYNTAX, f"expected 'get' or 'set', found '{acc.text}'", acc.start, acc.end)
    target.name = ACCESSORS[acc.text]


def indices(e: A.Index) -> list[A.Expr]:
    return [e.index, *e.more]


def read(e: A.Index) -> A.Call:
    """`obj[i, j]` -> `obj.__subscript_get(i, j)`."""
    return A.Call(A.Member(e.base, GET, e.base.span, False, span=e.span), indices(e), span=e.span)


def write(e: A.Assign) -> A.Call:
    """`obj[i] = v` -> `obj.__subscript_set(i, v)`; `obj[i] op= v` -> `obj.__subscript_set(i, obj[i] op v)`."""
    target = e.target
    assert isinstance(target, A.Index)
    value = e.value
    if e.op != "=":
        value = A.Binary(e.op[:-1], A.Index(target.base, target.index, list(target.more), span=target.span),
                         value, span=e.span)
    member = A.Member(target.base, SET, target.base.span, False, span=target.span)
    return A.Call(member, indices(target) + [value], span=e.span)


def _subscripted(t: T.Type, accessor: str) -> bool:
    """Whether `t[...]` calls a subscript operator's accessor (`p[i]` on a pointer indexes memory)."""
    return isinstance(t, T.Struct) and (accessor in t.methods or accessor in t.method_templates)


def check_assign(c: Checking, e: A.Assign) -> T.Type | None:
    if not (isinstance(e.target, A.Index) and _subscripted(c.expr(e.target.base), SET)):
        return None
    return c.expr(c.replace(e, write(e)))


def check_index(c: Checking, e: A.Index, t: T.Type) -> T.Type | None:
    if not _subscripted(t, GET):
        return None
    return c.expr(c.replace(e, read(e)))


FEATURE = Feature("subscripts", members={KEYWORD: parse_subscript}, check_assign=check_assign,
                  check_index=check_index)
