"""Generic structs and functions with int value parameters (`struct MLVec<int N>`,
`matMulAdd<int O, int I>(...)`): monomorphized. Each instance is a copy of the declaration's
syntax tree with the parameters replaced by their values, named `MLVec_4`, `matMulAdd_16_4`, and
then checked and lowered like any non-generic declaration, so the parameters are compile-time
constants everywhere (array sizes, loop bounds)."""

from __future__ import annotations

import copy
import dataclasses

from diffc.frontend import ast as A
from diffc.frontend import types as T


def instance_name(name: str, values: tuple[int, ...]) -> str:
    return "_".join([name] + [str(v) for v in values])


def substitute(node, env: dict[str, int]):
    """A deep copy of `node` with every generic parameter of env replaced by its value: in names
    (which become int literals), type arguments, array sizes and explicit call arguments."""
    out = copy.deepcopy(node)
    _subst_in(out, env)
    return out


def _value(x, env: dict[str, int]):
    return env.get(x, x) if isinstance(x, str) else x


def _subst_in(node, env: dict[str, int]) -> None:
    if isinstance(node, A.TypeRef):
        node.args = [_value(a, env) for a in node.args]
        node.dims = [_value(d, env) for d in node.dims]
    if isinstance(node, A.Name):
        node.targs = [_value(a, env) for a in node.targs]
    if not dataclasses.is_dataclass(node):
        return
    for f in dataclasses.fields(node):
        if f.name in ("ty", "sym", "target", "decl_ty", "span"):
            continue
        v = getattr(node, f.name)
        if isinstance(v, A.Name) and v.id in env:
            setattr(node, f.name, A.Num(env[v.id], False, span=v.span))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, A.Name) and x.id in env:
                    v[i] = A.Num(env[x.id], False, span=x.span)
                else:
                    _subst_in(x, env)
        elif isinstance(v, A.Node):
            _subst_in(v, env)


def infer(ref: A.TypeRef, got: T.Type, params: list[str], env: dict[str, int]) -> None:
    """Binds the generic parameters that `ref` (a parameter's declared type) names from `got`
    (the argument's type): `MLVec<I>` against `MLVec_4` gives I = 4, `half[N]` against half[3]
    gives N = 3. Parameters already bound keep their value (the caller reports a mismatch)."""
    for d in reversed(ref.dims):
        if not isinstance(got, T.Array):
            return
        if isinstance(d, str) and d in params:
            env.setdefault(d, got.n)
        got = got.elem
    if ref.pointer and isinstance(got, T.Pointer):
        got = got.elem
    if isinstance(got, T.Struct) and got.template is not None and got.template[0] == ref.name:
        for a, v in zip(ref.args, got.template[1]):
            if isinstance(a, str) and a in params:
                env.setdefault(a, v)
    if isinstance(got, T.Pair) and ref.name == "DifferentialPair" and ref.args and isinstance(ref.args[0], A.TypeRef):
        infer(ref.args[0], got.elem, params, env)
