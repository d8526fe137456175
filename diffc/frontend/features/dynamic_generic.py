"""Dynamic values of a generic interface instance (`IFoo<8>`, `ISensor<float>`), for dynamic.py:
the union of `ISensor<float>` holds the structs that name `ISensor<float>` among their bases
(`struct Ortho : ISensor<float>`), and the instances of generic structs whose bases make them
one (`struct Persp<R : IFloat> : ISensor<R>` gives `Persp<float>`, instantiated here). The
interface's requirements are its generic parameters' values substituted in (generics.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import ARG_COUNT, UNSUPPORTED
from diffc.frontend.generics import instance_name, substitute

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking


def interface_args(c: Checking, idecl: A.Interface, where: A.TypeRef) -> dict:
    """Generic parameter -> value (an int or a type) of the instance `where` names; {} when the
    interface is not generic."""
    from diffc.frontend.checker.symbols import err

    params = idecl.generic_params
    if not params:
        return {}
    args = getattr(where, "args", [])
    if len(args) != len(params):
        raise err(ARG_COUNT, f"interface '{idecl.name}' takes {len(params)} generic arguments, got {len(args)}", where)
    return {p: c.generic_arg(idecl.name, a, where) for p, a in zip(params, args)}


def union_name(name: str, env: dict) -> str:
    return instance_name(name, tuple(env.values())) if env else name


def shown(name: str, values) -> str:
    """`ISensor<float>`: how a type conformance line names an instance (no spaces)."""
    return f"{name}<{','.join(str(v) for v in values)}>" if values else name


def struct_shown(s: T.Struct) -> str:
    return shown(s.template[0], s.template[1]) if s.template else s.sname


def substitute_requirements(reqs: list[A.Func], idecl: A.Interface, env: dict) -> list[A.Func]:
    """The requirements of `idecl` (and only those: an inherited interface's are as declared)
    with the instance's generic values in place of its parameters."""
    if not env:
        return reqs
    own = {id(m) for m in idecl.methods}
    return [substitute(m, env) if id(m) in own else m for m in reqs]


def implementations(c: Checking, name: str, env: dict, candidates: list[T.Struct], where) -> list[T.Struct]:
    """The structs of `candidates` (each implements interface `name`) that implement the instance
    `env`, after instantiating the generic structs that do."""
    from diffc.frontend.checker.symbols import err

    if not env:
        return candidates
    decls = {d.name: d for d in c.struct_decls}
    for tname, d in list(c.struct_templates.items()):
        for ref in (b for b in d.generic_bases if b.name == name):
            targs = _unify(d, ref.args, list(env.values()))
            if targs is not None:
                c.instantiate_struct(tname, A.TypeRef(tname, targs, span=getattr(where, "span", d.span)))
    out = []
    for s in [s for s in c.structs.values() if s.dynamic_of is None and name in c.ifaces.closure(s.conformances)]:
        if s.template:  # an instance: its template's bases with its generic values
            d = c.struct_templates[s.template[0]]
            refs = [substitute(b, dict(zip(d.generic_params, s.template[1]))) for b in d.generic_bases]
        else:
            refs = decls[s.sname].generic_bases if s.sname in decls else []
        refs = [r for r in refs if r.name == name]
        if not refs:
            raise err(UNSUPPORTED, f"dynamic dispatch over '{shown(name, env.values())}': '{struct_shown(s)}' "
                      f"implements '{name}' without naming its generic arguments, which is not supported", where)
        if any([c.generic_arg(name, a, r) for a in r.args] == list(env.values()) for r in refs):
            out.append(s)
    return out


def _unify(d: A.Struct, args: list, values: list) -> list | None:
    """The generic arguments that make generic struct d's base `I<args>` the instance `I<values>`
    (each arg a parameter of d, or an int), or None where no instance of d is one."""
    bound: dict[str, object] = {}
    for a, v in zip(args, values):
        p = a if isinstance(a, str) else a.name if isinstance(a, A.TypeRef) and not a.args and not a.dims else None
        if p in d.generic_params:
            if bound.setdefault(p, v) != v:
                return None
        elif not (isinstance(a, int) and a == v):
            return None  # (a type this generic struct's base fixes: its instances are not made here)
    if any(p not in bound and p not in d.generic_defaults for p in d.generic_params):
        return None
    return [bound[p] if isinstance(bound[p], int) else A.TypeRef(p, fixed=bound[p]) for p in d.generic_params
            if p in bound]
