"""Calls whose signature the checked program gives (program.py) rather than the declarations as
written: generic functions specialized for the Python values they are called with, methods of a
struct instance (`this` first), and constructors. Each becomes a signature.Function whose
parameter types are concrete Slang text (spell), which calls.py then plans as any call.

A generic parameter is bound from an argument whose parameter type is that parameter: a dict or
an object with `get_this()` names its type by `_type` (`{"_type": "LinearLayer<float, 2, 3>",
...}`), a tensor of structs by its struct, a Tensor by its element type, a number by float or
int; an array size parameter (`Batch[N] batches`) by the length of the list given."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from diffc.frontend import ast as A
from diffc.frontend import types as T
from diffc.frontend.checker.symbols import FuncInfo
from diffc.frontend.errors import FrontendError
from diffc.runtime.errors import CallError
from diffc.slangpy.program import Program, spell
from diffc.slangpy.signature import Function, Param


def function_of(program: Program, info: FuncInfo, name: str, callee: str | None = None,
                method: bool = False, skip_this: bool = False) -> Function:
    """The signature.Function of a checked signature (a method's `this` first, named `_this`)."""
    params = []
    for p in info.params:
        if p.name == "this" and skip_this:
            continue
        par = Param("_this" if p.name == "this" else p.name, program.type_ref(spell(p.ty)), p.direction,
                    p.no_diff, p.default is not None)
        par.resolved = p.ty
        params.append(par)
    result = A.TypeRef("void") if isinstance(info.ret, T.Void) else program.type_ref(spell(info.ret))
    return Function(name, params, result, info.differentiable, callee, method)


def value_type(program: Program, value) -> T.Type | None:
    """The Slang type a Python value stands for, where it names one."""
    from diffc.slangpy.tensor import StructTensor, Tensor

    if hasattr(value, "get_this") and callable(value.get_this):
        value = value.get_this()
    if isinstance(value, Mapping) and isinstance(value.get("_type"), str):
        return program.resolve_text(value["_type"])
    if isinstance(value, StructTensor):
        return program.resolve_text(value.struct)
    if isinstance(value, Tensor):
        return program.resolve_text(value.dtype.full_name)
    if isinstance(value, (bool, np.bool_)):
        return T.BOOL
    if isinstance(value, (int, np.integer)):
        return T.INT
    if isinstance(value, (float, np.floating)):
        return T.Scalar("float")
    return None


def bind(program: Program, d: A.Func, args: tuple, kwargs: dict, skip: int = 0) -> dict:
    """d's generic parameters bound from the arguments (`skip`: leading arguments that are not
    d's parameters, a method's `this`)."""
    values = dict(zip([p.name for p in d.params], args[skip:]))
    values.update({k: v for k, v in kwargs.items() if k in {p.name for p in d.params}})
    env: dict = {}
    for p in d.params:
        if p.name not in values:
            continue
        ref, v = p.type, values[p.name]
        if ref.name in d.generic_params and not ref.args and ref.name not in env:
            t = value_type(program, v)
            if t is not None:
                env[ref.name] = t
        for n in ref.dims:
            name = n.id if isinstance(n, A.Name) else n
            if isinstance(name, str) and name in d.generic_params and isinstance(v, (list, tuple)):
                env.setdefault(name, len(v))
    missing = [g for g in d.generic_params if g not in env and g not in d.generic_defaults]
    if missing:
        raise CallError(f"error: {d.name}(): cannot tell generic parameter '{missing[0]}' from the arguments (pass "
                        "a dict or an object whose get_this() has '_type', or look up the specialization: "
                        f"module.layout.find_function_by_name('{d.name}<...>'))", missing[0])
    return env


def specialize(program: Program, d: A.Func, args: tuple, kwargs: dict, owner: T.Struct | None = None) -> Function:
    """Generic function (or method of `owner`) d for these arguments."""
    env = bind(program, d, args, kwargs, skip=1 if owner is not None else 0)
    try:
        info = program.instantiate(d, env, owner)
    except FrontendError as e:
        raise CallError(f"error: {d.name}(): {e.message}", d.name) from None
    callee = f"{d.name}<{', '.join(spell(env[g]) for g in d.generic_params if g in env)}>"
    return function_of(program, info, d.name, callee, method=owner is not None)


def constructor(program: Program, s: T.Struct, info: FuncInfo) -> Function:
    """A call of struct s's constructor `info`, as a generated function writing the made value
    into an `out` parameter (a tensor of s)."""
    made = spell(s)
    ps = [p for p in info.params if p.name != "this"]
    decl = ", ".join(f"{spell(p.ty)} {p.name}" for p in ps)
    name = "_spy_construct"
    prelude = (f"\nvoid {name}({decl}{', ' if decl else ''}out {made} _spy_made)\n"
               f"{{\n    _spy_made = {made}({', '.join(p.name for p in ps)});\n}}\n")
    fn = function_of(program, FuncInfo(name, ps, T.Void()), name)
    out = Param("_spy_made", program.type_ref(made), "out", True)
    out.resolved = s
    fn.params.append(out)
    fn.prelude = prelude
    return fn
