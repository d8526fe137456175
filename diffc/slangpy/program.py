"""A SlangPy module's program as diffc's front end checks it, kept alive for reflection and for
specializing the calls Python makes: a type written as text (`LinearLayer<float, 2, 3>`) resolves
to the front end's type (types.py), a struct instance's methods are the checker's functions, a
generic function or method is instantiated for the types of the Python values it is called with.

`spell(t)` writes a front-end type back as Slang text that names the same type in this program,
which is how a generated call kernel (calls.py) declares its parameters."""

from __future__ import annotations

import sys

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import TYPE_MISMATCH, FrontendError
from diffc.frontend.generics import substitute
from diffc.frontend.checker.symbols import FuncInfo


def spell(t: T.Type | int) -> str:
    """Slang text naming front-end type t (an int: a generic value argument)."""
    if isinstance(t, int):
        return str(t)
    if isinstance(t, T.Vector):
        return f"{t.elem.kind}{t.n}" if t.n <= 4 else f"vector<{t.elem.kind}, {t.n}>"
    if isinstance(t, T.Array):
        return f"{spell(t.elem)}[{t.n}]"
    if isinstance(t, T.Struct) and t.template is not None:
        name, values = t.template
        return f"{name}<{', '.join(spell(v) for v in values)}>"
    if isinstance(t, T.Buffer):
        inner = f"Atomic<{spell(t.elem)}>" if t.atomic else spell(t.elem)
        return f"RWStructuredBuffer<{inner}>"
    if isinstance(t, T.Texture):
        return f"{'RW' if t.rw else ''}Texture2D<{spell(t.elem)}>"
    return t.name()  # type: ignore[attr-defined]


class Program:
    """The checked program of a module's source (with its imports)."""

    def __init__(self, text: str, path: str, include_dirs=()):
        from diffc.frontend.checker.checker import Checker
        from diffc.frontend.parser.imports import Loader
        from diffc.frontend import FEATURES  # noqa: F401 (the language features' hooks)

        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20000))
        self.loader = Loader(path, None, include_dirs)
        try:
            prog = self.loader.parse(text, path)
            self.checker = Checker()
            self.checker.check_program(prog)
        except FrontendError as e:
            raise e.to_diffc_error(self.loader.sources) from None
        finally:
            sys.setrecursionlimit(limit)
        self.decls = prog.decls

    # -- types ---------------------------------------------------------------------------------

    def type_ref(self, text: str) -> A.TypeRef:
        return self.loader.type_ref(text)

    def resolve_text(self, text: str) -> T.Type | None:
        """The type `text` names in this program, or None where it names none (an unknown name, a
        generic argument its constraints refuse)."""
        try:
            return self.resolve(self.type_ref(text))
        except (FrontendError, RecursionError):
            return None

    def resolve(self, ref: A.TypeRef, scope: T.Struct | None = None) -> T.Type:
        """`ref` resolved (inside struct `scope`: its typealiases and `This` are names too)."""
        c = self.checker
        if scope is not None:
            c.alias_scopes.append(scope.aliases)
        try:
            return c.resolve(ref)
        finally:
            if scope is not None:
                c.alias_scopes.pop()

    def struct_decl(self, s: T.Struct) -> A.Struct | None:
        """The declaration struct s is (an instance: its template's with the arguments put in)."""
        if s.template is not None:
            d = self.checker.struct_templates.get(s.template[0])
            if d is None:
                return None
            return substitute(d, dict(zip(d.generic_params, s.template[1])))
        return next((d for d in self.decls if isinstance(d, A.Struct) and d.name == s.sname), None)

    def interface_instances(self, s: T.Struct) -> list[tuple[str, list]]:
        """The interfaces struct s declares it conforms to, each with its resolved generic
        arguments (`IModel<float2, float[2]>`: ("IModel", [float2, float[2]]))."""
        from diffc.frontend.features.extensions import _binding

        d = self.struct_decl(s)
        out: list[tuple[str, list]] = []
        if d is None:
            return out
        bases, names = list(d.generic_bases), list(d.bases)
        # and those of the extensions of its template that apply to this instance
        for x in self.checker.extensions.get(s.template[0] if s.template is not None else s.sname, []):
            try:
                env = _binding(self.checker, x, s.template)
            except FrontendError:
                env = None
            if env is not None:
                bases += [substitute(b, env) for b in x.generic_bases]
                names += x.bases
        for b in bases:
            try:
                args = [a if isinstance(a, int) else self.resolve(a) if isinstance(a, A.TypeRef) else None
                        for a in b.args]
            except FrontendError:
                continue
            out.append((b.name, args))
        named = {n for n, _ in out}
        out += [(n, []) for n in names if n not in named]
        return out

    def conforms(self, t: T.Type, interface: str, args: list) -> bool:
        """Whether t conforms to `interface<args>` (args empty: to the interface by name)."""
        if not args or not isinstance(t, T.Struct):
            return self.checker.ifaces.conforms(t, interface)
        return any(n == interface and list(a) == list(args) for n, a in self.interface_instances(t))

    # -- functions -----------------------------------------------------------------------------

    def methods(self, s: T.Struct, name: str) -> list[FuncInfo]:
        """The overloads of method `name` of struct instance s, as the checker declared them."""
        symbol = s.methods.get(name)
        if symbol is None:
            return []
        funcs = self.checker.funcs
        return [funcs[n] for n in self.checker.overloads.get(symbol, [symbol]) if n in funcs]

    def method_template(self, s: T.Struct, name: str) -> A.Func | None:
        return s.method_templates.get(name)  # type: ignore[return-value]

    def functions(self, name: str) -> list[FuncInfo]:
        funcs = self.checker.funcs
        if name not in funcs:
            return []
        return [funcs[n] for n in self.checker.overloads.get(name, [name]) if n in funcs and funcs[n].owner is None]

    def function_template(self, name: str) -> A.Func | None:
        return self.checker.func_templates.get(name)

    def instantiate(self, d: A.Func, env: dict, owner: T.Struct | None = None) -> FuncInfo:
        """The signature of generic function (or method of `owner`) d with its generic
        parameters bound by env (name -> type or int); the constraints of d are checked."""
        for p in d.generic_params:
            if p not in env:
                raise FrontendError(TYPE_MISMATCH, f"generic parameter '{p}' of '{d.name}' is not given", *d.name_span)
            v = env[p]
            for iface in d.type_params.get(p, []):
                bases = [b for b in d.param_bases if b.name == iface]
                if bases:
                    ok = any(self.conforms(v, iface, [self._bound(a, env, owner) for a in b.args]) for b in bases)
                else:
                    ok = self.checker.ifaces.conforms(v, iface)
                if not ok:
                    raise FrontendError(TYPE_MISMATCH, f"{spell(v)} does not conform to '{iface}' (required of '{p}' "
                                        f"of '{d.name}')", *d.name_span)
        inst = substitute(d, env)
        inst.generic_params, inst.type_params = [], {}
        c = self.checker
        if owner is not None:
            c.alias_scopes.append(owner.aliases)
        try:
            return c.func_info(inst, owner)
        finally:
            if owner is not None:
                c.alias_scopes.pop()

    def _bound(self, a, env: dict, owner: T.Struct | None):
        if isinstance(a, int):
            return a
        if isinstance(a, str):
            return env.get(a, a)
        if isinstance(a, A.TypeRef) and not a.args and not a.dims and a.name in env:
            return env[a.name]
        return self.resolve(substitute(a, env), owner)
