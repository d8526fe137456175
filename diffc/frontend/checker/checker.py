"""Type checker: resolves names and types, fills `ty` on every expression, and reports
E0002 (undefined), E0003 (type mismatch), E0004 (unknown member), E0005 (argument count),
E0006 (non-differentiable call on a derivative-carrying value), E0007 (unbounded loop)."""

from __future__ import annotations

from diffc.frontend import ast as A
from diffc.frontend import feature
from diffc.frontend import types as T
from diffc.frontend.checker.loop_bounds import assigns_to, never_ends, static_bound
from diffc.frontend.errors import (
    ARG_COUNT, TYPE_MISMATCH, UNBOUNDED_LOOP, UNDEFINED, UNKNOWN_MEMBER,
    REDEFINED, UNSUPPORTED, FrontendError,
)
from diffc.frontend.generics import const_int, infer, instance_name, substitute
from diffc.frontend.checker.inits import INIT, as_constructor_call
from diffc.frontend.checker.generic_overloads import declare_method_template
from diffc.frontend.checker.symbols import (  # noqa: F401 (re-exported for the lowering)
    DIFF_ATTRS, SWIZZLE, FuncInfo, Local, PInfo, as_this_member, derivative_signature, err, ptr_param,
)
from diffc.frontend.checker.interfaces import Interfaces, mark_nondiff_generic_values
from diffc.frontend.checker.type_resolution import TypeResolution


def int_literal_type(e: A.Num) -> T.Scalar:
    """`1` is an int, `1u` a uint, `1l` / `1ll` an int64_t, `1ul` a uint64_t; a literal beyond 32
    bits is 64-bit without a suffix (unsigned when beyond int64_t)."""
    unsigned, wide, v = "u" in e.suffix, "l" in e.suffix, int(e.value)
    if wide or v > 0xFFFFFFFF:
        return T.Scalar("uint64_t" if unsigned or v > 2**63 - 1 else "int64_t")
    return T.UINT if unsigned else T.INT


class Checker(TypeResolution):
    def __init__(self):
        self.structs: dict[str, T.Struct] = {}
        self.fields_in_progress: list[T.Struct] = []  # structs whose fields are being resolved
        self.struct_decls: list[A.Struct] = []
        self.struct_order: dict[str, int] = {}  # struct (generic ones too) -> its place among them (dynamic.py)
        self.typedef_decls: dict[str, A.Typedef] = {}
        self.declared_early: set[int] = set()  # struct decls declared ahead of their turn (dynamic.py)
        self.typedefs: dict[str, T.Type] = {}
        self.funcs: dict[str, FuncInfo] = {}
        self.scopes: list[dict[str, Local]] = [{}]
        self.func: FuncInfo | None = None
        self.struct_templates: dict[str, A.Struct] = {}
        self.func_templates: dict[str, A.Func] = {}
        self.instantiating: set[str] = set()  # generic function instances whose derivatives are being made
        self.alias_scopes: list[dict[str, T.Type]] = []  # typealiases of the structs being checked
        self._evaluating: set[str] = set()  # the static consts static_const_int is evaluating
        self.func_order: list[FuncInfo] = []  # every function with a body, in the order to lower them
        self.pending: list[FuncInfo] = []  # functions whose bodies are still to check
        self.warnings: list[tuple[tuple[int, int], str]] = []  # (span, message), in source order
        self.enums: dict[str, dict[str, Local]] = {}  # enum name -> its cases (constants)
        self.overloads: dict[str, list[str]] = {}  # first overload's symbol -> every overload's (overloads.py)
        self.ifaces = Interfaces(self)
        self.extensions: dict[str, list[A.Extension]] = {}  # struct name -> its `extension` blocks
        self.operator_overloads: set[str] = set()  # the operators the program overloads (operators.py)
        self.conformance_ids: dict[str, dict[str, int]] = {}  # interface -> struct -> its tag (dynamic.py)
        # the nodes being checked, outermost first: where `replace` looks for a node's parent
        self.checking: list[A.Node] = []
        self.replaced: dict[int, tuple[A.Node, A.Node]] = {}  # id(old) -> (old, the node that replaced it)

    def default_construction(self, s: A.VarDecl, ty: T.Struct) -> A.Expr | None:
        """`S()` when S has a constructor without parameters, else None (the fields start at zero)."""
        call = A.Call(A.TypeExpr(s.type, span=s.span), [], span=s.span)
        self.scopes.append({})
        try:
            self.expr(call)
        except FrontendError:
            return None
        finally:
            self.scopes.pop()
        return A.Call(A.TypeExpr(s.type, span=s.span), [], span=s.span)

    def replace(self, old: A.Node, new: A.Node) -> A.Node:
        """A rewrite's result (`obj.p` -> `obj.__get_p()`) takes the rewritten node's place in
        its parent, found among the nodes being checked, nearest first; returns it."""
        for parent in reversed(self.checking):
            if parent is not old and A.replace_child(parent, old, new):
                break
        self.replaced[id(old)] = (old, new)
        return new

    def current(self, e: A.Node) -> A.Node:
        """What node e stands for now: the node that replaced it, if a rewrite did."""
        while id(e) in self.replaced and self.replaced[id(e)][0] is e:
            e = self.replaced[id(e)][1]
        return e

    def warn(self, node: A.Node, message: str) -> None:
        if (node.span, message) not in self.warnings:  # a generic body is checked once per instance
            self.warnings.append((node.span, message))

    # ---- scopes ----
    def lookup(self, name: str) -> Local | None:
        for s in reversed(self.scopes):
            if name in s:
                return s[name]
        return None

    def declare(self, name: str, ty: T.Type, mutable: bool, is_global: bool = False) -> Local:
        loc = Local(name, ty, mutable, is_global)
        self.scopes[-1][name] = loc
        return loc

    # ---- program ----
    def check_program(self, prog: A.Program) -> None:
        self.checking.append(prog)  # (a global's initializer rewritten: its place is in prog)
        top: list[FuncInfo] = []
        # every struct of the program, in order: a dynamic interface value's union (dynamic.py)
        # holds each implementation, also those declared after its first use
        self.struct_decls = [d for d in prog.decls if isinstance(d, A.Struct) and not d.generic_params]
        self.struct_order = {d.name: i for i, d in enumerate(d for d in prog.decls if isinstance(d, A.Struct))}
        self.typedef_decls = {d.name: d for d in prog.decls if isinstance(d, A.Typedef)}
        # int constants by name, for a struct declared before them (a use ahead of its declaration
        # in a file, or in a file imported ahead of it when imports go round in a circle)
        self.int_const_decls = {d.name: d for d in prog.decls if isinstance(d, A.Global) and d.init is not None
                                and {"static", "const"} <= set(d.mods) and d.type.name in ("int", "uint")
                                and not d.type.dims}
        for d in prog.decls:
            if isinstance(d, A.Extension):
                d.target = self.through_typedefs(d.target)
                blanket = d.target.name in d.type_params  # `extension<T : IFoo> T`: every conforming struct
                self.extensions.setdefault("" if blanket else d.target.name, []).append(d)
            if isinstance(d, A.Interface):
                self.ifaces.declare(d)
            if isinstance(d, A.Struct) and d.generic_params and d.name not in self.struct_templates:
                self.struct_templates[d.name] = d  # known before any use, wherever it is declared
                self.declared_early.add(id(d))
        self.ifaces.check_bases()
        for d in prog.decls:
            if isinstance(d, A.Extension):
                structs = {x.name for x in prog.decls if isinstance(x, A.Struct)}
                if d.target.name not in d.type_params and d.target.name not in structs:
                    raise err(UNSUPPORTED, f"an extension of '{d.target.name}' is not supported (only of "
                              "structs declared in this file)", d.target)
            elif isinstance(d, A.Struct):
                if id(d) in self.declared_early:
                    continue
                if d.name in self.structs or d.name in self.struct_templates or d.name in self.ifaces.decls:
                    raise err(REDEFINED, f"a second struct (or interface) named '{d.name}'", d)
                if d.generic_params:
                    self.struct_templates[d.name] = d
                else:
                    self.declare_struct(d, d.name)
            elif isinstance(d, A.Typedef):
                if id(d) not in self.declared_early:
                    self.typedefs[d.name] = self.resolve(d.type)
            elif isinstance(d, A.Enum):
                self.declare_enum(d)
            elif isinstance(d, A.Global):
                if d.name in self.scopes[0]:
                    raise err(REDEFINED, f"a second global named '{d.name}'", d)
                ty = self.resolve(d.type)
                if feature.first("declare_global", self, d, ty):  # (groupshared.py)
                    continue
                if "static" in d.mods and "const" in d.mods and d.init is not None and _plain_value(ty):
                    self.expect_type(d.init, ty)
                    self.scopes[0][d.name] = Local(d.name, ty, False, value=d.init)
                    continue
                self.declare(d.name, ty, isinstance(ty, T.Buffer) or "static" in d.mods and "const" not in d.mods, True)
                if d.init is not None:
                    self.expect_type(d.init, ty)
            elif isinstance(d, A.Func):
                self.ifaces.implicit_generics(d)
                for declare in feature.hooks("declare_func"):
                    declare(self, d)
                if d.generic_params:
                    if d.name in self.func_templates:  # (one generic beside plain overloads: calls.py)
                        raise err(UNSUPPORTED, f"overloading generic function '{d.name}' with another generic "
                                  "one is not supported", d.name_span)
                    self.func_templates[d.name] = d
                    for s in [s for s in self.structs.values() if s.template is not None]:
                        self.instantiate_method_derivative(d.name, s)  # of struct instances made before it
                else:
                    f = self.declare_func(d, None, d.name)
                    if f is not None:
                        top.append(f)
        for f in top:
            self.link_derivatives(f, None)
        while self.pending:
            f = self.pending.pop(0)
            self.check_func(f, f.decl)  # type: ignore[arg-type]

    def declare_func(self, d: A.Func, owner: T.Struct | None, base: str) -> FuncInfo | None:
        """Adds function or method `d` under symbol `base`, or as a further overload of it; a
        definition replaces its earlier declaration (same parameter types). None: nothing new."""
        from diffc.frontend.checker.overloads import add_overload, overload_symbol, same_signature

        f = self.func_info(d, owner, base)
        if base not in self.funcs:
            return self.add_func(f)
        same = next((s for s in self.overloads.get(base, [base]) if same_signature(self.funcs[s], f)), None)
        if same is None:
            f.name = overload_symbol(self, base, f)
            add_overload(self, base, f)
            return self.add_func(f)
        prev = self.funcs[same]
        if prev.decl is not None and prev.decl.body is not None and d.body is not None:
            what = f"method '{d.name}' of {owner.sname}" if owner is not None else f"function '{d.name}'"
            raise err(REDEFINED, f"{what} is defined twice with the same parameter types", d.name_span)
        # a declaration and the definition are one function: attributes of either apply
        if d.body is None:
            prev.attrs.update({k: a for k, a in f.attrs.items() if k not in prev.attrs})
            return None
        f.attrs = {**prev.attrs, **f.attrs}
        f.name = same
        return self.add_func(f)

    def declare_enum(self, d: A.Enum) -> None:
        """An enum is its integer type (int unless given) with constant cases; the cases of a
        plain (unscoped) enum are also global names."""
        if d.name in self.structs or d.name in self.typedefs:
            raise err(REDEFINED, f"a second type named '{d.name}'", d)
        ty = self.resolve(d.base) if d.base is not None else T.INT
        if not T.is_int_scalar(ty):
            raise err(TYPE_MISMATCH, f"an enum's type must be an integer type, got {ty}", d.base or d)
        self.typedefs[d.name] = ty
        cases: dict[str, Local] = {}
        nxt = 0
        for c in d.cases:
            if c.value is not None:
                known = {k: int(v.value.value) for k, v in cases.items()}  # type: ignore[union-attr]
                nxt = const_int(c.value, known.get)  # (a literal, an earlier case, or an expression of those)
                if nxt is None:
                    raise err(UNSUPPORTED, "an enum case value other than a constant integer expression is not supported",
                              c.value)
            if c.name in cases:
                raise err(REDEFINED, f"a second case named '{c.name}' in enum '{d.name}'", c)
            cases[c.name] = Local(c.name, ty, False, value=A.Num(nxt, False, "u" if ty == T.UINT else "", span=c.span, ty=ty))
            nxt += 1
        self.enums[d.name] = cases
        if not d.scoped:
            for name, loc in cases.items():
                if name in self.scopes[0]:
                    raise err(REDEFINED, f"a second global named '{name}'", d)
                self.scopes[0][name] = loc

    def add_func(self, f: FuncInfo) -> FuncInfo:
        self.funcs[f.name] = f
        if f.decl is not None and f.decl.body is not None:
            self.func_order.append(f)
            self.pending.append(f)
        return f

    def link_derivatives(self, f: FuncInfo, owner: T.Struct | None) -> None:
        """Custom-derivative links, both directions; a method's attribute names a sibling method."""
        for key, attr in f.attrs.items():
            if key in ("PrimalSubstitute", "PrimalSubstituteOf"):  # derivative code calls the substitute
                target = self.attr_func(attr, owner)
                orig, subst = (f, target) if key == "PrimalSubstitute" else (self.funcs[target], f.name)
                a, b = orig, self.funcs[subst]
                if [(p.ty, p.direction) for p in a.params] != [(p.ty, p.direction) for p in b.params] or a.ret != b.ret:
                    sig = lambda g: f"({', '.join(str(p.ty) for p in g.params)}) -> {g.ret}"  # noqa: E731
                    raise err(TYPE_MISMATCH, f"[{attr.name}]: a primal substitute takes and returns what the function "
                              f"it replaces does, but one is {sig(a)} and the other {sig(b)}", attr)
                orig.substitute = subst
                continue
            if key not in ("ForwardDerivative", "BackwardDerivative", "ForwardDerivativeOf", "BackwardDerivativeOf"):
                continue
            from diffc.frontend.checker.overloads import check_derivative_signature, pick_derivative

            target = pick_derivative(self, self.attr_func(attr, owner), f, key, attr)
            if target == f.name:  # its signature could never be its own derivative's
                raise err(TYPE_MISMATCH, f"[{attr.name}] names the function it is on: a function cannot be its "
                          "own derivative", attr)
            bwd = self.funcs[target] if key == "BackwardDerivative" else f if key == "BackwardDerivativeOf" else None
            if bwd is not None and not isinstance(bwd.ret, T.Void):  # (lowering gives it the gradients as results)
                raise err(TYPE_MISMATCH, f"a backward derivative returns void (its gradients go to its "
                          f"'inout DifferentialPair' parameters), but [{attr.name}] names one that returns {bwd.ret}",
                          attr)
            deriv, of = (self.funcs[target], f) if not key.endswith("Of") else (f, self.funcs[target])
            check_derivative_signature(self, deriv, of, key, attr)
            if key == "ForwardDerivative":
                f.fwd_custom, self.funcs[target].fwd_of = target, f.name
            elif key == "BackwardDerivative":
                f.bwd_custom, self.funcs[target].bwd_of = target, f.name
            elif key == "ForwardDerivativeOf":
                self.funcs[target].fwd_custom, f.fwd_of = f.name, target
            else:
                self.funcs[target].bwd_custom, f.bwd_of = f.name, target

    def attr_func(self, attr: A.Attr, owner: T.Struct | None = None) -> str:
        arg = attr.args[0] if len(attr.args) == 1 else None
        if isinstance(arg, A.Member) and isinstance(arg.base, A.TypeExpr):  # a method: `S::m`
            st = self.resolve(arg.base.type)
            if not (isinstance(st, T.Struct) and arg.name in st.methods):
                raise err(UNKNOWN_MEMBER, f"type {st} has no method '{arg.name}'", arg.name_span)
            return st.methods[arg.name]
        if not isinstance(arg, A.Name):
            raise err(ARG_COUNT, f"[{attr.name}] takes one function name", attr)
        name = arg.id
        if owner is not None and name in owner.methods:
            return owner.methods[name]
        if name in self.func_templates and arg.targs:  # `[BackwardDerivativeOf(f<float>)]`: that instance
            return self.instantiate_func(name, A.Name(name, targs=list(arg.targs), span=arg.span), [])
        if name not in self.funcs:
            raise err(UNDEFINED, f"undefined function '{name}' in [{attr.name}]", attr.args[0])
        return name

    def func_info(self, d: A.Func, owner: T.Struct | None = None, name: str | None = None) -> FuncInfo:
        params = []
        is_static = "static" in d.mods
        if owner is not None and not is_static:
            mutating = any(a.name == "mutating" for a in d.attrs)
            no_diff_this = any(a.name == "NoDiffThis" for a in d.attrs)  # `this` carries no derivative
            carries = (owner.differentiable or T.is_ptr_differentiable(owner)) and not no_diff_this
            params.append(PInfo("this", owner, "inout" if mutating else "in", not carries))
        for k, p in enumerate(d.params):
            if any(q.name == p.name for q in d.params[:k]):
                raise err(REDEFINED, f"a second parameter named '{p.name}' in '{d.name}'", p)
            for declare in feature.hooks("declare_param"):
                declare(self, p)  # (`Ref<T> p` is `inout T p`: ref_params.py)
            direction = "inout" if "inout" in p.mods else "out" if "out" in p.mods else "in"
            params.append(PInfo(p.name, self.resolve_value(p.type), direction, "no_diff" in p.mods, p.semantic))
        from diffc.frontend.checker.defaults import check_defaults

        check_defaults(self, d, params)
        ret = self.resolve_value(d.ret)
        differentiated = DIFF_ATTRS | {"ForwardDerivative", "BackwardDerivative", "TreatAsDifferentiable"}
        if T.is_ptr_differentiable(ret) and "no_diff" not in d.ret_mods and {a.name for a in d.attrs} & differentiated:
            # Slang's fwd_diff returns such a result's DifferentialPtrPair; diffc's derivatives carry
            # none for it: refused, rather than a derivative signature that differs from Slang's
            raise err(UNSUPPORTED, f"an IDifferentiablePtrType result ({ret}) of differentiable '{d.name}' is not "
                      "supported; mark the result no_diff, or return it from a function that is not "
                      "differentiable", d.ret)
        for check in feature.hooks("check_signature"):
            check(self, params, ret, d)
        return FuncInfo(name or d.name, params, ret, "no_diff" in d.ret_mods, d,
                        {a.name: a for a in d.attrs}, owner=owner, is_static=is_static)

    def check_func(self, f: FuncInfo, d: A.Func) -> None:
        self.func = f
        if f.owner is not None:
            self.alias_scopes.append(f.owner.aliases)
        self.scopes.append({})
        f.locals = [self.declare(p.name, p.ty, p.name != "this" or p.direction != "in") for p in f.params]
        assert d.body is not None
        for i, p in enumerate(f.params):
            if ptr_param(p) and p.direction != "in" and f.differentiable:
                where = d.params[i - (len(f.params) - len(d.params))] if p.name != "this" else d.name_span
                raise err(UNSUPPORTED, f"IDifferentiablePtrType parameter '{p.name}' of differentiable '{f.name}' "
                          "must be an input: derivatives go through its pointers", where)
        self.checking.append(d)  # (a generic instance's body is no part of the program's tree)
        self.stmt(d.body)
        self.checking.pop()
        self.scopes.pop()
        if f.owner is not None:
            self.alias_scopes.pop()
        self.func = None

    # ---- structs, methods and generic instances ----
    def outside_functions(self):
        """Saves the checker's position in a function body so a declaration (a struct or function
        instance met while checking one) is checked at the top level; `restore` undoes it."""
        saved = (self.scopes, self.func, self.alias_scopes)
        self.scopes, self.func, self.alias_scopes = [self.scopes[0]], None, []
        return saved

    def restore(self, saved) -> None:
        self.scopes, self.func, self.alias_scopes = saved

    def check_not_recursive(self, s: T.Struct, f: A.Field, ty: T.Type) -> None:
        """A field that holds (by value, or through a pointer, which diffc passes as the struct it
        points to) a struct whose fields are still being resolved: that struct would contain itself."""
        held = T.struct_held(ty, self.fields_in_progress)
        if held is None:
            return
        kind, inner = held
        if kind == "pointer":
            raise err(UNSUPPORTED, f"a pointer to '{inner}' inside '{s}' itself (a recursive pointer type, "
                      f"field '{f.name}') is not supported", f)
        raise err(TYPE_MISMATCH, f"'{inner}' would contain itself: field '{f.name}' of '{s}' holds a {ty} "
                  "(a struct cannot contain a value of its own type)", f)

    def declare_struct(self, d: A.Struct, name: str, template=None, dynamic_of: str | None = None) -> T.Struct:
        for extend in feature.hooks("extend_struct"):
            d = extend(self, d, template)  # (extensions.py)
        self.ifaces.complete_struct(d)
        s = T.Struct(name, differentiable=self.ifaces.makes_differentiable(d.bases), template=template,
                     conformances=list(d.bases), dynamic_of=dynamic_of)
        if dynamic_of is None:
            self.ifaces.check_not_frozen(d, name)
        self.structs[name] = s
        saved = self.outside_functions()
        self.alias_scopes.append(s.aliases)
        s.aliases["This"] = s
        for a in d.aliases:
            s.aliases[a.name] = self.resolve(a.type)
        if "IDifferentiablePtrType" in self.ifaces.closure(d.bases):  # also through an interface
            s.ptr_differential = self.ptr_differential(d, s)
        self.fields_in_progress.append(s)  # (a static field is no part of the struct's value)
        try:
            for f in d.fields:
                ty = self.resolve_value(f.type) if "static" not in f.mods else self.resolve(f.type)
                if "extern" in f.mods:
                    raise err(UNSUPPORTED, "an 'extern' field outside an extension is not supported", f)
                if f.redeclared is not None and self.resolve(f.redeclared) != ty:
                    raise err(TYPE_MISMATCH, f"extern field '{f.name}' is declared {self.resolve(f.redeclared)}, but "
                              f"'{name}' has it as {ty}", f.redeclared)
                if "static" in f.mods:
                    if "const" not in f.mods or f.init is None or not _plain_value(ty):
                        raise err(UNSUPPORTED, "a static field must be a 'static const' value (numbers, arrays or "
                                  "structs of them) with an initializer", f)
                    self.scopes.append(dict(s.statics))  # (it may name the statics declared before it)
                    try:
                        self.expect_type(f.init, ty)
                    finally:
                        self.scopes.pop()
                    s.statics[f.name] = Local(f.name, ty, False, value=f.init)
                else:  # (a default value, `float a = 1.0;`, is field_defaults.py's: its declare_struct hook)
                    if any(g[0] == f.name for g in s.fields):
                        raise err(REDEFINED, f"a second field named '{f.name}' in struct '{name}'", f)
                    self.check_not_recursive(s, f, ty)
                    s.fields.append((f.name, ty, "no_diff" in f.mods))
        finally:
            self.fields_in_progress.remove(s)
        for declared in feature.hooks("declare_struct"):
            declared(self, d, s)  # its Differential, synthesized or declared (declared_differential.py)
        for m in d.methods:
            self.ifaces.implicit_generics(m)
            if m.generic_params:
                declare_method_template(s, m)  # (several of one name: generic_overloads.py)
            else:
                s.methods.setdefault(m.name, f"{name}_{m.name}")
        infos = [f for m in d.methods
                 if not m.generic_params and (f := self.declare_func(m, s, s.methods[m.name])) is not None]
        for f in infos:
            self.link_derivatives(f, s)
        self.restore(saved)
        if template is not None:
            for gname in list(self.func_templates):
                self.instantiate_method_derivative(gname, s)
        return s

    def instantiate_method_derivative(self, gname: str, s: T.Struct) -> None:
        """A generic custom derivative of a generic struct's method (`__func_extension<T>
        bwd_diff(MyVector<T>::squared)`): its instance for struct instance s, when it names s's
        template (T bound from s's generic arguments)."""
        gd = self.func_templates[gname]
        if s.template is None:
            return
        name, values = s.template
        for a in gd.attrs:
            t = a.args[0] if a.name.endswith("DerivativeOf") and len(a.args) == 1 else None
            if not (isinstance(t, A.Member) and isinstance(t.base, A.TypeExpr) and t.base.type.name == name):
                continue
            genv = {}
            for arg, v in zip(t.base.type.args, values):
                pname = arg.name if isinstance(arg, A.TypeRef) and not arg.args else arg
                if isinstance(pname, str) and pname in gd.generic_params:
                    genv[pname] = v
            if set(gd.generic_params) <= set(genv):
                self.instantiate_func(gname, A.Name(gname, span=a.span), [], env=genv)

    def ptr_differential(self, d: A.Struct, s: T.Struct) -> T.Struct:
        """The `typealias Differential` an IDifferentiablePtrType struct must name: a struct that
        is IDifferentiablePtrType and its own Differential (Slang's rule)."""
        if s.differentiable:
            raise err(TYPE_MISMATCH, f"'{s.sname}' cannot be both IDifferentiable and IDifferentiablePtrType", d)
        alias = next((a for a in d.aliases if a.name == "Differential"), None)
        if alias is None:
            raise err(UNDEFINED, f"IDifferentiablePtrType '{s.sname}' needs 'typealias Differential = ...;'", d)
        dt = s.aliases["Differential"]
        if dt is s:
            return s
        if not (isinstance(dt, T.Struct) and dt.ptr_differential is dt):
            raise err(TYPE_MISMATCH, f"the Differential of IDifferentiablePtrType '{s.sname}' must be an "
                      f"IDifferentiablePtrType struct that is its own Differential, got {dt}", alias)
        return dt

    def generic_arg(self, name: str, a, where: A.Node):
        """One explicit generic argument: an int, or a type (a TypeRef the parser made)."""
        if isinstance(a, int):
            return a
        case = self.enum_case_value(a)
        if case is not None:
            return case
        if isinstance(a, A.TypeRef):
            return self.resolve(a)
        if isinstance(a, A.Expr) and (v := const_int(a, self.static_const_int)) is not None:
            return v  # `f<C * C>()`, C an int parameter already replaced by its value
        raise err(UNDEFINED, f"generic argument '{a}' of '{name}' is not a compile-time int or a type", where)

    def enum_case_value(self, a) -> int | None:
        """An enum case as a generic argument (`m<MyEnum.A>`, `m<MyEnum::A>`, a plain enum's `A`):
        its value, for a generic value parameter of the enum's type."""
        if isinstance(a, str):
            return self.static_const_int(a)
        if isinstance(a, A.TypeRef) and not a.args and not a.dims and not a.pointer and "." in a.name:
            head, name = a.name.rsplit(".", 1)
            case = self.enums.get(head, {}).get(name)
            if case is not None and isinstance(case.value, A.Num):
                return int(case.value.value)
        return None

    def bind_generics(self, name: str, d: A.Func | A.Struct, env: dict, where: A.Node) -> tuple:
        """Checks an instance's arguments against the parameters' kinds and interfaces; the values
        in parameter order."""
        for p in d.generic_params:
            v = env[p]
            if p in d.type_params:
                if isinstance(v, int):
                    raise err(TYPE_MISMATCH, f"generic parameter '{p}' of '{name}' is a type, got {v}", where)
                self.ifaces.check_constraints(v, p, d.type_params[p], where)
            elif not isinstance(v, int):
                raise err(UNDEFINED, f"generic argument {v} of '{name}' is not a compile-time int", where)
        return tuple(env[p] for p in d.generic_params)

    def generic_defaults(self, d: A.Func | A.Struct, env: dict) -> None:
        """Binds (in place) the parameters `env` lacks that have a default value (`int M = N - 1`,
        `T = float`), in order, each default seeing the parameters before it."""
        for p in d.generic_params:
            if p in env or p not in d.generic_defaults:
                continue
            dv = substitute(d.generic_defaults[p], env)
            if isinstance(dv, A.TypeRef):
                env[p] = self.resolve(dv)
            else:
                v = const_int(dv)
                if v is None:
                    raise err(UNDEFINED, f"the default of generic parameter '{p}' is not a compile-time int", dv)
                env[p] = v

    def instantiate_struct(self, name: str, t: A.TypeRef) -> T.Struct:
        d = self.struct_templates[name]
        required = len([p for p in d.generic_params if p not in d.generic_defaults])
        if not required <= len(t.args) <= len(d.generic_params):
            raise err(ARG_COUNT, f"'{name}' takes {len(d.generic_params)} generic arguments, got {len(t.args)}", t)
        env = {p: self.generic_arg(name, a, t) for p, a in zip(d.generic_params, t.args)}
        self.generic_defaults(d, env)
        values = self.bind_generics(name, d, env, t)
        iname = instance_name(name, values)
        if iname not in self.structs:
            inst = substitute(d, env)
            inst.generic_params, inst.type_params = [], {}
            constraints = feature.first("instance_constraints", self, d, (name, values))  # (extensions.py)
            mark_nondiff_generic_values(inst, d, self.ifaces, constraints)
            self.declare_struct(inst, iname, (name, values))
        return self.structs[iname]

    def instantiate_func(self, name: str, callee: A.Name, args: list[A.Expr], through_pairs: bool = False,
                         d: A.Func | None = None, owner: T.Struct | None = None, env: dict | None = None) -> str:
        """The instance of generic function `name` (or of generic method `d` of `owner`) a call
        needs: explicit arguments first, the rest inferred from the argument types (with
        `through_pairs`, the arguments of its fwd_diff/bwd_diff: a DifferentialPair<X> argument
        gives X)."""
        d = d or self.func_templates[name]
        env, missing = self.generic_env(name, callee, args, d, through_pairs, env)
        if missing:
            raise err(TYPE_MISMATCH, f"cannot infer generic parameter '{missing[0]}' of '{name}' from the "
                      f"arguments: give it explicitly ({name}<...>(...))", callee)
        values = self.bind_generics(name, d, env, callee)
        base = f"{owner.sname}_{d.name}" if owner is not None else name
        iname = instance_name(base, values)
        if iname not in self.funcs and iname not in self.instantiating:
            inst = substitute(d, env)
            inst.generic_params, inst.type_params, inst.name = [], {}, iname
            mark_nondiff_generic_values(inst, d, self.ifaces)
            self.instantiating.add(iname)  # (its derivatives' instances may name it: instantiate_primal_of)
            try:
                self.instantiate_derivatives(inst, d, env, owner)
            finally:
                self.instantiating.discard(iname)
            saved = self.outside_functions()
            if owner is not None:
                self.alias_scopes.append(owner.aliases)
            f = self.add_func(self.func_info(inst, owner, iname))
            self.link_derivatives(f, owner)
            self.restore(saved)
            if owner is None:
                self.instantiate_derivative_of(name, env)
                self.instantiate_primal_of(name, env)
        return iname

    def generic_env(self, name: str, callee: A.Name, args: list[A.Expr], d: A.Func, through_pairs: bool = False,
                    env: dict | None = None) -> tuple[dict, list[str]]:
        """The generic arguments of a call of `d` (explicit ones, then inferred from the argument
        types, then defaults) and the parameters still missing."""
        params = d.generic_params
        if len(callee.targs) > len(params):
            raise err(ARG_COUNT, f"'{name}' takes {len(params)} generic arguments, got {len(callee.targs)}", callee)
        env = dict(env or {})
        env.update({p: self.generic_arg(name, a, callee) for p, a in zip(params, callee.targs)})
        for pd, a in zip(d.params, args):
            if not isinstance(a, A.InitList) and len(env) < len(params):
                got = self.expr(a)
                if through_pairs and isinstance(got, T.Pair) and pd.type.name != "DifferentialPair":
                    got = got.elem
                infer(pd.type, got, params, env)
        self.generic_defaults(d, env)
        return env, [p for p in params if p not in env]

    def instantiate_derivatives(self, inst: A.Func, d: A.Func, env: dict, owner: T.Struct | None = None) -> None:
        """`[BackwardDerivative(g)]` on a generic f names generic g too: f's instance names g's
        instance for the same arguments (g's parameters bound by name, else by position); so does
        a generic method's, naming a generic sibling method."""
        for a in inst.attrs:
            if not (a.name.endswith("Derivative") or a.name.endswith("DerivativeOf")) or len(a.args) != 1:
                continue
            g = a.args[0]
            if owner is not None and isinstance(g, A.Name) and g.id in owner.method_templates \
                    and g.id not in owner.methods:
                gd = owner.method_templates[g.id]
                by_pos = dict(zip(d.generic_params, gd.generic_params))
                genv = {by_pos.get(p, p): v for p, v in env.items()}
                if set(gd.generic_params) <= set(genv):
                    sym = self.instantiate_func(g.id, A.Name(g.id, span=g.span), [], d=gd, owner=owner, env=genv)
                    a.args[0] = A.Name(sym, span=g.span)  # (attr_func finds the instance by its symbol)
                continue
            if not (isinstance(g, A.Name) and g.id in self.func_templates):
                continue
            gd = self.func_templates[g.id]
            by_pos = dict(zip(d.generic_params, gd.generic_params))
            genv = {by_pos.get(p, p): v for p, v in env.items()}
            if set(gd.generic_params) <= set(genv):
                g.id = self.instantiate_func(g.id, A.Name(g.id, span=g.span), [], env=genv)

    def instantiate_derivative_of(self, name: str, env: dict) -> None:
        """A generic g marked `[BackwardDerivativeOf(f)]` (f generic): f's new instance gets g's
        instance for the same arguments (which then links itself to f's instance)."""
        for gname, gd in list(self.func_templates.items()):
            for a in gd.attrs:
                if a.name.endswith("DerivativeOf") and len(a.args) == 1 and isinstance(a.args[0], A.Name) \
                        and a.args[0].id == name:
                    by_pos = dict(zip(self.func_templates[name].generic_params, gd.generic_params))
                    genv = {by_pos.get(p, p): v for p, v in env.items()}
                    if set(gd.generic_params) <= set(genv):
                        self.instantiate_func(gname, A.Name(gname, span=a.span), [], env=genv)

    def instantiate_primal_of(self, name: str, env: dict) -> None:
        """Generic g named by a generic f's `[BackwardDerivative(g)]` (or `[ForwardDerivative(g)]`):
        g's new instance (`g(dp, dOut)` called by name in other derivative code) makes f's instance
        for the same arguments, so g's instance is f's derivative from the start: a call of it
        means `bwd_diff(f)`, whether it is checked before or after f's instance is used."""
        for fname, fd in list(self.func_templates.items()):
            for a in fd.attrs:
                if a.name in ("BackwardDerivative", "ForwardDerivative") and len(a.args) == 1 \
                        and isinstance(a.args[0], A.Name) and a.args[0].id == name:
                    by_pos = dict(zip(self.func_templates[name].generic_params, fd.generic_params))
                    fenv = {by_pos.get(p, p): v for p, v in env.items()}
                    if set(fd.generic_params) <= set(fenv):
                        self.instantiate_func(fname, A.Name(fname, span=a.span), [], env=fenv)

    # ---- statements ----
    def stmt(self, s: A.Stmt) -> None:
        self.checking.append(s)
        try:
            self._stmt(s)
        finally:
            self.checking.pop()

    def _stmt(self, s: A.Stmt) -> None:
        if isinstance(s, A.Block):
            self.scopes.append({})
            for x in s.stmts:
                self.stmt(x)
            self.scopes.pop()
        elif isinstance(s, A.DeclGroup):
            for x in s.decls:
                self.stmt(x)
        elif isinstance(s, A.VarDecl):
            if s.type is not None and s.init is not None and self.ifaces.is_interface(s.type.name) and \
                    not s.type.dims and not self.reassigned(s.name):
                s.init = self.ifaces.view(s.type.name, s.init)
                ty = self.expr(s.init)  # `IFoo x = A(...);`: x is an A, statically
                self.ifaces.check_constraints(ty, s.name, [s.type.name], s.init)
            elif s.type is not None:
                ty = self.resolve_value(s.type)
                if s.init is None and s.name != "this" and isinstance(ty, T.Struct) and INIT in ty.methods \
                        and not s.type.dims:
                    s.init = self.default_construction(s, ty)  # `S s;` runs S's __init() where it has one
                if s.init is None and isinstance(ty, T.Struct) and not s.type.dims:
                    s.init = feature.first("default_init", self, s, ty)  # fields' default values
                if s.init is not None:
                    self.expect_type(s.init, ty)
            else:
                assert s.init is not None
                ty = self.expr(s.init)
                # `let r = bwd_diff(f)(...);`: Slang lets a void call initialize an (unusable) name
                void_call = isinstance(ty, T.Void) and isinstance(s.init, A.Call)
                if isinstance(ty, T.Void | T.FuncRef | T.StringT | T.Null) and not void_call:
                    raise err(TYPE_MISMATCH, f"cannot declare a variable of type {ty}", s.init)
            s.decl_ty = ty
            if s.name in self.scopes[-1]:
                raise err(REDEFINED, f"'{s.name}' is already declared in this scope", s)
            s.local = self.declare(s.name, ty, not s.is_const)  # type: ignore[attr-defined]
        elif isinstance(s, A.ExprStmt):
            self.expr(s.expr)
        elif isinstance(s, A.If):
            self.expect_type(s.cond, T.BOOL)
            self.stmt(s.then)
            if s.orelse is not None:
                self.stmt(s.orelse)
        elif isinstance(s, A.For):
            self.scopes.append({})
            if s.init is not None:
                self.stmt(s.init)
            if s.cond is not None:
                self.expect_type(s.cond, T.BOOL)
            if s.step is not None:
                self.expr(s.step)
            self.loop_bound(s)
            self.stmt(s.body)
            self.scopes.pop()
        elif isinstance(s, A.While):
            self.expect_type(s.cond, T.BOOL)
            self.loop_bound(s)
            self.stmt(s.body)
        elif isinstance(s, A.Return):
            assert self.func is not None
            want = self.func.ret
            if s.value is None:
                if want != T.VOID:
                    raise err(TYPE_MISMATCH, f"'{self.func.name}' must return a value of type {want}", s)
            else:
                if want == T.VOID:
                    if self.expr(s.value) != T.VOID:
                        raise err(TYPE_MISMATCH, f"'{self.func.name}' returns void but a value is returned", s.value)
                    self.replace(s, _return_void_call(s))
                else:
                    self.expect_type(s.value, want)
        elif isinstance(s, A.Switch):
            t = self.expr(s.value)
            if not T.is_int_scalar(t):
                raise err(TYPE_MISMATCH, f"switch needs an integer, got {t}", s.value)
            for c in s.cases:
                for v in c.values or []:
                    self.expect_type(v, t)
                self.scopes.append({})
                for x in c.body:
                    self.stmt(x)
                self.scopes.pop()
        elif isinstance(s, A.Break | A.Continue):
            pass
        else:
            raise err(UNSUPPORTED, f"unsupported statement {type(s).__name__}", s)

    def reassigned(self, name: str) -> bool:
        """Whether the function being checked assigns to a variable called `name` (an interface-typed
        local that is only initialized keeps its initializer's type, statically)."""
        body = self.func.decl.body if self.func is not None and self.func.decl is not None else None
        if assigns_to(body, name):
            return True
        for n in A.walk(body):
            if isinstance(n, A.Call) and isinstance(n.callee, A.Name):  # an out or inout argument
                d = self.funcs[n.callee.id].decl if n.callee.id in self.funcs else self.func_templates.get(n.callee.id)
                for a, p in zip(n.args, d.params if d is not None else []):
                    if isinstance(a, A.Name) and a.id == name and p.mods & {"out", "inout"}:
                        return True
        return False

    def loop_bound(self, s: A.For | A.While) -> None:
        if self.func is None or not self.func.backward:
            return
        if never_ends(s):  # (derivative code would stop it at [MaxIters]; Slang refuses the program)
            kw = "for" if isinstance(s, A.For) else "do-while" if s.do_while else "while"
            raise err(UNBOUNDED_LOOP, f"'{kw}' loop in backward-differentiable function '{self.func.name}' never "
                      "ends (its condition is constant and nothing in it breaks or returns), so the function "
                      "never returns", (s.span[0], s.span[0] + len(kw)))
        if any(a.name == "MaxIters" for a in s.attrs) or static_bound(s) is not None:
            return
        kw = "for" if isinstance(s, A.For) else "do-while" if s.do_while else "while"
        raise err(UNBOUNDED_LOOP,
                  f"'{kw}' loop in backward-differentiable function '{self.func.name}' has no bound: "
                  f"add [MaxIters(N)] or use constant bounds", (s.span[0], s.span[0] + len(kw)))

    # ---- expressions ----
    def expect_type(self, e: A.Expr, want: T.Type) -> None:
        if isinstance(e, A.InitList):
            self.init_list(e, want)
            return
        got = self.expr(e)
        if not T.convertible(got, want):
            raise err(TYPE_MISMATCH, f"expected a value of type {want}, got {got}", e)
        if isinstance(got, T.Vector) and got.elem == T.BOOL and isinstance(want, T.Scalar):
            # (HLSL truncates with a warning; for two CoopVecs Slang's comparison is one bool)
            self.warn(e, f"implicit truncation of {got} to {want} keeps the first element only: a comparison of two "
                         "vectors or CoopVecs is elementwise in diffc, where Slang compares two CoopVecs as one value")

    def init_list(self, e: A.InitList, want: T.Type) -> None:
        if feature.first("check_init_list", self, e, want):
            return
        if isinstance(want, T.Struct) and INIT in want.methods and (e.items or self._has_default_ctor(want)):
            self.expect_type(self.replace(e, as_constructor_call(e, want.methods[INIT])), want)
            return
        e.ty = want
        if isinstance(want, T.Array):
            items = [want.elem] * want.n
        elif isinstance(want, T.Struct):
            items = [t for _, t, _ in want.fields]
        elif isinstance(want, T.Vector):
            items = [want.elem] * want.n
        elif isinstance(want, T.Pair | T.PtrPair):
            items = [want.elem, T.differential(want.elem)]
        else:
            items = [want]
        if isinstance(want, T.PtrPair) and len(e.items) != 2:
            raise err(ARG_COUNT, f"{want} needs a primal and a differential, got {len(e.items)} initializers", e)
        if isinstance(want, T.Array | T.Struct) and (len(e.items) > len(items) or any(
                not isinstance(x, A.InitList) and isinstance(t, T.Array | T.Struct) and INIT not in getattr(t, "methods", {})
                and not _whole(self.expr(x), t) for x, t in zip(e.items, items))):
            e.items = self.elide_braces(e.items, items, e)  # `Feature<3> a = {1.0, 2.0, 3.0}` (vals[3])
        if len(e.items) > len(items):
            raise err(ARG_COUNT, f"too many initializers for {want}: expected {len(items)}, got {len(e.items)}", e)
        for it, t in zip(e.items, items):
            self.expect_type(it, t)

    def elide_braces(self, flat: list[A.Expr], types: list[T.Type], e: A.InitList) -> list[A.Expr]:
        """C's brace elision: an initializer for an array or struct member that is not itself a
        value of that type starts the member's own list, which takes as many items as it needs."""
        out, i = [], 0
        for t in types:
            if i >= len(flat):
                break
            x = flat[i]
            aggregate = isinstance(t, T.Array | T.Vector) or isinstance(t, T.Struct) and INIT not in t.methods
            if isinstance(x, A.InitList) or not aggregate or _whole(self.expr(x), t):
                out.append(x)
                i += 1
                continue
            n = _scalar_count(t)
            sub = A.InitList(flat[i : i + n], span=(flat[i].span[0], flat[min(i + n, len(flat)) - 1].span[1]))
            sub.items = self.elide_braces(sub.items, self._members(t), sub) if not isinstance(t, T.Vector) else sub.items
            out.append(sub)
            i += n
        return out + flat[i:]

    @staticmethod
    def _members(t: T.Type) -> list[T.Type]:
        return [t.elem] * t.n if isinstance(t, T.Array) else [ft for _, ft, _ in t.fields]  # type: ignore[union-attr]

    def _has_default_ctor(self, s: T.Struct) -> bool:
        syms = self.overloads.get(s.methods[INIT], [s.methods[INIT]])
        return any(not self.funcs[x].params for x in syms)

    def expr(self, e: A.Expr) -> T.Type:
        if getattr(e, "typed_for_overloads", False):  # typed just now to pick an overload (overloads.py)
            del e.typed_for_overloads  # type: ignore[attr-defined]
            return e.ty
        self.checking.append(e)
        try:
            e.ty = self._expr(e)
        finally:
            self.checking.pop()
        return e.ty

    def _expr(self, e: A.Expr) -> T.Type:
        if isinstance(e, A.Num):
            if e.is_float:
                return {"h": T.HALF, "l": T.DOUBLE}.get(e.suffix, T.FLOAT)
            self.check_int_literal(e)
            return int_literal_type(e)
        if isinstance(e, A.BoolLit):
            return T.BOOL
        if isinstance(e, A.Str):
            return T.StringT()
        if isinstance(e, A.Name):
            loc = self.lookup(e.id)
            if loc is not None:
                e.sym = loc
                return loc.ty
            owner = self.func.owner if self.func is not None else None
            if owner is not None:
                if e.id in owner.statics:
                    e.sym = owner.statics[e.id]
                    return e.sym.ty
                # in an instance method, or a constructor (inits.py: a static with a local `this`)
                if owner.field(e.id) is not None and (not self.func.is_static or self.lookup("this")):  # type: ignore[union-attr]
                    return self.expr(self.replace(e, as_this_member(e)))
                if self.implicit_member(owner, e.id) and not self.func.is_static:  # type: ignore[union-attr]
                    return self.expr(self.replace(e, as_this_member(e)))
                if e.id in owner.methods:
                    return T.FuncRef(owner.methods[e.id])
            if e.id in self.funcs:
                if e.id in self.overloads:
                    from diffc.frontend.checker.overloads import check_unresolved

                    check_unresolved(self, e)
                return T.FuncRef(e.id)
            if e.id in self.func_templates and e.targs:  # `fwd_diff(f<float>)`
                e.id = self.instantiate_func(e.id, e, [])
                return T.FuncRef(e.id)
            from diffc.frontend.checker.builtins import BUILTINS

            if e.id in BUILTINS:
                raise err(UNSUPPORTED, f"intrinsic '{e.id}' used as a value is not supported: call it, or give it "
                          "to fwd_diff / bwd_diff", e)
            known = feature.first("check_name", self, e)  # (`none`: optional.py)
            if known is not None:
                return known
            raise err(UNDEFINED, f"undefined name '{e.id}'", e)
        if isinstance(e, A.Unary) and e.op == "*":
            t = self.expr(e.operand)
            if not isinstance(t, T.Pointer):
                raise err(TYPE_MISMATCH, f"'*' needs a pointer, got {t}", e.operand)
            _refuse_void(t, e, "reading through")
            return t.elem
        if isinstance(e, A.Unary):
            t = self.expr(e.operand)
            if (checked := feature.first("check_unary", self, e, t)) is not None:
                return checked
            if e.op == "!" and not T.is_numeric(t):  # (a struct, none, a pointer: no truth value here)
                raise err(TYPE_MISMATCH, f"operator '!' needs a bool or a number, got {t}", e.operand)
            if e.op == "!":
                return T.BOOL if not isinstance(t, T.Vector) else T.Vector(T.BOOL, t.n)
            if not T.is_numeric(t):
                raise err(TYPE_MISMATCH, f"operator '{e.op}' needs a number, got {t}", e.operand)
            return t
        if isinstance(e, A.Binary):
            return self.binary(e)
        if isinstance(e, A.Ternary):
            self.expect_type(e.cond, T.BOOL)
            a, b = self.expr(e.a), self.expr(e.b)
            if a == b:
                return a
            if (checked := feature.first("check_ternary", self, e, a, b)) is not None:
                return checked
            c = T.common_type(a, b)
            if c is None:
                raise err(TYPE_MISMATCH, f"the branches of '?:' have types {a} and {b}", e)
            return c
        if isinstance(e, A.Assign):
            if (checked := feature.first("check_assign", self, e)) is not None:  # (a property, a subscript)
                return checked
            t = self.lvalue(e.target)
            if e.op != "=" and (checked := feature.first("check_compound", self, e, t)) is not None:
                return checked
            if e.op == "=":
                self.expect_type(e.value, t)
            else:
                v = self.expr(e.value)
                if not (T.is_numeric(t) and T.convertible(v, t)):
                    raise err(TYPE_MISMATCH, f"operator '{e.op}' cannot combine {t} with {v}", e)
                if e.op in ("&=", "|=", "^=", "<<=", ">>=") and T.is_floating(T.common_type(t, v) or t):
                    raise err(TYPE_MISMATCH, f"operator '{e.op}' needs integers, got {t} and {v}", e)  # as binary's
            return t
        if isinstance(e, A.IncDec):
            t = self.lvalue(e.target)
            if not T.is_numeric(t):
                raise err(TYPE_MISMATCH, f"operator '{e.op}' needs a number, got {t}", e.target)
            return t
        if isinstance(e, A.Member):
            return self.member(e)
        if isinstance(e, A.Index):
            return self.index(e)
        if isinstance(e, A.Cast):
            src, dst = self.expr(e.operand), self.resolve(e.type)
            if not (T.convertible(src, dst) or src == dst or _same_memory_pointers(src, dst)
                    or feature.first("check_cast", self, e, src, dst)):
                raise err(TYPE_MISMATCH, f"cannot cast {src} to {dst}", e)
            return dst
        if isinstance(e, A.Call):
            from diffc.frontend.checker.calls import check_call

            return check_call(self, e)
        if isinstance(e, A.TypeExpr):
            raise err(TYPE_MISMATCH, f"type '{e.type.name}' used as a value", e)
        if isinstance(e, A.InitList):
            raise err(TYPE_MISMATCH, "an initializer list needs a declared type", e)
        check = feature.expr_kinds().get(type(e))  # an expression a feature adds (`x is S`: optional.py)
        if check is not None:
            return check(self, e)
        raise err(UNSUPPORTED, f"unsupported expression {type(e).__name__}", e)

    def check_int_literal(self, e: A.Num) -> None:
        """Slang's warning on an integer literal past int64_t without a `u`: it is read as
        unsigned, unless negated (`-9223372036854775808`). (Past 64 bits the lexer refuses it.)"""
        v = int(e.value)
        parent = self.checking[-2] if len(self.checking) > 1 else None
        negated = isinstance(parent, A.Unary) and parent.op == "-" and parent.operand is e
        if v >= 2**63 and "u" not in e.suffix and not (negated and v == 2**63):
            self.warn(e, "integer literal is too large to be represented in a signed integer type, "
                      "interpreting as unsigned")

    def implicit_member(self, owner: T.Struct, name: str) -> bool:
        """Whether bare `name` inside a method of `owner` is `this.name` of a member a feature
        adds (a property)."""
        return any(h(self, owner, name) for h in feature.hooks("implicit_member"))

    def binary(self, e: A.Binary) -> T.Type:
        """`e`'s type. A left operand that is itself an operation (`a + b + c`: `(a + b) + c`)
        is checked in a loop, innermost first, with the stack of nodes being checked as the
        recursion would have it: a flat chain of any length takes no Python recursion."""
        chain = []  # e.lhs, e.lhs.lhs, ... while they are operations not yet typed
        x = e.lhs
        while isinstance(x, A.Binary) and not getattr(x, "typed_for_overloads", False):
            chain.append(x)
            x = x.lhs
        depth = len(self.checking)
        self.checking.extend(chain)
        try:
            a = self.expr(x)
            for node in reversed(chain):
                node.ty = a = self.binary_of(node, a)
                self.checking.pop()
        finally:
            del self.checking[depth:]
        return self.binary_of(e, a)

    def binary_of(self, e: A.Binary, a: T.Type) -> T.Type:
        """`e`'s type, its left operand's being `a`."""
        b = self.expr(e.rhs)
        if (checked := feature.first("check_binary", self, e, a, b)) is not None:
            return checked
        if isinstance(a, T.Pointer) or isinstance(b, T.Pointer):
            return self.pointer_arith(e, a, b)
        if e.op in ("&&", "||"):
            for x, t in ((e.lhs, a), (e.rhs, b)):
                if not T.convertible(t, T.BOOL):
                    raise err(TYPE_MISMATCH, f"operator '{e.op}' needs bool, got {t}", x)
            return T.BOOL
        c = T.common_type(a, b)
        if c is None:
            raise err(TYPE_MISMATCH, f"operator '{e.op}' cannot combine {a} and {b}", e)
        if e.op in ("==", "!=", "<", ">", "<=", ">="):
            return T.with_elem(c, T.BOOL)
        if e.op in ("%", "&", "|", "^", "<<", ">>") and T.is_floating(c) and e.op != "%":
            raise err(TYPE_MISMATCH, f"operator '{e.op}' needs integers, got {a} and {b}", e)
        return c

    def pointer_arith(self, e: A.Binary, a: T.Type, b: T.Type) -> T.Type:
        """`p + i`, `i + p`, `p - i`: a pointer moved by i elements."""
        p, i = (a, b) if isinstance(a, T.Pointer) else (b, a)
        ok = e.op == "+" or (e.op == "-" and p is a)
        if not (ok and T.is_int_scalar(i)):
            raise err(TYPE_MISMATCH, f"operator '{e.op}' cannot combine {a} and {b}", e)
        _refuse_void(p, e, "arithmetic on")
        if p.by_value:  # type: ignore[union-attr]
            raise err(UNSUPPORTED, f"arithmetic on {p}: a pointer to a struct that holds pointers is passed "
                      "by value, so only '->', '(*p).f' and 'p[0]' work on it", e)
        return p

    def lvalue(self, e: A.Expr) -> T.Type:
        t = self.expr(e)
        e = self.current(e)  # (a field's bare name is `this.name` now)
        base = e
        while isinstance(base, A.Member | A.Index) or (isinstance(base, A.Unary) and base.op == "*"):
            inner = base.operand if isinstance(base, A.Unary) else base.base
            if feature.first("check_write", self, e, base, inner.ty):
                return t  # memory a feature owns (a texel: textures.py)
            if isinstance(inner.ty, T.Buffer) and isinstance(base, A.Index):
                return t  # a buffer element is memory, whatever holds the buffer (a struct's field: `this`)
            if isinstance(inner.ty, T.Pointer):  # a write to memory, whatever holds the pointer
                if inner.ty.by_value:
                    raise err(UNSUPPORTED, f"cannot write through {inner.ty}: a pointer to a struct that holds "
                              "pointers is passed by value", e)
                return t
            if isinstance(base, A.Index) and isinstance(inner.ty, T.Buffer):  # a buffer element: memory too
                return t
            base = inner
        if isinstance(base, A.Name) and isinstance(base.sym, Local):
            if not base.sym.mutable:
                raise err(TYPE_MISMATCH, f"cannot assign to '{base.id}': it is a 'let' or const", e)
            return t
        raise err(TYPE_MISMATCH, "the left side of an assignment must be a variable", e)

    def member(self, e: A.Member) -> T.Type:
        if isinstance(e.base, A.TypeExpr):
            cases = self.enums.get(e.base.type.name)
            if cases is not None and not e.base.type.dims:  # `Color.Red`, `Color::Red`
                if e.name not in cases:
                    raise err(UNKNOWN_MEMBER, f"enum {e.base.type.name} has no case '{e.name}'", e.name_span)
                e.static = cases[e.name]  # type: ignore[attr-defined]
                return e.static.ty  # type: ignore[attr-defined]
            st = self.resolve(e.base.type)
            if isinstance(st, T.Struct) and e.name in st.statics:  # `Optimizer::learningRate`
                e.static = st.statics[e.name]  # type: ignore[attr-defined]
                return e.static.ty  # type: ignore[attr-defined]
            if isinstance(st, T.Struct) and e.name in st.methods:  # `fwd_diff(S::m)`: `this` comes first
                sym = st.methods[e.name]
                if sym in self.overloads:
                    from diffc.frontend.checker.overloads import check_unresolved

                    check_unresolved(self, A.Name(sym, span=e.span))
                return T.FuncRef(sym)
            raise err(UNKNOWN_MEMBER, f"'{e.base.type.name}.{e.name}' must be called", e)
        t = self.expr(e.base)
        if isinstance(t, T.Pointer) and not t.by_value and isinstance(t.elem, T.Vector | T.Scalar):
            # `p->x` on a pointer to a vector is `(*p).x`
            e.base = A.Unary("*", e.base, span=e.base.span)
            e.arrow = False
            t = self.expr(e.base)
        if isinstance(t, T.Pointer):
            _refuse_void(t, e, "a member of")
            if isinstance(t.elem, T.Struct) and t.elem.field(e.name) is not None:
                return t.elem.field(e.name)[1]  # type: ignore[index]
            if (checked := feature.first("check_member", self, e, t)) is not None:
                return checked
            raise err(UNKNOWN_MEMBER, f"type {t.elem} has no member '{e.name}'", e.name_span)
        if e.arrow:
            raise err(TYPE_MISMATCH, f"'->' needs a pointer, got {t}", e.base)
        if isinstance(t, T.Struct) and (f := t.field(e.name)) is not None:
            return f[1]
        if (checked := feature.first("check_member", self, e, t)) is not None:
            return checked
        if isinstance(t, T.Pair | T.PtrPair):
            if e.name in ("p", "primal", "getPrimal"):
                return t.elem
            if e.name in ("d", "differential", "getDifferential"):
                return T.differential(t.elem)
        elif isinstance(t, T.Vector | T.Scalar) and e.name and all(c in SWIZZLE for c in e.name):
            n = t.n if isinstance(t, T.Vector) else 1
            idx = [SWIZZLE[c] for c in e.name]
            if max(idx) < n and len(idx) <= 4:
                elem = T.elem_of(t)
                assert elem is not None
                return elem if len(idx) == 1 else T.Vector(elem, len(idx))
        raise err(UNKNOWN_MEMBER, f"type {t} has no member '{e.name}'", e.name_span)

    def index(self, e: A.Index) -> T.Type:
        t = self.expr(e.base)
        if (checked := feature.first("check_index", self, e, t)) is not None:  # (a texture, a __subscript)
            return checked
        if e.more:
            raise err(TYPE_MISMATCH, f"type {t} takes one index, got {1 + len(e.more)}", e.more[0])
        i = self.expr(e.index)
        if not (T.is_int_scalar(i) or i == T.BOOL):
            raise err(TYPE_MISMATCH, f"an index must be an integer, got {i}", e.index)
        if isinstance(t, T.Array | T.Vector | T.Matrix):  # (a buffer's length is known only at run time)
            _check_constant_index(t, e.index)
        if isinstance(t, T.Array | T.Buffer):
            return t.elem
        if isinstance(t, T.Pointer):
            _refuse_void(t, e, "indexing")
            if t.by_value and not (isinstance(e.index, A.Num) and e.index.value == 0):
                raise err(UNSUPPORTED, f"indexing {t} with anything but 0: a pointer to a struct that holds "
                          "pointers is passed by value, so only '->', '(*p).f' and 'p[0]' work on it", e.index)
            return t.elem
        if isinstance(t, T.Vector):
            return t.elem
        if isinstance(t, T.Matrix):
            return t.row
        raise err(TYPE_MISMATCH, f"type {t} cannot be indexed", e.base)


def _check_constant_index(t: T.Array | T.Vector | T.Matrix, index: A.Expr) -> None:
    """A constant index (`2`, `-1`, `1 + 1`) must name an element: lowering takes a literal as a
    position among the leaves, and selects among them for any other index, element 0 where none
    matches. An empty array has no element for any index to name."""
    n = t.rows if isinstance(t, T.Matrix) else t.n
    if n == 0:
        raise err(TYPE_MISMATCH, f"{t} has no elements to index", index)
    k = const_int(index)  # (literals only: a name may be a local that shadows a constant)
    if k is not None and not 0 <= k < n and isinstance(t, T.Matrix):
        raise err(TYPE_MISMATCH, f"row {k} is out of range for {t} (rows 0 to {n - 1})", index)  # (matrices.py's words)
    if k is not None and not 0 <= k < n:
        raise err(TYPE_MISMATCH, f"index {k} is out of bounds for {t} (0 to {n - 1})", index)


def _whole(got: T.Type, member: T.Type) -> bool:
    """Whether an initializer of type `got` initializes an aggregate member as a whole (a scalar
    starts the member's own elided list instead, though it would convert to a vector)."""
    return got == member or not isinstance(got, T.Scalar) and T.convertible(got, member)


def _scalar_count(t: T.Type) -> int:
    """How many scalars an initializer list of t holds with every brace elided."""
    if isinstance(t, T.Vector):
        return t.n
    if isinstance(t, T.Array):
        return t.n * _scalar_count(t.elem)
    if isinstance(t, T.Struct):
        return sum(_scalar_count(ft) for _, ft, _ in t.fields)
    if isinstance(t, T.Matrix):
        return t.rows * t.cols
    return 1


def _refuse_void(t: T.Type, where: A.Node, what: str) -> None:
    """A void* has no element type or size (features/byte_pointers.py): it is cast before use."""
    if isinstance(t, T.Pointer) and t.elem == T.VOID:
        raise err(TYPE_MISMATCH, f"{what} a void*: it has no element type; cast it to a typed pointer first "
                  "(`(float*)p`)", where)


def _same_memory_pointers(src: T.Type, dst: T.Type) -> bool:
    """Whether `(dst)src` reinterprets a pointer as another over the same scalars (`(float4*)p` of
    a `float*`): both are a buffer of that scalar and an offset counted in it, so nothing changes."""
    if not (isinstance(src, T.Pointer) and isinstance(dst, T.Pointer)):
        return False
    if dst.atomic and not src.atomic and isinstance(dst.elem, T.Scalar):  # `(Atomic<float>*)p` of a `float*`
        return src.elem == dst.elem
    if src.atomic or dst.atomic or src.by_value or dst.by_value:
        return False
    return T.pointee_scalar(src.elem) == T.pointee_scalar(dst.elem) is not None


def _return_void_call(s: A.Return) -> A.Block:
    """`return g(...);` where g returns void (as Slang and C++ allow in a void function) is
    `{ g(...); return; }`."""
    value = s.value
    assert value is not None
    return A.Block([A.ExprStmt(value, span=value.span), A.Return(None, span=s.span)], span=s.span)


def _plain_value(t: T.Type) -> bool:
    """A type a `static const` may have: its value is lowered where it is used, so it holds no
    buffers or pointers (numbers, matrices, and arrays and structs of them)."""
    if T.is_numeric(t) or isinstance(t, T.Matrix):
        return True
    if isinstance(t, T.Array):
        return _plain_value(t.elem)
    return isinstance(t, T.Struct) and all(_plain_value(ft) for _, ft, _ in t.fields)
