"""SlangPy's small value types on the Python side: vectors (`float2(1, 2)`), element types of
tensors (`float`, `spy.float4`, `module.float4`, "float3"), and the generators `grid(...)` and
`call_id()` that a call turns into each thread's coordinates."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

_SCALARS = {
    "float": np.dtype(np.float32), "float32_t": np.dtype(np.float32),
    "half": np.dtype(np.float16), "float16_t": np.dtype(np.float16),
    "double": np.dtype(np.float64), "float64_t": np.dtype(np.float64),
    "int": np.dtype(np.int32), "int32_t": np.dtype(np.int32),
    "uint": np.dtype(np.uint32), "uint32_t": np.dtype(np.uint32),
}
_SHAPED = re.compile(r"^(float|half|double|int|uint)([1-4])(?:x([1-4]))?$")


@dataclass(frozen=True)
class ElementType:
    """The type of one element of a tensor: a scalar, vector or matrix of one scalar type."""

    name: str
    scalar: np.dtype
    shape: tuple[int, ...] = ()

    @property
    def scalars(self) -> int:
        return math.prod(self.shape)

    def __repr__(self) -> str:
        return f"<slangpy type {self.name}>"


def element_type(name: str) -> ElementType | None:
    """The ElementType a Slang type name spells (`float`, `float3`, `float2x2`), or None."""
    name = name.replace(" ", "")
    if name in _SCALARS:
        return ElementType(name, _SCALARS[name])
    m = _SHAPED.match(name)
    if m:
        shape = (int(m.group(2)),) if m.group(3) is None else (int(m.group(2)), int(m.group(3)))
        return ElementType(name, _SCALARS[m.group(1)], shape)
    m = re.match(r"^vector<(\w+),([1-4])>$", name)
    if m and m.group(1) in _SCALARS:
        return ElementType(f"{m.group(1)}{m.group(2)}", _SCALARS[m.group(1)], (int(m.group(2)),))
    m = re.match(r"^matrix<(\w+),([1-4]),([1-4])>$", name)
    if m and m.group(1) in _SCALARS:
        return ElementType(f"{m.group(1)}{m.group(2)}x{m.group(3)}", _SCALARS[m.group(1)],
                           (int(m.group(2)), int(m.group(3))))
    return None


class _Vector(tuple):
    """A SlangPy vector value (`spy.float2(1, 2)`): a tuple with .x .y .z .w and element-wise math."""

    _n = 0
    _kind: type = float
    slang_name = ""

    def __new__(cls, *items):
        flat: list = []
        for v in items:
            flat.extend(v if isinstance(v, (tuple, list, np.ndarray)) else [v])
        if len(flat) == 1 and cls._n > 1:
            flat = flat * cls._n  # a scalar fills every component
        if len(flat) != cls._n:
            raise ValueError(f"{cls.slang_name} takes {cls._n} components, got {len(flat)}")
        return super().__new__(cls, [cls._kind(v) for v in flat])

    x = property(lambda self: self[0])
    y = property(lambda self: self[1])
    z = property(lambda self: self[2])
    w = property(lambda self: self[3])

    def _zip(self, other, op):
        other = other if isinstance(other, (tuple, list)) else [other] * self._n
        return type(self)(*[op(a, b) for a, b in zip(self, other)])

    def __add__(self, o): return self._zip(o, lambda a, b: a + b)
    def __sub__(self, o): return self._zip(o, lambda a, b: a - b)
    def __mul__(self, o): return self._zip(o, lambda a, b: a * b)
    def __truediv__(self, o): return self._zip(o, lambda a, b: a / b)
    __radd__ = __add__
    __rmul__ = __mul__
    def __neg__(self): return type(self)(*[-a for a in self])

    def __repr__(self) -> str:
        return f"{self.slang_name}({', '.join(repr(v) for v in self)})"


def _vector_class(name: str, kind: type, n: int) -> type:
    return type(name, (_Vector,), {"_n": n, "_kind": kind, "slang_name": name})


float1, float2, float3, float4 = (_vector_class(f"float{n}", float, n) for n in range(1, 5))
int1, int2, int3, int4 = (_vector_class(f"int{n}", int, n) for n in range(1, 5))
uint1, uint2, uint3, uint4 = (_vector_class(f"uint{n}", int, n) for n in range(1, 5))


def to_element_type(dtype) -> ElementType:
    """An ElementType from what SlangPy takes as a dtype: float, int, a vector class, a name, or
    an ElementType (`module.float4`)."""
    if isinstance(dtype, ElementType):
        return dtype
    if hasattr(dtype, "full_name") and getattr(dtype, "scalar", None) is not None:  # a SlangType (reflection.py)
        return ElementType(dtype.full_name, dtype.scalar, tuple(dtype.shape))
    if dtype is float:
        return ElementType("float", _SCALARS["float"])
    if dtype is int:
        return ElementType("int", _SCALARS["int"])
    if isinstance(dtype, type) and issubclass(dtype, _Vector):
        dtype = dtype.slang_name
    if isinstance(dtype, str):
        found = element_type(dtype)
        if found is not None:
            return found
    else:
        try:
            dt = np.dtype(dtype)
        except TypeError:
            dt = None
        for name, d in _SCALARS.items():
            if dt == d and "_t" not in name:
                return ElementType(name, d)
    raise TypeError(f"slangpy: unsupported tensor element type {dtype!r} (a scalar, vector or matrix of "
                    "float, half, double, int or uint)")


def cross(a, b):
    return type(a)(a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@dataclass(frozen=True)
class grid:
    """Each thread's coordinates in a grid of `shape` (times `stride`): a call's shape comes from it."""

    shape: tuple[int, ...]
    stride: tuple[int, ...] | None = None

    def __init__(self, shape, stride=None):
        object.__setattr__(self, "shape", tuple(int(s) for s in shape))
        object.__setattr__(self, "stride", None if stride is None else tuple(int(s) for s in stride))
        if self.stride is not None and len(self.stride) != len(self.shape):
            raise ValueError("slangpy.grid: stride must have one entry per dimension of shape")


@dataclass(frozen=True)
class call_id:
    """Each thread's coordinates in the call's shape (which other arguments give)."""



def _wang_hash_py(seed: int) -> int:
    """SlangPy's CPU-side hash of a wang_hash seed (the same function as the kernel's)."""
    m = 0xFFFFFFFF
    seed = ((seed ^ 61) ^ (seed >> 16)) & m
    seed = (seed * 9) & m
    seed = seed ^ (seed >> 4)
    seed = (seed * 0x27D4EB2D) & m
    return seed ^ (seed >> 15)


@dataclass(frozen=True)
class WangHashArg:
    """`wang_hash(...)`: a random uint (or uint vector) per thread, a wang hash of the thread's
    index: `warmup` rounds of the hash, xor the seed (itself hashed on the CPU unless
    `hash_seed=False`), then one more round per component."""

    dims: int = -1
    seed: int = 2640457667
    warmup: int = 0
    hash_seed: bool = True

    @property
    def kernel_seed(self) -> int:
        s = int(self.seed) & 0xFFFFFFFF
        return _wang_hash_py(s) if self.hash_seed else s


def wang_hash(dim: int = -1, seed: int = 2640457667, warmup: int = 0, hash_seed: bool = True) -> WangHashArg:
    return WangHashArg(int(dim), int(seed), int(warmup), bool(hash_seed))
