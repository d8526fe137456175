"""SlangPy's reflection API (`slangpy.reflection`) over diffc's front-end types.

`module.layout` is a SlangProgramLayout of the module's checked program (program.py):
`find_type_by_name("LinearLayer<float, 2, 3>")` resolves the text as the front end does and wraps
the type as a SlangType (ScalarType, VectorType, MatrixType, ArrayType, StructType, or the class
TYPE_OVERRIDES names for a generic struct); `find_function_by_name` and
`find_function_by_name_in_type` give a SlangFunction: the overloads the checker declared, or a
generic function instantiated for explicit generic arguments (`f<float, 3>`), None where its
constraints refuse them. `SlangFunction.specialize_with_arg_types` picks the overload whose
parameter types are the given ones.
"""

from __future__ import annotations

import enum
import math

import numpy as np

from diffc.frontend import types as T
from diffc.frontend.checker.symbols import FuncInfo
from diffc.frontend.errors import FrontendError
from diffc.slangpy.program import Program, spell


_NUMPY = {"float": np.dtype(np.float32), "half": np.dtype(np.float16), "double": np.dtype(np.float64),
          "int": np.dtype(np.int32), "uint": np.dtype(np.uint32)}


class Shape(tuple):
    """SlangPy's Shape (`slangpy.core.native.Shape`): a tuple of dimension sizes."""

    def __new__(cls, dims=()):
        return super().__new__(cls, tuple(int(d) for d in (dims or ())))

    def as_tuple(self) -> tuple:
        return tuple(self)


class TypeReflection:
    """A front-end type as SlangPy's native reflection presents it: a kind, a name, and for a
    scalar its ScalarType."""

    class Kind(enum.Enum):
        none = 0
        struct = 1
        array = 2
        matrix = 3
        vector = 4
        scalar = 5
        resource = 7
        sampler_state = 8
        interface = 6
        pointer = 14

    class ScalarType(enum.Enum):
        none = 0
        void = 1
        bool = 2
        int32 = 3
        uint32 = 4
        int64 = 5
        uint64 = 6
        float16 = 7
        float32 = 8
        float64 = 9
        int8 = 10
        uint8 = 11
        int16 = 12
        uint16 = 13

    _SCALARS = {"float": "float32", "half": "float16", "double": "float64", "int": "int32", "uint": "uint32",
                "bool": "bool", "int64_t": "int64", "uint64_t": "uint64", "int16_t": "int16", "uint16_t": "uint16",
                "int8_t": "int8", "uint8_t": "uint8", "int32_t": "int32", "uint32_t": "uint32"}

    def __init__(self, ty: T.Type):
        self.type = ty

    @property
    def kind(self) -> TypeReflection.Kind:
        t = self.type
        K = TypeReflection.Kind
        if isinstance(t, T.Scalar):
            return K.scalar
        if isinstance(t, T.Vector):
            return K.vector
        if isinstance(t, T.Matrix):
            return K.matrix
        if isinstance(t, T.Array):
            return K.array
        if isinstance(t, T.Struct):
            return K.struct
        if isinstance(t, T.Sampler):
            return K.sampler_state
        if isinstance(t, (T.Buffer, T.Texture)):
            return K.resource
        if isinstance(t, T.Pointer):
            return K.pointer
        return K.none

    @property
    def scalar_type(self) -> TypeReflection.ScalarType:
        el = T.elem_of(self.type) if not isinstance(self.type, T.Matrix) else self.type.elem
        name = self._SCALARS.get(el.kind) if el is not None else None
        return TypeReflection.ScalarType[name] if name else TypeReflection.ScalarType.none

    @property
    def name(self) -> str:
        t = self.type
        if isinstance(t, T.Struct) and t.template is not None:
            return t.template[0]
        return spell(t)

    @property
    def full_name(self) -> str:
        return spell(self.type)

    def __eq__(self, other) -> bool:
        return isinstance(other, TypeReflection) and self.type == other.type

    def __hash__(self) -> int:
        return hash(spell(self.type))

    def __repr__(self) -> str:
        return f"<TypeReflection {self.full_name}>"


class SlangType:
    """A type of a module's program; `element_type` and `shape` as SlangPy gives them (a vector
    float3: element float, shape (3,); an array float[4][2]... its dimensions outermost first)."""

    def __init__(self, program: SlangProgramLayout, refl: TypeReflection, element_type: SlangType | None = None,
                 local_shape: Shape = Shape()):
        self.program = program
        self.type_reflection = refl
        self.element_type = element_type
        self._local_shape = Shape(local_shape)

    @property
    def name(self) -> str:
        return self.type_reflection.name

    @property
    def full_name(self) -> str:
        return self.type_reflection.full_name

    @property
    def shape(self) -> Shape:
        inner = self.element_type.shape if self.element_type is not None else Shape()
        return Shape((*self._local_shape, *inner))

    @property
    def fields(self) -> dict[str, SlangType]:
        return {}

    @property
    def module(self):
        return self.program.module if self.program is not None else None

    # as a Tensor's element type (tensor.py): its numpy scalar and number of scalars
    @property
    def scalar(self) -> np.dtype | None:
        el = T.elem_of(self.type_reflection.type) if not isinstance(self.type_reflection.type, T.Matrix) \
            else self.type_reflection.type.elem
        return _NUMPY.get(el.kind) if el is not None else None

    @property
    def scalars(self) -> int:
        return math.prod(self.shape)

    def __eq__(self, other) -> bool:
        return isinstance(other, SlangType) and self.type_reflection == other.type_reflection

    def __hash__(self) -> int:
        return hash(self.type_reflection)

    def __repr__(self) -> str:
        return f"<SlangType {self.full_name}>"


class ScalarType(SlangType):
    def __init__(self, program, refl):
        super().__init__(program, refl)

    @property
    def slang_scalar_type(self) -> TypeReflection.ScalarType:
        return self.type_reflection.scalar_type


def _element(program, elem):
    """The reflection of a vector's, matrix's or array's element type."""
    return program.wrap(elem) if program is not None else builtin_type(elem)


class VectorType(SlangType):
    def __init__(self, program, refl):
        t = refl.type
        elem = _element(program, t.elem)
        super().__init__(program, refl, elem, Shape((t.n,)))

    @property
    def num_elements(self) -> int:
        return self.type_reflection.type.n


class MatrixType(SlangType):
    def __init__(self, program, refl):
        t = refl.type
        elem = _element(program, t.elem)
        super().__init__(program, refl, elem, Shape((t.rows, t.cols)))

    @property
    def rows(self) -> int:
        return self.type_reflection.type.rows

    @property
    def cols(self) -> int:
        return self.type_reflection.type.cols


class ArrayType(SlangType):
    def __init__(self, program, refl):
        t = refl.type
        elem = _element(program, t.elem)
        super().__init__(program, refl, elem, Shape((t.n,)))

    @property
    def num_elements(self) -> int:
        return self.type_reflection.type.n


class StructType(SlangType):
    def __init__(self, program, refl):
        super().__init__(program, refl)

    @property
    def fields(self) -> dict[str, SlangType]:
        return {n: self.program.wrap(t) for n, t, _ in self.type_reflection.type.fields}


class ResourceType(SlangType):
    """A buffer, texture or sampler."""


# generic struct name -> the SlangType class that reflects its instances (SlangPy's hook)
TYPE_OVERRIDES: dict[str, type] = {}


class SlangFunction:
    """A function or method: one overload (`return_type`, `parameters`), or several
    (`is_overloaded`, `overloads`)."""

    def __init__(self, program: SlangProgramLayout, overloads: list[FuncInfo], name: str,
                 this: SlangType | None = None):
        self.program = program
        self._overloads = overloads
        self.name = name
        self.this = this

    @property
    def is_overloaded(self) -> bool:
        return len(self._overloads) > 1

    @property
    def overloads(self) -> list[SlangFunction]:
        return [SlangFunction(self.program, [f], self.name, self.this) for f in self._overloads]

    @property
    def info(self) -> FuncInfo | None:
        """The first overload's signature (None: a generic method named without its arguments)."""
        return self._overloads[0] if self._overloads else None

    @property
    def return_type(self) -> SlangType | None:
        r = self.info.ret if self.info is not None else T.Void()
        return None if isinstance(r, T.Void) else self.program.wrap(r)

    @property
    def parameters(self) -> list[SlangParameter]:
        if self.info is None:
            return []
        ps = self.info.params[1:] if self.this is not None and not self.info.is_static else self.info.params
        return [SlangParameter(self.program, p) for p in ps]

    @property
    def differentiable(self) -> bool:
        return self.info is not None and self.info.differentiable

    def specialize_with_arg_types(self, types: list[SlangType]) -> SlangFunction | None:
        """The overload whose parameters have exactly these types, or None."""
        want = [t.type_reflection.type for t in types]
        for f in self.overloads:
            if [p.type.type_reflection.type for p in f.parameters] == want:
                return f
        return None

    def __repr__(self) -> str:
        return f"<SlangFunction {self.name}>"


class SlangParameter:
    def __init__(self, program: SlangProgramLayout, p):
        self.name = p.name
        self.type = program.wrap(p.ty)
        self.direction = p.direction
        self.no_diff = p.no_diff


class SlangProgramLayout:
    """Reflection of one module's program."""

    def __init__(self, program: Program, module=None):
        self.program = program
        self.module = module
        self._types: dict[str, SlangType | None] = {}

    def wrap(self, t: T.Type) -> SlangType:
        refl = TypeReflection(t)
        if isinstance(t, T.Scalar | T.Vector | T.Matrix | T.Array):
            return builtin_type(t, self)
        if isinstance(t, T.Struct):
            cls = TYPE_OVERRIDES.get(t.template[0]) if t.template is not None else None
            return (cls or StructType)(self, refl)
        if isinstance(t, (T.Buffer, T.Texture, T.Sampler)):
            return ResourceType(self, refl)
        return SlangType(self, refl)

    def find_type_by_name(self, name: str) -> SlangType | None:
        if name not in self._types:
            t = self.program.resolve_text(name)
            self._types[name] = self.wrap(t) if t is not None else None
        return self._types[name]

    def find_type(self, refl: TypeReflection) -> SlangType:
        return self.wrap(refl.type)

    def get_resolved_generic_args(self, refl: TypeReflection) -> list | None:
        """A generic struct instance's arguments: SlangTypes and ints."""
        t = refl.type
        if not isinstance(t, T.Struct) or t.template is None:
            return None
        return [v if isinstance(v, int) else self.wrap(v) for v in t.template[1]]

    def find_function_by_name(self, name: str) -> SlangFunction | None:
        base, targs = _split_generic(name)
        base = self._unqualified(base)
        if targs is None:
            found = self.program.functions(base)
            return SlangFunction(self, found, base) if found else None
        d = self.program.function_template(base)
        return self._instance(d, targs, None, base) if d is not None else None

    def find_function_by_name_in_type(self, ty: SlangType, name: str) -> SlangFunction | None:
        t = ty.type_reflection.type
        if not isinstance(t, T.Struct):
            return None
        base, targs = _split_generic(name)
        if targs is None:
            found = self.program.methods(t, base)
            if found:
                return SlangFunction(self, found, base, ty)
            d = self.program.method_template(t, base)
            return SlangFunction(self, [], base, ty) if d is not None else None
        d = self.program.method_template(t, base)
        return self._instance(d, targs, t, base, ty) if d is not None else None

    def _instance(self, d, targs: list[str], owner, name: str, this: SlangType | None = None):
        if len(targs) > len(d.generic_params):
            return None
        env = {}
        for p, a in zip(d.generic_params, targs):
            a = a.strip()
            if a.lstrip("-").isdigit():
                env[p] = int(a)
            else:
                t = self.program.resolve_text(a)
                if t is None:
                    return None
                env[p] = t
        try:
            info = self.program.instantiate(d, env, owner)
        except FrontendError:
            return None
        return SlangFunction(self, [info], name, this)

    def _unqualified(self, name: str) -> str:
        """`impl::f` -> `f` (the front end joins namespaces into one scope), unless it is clash-renamed."""
        parts = name.replace(".", "::").split("::")
        if len(parts) > 1 and "_".join(parts) in self.program.checker.func_templates:
            return "_".join(parts)
        return parts[-1]


def builtin_type(t: T.Type, layout: SlangProgramLayout | None = None) -> SlangType:
    """A scalar, vector, matrix or array type (these need no program)."""
    refl = TypeReflection(t)
    cls = {T.Scalar: ScalarType, T.Vector: VectorType, T.Matrix: MatrixType, T.Array: ArrayType}[type(t)]
    return cls(layout, refl)


def element_slang_type(name: str) -> SlangType | None:
    """The SlangType of a Tensor element type named `float`, `float3`, `float2x2`, `vector<int, 2>`."""
    from diffc.slangpy.values import element_type

    et = element_type(name)
    if et is None:
        return None
    kind = next(k for k, v in _NUMPY.items() if v == et.scalar)
    el = T.Scalar(kind)
    if len(et.shape) == 1:
        return builtin_type(T.Vector(el, et.shape[0]))
    if len(et.shape) == 2:
        return builtin_type(T.Matrix(el, et.shape[0], et.shape[1]))
    return builtin_type(el)


def _split_generic(name: str) -> tuple[str, list[str] | None]:
    """`f<float[2], S<1, 2>>` -> ("f", ["float[2]", "S<1, 2>"]); no `<`: (name, None)."""
    name = name.strip()
    if "<" not in name or not name.endswith(">"):
        return name, None
    base, rest = name.split("<", 1)
    rest = rest[:-1]
    args, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        args.append(cur)
    return base.strip(), args
