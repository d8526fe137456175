"""Type resolution for the checker: a written type (`float3`, `S<4>.Differential`, `Ptr<T>`,
`float c[S.K + 1]`) to the front end's type (types.py), and the compile-time ints of array sizes
(`static const` ints, global or a struct's). A mixin of Checker: it reads the checker's structs,
typedefs, interfaces and the scopes of the structs being checked (alias_scopes)."""

from __future__ import annotations

import re

from diffc.frontend import ast as A
from diffc.frontend import feature
from diffc.frontend import types as T
from diffc.frontend.errors import TYPE_MISMATCH, UNDEFINED, UNSUPPORTED
from diffc.frontend.generics import const_int
from diffc.frontend.parser.parser import canonical_type_name
from diffc.frontend.checker.symbols import Local, err

MAX_VECTOR = 1 << 16  # elements of a `vector<T, N>` (a CoopVec's bound)

_VEC = re.compile(r"^(float|half|double|int|uint|bool|u?int(?:8|16|64)_t)([1-4])$")


class TypeResolution:
    def resolve(self, t: A.TypeRef) -> T.Type:
        if t.name == "Ptr" and t.args and isinstance(t.args[0], A.TypeRef) and t.fixed is None:
            t = self._ptr_generic(t)
        if t.pointer:
            ty = self._pointer(t)
        else:
            ty = self._resolve_base(t)
        for n in reversed(t.dims):
            if isinstance(n, A.Expr):
                v = const_int(n, self.static_const_int)
                if v is None or v < 0:
                    raise err(UNDEFINED, "array size is not a non-negative compile-time int", n)
                n = v
            size = n if isinstance(n, int) else self.static_const_int(n)
            if size is None:
                raise err(UNDEFINED, f"array size '{n}' is not a compile-time int", t)
            ty = _sized_array(ty, size, t)
        return ty

    def resolve_value(self, t: A.TypeRef) -> T.Type:
        """The type of a local, parameter, result or field: values the IR holds as one SSA value
        per scalar, which past T.MAX_VALUE_SCALARS take the passes minutes (memory does not:
        groupshared variables and buffers may be larger)."""
        ty = self.resolve(t)
        if T.scalar_count(ty) > T.MAX_VALUE_SCALARS:
            raise err(UNSUPPORTED, f"a value of type {ty} ({T.scalar_count(ty)} scalars) is not supported (at most "
                      f"{T.MAX_VALUE_SCALARS} in a local, parameter, result or field: diffc holds it as one value "
                      "per scalar; use a buffer or groupshared memory)", t)
        return ty

    def int_arg(self, arg) -> int | None:
        """A generic type's int argument: a literal, a `static const` int's name, or an int
        expression of those (`matrix<float, ROWS, 2 * K>`); None if it has no compile-time value."""
        if isinstance(arg, int):
            return arg
        if isinstance(arg, str):
            return self.static_const_int(arg)
        if isinstance(arg, A.Expr):
            return const_int(arg, self.static_const_int)
        return None

    def static_const_int(self, name: str) -> int | None:
        """The value of a `static const` int (an array size): `S.N` of struct S, or N of the
        struct being checked (innermost first) or of the globals, whose initializer is an int
        expression of literals and other such constants."""
        if not isinstance(name, str) or name in self._evaluating:
            return None  # (a constant defined through itself has no value)
        struct, _, member = name.rpartition(".")
        owner = self.structs.get(struct) if struct else next(
            (o for scope in reversed(self.alias_scopes)  # (a struct's scope maps `This` to it)
             if isinstance(o := scope.get("This"), T.Struct) and member in o.statics), None)
        if struct and not isinstance(owner, T.Struct):
            return None
        loc = owner.statics.get(member) if owner is not None else self.scopes[0].get(member)
        if loc is None and owner is None and member in getattr(self, "int_const_decls", {}):
            loc = Local(member, T.INT, False, value=self.int_const_decls[member].init)  # (not declared yet)
        if loc is None or not T.is_int_scalar(loc.ty) or not isinstance(loc.value, A.Expr):
            return None
        self._evaluating.add(name)
        if owner is not None:
            self.alias_scopes.append(owner.aliases)  # its initializer sees the struct's other statics
        try:
            return const_int(loc.value, self.static_const_int)
        finally:
            self._evaluating.discard(name)
            if owner is not None:
                self.alias_scopes.pop()

    def member_type(self, base: T.Type, m: str, t: A.TypeRef) -> T.Type:
        """`X.Differential`, or `X.A` for a typealias (an associated type) of struct X."""
        if m == "Differential":
            if not (T.is_differentiable(base) or T.is_ptr_differentiable(base)):
                raise err(TYPE_MISMATCH, f"type {base} is not differentiable", t)
            return T.differential(base)
        if isinstance(base, T.Struct) and m in base.aliases:
            return base.aliases[m]
        if m == "DifferentialElementType" and isinstance(base, T.Pair):  # `DifferentialPair<X>`'s: X.Differential
            return self.member_type(base.elem, "Differential", t)
        if m == "Handle" and isinstance(base, T.Buffer):
            return base  # a bindless handle reads and writes the resource it names, as the resource does
        raise err(UNDEFINED, f"type {base} has no member type '{m}'", t)

    def _type_arg(self, t: A.TypeRef, arg) -> T.Type:
        """A type argument of `t` (the parser keeps names it does not know as types as str, and
        numbers as int: either is an error here, at `t`)."""
        if not isinstance(arg, A.TypeRef):
            raise err(UNDEFINED, f"'{arg}' is not a type (in the arguments of {t.name})", t)
        return self.resolve(arg)

    def _ptr_generic(self, t: A.TypeRef) -> A.TypeRef:
        """`Ptr<T>` (and `Ptr<T, Access::A, AddressSpace::Device>`) is `T*`: device memory."""
        space = next((a for a in t.args[1:] if isinstance(a, A.TypeRef) and "AddressSpace" in a.name), None)
        if space is not None and not space.name.endswith(("Device", "Global")):
            raise err(UNSUPPORTED, f"a pointer into address space '{space.name.rsplit('.', 1)[-1]}' is not "
                      "supported (only device memory)", space)
        elem = t.args[0]
        return A.TypeRef(elem.name, elem.args, t.dims, elem.pointer + 1 + t.pointer, span=t.span)

    def _pointer(self, t: A.TypeRef) -> T.Pointer:
        if t.pointer > 1:
            raise err(UNSUPPORTED, "pointers to pointers are not supported", t)
        if self.ifaces.is_interface(t.name):  # words in Slang's layout (dynamic_buffers.py)
            dyn = self._resolve_base(A.TypeRef(t.name, t.args, span=t.span))
            self.check_element(dyn, False, t)
            return T.Pointer(dyn)
        if t.name == "Atomic" and len(t.args) == 1 and isinstance(t.args[0], A.TypeRef):
            p = T.Pointer(self.resolve(t.args[0]), True)
        else:
            # (keeping `fixed`: a generic instance's `T*` points at the type T stands for)
            p = T.Pointer(self._resolve_base(A.TypeRef(t.name, t.args, span=t.span, fixed=t.fixed)))
        if not p.by_value and T.pointee_scalar(p.elem) is None:
            raise err(UNSUPPORTED, f"pointer to {p.elem}: a pointee must be laid out as scalars of one type "
                      "(a struct may hold pointers only as a whole, passed by value)", t)
        return p

    def check_element(self, dyn: T.Struct, atomic: bool, where: A.TypeRef) -> None:
        """An interface value as a buffer's element or a pointee: the features say whether its
        layout in memory is known (dynamic_buffers.py); without one that does, it is refused."""
        if not feature.hooks("check_element"):
            raise err(UNSUPPORTED, f"interface values in memory ({dyn}) are not supported", where)
        for check in feature.hooks("check_element"):
            check(self, dyn, atomic, where)

    def _resolve_base(self, t: A.TypeRef) -> T.Type:
        if t.fixed is not None:  # a generic instance's type parameter (generics.py), maybe `T.Differential`
            ty = t.fixed
            for m in t.name.split(".")[1:]:
                ty = self.member_type(ty, m, t)
            return ty
        n = canonical_type_name(t.name)
        for scope in reversed(self.alias_scopes):
            if n in scope:
                return scope[n]
        if "." in n:
            head, m = n.rsplit(".", 1)
            return self.member_type(self._resolve_base(A.TypeRef(head, t.args, span=t.span)), m, t)
        if n in self.struct_templates:
            return self.instantiate_struct(n, t)
        if self.ifaces.is_interface(n):  # a value whose implementation is chosen at run time (dynamic.py)
            dyn = feature.first("resolve_interface", self, n, t)
            if dyn is None:
                raise err(UNSUPPORTED, f"a value of interface '{n}' is not supported here", t)
            return dyn
        if n == "void":
            return T.VOID
        if n in T.RANK:
            return T.Scalar(n)
        m = _VEC.match(n)
        if m:
            return T.Vector(T.Scalar(m.group(1)), int(m.group(2))) if m.group(2) != "1" else T.Scalar(m.group(1))
        if (named := feature.first("resolve_type", self, n, t)) is not None:  # (a matrix, a texture, ...)
            return named
        if n == "ParameterBlock" and len(t.args) == 1 and isinstance(t.args[0], A.TypeRef):
            return self._type_arg(t, t.args[0])  # its struct, a global (textures.resource_global)
        if n == "vector" and len(t.args) == 2:
            e = self._type_arg(t, t.args[0])
            # (wider than 4, as a CoopVec is: split-wide-vectors gives OpenCL the widths it has)
            if not isinstance(e, T.Scalar) or not isinstance(t.args[1], int) or not 1 <= t.args[1] <= MAX_VECTOR:
                raise err(TYPE_MISMATCH, f"vector<T, N> needs a scalar type T and a constant N from 1 to {MAX_VECTOR}", t)
            return T.Vector(e, t.args[1])
        if n == "Array" and len(t.args) == 2:  # `Array<T, N>` is `T[N]`
            e = self._type_arg(t, t.args[0])
            if not isinstance(t.args[1], int) or t.args[1] < 0:
                raise err(UNDEFINED, f"the size of {t.name}<...> must be a compile-time int, got '{t.args[1]}'", t)
            return _sized_array(e, t.args[1], t)
        if n == "Ptr":  # (resolve turned every Ptr<T, ...> with a type T into T*)
            raise err(TYPE_MISMATCH, "Ptr<T, ...> needs a type T as its first argument", t)
        if n == "DifferentialPair" and len(t.args) == 1:
            inner = self._type_arg(t, t.args[0])
            if not T.is_differentiable(inner):
                raise err(TYPE_MISMATCH, f"DifferentialPair needs a differentiable type, got {inner}", t)
            return T.Pair(inner)
        if n == "DifferentialPtrPair" and len(t.args) == 1:
            inner = self._type_arg(t, t.args[0])
            if not T.is_ptr_differentiable(inner):
                raise err(TYPE_MISMATCH, f"DifferentialPtrPair needs an IDifferentiablePtrType struct, got {inner}", t)
            return T.PtrPair(inner)
        if n in ("RWStructuredBuffer", "StructuredBuffer") and len(t.args) == 1:
            a = t.args[0]
            atomic = isinstance(a, A.TypeRef) and a.name == "Atomic" and len(a.args) == 1
            elem = self._type_arg(t, a.args[0] if atomic else a)
            if isinstance(elem, T.Struct) and elem.dynamic_of is not None:  # interface values
                self.check_element(elem, atomic, t)
                return T.Buffer(elem, atomic)
            if not T.is_numeric(elem) and (atomic or T.memory_scalar(elem) is None):
                # one memref holds the elements: scalars, vectors, or aggregates laid out as
                # consecutive scalars (as a pointer lays them out) of one scalar type or of 32-bit words
                raise err(UNSUPPORTED, f"a buffer of {elem} is not supported (elements must be scalars, vectors, "
                          "or structs and arrays whose fields are all of one scalar type or all 32-bit)", t)
            return T.Buffer(elem, atomic)
        if n in self.structs:
            return self.structs[n]
        if n in self.typedefs:
            return self.typedefs[n]
        # a struct or typedef declared further down (Slang's declarations are order-free)
        later = next((d for d in self.struct_decls if d.name == n and id(d) not in self.declared_early), None)
        if later is not None:
            self.declared_early.add(id(later))
            return self.declare_struct(later, n)
        alias = self.typedef_decls.get(n)
        if alias is not None and id(alias) not in self.declared_early:
            self.declared_early.add(id(alias))
            self.typedefs[n] = self.resolve(alias.type)
            return self.typedefs[n]
        raise err(UNDEFINED, f"unknown type '{n}'", t)

    def through_typedefs(self, t: A.TypeRef) -> A.TypeRef:
        """An extension's target named by a typedef (`typedef myvector<3> myfloat3; extension
        myfloat3 : I`): the type it names, as written."""
        seen: set[str] = set()
        while not t.args and not t.dims and not t.pointer and t.name in self.typedef_decls and t.name not in seen:
            seen.add(t.name)
            named = self.typedef_decls[t.name].type
            t = A.TypeRef(named.name, named.args, named.dims, named.pointer, span=t.span)
        return t


def _sized_array(elem: T.Type, n: int, where: A.Node) -> T.Array:
    ty = T.Array(elem, n)
    if T.scalar_count(ty) > T.MAX_SCALARS:
        raise err(UNSUPPORTED, f"an array of {T.scalar_count(ty)} scalars ({ty}) is not supported (at most "
                  f"{T.MAX_SCALARS}: diffc holds an array as one value per scalar)", where)
    return ty
