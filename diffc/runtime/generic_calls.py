"""Calls over tensors of generic Slang functions, specialized from the call's arguments (as
SlangPy does):

    float total<let N: int>(vector<float, N> v)   m.total(v=a)    a of shape (..., 3): N = 3
    T sq<T : IFloat>(T x)                         m.sq(x=a)       a float64: T = double

A type parameter comes from the dtype of the argument of a parameter of that type (or of a
vector's or matrix's element type): float32 -> float, float64 -> double, int32 -> int, uint32
-> uint; a Python float -> float and a Python int -> int where no array argument says it. An
int parameter comes from the trailing dimensions of the argument of a `vector<E, N>` (N: the
last) or `matrix<E, R, C>` (R, C: the last two) parameter. The instance itself is made by the
front end (generics.py) as for a use in Slang: the module's source is compiled again with such a
use appended (a function that calls `f<args>`), and the instance (`total_3`, `sq_double`) is
what the call runs, in every mode (`m.f(...)`, `.bwds`, `.fwds`, torch tensors). Each instance is
made once per module.

Refused with a CallError naming the reason: a generic parameter no argument determines (one
with a default, or used only in other types), arguments that disagree about one, and generic
functions with `out`/`inout` parameters (what an appended use would pass them is not defined).
"""

from __future__ import annotations

import numpy as np

from diffc.runtime.errors import CallError
from diffc.runtime import torch_ops

# numpy dtype -> the Slang scalar type a type parameter stands for
_SCALARS = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.int32): "int",
    np.dtype(np.uint32): "uint",
}


def generic_functions(module) -> dict:
    """The generic functions of `module`'s Slang source by name ({} for other sources)."""
    if not module.path.endswith(".slang") or module.path not in module.sources:
        return {}
    from diffc.frontend import ast as A
    from diffc.frontend.parser import parse

    try:
        program = parse(module.sources[module.path], module.path)
    except Exception:  # (the module compiled: a failure here only means no generics are found)
        return {}
    return {d.name: d for d in program.decls if isinstance(d, A.Func) and d.generic_params and d.body is not None}


def _dtype_and_shape(v):
    """(numpy dtype, shape) of a call argument, or None where it has neither."""
    if type(v) is float:
        return np.dtype(np.float32), ()
    if type(v) is int:
        return np.dtype(np.int32), ()
    dtype, shape = getattr(v, "dtype", None), getattr(v, "shape", None)
    if dtype is None or shape is None:
        return None
    if not isinstance(dtype, np.dtype):  # a torch dtype: torch.float32 -> float32
        try:
            dtype = np.dtype(str(dtype).removeprefix("torch."))
        except TypeError:
            return None
    return dtype, tuple(shape)


class GenericFunction:
    """`m.f` for a generic function f: each call picks (or makes) f's instance for its arguments."""

    def __init__(self, module, decl):
        self.module = module
        self.decl = decl
        self.name = decl.name
        self.params = [p.name for p in decl.params]
        self._instances: dict[tuple, object] = {}  # generic arguments -> the instance's Function
        self.handle = torch_ops.register(self)  # (torch.compile picks instances by it: torch_ops.py)

    def __repr__(self) -> str:
        return f"<diffc.GenericFunction {self.name}<{', '.join(self.decl.generic_params)}>({', '.join(self.params)})>"

    def __call__(self, *args, **kwargs):
        if torch_ops.compiling():  # traced by torch.compile: the instance is picked outside the trace
            return torch_ops.call(self.handle, "", args, {k: v for k, v in kwargs.items() if k != "_result"},
                                  kwargs.get("_result", "torch"))
        return self.instance(args, kwargs)(*args, **kwargs)

    def bwds(self, *args, **kwargs):
        return self.instance(args, kwargs).bwds(*args, **kwargs)

    def fwds(self, *args, **kwargs):
        return self.instance(args, kwargs).fwds(*args, **kwargs)

    # -- specialization -------------------------------------------------------------------

    def instance(self, args: tuple, kwargs: dict):
        """The Function of the instance these arguments call."""
        env = self._infer(args, kwargs)
        key = tuple(env[g] for g in self.decl.generic_params)
        fn = self._instances.get(key)
        if fn is None:
            fn = self._instances[key] = self._make(key)
        return fn

    def _infer(self, args: tuple, kwargs: dict) -> dict:
        decl = self.decl
        if any(p.mods & {"out", "inout"} for p in decl.params):
            raise CallError(f"error: {self.name}(): generic functions with out or inout parameters cannot be called "
                            "over tensors (their instance is not specialized from arguments)", self.name)
        values = dict(zip(self.params, args))
        values.update((k, v) for k, v in kwargs.items() if not k.startswith("_"))
        env: dict = {}

        def put(g: str, value, why: str) -> None:
            old = env.get(g)
            if old is not None and old[0] != value:
                raise CallError(f"error: {self.name}(): generic parameter {g} is {old[0]} ({old[1]}) and {value} "
                                f"({why})", self.name)
            env[g] = (value, why)

        # arrays and tensors first: a Python number takes the type its array arguments say
        order = sorted((p for p in decl.params if p.name in values),
                       key=lambda p: type(values[p.name]) in (float, int))
        for p in order:  # (a missing argument is reported by the instance's own call)
            number = type(values[p.name]) in (float, int)
            info = _dtype_and_shape(values[p.name])
            if info is None:
                continue
            dtype, shape = info
            ref = p.type
            elem, dims = ref, []
            if ref.name in ("vector", "matrix") and ref.args:
                elem, dims = ref.args[0], list(ref.args[1:])
            if getattr(elem, "name", None) in decl.type_params:
                scalar = _SCALARS.get(dtype)
                if scalar is None:
                    raise CallError(f"error: {self.name}(): argument '{p.name}' has dtype {dtype}, which no Slang type "
                                    f"parameter takes (float32, float64, int32, uint32)", p.name)
                if not (number and elem.name in env):
                    put(elem.name, scalar, f"the dtype of '{p.name}'")
            for k, d in enumerate(dims):
                if isinstance(d, str) and d in decl.generic_params and d not in decl.type_params:
                    axis = len(dims) - k  # counted from the end: N of a vector is the last dimension
                    if len(shape) < axis:
                        raise CallError(f"error: {self.name}(): argument '{p.name}' has shape {shape}; parameter "
                                        f"'{p.name}' is a {ref.name} whose size {d} comes from its last "
                                        f"{len(dims)} dimension(s)", p.name)
                    put(d, shape[-axis], f"dimension {-axis} of '{p.name}'")
        missing = [g for g in decl.generic_params if g not in env]
        if missing:
            raise CallError(f"error: {self.name}(): no argument determines generic parameter(s) "
                            f"{', '.join(missing)} of {self.name}<{', '.join(decl.generic_params)}> (calls over "
                            "tensors take them from argument dtypes and vector/matrix dimensions)", self.name)
        return {g: v for g, (v, _) in env.items()}

    def _make(self, key: tuple):
        """Compiles the module again with a use of the instance appended; returns its Function."""
        from diffc.frontend.generics import instance_name

        decl, module = self.decl, self.module
        name = instance_name(self.name, key)  # (generics.py's name: a type's by its Slang name)
        if name in module._signatures:  # the source itself uses this instance
            return getattr(module, name)
        env = dict(zip(decl.generic_params, key))
        params = ", ".join(f"{_render(p.type, env)} a{i}{''.join(f'[{env.get(d, d)}]' for d in p.type.dims)}"
                           for i, p in enumerate(decl.params))
        targs = ", ".join(str(v) for v in key)
        call = f"{self.name}<{targs}>({', '.join(f'a{i}' for i in range(len(decl.params)))})"
        use = f"__diffc_use_{instance_name(self.name, key)}"
        text = (module.sources[module.path]
                + f"\n// (diffc: a use of {self.name}<{targs}>, for a call over tensors)\n"
                + f"void {use}({params}) {{ {call}; }}\n")
        inst = module.with_source(text)
        if name not in inst._signatures:
            raise CallError(f"error: {self.name}(): the instance {self.name}<{targs}> was not made ({name} is not "
                            "among the compiled functions)", self.name)
        return getattr(inst, name)


def _render(ref, env: dict) -> str:
    """Slang text of a parameter's type with the generic parameters replaced (array dimensions,
    which follow the parameter's name, excepted)."""
    if ref.pointer:
        raise CallError("error: pointer parameters of generic functions cannot be called over tensors")
    text = str(env.get(ref.name, ref.name))
    if ref.args:
        text += "<" + ", ".join(_render(a, env) if hasattr(a, "name") and hasattr(a, "args") else str(env.get(a, a))
                                for a in ref.args) + ">"
    return text
