"""torch CUDA tensors in diffc calls without the host: memory that CUDA and diffc's OpenCL share,
on an NVIDIA GPU where diffc runs on NVIDIA's OpenCL.

Memory: CUDA allocates (virtual memory management, `cuMemCreate` with a POSIX file-descriptor
handle), exports the allocation as a file descriptor, and OpenCL imports it
(`clCreateBufferWithProperties` with CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR, of
cl_khr_external_memory_opaque_fd): one allocation, a CUDA address and an OpenCL buffer. A pool of
such chunks (`SharedPool`) hands out blocks; `empty()` gives torch tensors in them (the
diffc-provided pool: such tensors pass to calls with no copy), and a call copies any other CUDA
tensor into a block with one device-to-device copy on torch's current stream (torch's copy_,
which also converts dtype and strides). Results are blocks too, returned as torch tensors.

Order, with no host wait: NVIDIA's OpenCL (driver 580) imports semaphores but exports none, and
CUDA exports none, so the two queues cannot share a semaphore. CUDA -> OpenCL: a CUDA event
recorded on torch's stream completes an OpenCL user event from a waiter thread (the call's
launch waits behind a barrier on it); OpenCL -> CUDA: after the launch a one-thread kernel
writes a counter into shared memory and torch's stream waits for it (`cuStreamWaitValue32`).
So the calling thread never waits, and work that torch queues after the call (on the current
stream) runs after diffc's.

What stays: NVIDIA's OpenCL has its own CUDA context, and the GPU switches between it and
torch's (~280 us each way, bench/bench_cuda_interop.py); sharing memory removes the copies and
the host waits, not that. So calls take cuda_kernels.py's path first (the same kernels as CUDA
kernels in torch's context); this one serves the calls that path cannot take. CUDA bindings: cuda-python's `cuda.bindings.driver`; the one OpenCL
entry point pyopencl does not wrap (clCreateBufferWithProperties) is called through ctypes.

`unavailable()` says why the path cannot run (then calls take the host path of
torch_bridge.py); `ENABLED[0] = False` turns it off (the bench's "before").
"""

from __future__ import annotations

import ctypes
import queue
import sys
import threading

import numpy as np

from diffc.runtime.errors import CallError, DeviceError
from diffc.runtime.torch_gradients import input_gradients

ENABLED: list = [True]

_CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR = 0x2060
_CL_DEVICE_HANDLE_LIST_KHR = 0x2051
_CL_MEM_READ_WRITE = 1
_CHUNK = 64 << 20  # bytes per shared chunk (larger requests get a chunk of their own size)
_ALIGN = 512  # block offsets: a multiple of NVIDIA's sub-buffer base alignment (4096 bits)
_FLAG_KERNEL = "__kernel void diffc_set_flag(__global uint* f, uint v) { f[0] = v; }"

_state: list = [None]  # the Shared, or the reason string, once asked


def unavailable() -> str | None:
    """Why torch CUDA tensors cannot share memory with diffc here (None: they can)."""
    if not ENABLED[0]:
        return "turned off (cuda_shared.ENABLED[0] is False)"
    got = _state[0]
    if got is None:
        try:
            got = _state[0] = Shared()
        except (CallError, DeviceError, ImportError, RuntimeError, OSError) as e:
            got = _state[0] = str(e)
    return got if isinstance(got, str) else None


def shared() -> Shared:
    why = unavailable()
    if why is not None:
        raise CallError(f"error: torch CUDA tensors cannot share memory with diffc here: {why}")
    return _state[0]


def _check(res):
    """A cuda.bindings result without its status (raises on an error)."""
    from cuda.bindings import driver

    err, rest = (res[0], res[1:]) if isinstance(res, tuple) else (res, ())
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver: {err.name} ({driver.cuGetErrorString(err)[1]})")
    return rest[0] if len(rest) == 1 else rest


class Shared:
    """The CUDA context and device, diffc's OpenCL context on the same GPU, the pool, and the
    ordering machinery (one per process)."""

    def __init__(self):
        torch = sys.modules.get("torch")
        if torch is None or not torch.cuda.is_available():
            raise RuntimeError("torch has no CUDA device")
        from diffc.runtime.device import device

        dev = device()
        if dev.kind != "gpu" or not dev.is_nvidia:
            raise RuntimeError(f"diffc runs on {dev.name!r} ({dev.platform}), not an NVIDIA GPU")
        if "cl_khr_external_memory_opaque_fd" not in dev.extensions:
            raise RuntimeError(f"{dev.platform} lacks cl_khr_external_memory_opaque_fd")
        try:
            from cuda.bindings import driver
        except ImportError:
            raise RuntimeError("the CUDA bindings are not installed: pip install cuda-bindings") from None
        self.driver = driver
        self.torch = torch
        self.index = self._torch_index(dev, torch)
        torch.cuda.init()
        _check(driver.cuInit(0))
        self.cu_device = _check(driver.cuDeviceGet(self.index))
        self.cu_context = _check(driver.cuDevicePrimaryCtxRetain(self.cu_device))  # torch's own context
        _check(driver.cuCtxSetCurrent(self.cu_context))
        import pyopencl as cl

        self.cl = cl
        self.context, self.queue, self.cl_device = dev.context, dev.queue, dev.cl_device
        self._create = ctypes.CDLL("libOpenCL.so.1").clCreateBufferWithProperties
        self._create.restype = ctypes.c_void_p
        self._create.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint64, ctypes.c_size_t,
                                 ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        self.pool = SharedPool(self)
        self._flag_kernel = cl.Kernel(cl.Program(self.context, _FLAG_KERNEL).build(), "diffc_set_flag")
        self._flag = self.pool.alloc(4)
        self._flag_kernel.set_arg(0, self._flag.buffer)
        self._count = 0
        self._events: queue.SimpleQueue = queue.SimpleQueue()  # CUDA events free for reuse
        self._waits: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._waiter, name="diffc-cuda-waiter", daemon=True).start()
        self.device = torch.device("cuda", self.index)

    @staticmethod
    def _torch_index(dev, torch) -> int:
        """The torch CUDA device that is diffc's OpenCL device (by PCI bus and slot)."""
        if torch.cuda.device_count() == 1:
            return 0
        try:
            bus, slot = dev.cl_device.pci_bus_id_nv, dev.cl_device.pci_slot_id_nv
        except Exception:
            if torch.cuda.device_count() == 1:
                return 0
            raise RuntimeError("cannot tell which CUDA device diffc's OpenCL device is (no PCI id)") from None
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            if p.pci_bus_id == bus and p.pci_device_id in (slot, slot >> 3):
                return i
        raise RuntimeError(f"diffc's OpenCL device (PCI bus {bus}) is none of torch's CUDA devices")

    # -- memory -----------------------------------------------------------------------------

    def import_fd(self, fd: int, size: int):
        """The OpenCL buffer of an exported CUDA allocation."""
        props = (ctypes.c_uint64 * 6)(_CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR, fd, _CL_DEVICE_HANDLE_LIST_KHR,
                                      self.cl_device.int_ptr, 0, 0)  # (the device list's end, the list's end)
        err = ctypes.c_int(0)
        mem = self._create(self.context.int_ptr, props, _CL_MEM_READ_WRITE, size, None, ctypes.byref(err))
        if err.value or not mem:
            raise RuntimeError(f"clCreateBufferWithProperties (import of a CUDA allocation) failed: error {err.value}")
        return self.cl.Buffer.from_int_ptr(mem, retain=False)

    # -- order ------------------------------------------------------------------------------

    def _waiter(self) -> None:
        _check(self.driver.cuCtxSetCurrent(self.cu_context))
        while True:
            event, user = self._waits.get()
            try:
                _check(self.driver.cuEventSynchronize(event))
                user.set_status(self.cl.command_execution_status.COMPLETE)
            except Exception:  # (an OpenCL user event set to an error fails the launches behind it)
                user.set_status(-1)
            self._events.put(event)

    def after_torch(self, stream) -> None:
        """diffc's queue waits (on the device) for the work torch has queued on `stream`."""
        d = self.driver
        try:
            event = self._events.get_nowait()
        except queue.Empty:
            event = _check(d.cuEventCreate(int(d.CUevent_flags.CU_EVENT_DISABLE_TIMING)))
        _check(d.cuEventRecord(event, stream))
        user = self.cl.UserEvent(self.context)
        self._waits.put((event, user))
        self.cl.enqueue_barrier(self.queue, wait_for=[user])

    def before_torch(self, stream) -> None:
        """`stream` waits (on the device) for the work queued on diffc's queue so far."""
        if self._count >= 1 << 31:  # (the counter restarts, once everything before is done)
            self.queue.finish()
            self.torch.cuda.synchronize(self.device)
            _check(self.driver.cuMemsetD32(self._flag.ptr, 0, 1))
            self._count = 0
        self._count += 1
        k = self._flag_kernel
        k.set_arg(1, np.uint32(self._count))  # (the buffer, argument 0, was set once)
        self.cl.enqueue_nd_range_kernel(self.queue, k, (1,), None)
        self.queue.flush()
        _check(self.driver.cuStreamWaitValue32(stream, self._flag.ptr, self._count, 0))  # 0: wait until >=

    def stream(self):
        return self.driver.CUstream(self.torch.cuda.current_stream(self.device).cuda_stream)


class _Chunk:
    __slots__ = ("handle", "ptr", "size", "buffer", "used")

    def __init__(self, shared: Shared, size: int):
        d = shared.driver
        prop = d.CUmemAllocationProp()
        prop.type = d.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = shared.index
        prop.requestedHandleTypes = d.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        gran = _check(d.cuMemGetAllocationGranularity(prop, d.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM))
        self.size = size = -(-size // gran) * gran
        self.handle = _check(d.cuMemCreate(size, prop, 0))
        self.ptr = int(_check(d.cuMemAddressReserve(size, 0, 0, 0)))
        _check(d.cuMemMap(self.ptr, size, 0, self.handle, 0))
        access = d.CUmemAccessDesc()
        access.location.type = d.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        access.location.id = shared.index
        access.flags = d.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        _check(d.cuMemSetAccess(self.ptr, size, [access], 1))
        fd = int(_check(d.cuMemExportToShareableHandle(self.handle, d.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)))
        self.buffer = shared.import_fd(fd, size)  # (OpenCL owns the descriptor now)
        self.used = 0


class Block:
    """Bytes [offset, offset + nbytes) of a chunk: a CUDA address and an OpenCL sub-buffer. Goes
    back to the pool when the last holder (a torch tensor's array interface, a diffc Tensor)
    lets go: every later use is ordered after the work queued on it (torch's stream waits for
    diffc's queue after each call, and diffc's queue for torch's stream before)."""

    __slots__ = ("pool", "chunk", "offset", "nbytes", "ptr", "buffer", "__weakref__")

    def __init__(self, pool, chunk: _Chunk, offset: int, nbytes: int, buffer):
        self.pool, self.chunk, self.offset, self.nbytes = pool, chunk, offset, nbytes
        self.ptr = chunk.ptr + offset
        self.buffer = buffer

    def __del__(self):
        try:
            self.pool.free.setdefault(self.nbytes, []).append((self.chunk, self.offset, self.buffer))
        except Exception:  # interpreter shutdown
            pass


class SharedPool:
    """Blocks of shared chunks, by size class (a multiple of _ALIGN); freed blocks are reused for
    the same class and never given back to CUDA while the process runs."""

    def __init__(self, shared: Shared):
        self.shared = shared
        self.chunks: list[_Chunk] = []
        self.free: dict[int, list] = {}
        self._subs: dict[tuple, object] = {}  # (chunk address, offset, size) -> its OpenCL sub-buffer
        self._wrappers: dict[tuple, tuple] = {}  # (id(buffer), shape, dtype) -> (buffer, diffc Tensor)

    def sub(self, chunk: _Chunk, offset: int, size: int):
        key = (chunk.ptr, offset, size)
        b = self._subs.get(key)
        if b is None:
            b = self._subs[key] = chunk.buffer.get_sub_region(offset, size)
        return b

    def wrap(self, buffer, shape: tuple, dtype: np.dtype):
        """A diffc Tensor on `buffer`, the same object for the same buffer, shape and dtype, so that
        a repeated call replays its launch (launch_plan.py matches tensors by identity). It owns
        nothing (chunks live as long as the pool); callers keep the memory's owner alive."""
        from diffc.runtime.tensor import Tensor

        key = (id(buffer), shape, dtype)
        got = self._wrappers.get(key)
        if got is None:
            if len(self._wrappers) > 4096:
                self._wrappers.clear()
            got = self._wrappers[key] = (buffer, Tensor(shape, dtype, _buffer=buffer))
        return got[1]

    def alloc(self, nbytes: int) -> Block:
        cls = max(-(-nbytes // _ALIGN) * _ALIGN, _ALIGN)
        spare = self.free.get(cls)
        if spare:
            chunk, offset, buffer = spare.pop()
            return Block(self, chunk, offset, cls, buffer)
        chunk = next((c for c in reversed(self.chunks) if c.size - c.used >= cls), None)
        if chunk is None:
            chunk = _Chunk(self.shared, max(_CHUNK, cls))
            self.chunks.append(chunk)
        offset = chunk.used
        chunk.used += cls
        return Block(self, chunk, offset, cls, self.sub(chunk, offset, cls))

    def owner(self, ptr: int):
        """(chunk, offset) of a CUDA address inside the pool, or None."""
        for c in self.chunks:
            if c.ptr <= ptr < c.ptr + c.size:
                return c, ptr - c.ptr
        return None


class _ArrayInterface:
    """A block as a one-dimensional `__cuda_array_interface__`: torch.as_tensor keeps this
    object (and so the block) alive as long as the tensor's memory is."""

    __slots__ = ("__cuda_array_interface__", "block")

    def __init__(self, block: Block, n: int, dtype: np.dtype):
        self.block = block
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": dtype.str, "version": 3,
                                         "data": (block.ptr, False), "strides": None}


_NP = {"torch.float32": np.dtype(np.float32), "torch.float64": np.dtype(np.float64), "torch.int32": np.dtype(np.int32),
       "torch.uint32": np.dtype(np.uint32), "torch.float16": np.dtype(np.float16)}


def empty(shape, dtype=None):
    """A torch CUDA tensor in memory diffc shares: passed to a call, it is read and written
    where it is (no copy)."""
    sh = shared()
    torch = sh.torch
    dtype = dtype or torch.float32
    npd = _NP.get(str(dtype))
    if npd is None:
        raise CallError(f"error: cuda_shared.empty: dtype {dtype} is none of {', '.join(_NP)}")
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    block = sh.pool.alloc(max(int(np.prod(shape, dtype=np.int64)), 1) * npd.itemsize)
    return _torch_of(block, shape, npd, sh)


def torch_tensor(block: Block, shape: tuple, dtype) -> object:
    """A torch CUDA tensor on `block`'s memory (it keeps the block alive): diffc.distributed sums
    gradients in such memory where they are."""
    return _torch_of(block, tuple(shape), np.dtype(dtype), shared())


def _torch_of(block: Block, shape: tuple, npd: np.dtype, sh: Shared):
    n = int(np.prod(shape, dtype=np.int64))
    flat = sh.torch.as_tensor(_ArrayInterface(block, max(n, 1), npd), device=sh.device)
    return flat[:n].view(shape)  # (a view: it keeps `flat`, and so the block, alive)


def diffc_tensor(t, want: np.dtype, sh: Shared, keep: list):
    """A diffc Tensor on `t`'s data: `t`'s own memory where it is a contiguous tensor of the pool
    of dtype `want` at an aligned offset, else a block that a copy on torch's stream fills.
    `keep` gains the memory's owner (`t`, or the block), which the caller holds while the
    Tensor is in use."""
    shape = tuple(t.shape)
    if _NP.get(str(t.dtype)) == want and t.is_contiguous():
        found = sh.pool.owner(t.data_ptr())
        if found is not None:
            chunk, offset = found
            if offset % _ALIGN == 0:
                nbytes = max(t.numel(), 1) * want.itemsize
                keep.append(t)
                return sh.pool.wrap(sh.pool.sub(chunk, offset, min(-(-nbytes // _ALIGN) * _ALIGN, chunk.size - offset)),
                                    shape, want)
    block = sh.pool.alloc(max(t.numel(), 1) * want.itemsize)
    if t.numel():
        _torch_of(block, shape, want, sh).copy_(t.detach())
    keep.append(block)
    return sh.pool.wrap(block.buffer, shape, want)


def result_pair(shape: tuple, want: np.dtype, sh: Shared):
    """(diffc Tensor, torch tensor) on one new block, which the torch tensor keeps."""
    block = sh.pool.alloc(max(int(np.prod(shape, dtype=np.int64)), 1) * want.itemsize)
    return sh.pool.wrap(block.buffer, shape, want), _torch_of(block, shape, want, sh)


# -- calls ----------------------------------------------------------------------------------------


def usable(values: list, idx: list, tensors: list) -> bool:
    """Whether a torch call can take the shared path: every array argument a CUDA tensor on
    diffc's GPU, and this machine able to share memory."""
    if not tensors or unavailable() is not None:
        return False
    sh = _state[0]
    dev = sh.device
    for t in tensors:
        if t.device != dev or _NP.get(str(t.dtype)) is None:
            return False
    from diffc.runtime.tensor import Tensor

    return not any(isinstance(v, (np.ndarray, Tensor)) for v in values)


def forward(fn, values: list, idx: list, tensors: list):
    """(the torch result, the arguments as diffc Tensors, the owners of their memory) of a call
    over shared memory: the copies into shared memory queued on torch's current stream, then
    the launch on diffc's queue behind them, then torch's stream behind the launch."""
    sh = shared()
    args = list(values)
    keep: list = []
    for i, t in zip(idx, tensors):
        args[i] = diffc_tensor(t, fn.dtypes[i], sh, keep)
    shape = fn._out_shape([(i, args[i]) for i in idx], None)  # (a CallError naming the misfit)
    out, y = result_pair(shape, fn.result_dtype, sh)
    stream = sh.stream()
    sh.after_torch(stream)  # (before anything on diffc's queue touches a block torch used last)
    try:
        fn._run_into(args, out)
    finally:
        sh.before_torch(stream)
    return y, args, keep


def backward(fn, args: list, idx: list, tensors: list, wants, gy) -> list:
    """The gradients (torch tensors, or None) of the torch inputs at `idx` of a call whose
    arguments were `args` (forward's), given the output's gradient `gy`; diffc's bwds kernel
    writes them into shared blocks."""
    from diffc.runtime.tensor import Tensor

    sh = shared()
    shape = tuple(gy.shape)
    keep: list = []
    values = [a.detach() if isinstance(a, Tensor) else a for a in args]  # (gradients of their own)
    want = [i for i, w in zip(idx, wants) if w and fn.diffable[i]]
    for i, t in zip(idx, tensors):
        a = values[i]
        if i in want and a.shape != shape and a.dtype != np.float32:  # no atomics for its broadcast gradient
            values[i] = diffc_tensor(t.detach().expand(shape), a.dtype, sh, keep).detach()
    res = Tensor(shape, fn.result_dtype)
    res.with_grads(diffc_tensor(gy, fn.result_dtype, sh, keep), zero=False)
    stream = sh.stream()
    sh.after_torch(stream)  # (the gradients' blocks are zeroed on diffc's queue, behind torch's work)
    grads = {}
    try:
        for i in want:
            a = values[i]
            g, grads[i] = result_pair(a.shape, a.dtype, sh)
            a.with_grads(g.detach(), zero=True)
        fn._run_bound("bwds", values, res)
    finally:
        sh.before_torch(stream)
    return input_gradients(idx, tensors, grads)
