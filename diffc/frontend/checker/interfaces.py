"""Interfaces (`interface I : J { float f(float x); static This make(); associatedtype A : IFoo; }`)
and conformances, resolved statically: wherever an interface-typed value's concrete type is known,
code is specialized for that type (generics.py), so a call of an interface method is a call of the
concrete struct's method. What a struct does not define of its interfaces it gets from their
default implementations (a copy of the interface's method with a body).

Built-in interfaces (`IDifferentiable`, `IFloat`, `__BuiltinFloatingPointType`, `IArithmetic`, ...)
are conformed to by the built-in types as Slang's standard library says, and by structs that name
them. A generic type parameter is differentiable only when one of its interfaces makes it so
(`T : IDifferentiable`, `T : IFloat`, an interface derived from IDifferentiable): in an instance
for a differentiable type, values declared `T` of a parameter without such an interface are
`no_diff`, as Slang sees them through the interface."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.errors import TYPE_MISMATCH, UNDEFINED, UNSUPPORTED

if TYPE_CHECKING:
    from diffc.frontend.checker.checking import Checking

FLOAT_INTERFACES = {"IFloat", "__BuiltinFloatingPointType", "__BuiltinRealType", "IRealArray", "IFloatArray"}
ARITHMETIC_INTERFACES = {"IArithmetic", "__BuiltinArithmeticType", "IComparable", "__BuiltinType",
                         "IArray", "IDefaultInitializable"}
INTEGER_INTERFACES = {"IInteger", "__BuiltinIntegerType", "__BuiltinSignedArithmeticType"}
# interfaces whose conformance makes a value carry a derivative
DIFFERENTIABLE_ROOTS = {"IDifferentiable"} | FLOAT_INTERFACES
BUILTIN_INTERFACES = DIFFERENTIABLE_ROOTS | ARITHMETIC_INTERFACES | INTEGER_INTERFACES | {"IDifferentiablePtrType"}


class Interfaces:
    def __init__(self, checker: Checking):
        self.c = checker
        self.decls: dict[str, A.Interface] = {}
        self.frozen: dict[str, int] = {}  # interfaces whose tagged union (dynamic.py) is made

    def check_not_frozen(self, d: A.Struct, name: str) -> None:
        """A struct implementing an interface whose union was already made would be missing from it."""
        from diffc.frontend.checker.symbols import err

        for i in self.closure(d.bases) & set(self.frozen):
            raise err(UNSUPPORTED, f"'{name}' implements '{i}' after a dynamic '{i}' value was used: declare "
                      "every implementation before the first such use", d)

    def declare(self, d: A.Interface) -> None:
        from diffc.frontend.checker.symbols import err
        from diffc.frontend.errors import REDEFINED

        if d.name in self.decls or d.name in self.c.structs or d.name in self.c.struct_templates:
            raise err(REDEFINED, f"a second type named '{d.name}'", d)
        self.decls[d.name] = d

    def check_bases(self) -> None:
        """Every interface an interface inherits from exists (once all are declared: an interface
        may name one declared after it)."""
        from diffc.frontend.checker.symbols import err

        for d in self.decls.values():
            for b in d.bases:
                if b not in self.decls and b not in BUILTIN_INTERFACES:
                    raise err(UNDEFINED, f"unknown interface '{b}'", d)

    def is_interface(self, name: str) -> bool:
        return name in self.decls or name in BUILTIN_INTERFACES

    def closure(self, names: list[str]) -> set[str]:
        """The interfaces `names` are, with every interface they inherit from."""
        out: set[str] = set()
        todo = list(names)
        while todo:
            n = todo.pop()
            if n in out:
                continue
            out.add(n)
            if n in self.decls:
                todo += self.decls[n].bases
        return out

    def assoc_constraints(self, names: list[str], assoc: str) -> list[str]:
        """The interfaces associated type `assoc` of interfaces `names` must conform to."""
        out: list[str] = []
        for n in self.closure(names):
            if n in self.decls:
                out += self.decls[n].assoc.get(assoc, [])
        return out

    def view(self, name: str, init: A.Expr) -> A.Expr:
        """A value seen through interface `name` (`IFoo x = a;`): without IDifferentiable in the
        interface it carries no derivative, as Slang differentiates only through the interface."""
        if self.makes_differentiable([name]):
            return init
        return A.Call(A.Name("detach", span=init.span), [init], span=init.span)

    def makes_differentiable(self, names: list[str]) -> bool:
        return bool(self.closure(names) & DIFFERENTIABLE_ROOTS)

    def conforms(self, ty: T.Type, name: str) -> bool:
        if isinstance(ty, T.Struct):
            return name in self.closure(getattr(ty, "conformances", []))
        if name == "IDifferentiable":
            return T.is_differentiable(ty)
        elem = T.elem_of(ty) if not isinstance(ty, T.Matrix) else ty.elem
        if elem is None:
            return isinstance(ty, T.Array) and name in ("IArray", "IDifferentiable") and T.is_differentiable(ty)
        if name in FLOAT_INTERFACES:
            return T.is_float_scalar(elem)
        if name in INTEGER_INTERFACES:
            return T.is_int_scalar(elem)
        return name in ARITHMETIC_INTERFACES

    def check_constraints(self, ty: T.Type, param: str, names: list[str], where) -> None:
        from diffc.frontend.checker.symbols import err

        for n in names:
            if not self.is_interface(n):
                raise err(UNDEFINED, f"unknown interface '{n}' (constraint of '{param}')", where)
            if not self.conforms(ty, n):
                shown = param.removesuffix("__type")  # an interface-typed parameter (implicit_generics)
                raise err(TYPE_MISMATCH, f"{ty} does not conform to '{n}' (required of '{shown}')", where)

    # ---- structs that implement interfaces ----
    def complete_struct(self, d: A.Struct) -> None:
        """Adds to struct `d` (in place) the default implementations of its interfaces' methods
        that it does not define, and reports a requirement it neither defines nor inherits."""
        from diffc.frontend.checker.symbols import err

        own = {m.name for m in d.methods}
        for iname in sorted(self.closure(d.bases)):
            if iname not in self.decls and iname not in BUILTIN_INTERFACES:
                raise err(UNDEFINED, f"unknown interface '{iname}'", d)
            idecl = self.decls.get(iname)
            if idecl is None:
                continue
            aliases = {a.name for a in d.aliases}
            for at in idecl.assoc:
                if at not in aliases:
                    raise err(TYPE_MISMATCH, f"'{d.name}' does not define associated type '{at}' of interface "
                              f"'{iname}' (typealias {at} = ...;)", d)
            for m in idecl.methods:
                if m.name in own:
                    continue
                if m.body is None:
                    raise err(TYPE_MISMATCH, f"'{d.name}' does not implement '{m.name}', required by interface "
                              f"'{iname}'", d)
                if idecl.generic_params:
                    raise err(UNSUPPORTED, f"the default implementation of '{m.name}' in generic interface "
                              f"'{iname}' is not supported: define it in '{d.name}'", d)
                d.methods.append(copy.deepcopy(m))
                own.add(m.name)

    def implicit_generics(self, d: A.Func) -> None:
        """`float f(IFoo x)`: a parameter of an interface type makes f generic over that
        parameter's concrete type (in place), so each call specializes it."""
        for p in d.params:
            head = p.type.name.split(".")[0]
            if head in self.decls and not p.type.pointer and head not in d.type_params:
                tp = f"{p.name}__type"
                d.generic_params.append(tp)
                d.type_params[tp] = [head]
                p.type = A.TypeRef(tp, [], p.type.dims, p.type.pointer, span=p.type.span)


DIFFERENTIABLE_ATTRS = {"Differentiable", "ForwardDifferentiable", "BackwardDifferentiable"}
# Marks a field `no_diff` only by the rule below, which a declared Differential that holds the
# field's derivative overrides (declared_differential.py).
GENERIC_NO_DIFF = "no_diff (generic)"


def mark_nondiff_generic_values(inst: A.Func | A.Struct, tmpl: A.Func | A.Struct, ifaces: Interfaces,
                                type_params: dict[str, list[str]] | None = None) -> None:
    """In an instance of `tmpl`, parameters, the result and fields declared as a type parameter
    without a differentiable interface (in `type_params`, by default tmpl's) are `no_diff` (Slang
    differentiates values of a generic type only through IDifferentiable)."""
    tps = tmpl.type_params if type_params is None else type_params

    def plain(ref: A.TypeRef) -> bool:
        head, *rest = ref.name.split(".")
        if head not in tps:
            return False
        if not rest:
            return not ifaces.makes_differentiable(tps[head])
        if len(rest) == 1 and rest[0] != "Differential":  # `T::Params`: as its associated type's interfaces say
            return not ifaces.makes_differentiable(ifaces.assoc_constraints(tps[head], rest[0]))
        return False

    if isinstance(inst, A.Struct):
        for f, tf in zip(inst.fields, tmpl.fields):  # type: ignore[union-attr]
            if plain(tf.type):
                f.mods = set(f.mods) | {"no_diff", GENERIC_NO_DIFF}
        return
    if not any(a.name in DIFFERENTIABLE_ATTRS for a in tmpl.attrs):  # type: ignore[union-attr]
        return  # its body is not differentiated: a custom derivative (an __apply) says what is
    for p, tp in zip(inst.params, tmpl.params):  # type: ignore[union-attr]
        if plain(tp.type):
            p.mods = set(p.mods) | {"no_diff"}
    if plain(tmpl.ret):  # type: ignore[union-attr]
        inst.ret_mods = set(inst.ret_mods) | {"no_diff"}  # type: ignore[union-attr]
