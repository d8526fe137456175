"""The Slang-level declarations a SlangPy call needs: a function's parameters as written (type
text, direction, no_diff), whether it is differentiable, and the program's structs. Read from the
front end's parse of the module (with its imports), before any checking."""

from __future__ import annotations

import re
from dataclasses import dataclass

from diffc.frontend import ast as A
from diffc.frontend.generics import const_int
from diffc.slangpy.values import ElementType, element_type

# SlangPy's tensor types (diffc/slangpy/slangpy.slang): a parameter of one takes a whole Tensor
TENSOR_TYPES = {
    "Tensor": "plain", "NDBuffer": "plain", "RWTensor": "plain", "WTensor": "plain", "RWNDBuffer": "plain",
    "AtomicTensor": "atomic",
    **{name: "grad_out" for name in ("GradOutTensor", "DiffTensor", "IDiffTensor", "ITensor")},
    **{name: "grad_in" for name in ("GradInTensor", "WDiffTensor", "IWDiffTensor", "IWTensor")},
    **{name: "grad_inout" for name in ("GradInOutTensor", "RWDiffTensor", "IRWDiffTensor", "IRWTensor")},
}
TEXTURE_TYPES = {"Texture2D", "RWTexture2D"}
_FLOATS = re.compile(r"^(float|half|double|float16_t|float32_t|float64_t)([1-4](x[1-4])?)?$")


def type_text(t: A.TypeRef) -> str:
    """The type as Slang spells it, without array dimensions."""
    args = ""
    if t.args:
        args = "<" + ", ".join(type_text(a) + dims_text(a) if isinstance(a, A.TypeRef) else str(a)
                               for a in t.args) + ">"  # (an argument's dimensions are its type's)
    return t.name + args + "*" * t.pointer


def dims_text(t: A.TypeRef) -> str:
    out = ""
    for n in t.dims:
        if isinstance(n, A.Name):
            n = n.id
        elif not isinstance(n, (int, str)):
            raise ValueError("array size")
        out += f"[{n}]"
    return out


def _size(n, value):
    """An array size as an int where it is one or a constant names one, else as written."""
    v = const_int(n, value) if not isinstance(n, str) else value(n)
    return v if v is not None else n


@dataclass
class Param:
    name: str
    type: A.TypeRef
    direction: str  # in | out | inout
    no_diff: bool
    has_default: bool = False  # `float s = 2.0`: a call may leave it out (the last ones only)
    resolved: object = None  # the front-end type, for a specialized call (specialize.py)

    @property
    def text(self) -> str:
        return type_text(self.type)

    def declare(self, name: str) -> str:
        return f"{self.text} {name}{dims_text(self.type)}"

    @property
    def tensor_kind(self) -> str | None:
        return TENSOR_TYPES.get(self.type.name) if not self.type.dims else None

    @property
    def is_texture(self) -> bool:
        return self.type.name in TEXTURE_TYPES and not self.type.dims

    def dense(self) -> tuple[ElementType, tuple[int, ...]] | None:
        """(the scalar-shaped element type, the array dimensions before it) of a parameter that
        an array argument fills element by element, or None."""
        et = element_type(self.text)
        if et is None or not all(isinstance(n, int) for n in self.type.dims):
            return None
        return et, tuple(self.type.dims)


@dataclass
class Function:
    name: str
    params: list[Param]
    result: A.TypeRef
    differentiable: bool
    # a specialization (specialize.py): the callee as the kernel writes it (`f<float, 3>`), whether
    # the first parameter is the `this` of a method, and Slang the kernel needs before it
    callee: str | None = None
    method: bool = False
    prelude: str = ""

    def call(self, args: list[str]) -> str:
        """The Slang call of this function with these argument texts."""
        callee = self.callee or self.name
        if self.method:
            return f"{args[0]}.{callee}({', '.join(args[1:])})"
        return f"{callee}({', '.join(args)})"


def _differentiable_attr(f: A.Func) -> bool:
    return any(a.name in ("Differentiable", "BackwardDifferentiable", "ForwardDifferentiable")
               or a.name.startswith("BackwardDerivative") for a in f.attrs)


class Declarations:
    """The functions and structs of one parsed program."""

    def __init__(self, program: A.Program):
        self.functions: dict[str, list[Function]] = {}
        self.structs: dict[str, A.Struct] = {}
        self.program_decls = program.decls
        # `static const int N = ...;` globals, for array sizes that name them (`float[N] x`)
        consts = {d.name: d.init for d in program.decls if isinstance(d, A.Global) and d.init is not None
                  and {"static", "const"} <= set(d.mods) and d.type.name in ("int", "uint") and not d.type.dims}
        seen: set[str] = set()

        def value(name: str) -> int | None:
            if name not in consts or name in seen:
                return None
            seen.add(name)
            try:
                return const_int(consts[name], value)
            finally:
                seen.discard(name)

        for d in program.decls:
            if isinstance(d, A.Func):
                for p in d.params:
                    p.type.dims = [_size(n, value) for n in p.type.dims]
        for d in program.decls:
            if isinstance(d, A.Func) and d.body is not None and not d.generic_params:
                params = [Param(p.name, p.type, "inout" if "inout" in p.mods else "out" if "out" in p.mods else "in",
                                "no_diff" in p.mods, p.default is not None) for p in d.params]
                self.functions.setdefault(d.name, []).append(Function(d.name, params, d.ret, _differentiable_attr(d)))
            elif isinstance(d, A.Struct):
                self.structs[d.name] = d

    def is_differentiable(self, p: Param) -> bool:
        """Whether a parameter carries a derivative (Slang's rules, read from the declaration)."""
        if p.no_diff or p.tensor_kind or p.is_texture:
            return False
        if _FLOATS.match(p.type.name) or re.match(r"^(vector|matrix)$", p.type.name) and p.type.args and \
                isinstance(p.type.args[0], A.TypeRef) and _FLOATS.match(p.type.args[0].name):
            return True
        s = self.structs.get(p.type.name)
        return s is not None and "IDifferentiable" in s.bases


def read_declarations(text: str, filename: str, include_dirs: list[str] | tuple[str, ...] = ()) -> Declarations:
    from diffc.frontend.errors import FrontendError
    from diffc.frontend.parser.imports import Loader

    loader = Loader(filename, include_dirs=include_dirs)
    try:
        return Declarations(loader.parse(text, filename))
    except FrontendError as e:
        raise e.to_diffc_error(loader.sources) from None


def struct_leaves(decls: Declarations, name: str, prefix: str = "") -> list[tuple[str, ElementType]] | None:
    """The scalar, vector and matrix fields of struct `name`, nested structs' fields flattened
    (`.a`, `.inner.b`), in declaration order; None where a field is anything else (an array, a
    pointer, a tensor)."""
    s = decls.structs.get(name)
    if s is None or s.generic_params:
        return None
    out: list[tuple[str, ElementType]] = []
    for f in s.fields:
        if "static" in f.mods:
            continue
        if f.type.dims or f.type.pointer:
            return None
        et = element_type(type_text(f.type))
        if et is not None:
            out.append((f"{prefix}.{f.name}", et))
            continue
        inner = struct_leaves(decls, f.type.name, f"{prefix}.{f.name}")
        if inner is None:
            return None
        out += inner
    return out
