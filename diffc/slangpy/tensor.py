"""SlangPy's Python Tensor and Texture over diffc's device memory (runtime/tensor.py).

A Tensor of `shape` whose elements are `dtype` (a scalar, vector or matrix type) is one diffc
Tensor of shape `shape + dtype.shape` of the scalar type, packed row-major, as the Slang-side
tensors of diffc/slangpy/slangpy.slang read it. `with_grads()` gives a Tensor on the same memory
with a gradient Tensor; `grad_in` (the cotangents a backward pass reads for stored values) and
`grad_out` (where it adds the gradients of read values) are that one gradient unless given apart.
"""

from __future__ import annotations

import math

import numpy as np

from diffc.runtime.tensor import Tensor as Storage
from diffc.slangpy.values import ElementType, to_element_type


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _shape_and_dtype(args: tuple, kwargs: dict):
    """SlangPy's orders: `empty(device, shape, dtype)`, `empty(device, "float2", shape=...)` (the
    dtype first), `empty(device, dtype=..., element_count=n)` (a 1D tensor of n)."""
    args = list(args)
    if args and (isinstance(args[0], (str, type)) or hasattr(args[0], "full_name") or hasattr(args[0], "struct_leaves")):
        kwargs.setdefault("dtype", args.pop(0))
    names = ["shape", "dtype"]
    for name, v in zip([n for n in names if n not in kwargs], args):
        kwargs[name] = v
    shape, dtype = kwargs.get("shape", ()), kwargs.get("dtype", float)
    if kwargs.get("element_count") is not None:
        shape = (int(kwargs["element_count"]),)
    return shape, dtype


def _reflected(dtype):
    from diffc.slangpy.reflection import element_slang_type

    if isinstance(dtype, ElementType):
        found = element_slang_type(dtype.name)
        if found is not None:
            return found
    return dtype


class Tensor:
    def __init__(self, storage: Storage, dtype: ElementType, shape: tuple[int, ...],
                 grad_in: Tensor | None = None, grad_out: Tensor | None = None):
        self.storage = storage
        self.dtype = _reflected(dtype)  # a SlangType, as SlangPy's Tensor.dtype (reflection.py)
        self.shape = shape
        self.grad_in = grad_in
        self.grad_out = grad_out

    # -- making ------------------------------------------------------------------------------

    @classmethod
    def empty(cls, device=None, *args, **kwargs) -> Tensor:
        shape, dtype = _shape_and_dtype(args, kwargs)
        if hasattr(dtype, "struct_leaves"):  # `module.S`: a tensor of structs
            return StructTensor.make(dtype.name, shape, dtype.struct_leaves(), zero=False)
        et = to_element_type(dtype)
        s = _shape(shape)
        return cls(Storage.empty((*s, *et.shape), et.scalar), et, s)

    @classmethod
    def zeros(cls, device=None, *args, **kwargs) -> Tensor:
        shape, dtype = _shape_and_dtype(args, kwargs)
        if hasattr(dtype, "struct_leaves"):
            return StructTensor.make(dtype.name, shape, dtype.struct_leaves(), zero=True)
        et = to_element_type(dtype)
        s = _shape(shape)
        return cls(Storage.zeros((*s, *et.shape), et.scalar), et, s)

    @classmethod
    def from_numpy(cls, device, ndarray: np.ndarray, dtype=None) -> Tensor:
        """Elements are the array's scalars unless `dtype` (a vector or matrix type) takes its
        trailing dimensions."""
        a = np.ascontiguousarray(ndarray)
        et = to_element_type(dtype if dtype is not None else a.dtype)
        k = len(et.shape)
        if k and tuple(a.shape[a.ndim - k:]) != et.shape:
            raise ValueError(f"slangpy.Tensor.from_numpy: an array of {et.name} elements ends in {et.shape}, "
                             f"got shape {a.shape}")
        return cls(Storage.from_numpy(a.astype(et.scalar, copy=False)), et, tuple(a.shape[: a.ndim - k]))

    @classmethod
    def load_from_image(cls, device, path, flip_y: bool = False, linearize: bool = False, scale: float = 1.0,
                        offset: float = 0.0, grayscale: bool = False) -> Tensor:
        """A PNG image (images.py) as a (height, width) tensor of float, float2, float3 or float4 by
        its channels; `linearize` converts sRGB to linear values, `grayscale` averages the colour
        channels into one."""
        from diffc.slangpy.images import read_png, srgb_to_linear

        img = read_png(path)
        if flip_y:
            img = img[::-1]
        if grayscale and img.shape[2] >= 3:
            img = img[..., :3].mean(axis=2, keepdims=True)
        if linearize:
            colour = min(img.shape[2], 3) if img.shape[2] != 2 else 1
            img = np.concatenate([srgb_to_linear(img[..., :colour]), img[..., colour:]], axis=2)
        img = (img * scale + offset).astype(np.float32)
        c = img.shape[2]
        if c == 1:
            return cls.from_numpy(device, np.ascontiguousarray(img[..., 0]))
        return cls.from_numpy(device, np.ascontiguousarray(img), f"float{c}")

    @classmethod
    def zeros_like(cls, other: Tensor) -> Tensor:
        return cls.zeros(None, other.shape, other.dtype)

    @classmethod
    def empty_like(cls, other: Tensor) -> Tensor:
        return cls.empty(None, other.shape, other.dtype)

    def with_grads(self, grad_in: Tensor | None = None, grad_out: Tensor | None = None, zero: bool = True) -> Tensor:
        """This tensor's memory with gradients (a new gradient Tensor unless given)."""
        if grad_in is None and grad_out is None:
            grad_in = grad_out = Tensor.zeros(None, self.shape, self.dtype) if zero else Tensor.empty_like(self)
        elif grad_in is None:
            grad_in = grad_out
        elif grad_out is None:
            grad_out = grad_in
        for g in (grad_in, grad_out):
            if g.shape != self.shape or g.dtype != self.dtype:
                raise ValueError(f"slangpy.Tensor.with_grads: a gradient must be a {self.dtype.name} tensor of shape "
                                 f"{self.shape}, got {g.dtype.name} {g.shape}")
        return Tensor(self.storage, self.dtype, self.shape, grad_in, grad_out)

    def detach(self) -> Tensor:
        return Tensor(self.storage, self.dtype, self.shape)

    # -- reading and writing -----------------------------------------------------------------

    @property
    def grad(self) -> Tensor | None:
        return self.grad_out

    @property
    def element_count(self) -> int:
        return math.prod(self.shape)

    @property
    def strides(self) -> tuple[int, ...]:
        """Element strides, row-major."""
        out, k = [], 1
        for n in reversed(self.shape):
            out.append(k)
            k *= n
        return tuple(reversed(out))

    def to_numpy(self) -> np.ndarray:
        return self.storage.to_numpy()

    def copy_from_numpy(self, data) -> Tensor:
        a = np.asarray(data, dtype=self.dtype.scalar)
        want = (*self.shape, *self.dtype.shape)
        if a.size != math.prod(want):
            raise ValueError(f"slangpy.Tensor.copy_from_numpy: {a.size} values for a tensor of shape {want}")
        self.storage.copy_from_numpy(a.reshape(want))
        return self

    def clear(self) -> Tensor:
        self.storage.fill(0)
        return self

    def __repr__(self) -> str:
        grads = ", with grads" if self.grad_out is not None else ""
        return f"<slangpy.Tensor {self.dtype.name} {self.shape}{grads}>"


class StructTensor:
    """A Tensor of struct elements (`Tensor.empty(device, dtype=module.S, shape=...)`): one Tensor
    per scalar, vector or matrix field (nested structs' fields flattened), each of the tensor's
    shape. A call fills a parameter of the struct type element by element from it, and writes an
    out or inout one back; `to_numpy()` gives a numpy structured array."""

    def __init__(self, struct: str, shape: tuple[int, ...], leaves: dict[str, Tensor]):
        self.struct = struct
        self.shape = shape
        self.leaves = leaves  # `.field` / `.inner.field` -> its Tensor

    @classmethod
    def make(cls, struct: str, shape, leaves: list[tuple[str, ElementType]], zero: bool) -> StructTensor:
        s = _shape(shape)
        make = Tensor.zeros if zero else Tensor.empty
        return cls(struct, s, {path: make(None, s, et) for path, et in leaves})

    @property
    def element_count(self) -> int:
        return math.prod(self.shape)

    def to_numpy(self) -> np.ndarray:
        fields = [(path[1:], t.dtype.scalar, t.dtype.shape) for path, t in self.leaves.items()]
        out = np.zeros(self.shape, dtype=np.dtype(fields))
        for path, t in self.leaves.items():
            out[path[1:]] = t.to_numpy()
        return out

    def copy_from_numpy(self, data) -> StructTensor:
        """From a structured array (or a dict) with a value for each field, by its dotted path."""
        for path, t in self.leaves.items():
            t.copy_from_numpy(np.asarray(data[path[1:]]))
        return self

    @property
    def storage(self) -> RecordStorage:
        """Its elements as one buffer of structs (a `RWStructuredBuffer<S>` field takes it)."""
        return RecordStorage(self)

    def __repr__(self) -> str:
        return f"<slangpy.Tensor {self.struct} {self.shape}>"


class RecordStorage:
    """A tensor of structs as the buffer of its elements, one record of scalars after another in
    field order (memory of bytes in Slang's natural layout where fields mix scalar kinds: for
    32-bit fields, one word after another). A call packs the leaves into such a buffer before it
    runs and writes the buffer back into them after (module.py)."""

    def __init__(self, tensor: StructTensor):
        self.tensor = tensor

    def _columns(self) -> list[tuple[Tensor, int]]:
        return [(t, max(t.dtype.scalars, 1)) for t in self.tensor.leaves.values()]

    def _word_type(self) -> np.dtype:
        kinds = {t.dtype.scalar for t, _ in self._columns()}
        if len(kinds) == 1:
            return next(iter(kinds))
        if any(np.dtype(k).itemsize != 4 for k in kinds):
            raise ValueError(f"slangpy: a buffer of {self.tensor.struct} mixes scalar types that are not all 32-bit")
        return np.dtype(np.int32)

    def pack(self) -> Storage:
        n, word = self.tensor.element_count, self._word_type()
        parts = [t.to_numpy().reshape(n, k).view(word) if t.dtype.scalar != word else t.to_numpy().reshape(n, k)
                 for t, k in self._columns()]
        return Storage.from_numpy(np.ascontiguousarray(np.concatenate(parts, axis=1)).reshape(-1))

    def unpack(self, storage: Storage) -> None:
        n, word = self.tensor.element_count, self._word_type()
        records = storage.to_numpy().reshape(n, -1)
        k0 = 0
        for t, k in self._columns():
            col = np.ascontiguousarray(records[:, k0:k0 + k])
            t.storage.copy_from_numpy((col.view(t.dtype.scalar) if t.dtype.scalar != word else col)
                                      .reshape((*t.shape, *t.dtype.shape)))
            k0 += k


class Format:
    """Texel formats (components of float32)."""

    r32_float = 1
    rg32_float = 2
    rgba32_float = 4


class TextureUsage:
    shader_resource = 1
    unordered_access = 2
    render_target = 4


class Texture:
    """A 2D float texture: texels in a diffc Tensor of shape (height, width, components)."""

    def __init__(self, width: int, height: int, components: int = 4, data=None):
        self.width, self.height, self.components = int(width), int(height), int(components)
        shape = (self.height, self.width, self.components)
        if data is None:
            self.storage = Storage.zeros(shape, np.float32)
        else:
            a = np.asarray(data, np.float32)
            if a.size != math.prod(shape):
                raise ValueError(f"slangpy: texture data of shape {a.shape} for a {self.width}x{self.height} texture "
                                 f"of {self.components} components (rows are height)")
            self.storage = Storage.from_numpy(np.ascontiguousarray(a.reshape(shape)))

    def to_numpy(self) -> np.ndarray:
        return self.storage.to_numpy()

    def as_tensor(self) -> Tensor:
        """Its texels as a Tensor of shape (height, width) (a call's last dimension is x)."""
        et = to_element_type("float" if self.components == 1 else f"float{self.components}")
        return Tensor(self.storage, et, (self.height, self.width))

    def copy_from_numpy(self, data) -> Texture:
        self.storage.copy_from_numpy(np.asarray(data, np.float32).reshape(self.height, self.width, self.components))
        return self

    def __repr__(self) -> str:
        return f"<slangpy.Texture {self.width}x{self.height}x{self.components}>"
