"""C types of IR types, C literals of constants, and readable unique C names."""

from __future__ import annotations

import math
import re

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    Signedness,
    VectorType,
)
from xdsl.ir import Attribute

from diffc.dialects.kernel import LOCAL_MEMORY_SPACE, memory_space

from .options import EmitOptions

C_KEYWORDS = set(
    """auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef union
    unsigned void volatile while bool true false half uchar ushort uint ulong size_t ptrdiff_t
    intptr_t uintptr_t kernel __kernel global __global local __local private __private constant
    __constant read_only write_only read_write image2d_t image3d_t sampler_t event_t complex
    imaginary NULL asm main""".split()
)
# OpenCL builtins the emitter calls: a variable must never shadow one of them.
C_BUILTINS = set(
    """get_global_id get_local_id get_group_id get_global_size get_local_size get_num_groups barrier
    atomic_add atomic_cmpxchg atomic_fetch_add_explicit vload_half vstore_half vload2 vload3 vload4
    vload8 vload16 vstore2 vstore3 vstore4 vstore8 vstore16 as_int as_uint as_float as_long
    as_ulong as_double fabs fmod fmin fmax min max select exp exp2 expm1 log log2 log10 log1p sin cos
    tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh sqrt rsqrt cbrt pow pown erf erfc
    copysign fma floor ceil round rint trunc clz popcount abs isnan isinf isunordered islessgreater
    INFINITY NAN sincos fract frexp ldexp lgamma modf nan nextafter remainder remquo rootn sign
    sinpi cospi tanpi mad hypot fdim exp10 ilogb logb tgamma half_exp native_exp native_sin
    native_cos native_log native_sqrt native_recip native_divide dot cross length distance normalize
    clamp mix step smoothstep degrees radians mul24 mad24 hadd rhadd rotate upsample abs_diff
    add_sat sub_sat mad_hi mul_hi printf shuffle shuffle2 any all bitselect isequal isnotequal
    isgreater isgreaterequal isless islessequal isfinite isnormal isordered signbit
    convert_float convert_int convert_long convert_double mem_fence read_mem_fence write_mem_fence
    async_work_group_copy wait_group_events prefetch vload_half2 vload_half3 vload_half4
    vload_half8 vload_half16 vstore_half2 vstore_half3 vstore_half4 vstore_half8 vstore_half16
    atomic_sub atomic_xchg atomic_inc atomic_dec atomic_min atomic_max atomic_and atomic_or
    atomic_xor work_group_barrier get_work_dim get_global_offset""".split()
)
RESERVED = C_KEYWORDS | C_BUILTINS


def float_kind(t: Attribute) -> str:
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, (Float32Type, Float16Type)):
        return "float"  # f16 values are computed in float
    raise TypeError(t)


def int_ctype(width: int, unsigned: bool) -> str:
    names = {1: "bool", 8: "char", 16: "short", 32: "int", 64: "long"}
    if width not in names:
        raise TypeError(f"i{width}")
    name = names[width]
    return ("u" + name) if unsigned and width > 1 else name


def scalar_ctype(t: Attribute, options: EmitOptions) -> str:
    if isinstance(t, AnyFloat):
        return float_kind(t)
    if isinstance(t, IndexType):
        return options.index_type
    if isinstance(t, IntegerType):
        return int_ctype(t.width.data, t.signedness.data == Signedness.UNSIGNED)
    raise TypeError(t)


def ctype(t: Attribute, options: EmitOptions) -> str:
    """The C type of a value of IR type `t` (raises TypeError when there is none)."""
    if isinstance(t, VectorType):
        if t.get_num_dims() != 1 or t.get_shape()[0] not in ((2, 3, 4) if options.cuda else (2, 3, 4, 8, 16)):
            raise TypeError(t)  # (CUDA's vector types have at most 4 lanes)
        el = t.element_type
        if isinstance(el, IntegerType) and el.width.data == 1:
            return f"int{t.get_shape()[0]}"  # OpenCL vector comparisons give -1/0 ints
        return f"{scalar_ctype(el, options)}{t.get_shape()[0]}"
    return scalar_ctype(t, options)


def lane(k: int, options: EmitOptions) -> str:
    """The member that reads lane k of a vector: OpenCL's `s<k>`, CUDA's x, y, z, w."""
    return "xyzw"[k] if options.cuda else f"s{k:x}"


def vector_value(c: str, items: list[str], options: EmitOptions) -> str:
    """A vector of C type `c` made of `items` (one: every lane)."""
    if not options.cuda:
        return f"({c})({', '.join(items)})"
    return f"diffc_splat_{c}({items[0]})" if len(items) == 1 else f"make_{c}({', '.join(items)})"


def unsigned_ctype(t: Attribute, options: EmitOptions) -> str:
    c = ctype(t, options)
    return c if c.startswith("u") or c == "bool" else "u" + c


def is_half_storage(t: Attribute) -> bool:
    return isinstance(t, MemRefType) and isinstance(t.element_type, Float16Type)


def address_space(t: MemRefType) -> str:
    return "__local" if memory_space(t) == LOCAL_MEMORY_SPACE else "__global"


def pointer_ctype(t: MemRefType, options: EmitOptions) -> str:
    """`__global float*`; f16 memrefs are `half*` (storage only)."""
    el = "half" if is_half_storage(t) else ctype(t.element_type, options)
    return f"{address_space(t)} {el}*"


def uses_double(t: Attribute) -> bool:
    if isinstance(t, Float64Type):
        return True
    if isinstance(t, (VectorType, MemRefType)):
        return isinstance(t.element_type, Float64Type)
    return False


def float_literal(value: float, t: Attribute) -> str:
    double = float_kind(t) == "double"
    if math.isnan(value):
        return "NAN" if not double else "(double)NAN"
    if math.isinf(value):
        text = "INFINITY" if not double else "(double)INFINITY"
        return text if value > 0 else f"(-{text})"
    text = repr(float(value)) if double else str(np.float32(value))
    if "e" not in text and "." not in text and "inf" not in text:
        text += ".0"
    if not double:
        text += "f"
    return f"({text})" if text.startswith("-") else text


def int_literal(value: int, t: Attribute, options: EmitOptions) -> str:
    c = ctype(t, options)
    if c == "bool":
        return "true" if value & 1 else "false"
    suffix = {"long": "L", "ulong": "UL", "uint": "U"}.get(c, "")
    width = 64 if c in ("long", "ulong") else 32 if c in ("int", "uint") else None
    if width is not None and value == -(1 << (width - 1)):
        return f"(-{-(value + 1)}{suffix} - 1{suffix})"
    text = f"{value}{suffix}"
    if c in ("char", "short", "uchar", "ushort"):
        return f"(({c}){text})"
    return f"({text})" if value < 0 else text


_IDENT = re.compile(r"[^A-Za-z0-9_]")


def sanitize(hint: str) -> str:
    name = _IDENT.sub("_", hint)
    if not name or name[0].isdigit():
        name = "v" + name
    if name.startswith("__"):  # reserved for the implementation
        name = "u" + name
    return name


class Namer:
    """Unique, readable C names: `x`, `x_1`, ... never a keyword or a builtin."""

    def __init__(self, taken: set[str] | None = None):
        self.taken: set[str] = set(RESERVED) | set(taken or ())
        self.suffix: dict[str, int] = {}  # base -> the next suffix to try (those below are taken)

    def fresh(self, hint: str | None, default: str = "v") -> str:
        base = sanitize(hint) if hint else default
        name = base
        n = self.suffix.get(base, 1)
        while name in self.taken:
            name = f"{base}_{n}"
            n += 1
        self.suffix[base] = n
        self.taken.add(name)
        return name
