"""Generic structs and functions, monomorphized: int value parameters (`struct MLVec<int N>`,
`matMulAdd<int O, int I>(...)`) and type parameters (`T`, `T : IFoo`, `__generic<T>`). Each
instance is a copy of the declaration's syntax tree with the parameters replaced by their values
(an int literal, or a type reference fixed to the resolved type), named `MLVec_4`,
`matMulAdd_16_4`, `f_float`, `S_A`, and then checked and lowered like any non-generic
declaration, so int parameters are compile-time constants everywhere (array sizes, loop bounds)
and a type parameter is the concrete type (methods, constructors, arithmetic resolve statically)."""

from __future__ import annotations

import copy
import dataclasses
import re

from diffc.frontend import ast as A
from diffc.frontend import types as T

Value = int | T.Type  # what a generic parameter stands for in one instance


def instance_name(name: str, values: tuple[Value, ...]) -> str:
    parts = [str(v) if isinstance(v, int) else re.sub(r"\W+", "_", str(v)).strip("_") for v in values]
    return "_".join([name] + parts)


def substitute(node, env: dict[str, Value]):
    """A deep copy of `node` with every generic parameter of env replaced by its value: int
    parameters in names (which become int literals), type arguments, array sizes and explicit
    call arguments; type parameters in type references (which then carry the type in `fixed`)."""
    # resolved types already in the tree are shared, not copied (structs are compared by identity)
    memo = {id(n.fixed): n.fixed for n in A.walk(node) if isinstance(n, A.TypeRef) and n.fixed is not None}
    out = copy.deepcopy(node, memo)
    _subst_in(out, env)
    return out


def _value(x, env: dict[str, Value]):
    if isinstance(x, str) and x in env:
        v = env[x]
        return v if isinstance(v, int) else A.TypeRef(x, fixed=v)
    return x


def _fix(ref: A.TypeRef, env: dict[str, Value]) -> None:
    """`T`, `T[4]`, `T.Differential`, `T.A` with T a type parameter: the reference carries T's
    type; what follows the dot is resolved from it (checker.resolve)."""
    head = ref.name.split(".")[0]
    v = env.get(head)
    if v is not None and not isinstance(v, int) and ref.fixed is None:
        ref.fixed = v


def _subst_in(node, env: dict[str, Value]) -> None:
    if isinstance(node, A.TypeRef):
        node.args = [_value(a, env) for a in node.args]
        node.dims = [env[d] if isinstance(d, str) and isinstance(env.get(d), int) else d for d in node.dims]
        _fix(node, env)
    if isinstance(node, A.Name | A.Member):
        node.targs = [_value(a, env) for a in node.targs]
    if not dataclasses.is_dataclass(node):
        return
    for f in dataclasses.fields(node):
        v = getattr(node, f.name)
        if f.name in ("ty", "sym", "target", "decl_ty", "span", "fixed") and not isinstance(v, A.Node):
            continue  # the checker's resolutions (an assignment's `target` is a node: substituted)
        if isinstance(v, A.Name) and isinstance(env.get(v.id), int):
            setattr(node, f.name, A.Num(env[v.id], False, span=v.span))
        elif isinstance(v, A.Name) and v.id in env:  # a type parameter used as a value: `T(1.0)`
            setattr(node, f.name, A.TypeExpr(A.TypeRef(v.id, fixed=env[v.id], span=v.span), span=v.span))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, A.Name) and isinstance(env.get(x.id), int):
                    v[i] = A.Num(env[x.id], False, span=x.span)
                else:
                    _subst_in(x, env)
        elif isinstance(v, A.Node):
            _subst_in(v, env)


def const_int(e, names=None) -> int | None:
    """The value of an array size like `D - 1` once D is an int literal, or None. `names`, where
    given, gives the value of a name (a `static const` int) or None."""
    if isinstance(e, int):
        return e
    if isinstance(e, A.Num) and not e.is_float:
        return int(e.value)
    if isinstance(e, A.Name) and names is not None:
        return names(e.id)
    if isinstance(e, A.Member) and isinstance(e.base, A.Name | A.TypeExpr) and names is not None:
        base = e.base.id if isinstance(e.base, A.Name) else getattr(e.base.type, "name", None)
        return names(f"{base}.{e.name}") if isinstance(base, str) else None  # a struct's `S.N`
    if isinstance(e, A.Unary) and e.op in ("-", "+", "~"):
        v = const_int(e.operand, names)
        return None if v is None else (-v if e.op == "-" else ~v if e.op == "~" else v)
    if isinstance(e, A.Binary) and e.op in _FOLDED:  # a left chain in a loop, not by recursion
        chain = []
        while isinstance(e, A.Binary) and e.op in _FOLDED:
            chain.append(e)
            e = e.lhs
        value = const_int(e, names)
        for node in reversed(chain):
            value = fold_int(node.op, value, const_int(node.rhs, names))
        return value
    return None


_FOLDED = ("+", "-", "*", "/", "%", "<<", ">>", "|", "&")


def fold_int(op: str, a: int | None, b: int | None) -> int | None:
    """`a op b` for +, -, *, / and % (truncating, as in C), <<, >>, | and &; None where an
    operand is None or the op divides by zero."""
    if a is None or b is None or (op in ("/", "%") and b == 0):
        return None
    ops = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: int(a / b),
           "%": lambda: a - int(a / b) * b, "<<": lambda: a << b, ">>": lambda: a >> b,
           "|": lambda: a | b, "&": lambda: a & b}
    return ops[op]() if op in ops else None


def infer(ref: A.TypeRef, got: T.Type, params: list[str], env: dict[str, Value]) -> None:
    """Binds the generic parameters that `ref` (a parameter's declared type) names from `got`
    (the argument's type): `MLVec<I>` against `MLVec_4` gives I = 4, `half[N]` against half[3]
    gives N = 3, `T` against float3 gives T = float3, `S<T>` against `S_float` gives T = float.
    Parameters already bound keep their value (the caller reports a mismatch)."""
    if ref.fixed is not None:
        return
    for d in reversed(ref.dims):
        if not isinstance(got, T.Array):
            return
        if isinstance(d, str) and d in params:
            env.setdefault(d, got.n)
        got = got.elem
    if ref.pointer and isinstance(got, T.Pointer):
        got = got.elem
    if ref.name in params and not ref.args:
        env.setdefault(ref.name, got)
        return
    if isinstance(got, T.Struct) and got.template is not None and got.template[0] == ref.name:
        for a, v in zip(ref.args, got.template[1]):
            if isinstance(a, str) and a in params:
                env.setdefault(a, v)
            elif isinstance(a, A.TypeRef) and not isinstance(v, int):
                infer(a, v, params, env)
    if isinstance(got, T.Pair) and ref.name == "DifferentialPair" and ref.args and isinstance(ref.args[0], A.TypeRef):
        infer(ref.args[0], got.elem, params, env)
    if isinstance(got, T.PtrPair) and ref.name == "DifferentialPtrPair" and ref.args and isinstance(ref.args[0], A.TypeRef):
        infer(ref.args[0], got.elem, params, env)
    shape = {"vector": (T.Vector, ("n",)), "CoopVec": (T.Vector, ("n",)), "matrix": (T.Matrix, ("rows", "cols")), "Array": (T.Array, ("n",))}.get(ref.name)
    if shape and isinstance(got, shape[0]) and len(ref.args) == 1 + len(shape[1]):  # vector<T, N>, matrix<T, R, C>
        if isinstance(ref.args[0], A.TypeRef):
            infer(ref.args[0], got.elem, params, env)
        for a, attr in zip(ref.args[1:], shape[1]):
            if isinstance(a, str) and a in params:
                env.setdefault(a, getattr(got, attr))
