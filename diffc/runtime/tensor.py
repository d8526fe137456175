"""`diffc.Tensor`: a dense, C-contiguous array in device memory, with an optional `.grad`.

    x = diffc.Tensor.from_numpy(np.array([1, 2, 3, 4], np.float32)).with_grads(zero=True)
    x.grad.copy_from_numpy(np.ones(4, np.float32))
    x.to_numpy()

float32 everywhere; float64 where the device has fp64; int32/uint32/int64 for index data;
float16 as storage (kernels read and write it with vload_half / vstore_half).

A pointer into a tensor, for a pointer parameter of a compute entry point, is `t.at(offset)`
(`t` itself is `t.at(0)`); the offset counts elements.
"""

from __future__ import annotations

import numpy as np

from diffc.runtime.device import device
from diffc.runtime.errors import CallError

_DTYPES = {
    np.dtype(np.float16),
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.int32),
    np.dtype(np.uint32),
    np.dtype(np.int64),
}


def _check_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in _DTYPES:
        names = ", ".join(sorted(d.name for d in _DTYPES))
        raise CallError(f"error: Tensor dtype {dt.name} is not supported (supported: {names})")
    if dt == np.float64 and not device().has_fp64:
        raise CallError(f"error: the device {device().name!r} has no fp64 (cl_khr_fp64): float64 tensors cannot live there")
    return dt


def _shape_of(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    out = tuple(int(s) for s in shape)
    if any(s < 0 for s in out):
        raise CallError(f"error: a Tensor shape cannot have negative sizes, got {out}")
    return out


class Tensor:
    """Device memory of a fixed shape and dtype (C order). `.grad` is another Tensor or None."""

    __slots__ = ("_shape", "_dtype", "_size", "buffer", "grad", "__weakref__")

    def __init__(self, shape, dtype=np.float32, *, _buffer=None):
        import pyopencl as cl

        self._shape = _shape_of(shape)
        self._dtype = _check_dtype(dtype)
        self._size = int(np.prod(self._shape, dtype=np.int64))
        nbytes = max(self._size, 1) * self._dtype.itemsize  # OpenCL has no empty buffers
        self.buffer = _buffer if _buffer is not None else cl.Buffer(device().context, cl.mem_flags.READ_WRITE, nbytes)
        self.grad: Tensor | None = None

    # -- creation ------------------------------------------------------------------------

    @classmethod
    def empty(cls, shape, dtype=np.float32) -> Tensor:
        return cls(shape, dtype)

    @classmethod
    def zeros(cls, shape, dtype=np.float32) -> Tensor:
        t = cls(shape, dtype)
        t.fill(0)
        return t

    @classmethod
    def from_numpy(cls, a) -> Tensor:
        a = np.asarray(a)
        t = cls(a.shape, a.dtype)
        t.copy_from_numpy(a)
        return t

    # -- properties ----------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def size(self) -> int:
        return self._size

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def nbytes(self) -> int:
        return self._size * self._dtype.itemsize

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d Tensor")
        return self._shape[0]

    def __repr__(self) -> str:
        g = ", with grad" if self.grad is not None else ""
        return f"Tensor(shape={self._shape}, dtype={self._dtype.name}{g})"

    # -- data movement -------------------------------------------------------------------

    def copy_from_numpy(self, a) -> Tensor:
        """Overwrites the contents with `a` (same shape; converted to this tensor's dtype)."""
        import pyopencl as cl

        a = np.asarray(a)
        if a.shape != self._shape:
            if a.size == self._size and a.ndim <= 1 and len(self._shape) <= 1:
                a = a.reshape(self._shape)
            else:
                raise CallError(f"error: copy_from_numpy: array of shape {a.shape} into a Tensor of shape {self._shape}")
        a = np.ascontiguousarray(a, dtype=self._dtype)
        if self._size:
            cl.enqueue_copy(device().queue, self.buffer, a, is_blocking=True)
        return self

    def to_numpy(self) -> np.ndarray:
        """A new numpy array holding the contents (waits for pending work on the tensor)."""
        import pyopencl as cl

        out = np.empty(self._shape, self._dtype)
        if self._size:
            cl.enqueue_copy(device().queue, out, self.buffer, is_blocking=True)
        return out

    def numpy(self) -> np.ndarray:
        return self.to_numpy()

    def fill(self, value) -> Tensor:
        import pyopencl as cl

        if self._size:
            pattern = np.array([value], self._dtype)
            cl.enqueue_fill_buffer(device().queue, self.buffer, pattern, 0, self.nbytes)
        return self

    def copy_(self, other: Tensor) -> Tensor:
        """Copies another tensor's contents (same shape and dtype) on the device."""
        import pyopencl as cl

        if other.shape != self._shape or other.dtype != self._dtype:
            raise CallError(f"error: copy_: {other!r} into {self!r}: shape and dtype must match")
        if self._size:
            cl.enqueue_copy(device().queue, self.buffer, other.buffer, byte_count=self.nbytes)
        return self

    def clone(self) -> Tensor:
        return Tensor(self._shape, self._dtype).copy_(self)

    # -- gradients -----------------------------------------------------------------------

    def with_grads(self, grad: Tensor | None = None, zero: bool = True) -> Tensor:
        """Attaches `.grad` (a new Tensor of the same shape and dtype, zeroed when `zero`) and
        returns this tensor. A tensor that already has a grad keeps it (zeroed when `zero`)."""
        if grad is not None:
            if grad.shape != self._shape or grad.dtype != self._dtype:
                raise CallError(f"error: with_grads: grad {grad!r} does not match {self!r}")
            self.grad = grad
        elif self.grad is None:
            self.grad = Tensor(self._shape, self._dtype)
            if zero:
                self.grad.fill(0)
            return self
        if zero:
            self.grad.fill(0)
        return self

    # -- pointers ------------------------------------------------------------------------

    def at(self, offset: int) -> TensorPointer:
        """A pointer to element `offset` (in elements, flat C order), for a pointer parameter."""
        return TensorPointer(self, offset)

    def detach(self) -> Tensor:
        """The same storage without the grad."""
        t = Tensor(self._shape, self._dtype, _buffer=self.buffer)
        return t


class TensorPointer:
    """`tensor.at(offset)`: where a pointer argument of a compute entry point points."""

    __slots__ = ("tensor", "offset")

    def __init__(self, tensor: Tensor, offset: int):
        if not isinstance(offset, (int, np.integer)) or isinstance(offset, bool):
            raise CallError(f"error: Tensor.at: the offset must be an integer, got {type(offset).__name__}")
        if not 0 <= int(offset) <= tensor.size:
            raise CallError(f"error: Tensor.at({int(offset)}): the offset is outside {tensor!r} (0 to {tensor.size})")
        self.tensor = tensor
        self.offset = int(offset)

    def __repr__(self) -> str:
        return f"{self.tensor!r}.at({self.offset})"
