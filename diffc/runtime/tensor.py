"""`diffc.Tensor`: a dense, C-contiguous array in device memory, with an optional `.grad`.

    x = diffc.Tensor.from_numpy(np.array([1, 2, 3, 4], np.float32)).with_grads(zero=True)
    x.grad.copy_from_numpy(np.ones(4, np.float32))
    x.to_numpy()

float32 everywhere; float64 where the device has fp64; int32/uint32/int64 for index data;
float16 as storage (kernels read and write it with vload_half / vstore_half).

A pointer into a tensor, for a pointer parameter of a compute entry point, is `t.at(offset)`
(`t` itself is `t.at(0)`); the offset counts elements.

Memory comes from a buffer pool (see `BufferPool`): when the last Tensor using a device buffer
is garbage collected, the buffer goes back to the pool and a later Tensor of the same size
class reuses it instead of allocating, which is what makes `_result="tensor"` calls cheap.
A Tensor's buffer is never handed out again while the Tensor (or a `detach()`ed view of it, or
a pointer from `at`) is alive. `DIFFC_BUFFER_POOL=0` turns the pool off; `DIFFC_BUFFER_POOL_MB`
bounds it.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

from diffc.runtime.waiting import copy
from diffc.runtime import pending
from diffc.runtime.device import device
from diffc.runtime.errors import CallError

_DTYPES = {
    np.dtype(np.float16),
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.int32),
    np.dtype(np.uint32),
    np.dtype(np.int64),
    np.dtype(np.bool_),  # a buffer of bool (one byte each, as OpenCL C's bool)
    np.dtype(np.uint8),  # bytes: a struct of mixed scalars behind a pointer (runtime/byte_structs.py)
}


def _check_dtype(dtype) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise CallError(f"error: {dtype!r} is not a dtype") from None
    if dt not in _DTYPES:
        names = ", ".join(sorted(d.name for d in _DTYPES))
        raise CallError(f"error: Tensor dtype {dt.name} is not supported (supported: {names})")
    if dt == np.float64 and not device().has_fp64:
        raise CallError(f"error: the device {device().name!r} has no fp64 (cl_khr_fp64): float64 tensors cannot live there")
    return dt


def _shape_of(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        dims = tuple(shape)
    except TypeError:
        dims = None
    if dims is None or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in dims):
        raise CallError(f"error: a Tensor shape is an int or a sequence of ints, got {shape!r}")
    out = tuple(int(s) for s in dims)
    if any(s < 0 for s in out):
        raise CallError(f"error: a Tensor shape cannot have negative sizes, got {out}")
    return out


def _numbers(a, what: str) -> np.ndarray:
    """`a` as a numpy array of bool, integer or float data; anything else is a CallError."""
    try:
        arr = np.asarray(a)
    except ValueError as e:  # ragged nested lists
        raise CallError(f"error: {what}: cannot make an array of {type(a).__name__} ({e})") from None
    if arr.dtype.kind not in "biuf":
        raise CallError(f"error: {what}: data of dtype {arr.dtype} (bool, integer or float data expected)")
    return arr


# -- the buffer pool -----------------------------------------------------------------------

_MIN_CLASS = 256  # bytes: the smallest size class


def size_class(nbytes: int) -> int:
    """The pool's size class of an allocation of `nbytes`: the next multiple of a quarter of
    the power of two below it (so at most 25% is wasted), and at least 256 bytes."""
    if nbytes <= _MIN_CLASS:
        return _MIN_CLASS
    quarter = 1 << max((nbytes - 1).bit_length() - 3, 0)
    return -(-nbytes // quarter) * quarter


class BufferPool:
    """Free device buffers by size class, reused by later allocations.

    Policy: a buffer comes back only when its owner (`_Storage`, shared by a Tensor and its
    detached views) is garbage collected, so live Tensors never share memory by accident.
    Reuse needs no synchronisation because every command goes to the one in-order queue of
    `device()`: work still pending on a returned buffer runs before any later command that
    reuses it. The pool keeps at most `limit_bytes` (`DIFFC_BUFFER_POOL_MB`, default a quarter
    of the device's memory, at most 2 GiB) and `limit_count` buffers; a buffer that does not fit
    is freed. A raw `cl.Buffer` taken from `Tensor.buffer` must not outlive its Tensor.

    `DIFFC_BUFFER_POOL=0` (or `pool.enabled = False`) allocates and frees every buffer directly;
    `pool.clear()` frees the cached buffers."""

    def __init__(self):
        self.enabled = os.environ.get("DIFFC_BUFFER_POOL", "1").strip() != "0"
        mb = os.environ.get("DIFFC_BUFFER_POOL_MB")
        self._limit_bytes = int(float(mb) * 2**20) if mb else None
        self.limit_count = 1024
        self._free: dict[int, list] = {}
        self.cached_bytes = 0
        self.cached_count = 0
        self.hits = 0
        self.misses = 0
        self._lock = threading.RLock()  # reentrant: a release may run from gc inside acquire

    @property
    def limit_bytes(self) -> int:
        if self._limit_bytes is None:
            self._limit_bytes = min(device().global_mem_bytes // 4, 2 << 30)
        return self._limit_bytes

    @limit_bytes.setter
    def limit_bytes(self, value: int) -> None:
        self._limit_bytes = int(value)

    def acquire(self, nbytes: int):
        """A device buffer of at least `nbytes` bytes, and the size it was allocated with."""
        import pyopencl as cl

        if not self.enabled:
            return cl.Buffer(device().context, cl.mem_flags.READ_WRITE, nbytes), 0
        cls = size_class(nbytes)
        with self._lock:
            free = self._free.get(cls)
            if free:
                buf = free.pop()
                self.cached_bytes -= cls
                self.cached_count -= 1
                self.hits += 1
                return buf, cls
            self.misses += 1
        return cl.Buffer(device().context, cl.mem_flags.READ_WRITE, cls), cls

    def release(self, buf, cls: int) -> None:
        """Takes back a buffer from `acquire` whose owner is gone (or drops it when full)."""
        if not cls or not self.enabled:
            return
        with self._lock:
            if self.cached_count >= self.limit_count or self.cached_bytes + cls > self.limit_bytes:
                return  # dropping our reference frees it
            self._free.setdefault(cls, []).append(buf)
            self.cached_bytes += cls
            self.cached_count += 1

    def clear(self) -> None:
        with self._lock:
            self._free.clear()
            self.cached_bytes = 0
            self.cached_count = 0

    def stats(self) -> dict:
        return {
            "enabled": self.enabled,
            "hits": self.hits,
            "misses": self.misses,
            "cached_bytes": self.cached_bytes,
            "cached_count": self.cached_count,
        }


_pool = BufferPool()


def buffer_pool() -> BufferPool:
    """The process's buffer pool."""
    return _pool


class _Storage:
    """Owns one pooled device buffer; gives it back to the pool when collected."""

    __slots__ = ("buffer", "size_class")

    def __init__(self, nbytes: int):
        self.buffer, self.size_class = _pool.acquire(nbytes)

    def __del__(self):
        try:
            _pool.release(self.buffer, self.size_class)
        except Exception:  # interpreter shutdown: module globals may be gone
            pass


class Tensor:
    """Device memory of a fixed shape and dtype (C order). `.grad` is another Tensor or None."""

    # `uninitialized`: made by Tensor.empty or with_grads(zero=False) and not written since (the
    # sanitizer mode reports a call that reads such a gradient: runtime/sanitize.py)
    __slots__ = ("_shape", "_dtype", "_size", "buffer", "_storage", "grad", "uninitialized", "__weakref__")

    def __init__(self, shape, dtype=np.float32, *, _buffer=None, _storage=None):
        self._shape = _shape_of(shape)
        self._dtype = _check_dtype(dtype)
        self._size = math.prod(self._shape)  # (np.prod costs more than the rest of __init__)
        if _buffer is not None:  # memory someone else owns
            self._storage = _storage
            self.buffer = _buffer
        else:
            nbytes = max(self._size, 1) * self._dtype.itemsize  # OpenCL has no empty buffers
            # (OpenCL guarantees at least 128 MiB per buffer: only larger ones need the query)
            if nbytes > 1 << 27 and nbytes > device().cl_device.max_mem_alloc_size:
                raise CallError(f"error: a Tensor of shape {self._shape} and dtype {self._dtype.name} needs {nbytes} "
                                f"bytes; the device allocates at most {device().cl_device.max_mem_alloc_size} per buffer")
            self._storage = _Storage(nbytes)
            self.buffer = self._storage.buffer
        self.grad: Tensor | None = None
        self.uninitialized = False

    # -- creation ------------------------------------------------------------------------

    @classmethod
    def empty(cls, shape, dtype=np.float32) -> Tensor:
        t = cls(shape, dtype)
        t.uninitialized = True
        return t

    @classmethod
    def zeros(cls, shape, dtype=np.float32) -> Tensor:
        t = cls(shape, dtype)
        t.fill(0)
        return t

    @classmethod
    def from_numpy(cls, a) -> Tensor:
        a = _numbers(a, "Tensor.from_numpy")
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

    # how many values a repr shows at each end (all of them when there are at most twice as many)
    REPR_EDGE = 3

    def __repr__(self) -> str:
        g = ", with grad" if self.grad is not None else ""
        dev = device()
        return (f"Tensor({self._preview()}, shape={self._shape}, dtype={self._dtype.name}, "
                f"device='{dev.kind}: {dev.name}'{g})")

    def _preview(self) -> str:
        """The first and last few values, flat in C order (waits for pending work on the tensor)."""
        import pyopencl as cl

        k = self.REPR_EDGE
        error = pending.first_error()  # a checked launch's error: raised by the next real read
        if error is not None:
            return f"<values withheld: a launch's error is pending ({type(error).__name__})>"
        try:
            if self._size <= 2 * k:
                vals = self.to_numpy().reshape(-1)
                return np.array2string(vals, precision=4, separator=", ")
            head = np.empty(k, self._dtype)
            tail = np.empty(k, self._dtype)
            q = device().queue
            cl.enqueue_copy(q, head, self.buffer, src_offset=0, is_blocking=False)
            copy(q, tail, self.buffer, src_offset=(self._size - k) * self._dtype.itemsize)
        except Exception as e:  # a repr must not fail: the values are a courtesy
            return f"<values unavailable: {type(e).__name__}>"
        fmt = lambda a: np.array2string(a, precision=4, separator=", ")[1:-1]  # noqa: E731
        return f"[{fmt(head)}, ..., {fmt(tail)}]"

    # -- data movement -------------------------------------------------------------------

    def copy_from_numpy(self, a) -> Tensor:
        """Overwrites the contents with `a` (same shape; converted to this tensor's dtype)."""
        import pyopencl as cl

        a = _numbers(a, "copy_from_numpy")
        if a.shape != self._shape:
            if a.size == self._size and a.ndim <= 1 and len(self._shape) <= 1:
                a = a.reshape(self._shape)
            else:
                raise CallError(f"error: copy_from_numpy: array of shape {a.shape} into a Tensor of shape {self._shape}")
        a = np.ascontiguousarray(a, dtype=self._dtype)
        if self._size:
            copy(device().queue, self.buffer, a)
        self.uninitialized = False
        return self

    def to_numpy(self) -> np.ndarray:
        """A new numpy array holding the contents (waits for pending work on the tensor)."""
        import pyopencl as cl

        out = np.empty(self._shape, self._dtype)
        if self._size:
            copy(device().queue, out, self.buffer)
        pending.settle()  # a checked launch's error comes before its values (runtime/pending.py)
        return out

    def numpy(self) -> np.ndarray:
        return self.to_numpy()

    # numpy's and DLPack's protocols: the memory is OpenCL's, which numpy and torch cannot read in
    # place, so both hand over a host copy of the contents (as to_numpy makes it)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """`np.asarray(t)`, `np.sum(t)`, ...: a host copy (`copy=False` is refused: no view exists)."""
        if copy is False:
            raise ValueError("a diffc.Tensor lives in device memory: numpy cannot use it without a copy "
                             "(np.asarray(t) or t.to_numpy() makes one)")
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """`np.from_dlpack(t)`, `torch.from_dlpack(t)`: a DLPack capsule of a host copy."""
        if copy is False:
            raise BufferError("a diffc.Tensor lives in device memory: DLPack can export only a host copy of it")
        out = self.to_numpy()
        # (numpy before 2.1 takes no keywords beyond `stream`)
        options = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device)) if v is not None}
        return out.__dlpack__(**options)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # DLPack's kDLCPU: what __dlpack__ exports is host memory

    def fill(self, value) -> Tensor:
        import pyopencl as cl

        if self._size:
            pattern = _numbers(value, "fill").reshape(-1)
            if pattern.size != 1:
                raise CallError(f"error: fill takes one number, got {value!r}")
            if self._dtype.kind in "iu" and not np.iinfo(self._dtype).min <= pattern[0] <= np.iinfo(self._dtype).max:
                raise CallError(f"error: fill: {value!r} does not fit in {self._dtype.name}")
            pattern = pattern.astype(self._dtype)
            cl.enqueue_fill_buffer(device().queue, self.buffer, pattern, 0, self.nbytes)
        self.uninitialized = False
        return self

    def copy_(self, other: Tensor) -> Tensor:
        """Copies another tensor's contents (same shape and dtype) on the device."""
        import pyopencl as cl

        if other.shape != self._shape or other.dtype != self._dtype:
            raise CallError(f"error: copy_: {other!r} into {self!r}: shape and dtype must match")
        if self._size:
            cl.enqueue_copy(device().queue, self.buffer, other.buffer, byte_count=self.nbytes)
        self.uninitialized = other.uninitialized
        return self

    def clone(self) -> Tensor:
        return Tensor(self._shape, self._dtype).copy_(self)

    # -- gradients -----------------------------------------------------------------------

    def with_grads(self, grad: Tensor | None = None, zero: bool = True) -> Tensor:
        """Attaches `.grad` (a new Tensor of the same shape and dtype, zeroed when `zero`) and
        returns this tensor. A tensor that already has a grad keeps it (zeroed when `zero`)."""
        if grad is not None:
            if not isinstance(grad, Tensor):
                raise CallError(f"error: with_grads: grad must be a Tensor, got {type(grad).__name__}")
            if grad.shape != self._shape or grad.dtype != self._dtype:
                raise CallError(f"error: with_grads: grad {grad!r} does not match {self!r}")
            self.grad = grad
        elif self.grad is None:
            self.grad = Tensor(self._shape, self._dtype)
            if zero:
                self.grad.fill(0)
            else:
                self.grad.uninitialized = True
            return self
        if zero:
            self.grad.fill(0)
        return self

    # -- pointers ------------------------------------------------------------------------

    def at(self, offset: int) -> TensorPointer:
        """A pointer to element `offset` (in elements, flat C order), for a pointer parameter."""
        return TensorPointer(self, offset)

    def detach(self) -> Tensor:
        """The same storage without the grad (the storage lives as long as either tensor)."""
        t = Tensor(self._shape, self._dtype, _buffer=self.buffer, _storage=self._storage)
        return t

    def view(self, dtype) -> Tensor:
        """The same storage read as another dtype of the same size, like numpy's view (e.g. a
        uint32 buffer that a kernel's atomic max fills with a float's bits, as float32). It starts
        with this tensor's written bit and keeps its own after that."""
        dt = _check_dtype(dtype)
        if dt.itemsize != self._dtype.itemsize:
            raise CallError(f"error: view: {self._dtype.name} as {dt.name}: the element sizes differ")
        t = Tensor(self._shape, dt, _buffer=self.buffer, _storage=self._storage)
        t.uninitialized = self.uninitialized
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
