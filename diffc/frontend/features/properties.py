"""Struct properties: `property T name { get {...} set {...} }` (also `property name : T`, and
`set(T v) {...}`). Parsing turns the accessors into methods: `get` is `T __get_name()`, `set` a
`[mutating] void __set_name(T newValue)`; attributes on an accessor stay on its method, so a
`[Differentiable] get` is a differentiable method. The checker then rewrites a read of
`obj.name` into the getter's call, and `obj.name = v` (or `obj.name += v`) into the setter's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend.errors import SYNTAX, UNSUPPORTED, FrontendError
from diffc.frontend import types as T
from diffc.frontend.feature import Feature
from diffc.frontend.checker.symbols import as_this_member

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking
    from diffc.frontend.parser.parser import Parser

GET, SET = "__get_", "__set_"


def parse_property(p: Parser, mods: set[str], start: int) -> list[A.Func]:
    """After `property`: the accessor methods of one property."""
    if p.peek().text == ":":  # `property name : T`
        name = p.ident("a property name")
        p.expect(":")
        ty = p.array_dims(p.type_ref(), type_position=True)
    else:
        while p.tok.text == "no_diff":
            mods = mods | {"no_diff"}
            p.i += 1
        ty = p.array_dims(p.type_ref(), type_position=True)
        name = p.ident("a property name")
    p.expect("{")
    methods: list[A.Func] = []
    while not p.accept("}"):
        astart = p.tok.start
        attrs = p.attributes()
        acc = p.ident("'get' or 'set'")
        if acc.text not in ("get", "set"):
            raise FrontendError(SYNTAX, f"expected 'get' or 'set', found '{acc.text}'", acc.start, acc.end)
        if p.accept(";"):
            raise FrontendError(UNSUPPORTED, f"a property accessor without a body ('{acc.text};') is not "
                                "supported in a struct", acc.start, acc.end)
        span = (acc.start, acc.end)
        if acc.text == "get":
            body = p.block()
            methods.append(A.Func(attrs, set(mods) & {"no_diff"}, ty, GET + name.text, [], body,
                                  span=p.span_from(astart), name_span=span, mods=set(mods) - {"no_diff"}))
            continue
        pname = "newValue"
        if p.accept("("):  # `set(T v)`
            p.array_dims(p.type_ref(), type_position=True)
            pname = p.ident("a parameter name").text
            p.expect(")")
        body = p.block()
        param = A.Param(set(), ty, pname, span=span)
        attrs = attrs + [A.Attr("mutating", span=span)]
        methods.append(A.Func(attrs, set(), A.TypeRef("void", span=span), SET + name.text, [param], body,
                              span=p.span_from(astart), name_span=span, mods=set(mods) - {"no_diff"}))
    p.accept(";")
    if not methods:
        raise FrontendError(SYNTAX, f"property '{name.text}' has no accessor", name.start, name.end)
    return methods


def has_property(methods: dict[str, str], name: str) -> bool:
    return GET + name in methods or SET + name in methods


def read(e: A.Member) -> A.Call:
    """`obj.name` -> `obj.__get_name()`."""
    member = A.Member(e.base, GET + e.name, e.name_span, e.arrow, span=e.span)
    return A.Call(member, [], span=e.span)


def write(e: A.Assign) -> A.Call:
    """`obj.name = v` -> `obj.__set_name(v)`; `obj.name op= v` -> `obj.__set_name(obj.name op v)`."""
    target = e.target
    assert isinstance(target, A.Member)
    value = e.value
    if e.op != "=":
        value = A.Binary(e.op[:-1], A.Member(target.base, target.name, target.name_span, target.arrow,
                                             span=target.span), value, span=e.span)
    member = A.Member(target.base, SET + target.name, target.name_span, target.arrow, span=target.span)
    return A.Call(member, [value], span=e.span)


def parse_member(p: Parser, mods: set[str], start: int, requirement: bool, prefix=None) -> list[A.Func] | None:
    """At `property`: a property's accessors; in an interface a property requirement, skipped (the
    conforming struct's own property is what calls through a specialized generic reach)."""
    if requirement:
        p.skip_requirement()
        return []
    if prefix is not None or p.peek().kind != "ident":
        return None
    p.i += 1
    return parse_property(p, mods, start)


def _names_property(t: T.Type, name: str) -> bool:
    st = t.elem if isinstance(t, T.Pointer) else t
    return isinstance(st, T.Struct) and st.field(name) is None and has_property(st.methods, name)


def check_assign(c: Checking, e: A.Assign) -> T.Type | None:
    target = e.target
    if isinstance(target, A.Name) and c.lookup(target.id) is None and c.func is not None \
            and c.func.owner is not None and has_property(c.func.owner.methods, target.id):
        target = e.target = as_this_member(target)  # a sibling property inside a method
    if not isinstance(target, A.Member) or isinstance(target.base, A.TypeExpr):
        return None
    if not _names_property(c.expr(target.base), target.name):
        return None
    return c.expr(c.replace(e, write(e)))


def check_member(c: Checking, e: A.Member, t: T.Type) -> T.Type | None:
    if not _names_property(t, e.name):
        return None
    return c.expr(c.replace(e, read(e)))


FEATURE = Feature("properties", members={"property": parse_member}, check_assign=check_assign,
                  check_member=check_member,
                  implicit_member=lambda c, owner, name: has_property(owner.methods, name))
