"""Dynamic dispatch over an interface, where the concrete type is chosen at run time (an
interface-typed local assigned in branches, an interface result or field, `createDynamicObject`):
a tagged union. A value of interface I is a struct named I whose fields are `__tag` (an int: which
implementation) and one field per struct implementing I (in declaration order), holding that implementation's value when the tag selects it and zeros otherwise. Each of I's
methods is a method of that struct that switches on the tag and calls the implementation's method,
so calls, derivatives (the switch is an scf.if chain over calls), fields in memory and parameters
need nothing new. I's union is differentiable when I is (IDifferentiable among its interfaces).

Tags are conformance ids: those the program is compiled with (`compile_slang(conformance_ids=...)`,
`diffc run`'s `//TEST_INPUT: type_conformance A:I = 0` lines), and for each implementation given
none, the smallest id not taken, in declaration order (so 0, 1, ... when none are given)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend.features import dynamic_generic as dg
from diffc.frontend.features.dynamic_buffers import any_value_words
from diffc.frontend import types as T
from diffc.frontend.errors import TYPE_MISMATCH, UNDEFINED, UNSUPPORTED
from diffc.frontend.feature import Feature

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

TAG = "__tag"
DISPATCH_ATTRS = {"Differentiable", "BackwardDifferentiable", "ForwardDifferentiable", "mutating"}


def union_of(c: Checking, name: str, where) -> T.Struct:
    """Interface `name`'s union struct, made at its first use from the structs implementing it."""
    from diffc.frontend.checker.symbols import err

    idecl = c.ifaces.decls.get(name)
    if idecl is None:
        raise err(UNSUPPORTED, f"a value of built-in interface '{name}' (dynamic dispatch) is not supported", where)
    env = dg.interface_args(c, idecl, where)  # `IFoo<8>`: an instance of a generic interface
    uname = dg.union_name(name, env)
    if uname in c.structs:
        return c.structs[uname]
    _declare_later_implementations(c, name)
    impls = [s for s in c.structs.values() if s.dynamic_of is None and name in c.ifaces.closure(s.conformances)]
    impls = dg.implementations(c, name, env, impls, where)
    impls.sort(key=lambda s: _declared_at(c, s))  # tags in declaration order, unless given
    if not impls:
        raise err(UNSUPPORTED, f"dynamic dispatch over interface '{dg.shown(name, env.values())}': no struct "
                  "implements it", where)
    tags = _conformance_ids(c, dg.shown(name, env.values()), impls, where)
    reqs = [m for n in sorted(c.ifaces.closure([name])) if n in c.ifaces.decls for m in c.ifaces.decls[n].methods]
    reqs = dg.substitute_requirements(reqs, idecl, env)
    # an associated type is, behind a dynamic value, a dynamic value of the interface it must conform to
    assoc: dict[str, str] = {}
    for n in c.ifaces.closure([name]):
        for a, bounds in (c.ifaces.decls[n].assoc if n in c.ifaces.decls else {}).items():
            faces = [b for b in bounds if b in c.ifaces.decls]
            if len(faces) != 1:
                raise err(UNSUPPORTED, f"dynamic dispatch over interface '{name}', whose associated type '{a}' does "
                          "not name exactly one interface it conforms to, is not supported", where)
            assoc[a] = faces[0]
    fields = [A.Field(set(), A.TypeRef("int", span=where.span), TAG, span=where.span)]
    fields += [A.Field(set(), A.TypeRef(s.sname, fixed=s, span=where.span), s.sname, span=where.span) for s in impls]
    methods = [_dispatcher(m, impls, tags, where, assoc) for m in reqs]
    aliases = [A.Typedef(A.TypeRef(face, span=where.span), a, span=where.span) for a, face in assoc.items()]
    decl = A.Struct(uname, [name], fields, methods, aliases=aliases, span=idecl.span)
    s = c.declare_struct(decl, uname, dynamic_of=name)
    s.union_tags = tags
    s.any_value_words = any_value_words(c, idecl, where)
    c.ifaces.frozen[uname] = len(impls)  # (an instance of a generic one: its implementations are all made)
    return s


def _declared_at(c: Checking, s: T.Struct) -> int:
    """Where struct s (a generic struct's instance: the generic struct) is among the program's."""
    return c.struct_order.get(s.template[0] if s.template else s.sname, -1)


def _conformance_ids(c: Checking, name: str, impls: list[T.Struct], where) -> list[int]:
    """Each implementation's tag: the conformance id given for it (`name` and the structs as a
    type conformance names them: `ISensor<float>`, `Persp<float>`), else the smallest one free."""
    from diffc.frontend.checker.symbols import err

    given = dict(c.conformance_ids.get(name, {}))
    names = {dg.struct_shown(s) for s in impls}
    for struct, k in given.items():
        if struct not in names:
            why = "does not implement it" if struct in c.structs else "is no struct of the program"
            raise err(TYPE_MISMATCH if struct in c.structs else UNDEFINED, f"conformance id {k} is given to "
                      f"'{struct}' as an implementation of '{name}', but '{struct}' {why}", where)
    taken = list(given.values())
    for k in set(taken):
        if taken.count(k) > 1:
            both = " and ".join(sorted(f"'{t}'" for t, v in given.items() if v == k))
            raise err(TYPE_MISMATCH, f"conformance id {k} of interface '{name}' is given to both {both}", where)
    out, free = [], 0
    for s in impls:
        key = dg.struct_shown(s)
        if key not in given:
            while free in given.values():
                free += 1
            given[key] = free
        out.append(given[key])
    return out


def _declare_later_implementations(c: Checking, name: str) -> None:
    """Declares, ahead of their turn, the program's structs that implement interface `name` and
    come after this first use of a dynamic value of it (Slang dispatches over every conformance
    in the linked program, wherever it is declared)."""
    for d in c.struct_decls:
        if d.name in c.structs or id(d) in c.declared_early:
            continue
        bases = list(d.bases) + [b for x in c.extensions.get(d.name, []) for b in x.bases]
        if name in c.ifaces.closure(bases):
            c.declared_early.add(id(d))
            c.declare_struct(d, d.name)


def _dispatcher(req: A.Func, impls: list[T.Struct], tags: list[int], where, assoc: dict[str, str]) -> A.Func:
    """`R m(P p...) { if (this.__tag == 0) return this.A.m(p...); else ... }` for requirement m
    (a static requirement too: the tag is what chooses the implementation). A result of an
    associated type is a dynamic value of its interface (`assoc`: associated type -> interface)."""
    from diffc.frontend.checker.symbols import err

    for p in req.params:
        if p.type.name in assoc:
            raise err(UNSUPPORTED, f"dynamic dispatch of '{req.name}', whose parameter '{p.name}' has an associated "
                      "type, is not supported", p)
    ret = copy.deepcopy(req.ret)
    if ret.name in assoc:
        ret = A.TypeRef(assoc[ret.name], span=ret.span)
    sp = req.name_span
    this = lambda: A.Name("this", span=sp)  # noqa: E731

    # a generic requirement dispatches as a generic method: each instance calls the
    # implementations' instances with the same generic arguments
    targs = [p if p not in req.type_params else A.TypeRef(p, span=sp) for p in req.generic_params]

    def call(s: T.Struct) -> A.Stmt:
        callee = A.Member(A.Member(this(), s.sname, sp, span=sp), req.name, sp, targs=copy.deepcopy(targs), span=sp)
        e = A.Call(callee, [A.Name(p.name, span=sp) for p in req.params], span=sp)
        if req.ret.name == "void":
            return A.ExprStmt(e, span=sp)
        return A.Return(e, span=sp)

    body: A.Stmt = call(impls[-1])
    for k in range(len(impls) - 2, -1, -1):
        cond = A.Binary("==", A.Member(this(), TAG, sp, span=sp), A.Num(tags[k], False, span=sp), span=sp)
        body = A.If(cond, call(impls[k]), body, span=sp)
    attrs = [a for a in req.attrs if a.name in DISPATCH_ATTRS]
    mods = set(req.mods) - {"static"}
    return A.Func(attrs, set(req.ret_mods) - {"static"}, ret, req.name, copy.deepcopy(req.params),
                  A.Block([body], span=sp), span=req.span, name_span=sp, mods=mods,
                  generic_params=list(req.generic_params), type_params=copy.deepcopy(req.type_params),
                  generic_defaults=copy.deepcopy(req.generic_defaults))


FEATURE = Feature("interface values", resolve_interface=union_of)
