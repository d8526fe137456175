"""`extension S : I { methods }`: methods, typealiases and conformances added to a struct declared
in this file. A generic struct's extension applies to every instance (`extension<int N>
myvector<N>`, its parameters bound to the instance's arguments) or to one instance
(`extension myvector<3> : I`). The struct is declared as if it held the extension's members."""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend.errors import UNSUPPORTED, FrontendError
from diffc.frontend.generics import substitute

from diffc.frontend.feature import Feature
if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking


def apply_extensions(c: Checking, d: A.Struct, template) -> A.Struct:
    """`d` (a struct, or a generic struct's instance with `template` = (name, values)) with the
    members of the extensions that apply to it."""
    from diffc.frontend.checker.symbols import err

    exts = c.extensions.get(template[0] if template else d.name, [])
    blanket = c.extensions.get("", [])
    if not exts and not blanket:
        return d
    d = dataclasses.replace(d, bases=list(d.bases), methods=list(d.methods), aliases=list(d.aliases),
                            fields=list(d.fields))
    for x in exts:
        env = _binding(c, x, template)
        if env is None:
            continue
        body = substitute(x, env) if env else x
        for m in body.methods:
            d.methods.append(m)
        d.aliases += body.aliases
        for f in body.statics:
            if "extern" in f.mods:
                _redeclare(d, f)
            else:
                d.fields.append(f)
        d.bases += [b for b in body.bases if b not in d.bases]
        if not template and x.target.args:
            raise err(UNSUPPORTED, f"'{d.name}' is not generic", x.target)
    for x in blanket:
        param = x.target.name
        if set(x.type_params[param]) <= c.ifaces.closure(d.bases):
            env = _interface_binding(c, x, d)
            if env is None:
                continue
            body = _as_this(substitute(x, env) if env else x, param)
            d.methods += [m for m in body.methods if m.name not in {k.name for k in d.methods}]
            d.aliases += body.aliases
    return d


def _interface_binding(c: Checking, x: A.Extension, d: A.Struct) -> dict | None:
    """`extension<I, O, M : IModel<I, O>> M` applied to struct d: I and O bound to the generic
    arguments of d's base `IModel<...>` (None when d has no such base, or several that bind them
    differently, or a bound type misses I's or O's interfaces)."""
    refs = [r for r in x.param_bases if r.name in x.type_params[x.target.name]]
    env: dict = {}
    for ref in refs:
        found = None
        for base in (b for b in d.generic_bases if b.name == ref.name and len(b.args) == len(ref.args)):
            bound = _match(c, ref.args, base.args, x.generic_params, dict(env))
            if bound is not None and found is not None and bound != found:
                return None  # (two instances of the interface: which one the aliases mean is unclear)
            found = bound if bound is not None else found
        if found is None:
            return None
        env = found
    for p, v in env.items():
        if not isinstance(v, int) and not all(c.ifaces.conforms(v, i) for i in x.type_params.get(p, [])):
            return None
    return env


def _match(c: Checking, wanted: list, given: list, params: list[str], env: dict) -> dict | None:
    """Binds the extension's parameters in `wanted` (an interface instance's arguments) to the
    struct's `given` ones; None when a fixed argument or an earlier binding disagrees."""
    for w, g in zip(wanted, given):
        name = w if isinstance(w, str) else w.name if isinstance(w, A.TypeRef) and not w.args and not w.dims else None
        try:
            value = g if isinstance(g, int) else c.resolve(g) if isinstance(g, A.TypeRef) else None
        except FrontendError:
            return None  # (a base whose arguments are no type here: the extension does not apply through it)
        if value is None:
            return None
        if name in params:
            if name in env and env[name] != value:
                return None
            env[name] = value
        elif isinstance(w, int):
            if w != value:
                return None
        elif not isinstance(w, A.TypeRef) or c.resolve(w) != value:
            return None
    return env


def _redeclare(d: A.Struct, f: A.Field) -> None:
    """`[DerivativeMember(Differential.x)] extern float x;` in an extension: a field the struct
    already has, declared again to give it attributes (its type is checked where the struct's is)."""
    from diffc.frontend.errors import UNDEFINED
    from diffc.frontend.checker.symbols import err

    k = next((k for k, g in enumerate(d.fields) if g.name == f.name and "static" not in g.mods), None)
    if k is None:
        raise err(UNDEFINED, f"extern field '{f.name}': '{d.name}' has no field of that name (an extension "
                  "cannot add fields)", f)
    g = d.fields[k]
    d.fields[k] = dataclasses.replace(g, derivative_member=f.derivative_member or g.derivative_member,
                                      redeclared=f.type)


def _as_this(x: A.Extension, param: str) -> A.Extension:
    """A copy of blanket extension `x` (`extension<T : IFoo> T`) with its parameter named `This`,
    the struct it is applied to."""
    out = copy.deepcopy(x)
    for n in A.walk(out):
        if isinstance(n, A.TypeRef) and n.name.split(".")[0] == param:
            n.name = "This" + n.name[len(param):]
    return out


def extension_constraints(c: Checking, d: A.Struct, template) -> dict[str, list[str]]:
    """The interfaces generic struct `d`'s type parameters have in instance `template`: its own and
    those of the extensions that apply to the instance (`extension<T : IFloat> V<T>` makes T an
    IFloat there)."""
    out = {p: list(cs) for p, cs in d.type_params.items()}
    for x in c.extensions.get(d.name, []):
        if _binding(c, x, template) is None:
            continue
        for p, a in zip(d.generic_params, x.target.args):
            name = a if isinstance(a, str) else a.name if isinstance(a, A.TypeRef) else None
            if p in out and name in x.type_params:
                out[p] += x.type_params[name]
    return out


def _binding(c: Checking, x: A.Extension, template) -> dict | None:
    """The extension's generic parameters bound to the instance's arguments, or None when the
    extension is for another instance."""
    from diffc.frontend.checker.symbols import err

    if template is None:
        return {}
    values = template[1]
    if len(x.target.args) != len(values):
        raise err(UNSUPPORTED, f"an extension of '{template[0]}' must give all its generic arguments", x.target)
    env: dict = {}
    for a, v in zip(x.target.args, values):
        pname = a if isinstance(a, str) else a.name if isinstance(a, A.TypeRef) and not a.args else None
        if pname in x.generic_params:
            env[pname] = v
        elif isinstance(a, int):
            if a != v:
                return None
        elif isinstance(a, A.TypeRef):
            if c.resolve(a) is not v and c.resolve(a) != v:
                return None
        else:
            raise err(UNSUPPORTED, f"generic argument '{a}' of this extension is not supported", x.target)
    for p, v in env.items():  # `extension<T : IFloat> S<T>`: only for instances whose T conforms
        if not isinstance(v, int) and not all(c.ifaces.conforms(v, i) for i in x.type_params.get(p, [])):
            return None
    return env


FEATURE = Feature("extensions", extend_struct=apply_extensions, instance_constraints=extension_constraints)
