"""Data-parallel training over torch.distributed.

diffc computes each rank's gradients over its shard of the batch on that rank's own OpenCL
device; torch.distributed (gloo on CPUs, NCCL for CUDA GPUs) sums them across ranks; every rank
then runs the same optimizer on the same sums, so the parameters stay identical everywhere.
One process per device, started by torchrun:

    from diffc.distributed import DataParallel, init

    rank, world = init()              # the process group, and this rank's OpenCL device
    dp = DataParallel([grads])        # the gradient tensors (diffc.Tensor) to sum over ranks
    rows = dp.shard(len(batch))       # this rank's rows of every step's batch
    ... dispatch the gradient kernel over batch[rows] into grads (and its loss into loss) ...
    losses = dp.all_reduce(gather=loss)  # grads hold the whole batch's sums on every rank, and
                                         # losses every rank's loss: losses.max() is the batch's
    ... dispatch the optimizer ...

One collective a step. The values `gather` names (numbers, or a float32 diffc.Tensor read with
the gradients) ride in the gradients' all-reduce: the buffer has `world` slots for them, each
rank writes its own into its slot and zeros into the others', so the sum returns every rank's
values exactly (x + 0 = x) and the host takes the max (or whatever it needs) itself.

The host round trip. diffc's tensors are OpenCL buffers, which no torch backend can read, so
each reduction goes through host memory. The host arrays and torch tensors it uses are made
once (pinned host memory where the collective runs on a GPU) and reused every call. Its phases
(`dp.timings`, seconds summed over calls; `dp.report()` prints them):

    kernel      waiting for the device to finish the queued work (the gradient kernel): the
                kernel's own time, not the round trip's
    download    OpenCL buffers -> one float32 host array (one read per gradient buffer, all
                enqueued before one wait). Without profile=True the reads are queued behind
                the kernel and one wait takes both (each wait for the device costs tens of
                microseconds), so their time shows in the kernel's
    stage       host array -> the collective's tensor (none on the host; a copy to the GPU)
    barrier     with profile=True only: a barrier, so that waiting for a slower rank is not
                counted as the collective's time
    collective  the all-reduce (or the all-gather of ordered mode) itself
    unstage     back to host memory (none on the host), and ordered mode's sum
    upload      host -> OpenCL buffers, rounded to each tensor's dtype (enqueued, not waited
                for: the next call's kernel wait, or any read, comes after it in the queue)

transport: "auto" (the default) takes "host" for gradients of at most 64 KiB (as float32) and
"device" for larger ones; "device" runs the collective on the process group's own device (a GPU under NCCL,
the host under gloo); "host" runs it on the host over a gloo group made once over the same
ranks (`host_group`), which skips CUDA altogether: for a few hundred bytes that may be cheaper
than two copies to and from the GPU (bench/bench_distributed.py --transport compares them).
Under gloo both are the same. With profile=True the phases are timed exactly (a barrier before
the collective, the GPU waited for after each phase); without it a GPU's stage and collective
are only enqueued, and their time shows in the unstage.

transport="shared": the gradients live in memory that diffc and torch share (made by
`shared_zeros`), and the collective runs on them where they are: no download, stage, unstage or
upload. On an NVIDIA GPU (NCCL) that is memory CUDA and diffc's OpenCL share
(runtime/cuda_shared.py), and nothing waits on the host: torch's stream waits (on the device) for
the gradient kernel diffc queued, NCCL sums, diffc's queue waits for that before the next kernel
(the optimizer), so the host goes on to queue the next work while the sum runs; the gathered
values come back when asked (`all_reduce(..., wait=False)` returns a handle whose `result()`
waits for them). On a CPU device (PoCL) it is host memory the OpenCL buffer uses, summed by gloo
after one wait for the queue. Sums are in the gradients' dtype there (NCCL's or gloo's sum of
half values, not float32's); "auto" takes "shared" when every gradient tensor is shared.
On two H200s it runs (bench/bench_distributed.py's table); it had hung while a status buffer's
zeroing waited holding the GIL (runtime/waiting.py, ZEROING). It saves the round trip's copies,
but each step still switches the GPU between torch's CUDA context (NCCL) and OpenCL's.

With one rank there is nothing to sum: all_reduce leaves the gradients on the device and only
reads the gathered values, so a one-process run costs what a plain training step with a loss
read does (the baseline bench/bench_distributed.py measures scaling against).

Sums are taken in float32 whatever the tensors' dtype, so half gradients round once, after the
sum. With `ordered=True` every rank gathers all ranks' gradients and adds them in rank order
(`sum_in_rank_order`): the result is then bit for bit what one process gets computing the
shards one after another and adding them the same way, whatever the backend's reduction
algorithm or the number of ranks (gloo's ring all-reduce adds in an order that depends on both).
Together with `dispatch(..., deterministic=True)` (runtime/accumulate.py) a distributed run is
reproducible bit for bit. It is not bit-identical to one process summing the whole batch in one
kernel: there each shard's sum is never rounded to the tensor's dtype on its own.
ordered=None (the default) is ordered mode on the host transport with gradients of at most 64
KiB, where gathering is also the faster collective (HOST_TRANSPORT_BYTES), and gloo's or NCCL's
all-reduce otherwise; ordered=False asks for the all-reduce everywhere.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
import weakref
from typing import Sequence

import numpy as np

PHASES = ("kernel", "download", "stage", "barrier", "collective", "unstage", "upload")
ROUND_TRIP = ("download", "stage", "unstage", "upload")  # the host round trip's phases
TRANSPORTS = ("auto", "device", "host", "shared")
# transport="auto": gradients of at most this many bytes (float32) go through the host. Measured on
# an H100 under NCCL (one process, bench_distributed.py, the MLP's 148 gradients): a step of 0.40
# ms through the host against 0.65 through the GPU (its two copies cost more than the sum).
HOST_TRANSPORT_BYTES = 1 << 16
# ordered=None (the default) gathers and adds in rank order on the host transport, for gradients
# of at most HOST_TRANSPORT_BYTES: gloo's all-gather is a ring of world - 1 steps and its
# all-reduce one of 2 (world - 1), so for a few kilobytes, where each step's latency is the
# cost, gathering is faster. Measured on an H100 machine's host (gloo, 151 floats, median):
# 174 / 378 / 863 us gathering against 214 / 611 / 1336 us all-reducing over 2 / 4 / 8 ranks.


def default_backend(local_world: int, cuda_devices: int) -> str:
    """NCCL where every local rank has a CUDA device of its own, else gloo: NCCL refuses two
    ranks on one GPU, while OpenCL devices may be shared (DIFFC_DEVICE_INDEX wraps around)."""
    return "nccl" if 0 < local_world <= cuda_devices else "gloo"


def init(backend: str | None = None) -> tuple[int, int]:
    """Initializes torch.distributed (from torchrun's environment) unless it already is, and
    points diffc at this rank's device: DIFFC_DEVICE_INDEX = LOCAL_RANK unless set, which must
    happen before diffc first uses a device. backend: `default_backend` of torchrun's
    LOCAL_WORLD_SIZE and the CUDA devices. Returns (rank, world size)."""
    import torch
    import torch.distributed as dist

    from diffc.runtime import device as device_module

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if "DIFFC_DEVICE_INDEX" not in os.environ:
        if device_module._current is not None and local_rank != 0:
            raise RuntimeError("diffc.distributed.init: diffc chose its device before init(); call init() first")
        os.environ["DIFFC_DEVICE_INDEX"] = str(local_rank)
    if not dist.is_initialized():
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        cuda_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if backend is None:
            backend = default_backend(local_world, cuda_devices)
        elif backend == "nccl" and local_world > cuda_devices:
            raise RuntimeError(f"diffc.distributed.init: NCCL needs a CUDA device per local rank: {local_world} ranks, "
                               f"{cuda_devices} CUDA device(s) (use gloo, or fewer processes)")
        dist.init_process_group(backend)
        # a group left to the interpreter's exit can abort the process there ("terminate called
        # without an active exception" from a backend thread): the group this made, this ends
        atexit.register(_destroy_group)
    if dist.get_backend() == "nccl":
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    return dist.get_rank(), dist.get_world_size()


def _destroy_group() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


# the gloo group made for each process group (keyed by the group object, so that a group made
# after the default one was destroyed and initialized again gets its own)
_host_groups: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def host_group(group=None):
    """A gloo group over the ranks of `group` (the default group when None): `group` itself
    when it is gloo, else one made the first time (a collective call: every rank of `group`
    must make it, in the same order as its other groups)."""
    import torch.distributed as dist

    key = dist.group.WORLD if group is None else group
    if dist.get_backend(group) == "gloo":
        return group
    if key not in _host_groups:
        ranks = None if group is None else dist.get_process_group_ranks(group)
        _host_groups[key] = dist.new_group(ranks=ranks, backend="gloo")
    return _host_groups[key]


def shard(n: int, rank: int, world: int) -> slice:
    """Rank `rank`'s contiguous rows of a batch of n: the first n % world ranks take one more."""
    base, extra = divmod(n, world)
    start = rank * base + min(rank, extra)
    return slice(start, start + base + (rank < extra))


def sum_in_rank_order(parts: Sequence[np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
    """parts[0] + parts[1] + ... in float32, left to right: ordered mode's reduction, and what a
    single process emulating several ranks must use to get the same bits. out: a float32 array
    to sum into (a new one when None)."""
    if out is None:
        out = np.array(parts[0], np.float32, copy=True)
    else:
        np.copyto(out, parts[0])
    for p in parts[1:]:
        np.add(out, np.asarray(p, np.float32), out=out)
    return out


def shared_zeros(shape, dtype=np.float32):
    """A zeroed diffc Tensor whose memory torch sees as a tensor too (`shared_view`), for
    gradients that transport="shared" sums where they are: on an NVIDIA GPU memory CUDA and
    diffc's OpenCL share (runtime/cuda_shared.py, where torch has CUDA and the CUDA bindings are
    installed), on a CPU OpenCL device host memory the buffer uses (a torch tensor's). A plain
    Tensor.zeros where neither is possible (transport "shared" then refuses it; "auto" does not
    take it)."""
    import pyopencl as cl
    import torch

    from diffc.runtime.device import device
    from diffc.runtime.tensor import Tensor

    dtype = np.dtype(dtype)
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    n = max(int(np.prod(shape, dtype=np.int64)), 1)
    dev = device()
    if dev.kind == "cpu":  # (the Tensor's storage is the torch tensor: shared_view finds it there)
        owner = torch.zeros(n, dtype=getattr(torch, dtype.name))
        buffer = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, hostbuf=owner.numpy())
        return Tensor(shape, dtype, _buffer=buffer, _storage=owner)
    from diffc.runtime import cuda_shared

    if cuda_shared.unavailable() is not None:
        return Tensor.zeros(shape, dtype)
    block = cuda_shared.shared().pool.alloc(n * dtype.itemsize)
    t = Tensor(shape, dtype, _buffer=block.buffer, _storage=block)  # (the block: shared_view's CUDA memory)
    return t.fill(0)  # (on diffc's queue, which the first collective's stream waits for)


def shared_view(tensor):
    """The torch tensor (flat, of the Tensor's dtype) on the memory of a `shared_zeros` Tensor
    (or of a view or detach() of one), or None for any other Tensor."""
    import torch

    storage = getattr(tensor, "_storage", None)
    if isinstance(storage, torch.Tensor):  # host memory the OpenCL buffer uses
        return storage.view(getattr(torch, tensor.dtype.name))[:tensor.size]
    cuda_shared = sys.modules.get("diffc.runtime.cuda_shared")
    if cuda_shared is not None and isinstance(storage, cuda_shared.Block) and storage.buffer is tensor.buffer:
        return cuda_shared.torch_tensor(storage, (tensor.size,), tensor.dtype)
    return None


class _Staging:
    """The host arrays and torch tensors of one all_reduce layout (n gradient values, then k
    gathered values per rank), made once and reused every call."""

    def __init__(self, n: int, k: int, world: int, ordered: bool, torch_device):
        import torch

        self.n, self.k = n, k
        size = n + world * k
        on_gpu = torch_device.type == "cuda"
        # pinned host memory: the copies to and from the GPU can run without a bounce buffer
        self.host_t = torch.empty(size, dtype=torch.float32, pin_memory=on_gpu)
        self.host = self.host_t.numpy()
        self.dev = self.host_t.to(torch_device) if on_gpu else self.host_t
        self.result = self.host  # where the summed values end up
        if ordered:
            self.gathered_dev = torch.empty(world * size, dtype=torch.float32, device=torch_device)
            self.gathered_host_t = torch.empty(world * size, dtype=torch.float32, pin_memory=on_gpu) if on_gpu else self.gathered_dev
            self.parts_dev = list(self.gathered_dev.view(world, size))  # views: all_gather fills one tensor
            self.parts_host = self.gathered_host_t.numpy().reshape(world, size)
            self.result = np.empty(size, np.float32)


class DataParallel:
    """Sums diffc gradient tensors over the ranks of a torch.distributed process group."""

    def __init__(self, grads: Sequence, *, group=None, ordered: bool | None = None, mean: bool = False,
                 profile: bool = False, transport: str = "auto"):
        import torch
        import torch.distributed as dist

        if not dist.is_initialized():
            raise RuntimeError("diffc.distributed.DataParallel: torch.distributed is not initialized (call init())")
        if transport not in TRANSPORTS:
            raise ValueError(f"diffc.distributed.DataParallel: transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
        self.grads = list(grads)
        views = [shared_view(g) for g in self.grads]
        if transport == "auto" and self.grads and all(v is not None for v in views):
            transport = "shared"
        if transport == "auto":
            transport = "host" if 4 * sum(g.size for g in self.grads) <= HOST_TRANSPORT_BYTES else "device"
        self.group, self.mean, self.profile, self.transport = group, mean, profile, transport
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self._shared: _SharedSum | None = None
        if transport == "shared":
            self._shared = _SharedSum(self.grads, views, group, self.world, self.rank)
            self.comm_group, self.torch_device = group, self._shared.torch_device
        elif transport == "host":
            self.comm_group, self.torch_device = host_group(group), torch.device("cpu")
        else:
            self.comm_group = group
            on_gpu = dist.get_backend(group) == "nccl"
            self.torch_device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
        # Each buffer is read and written once (tensors that share one, detach()ed views, are
        # the same values): (the tensors on it, offset in the host array, a host array of their
        # dtype when it is not float32).
        self._buffers: list[tuple[list, int, np.ndarray | None]] = []
        seen: dict[int, list] = {}
        at = 0
        for g in self.grads:
            if id(g.buffer) in seen:
                seen[id(g.buffer)].append(g)
                continue
            seen[id(g.buffer)] = same = [g]
            raw = None if g.dtype == np.float32 else np.empty(g.size, g.dtype)
            self._buffers.append((same, at, raw))
            at += g.size
        self.size = at
        if ordered is None:  # gather and add in rank order where that is the faster collective
            ordered = transport == "host" and 4 * self.size <= HOST_TRANSPORT_BYTES
        if ordered and transport == "shared":
            raise ValueError("diffc.distributed.DataParallel: ordered=True is for the device and host transports "
                             "(the shared transport sums with the backend's own all-reduce)")
        self.ordered = ordered
        self.sizes = [g.size for g in self.grads]
        self._staging: _Staging | None = None
        # The events of the last call's uploads. pyopencl waits for a transfer from host memory
        # when its event is collected, so a transfer whose event were dropped would block.
        self._uploads: list = []
        self.timings = dict.fromkeys(PHASES, 0.0)
        self.calls = 0

    def shard(self, n: int) -> slice:
        return shard(n, self.rank, self.world)

    def _staging_for(self, k: int) -> _Staging:
        if self._staging is None or self._staging.k != k:
            self._staging = _Staging(self.size, k, self.world, self.ordered, self.torch_device)
        return self._staging

    def _gpu_wait(self) -> None:
        import torch

        if self.torch_device.type == "cuda":
            torch.cuda.current_stream().synchronize()

    def all_reduce(self, gather=None, *, wait: bool = True):
        """Replaces every gradient tensor with its sum (its mean with mean=True) over the ranks.
        gather: this rank's values to share (a number, numbers, or a float32 diffc.Tensor read
        with the gradients), sent in the same collective; returns every rank's, a (world, k)
        float32 array (row r: rank r's; exact, as x + 0 is, on a device that keeps subnormals),
        or None without `gather`. One rank: the gradients already are the sums, and only the
        gathered values are read. wait=False: returns a handle whose `result()` gives that
        array (or None) when asked; the shared transport queues the sum and returns at once,
        so the host can queue the next work (the optimizer) first."""
        if self._shared is not None:
            got = self._shared.all_reduce(gather, self.mean, self.profile, self.timings)
            self.calls += 1
            return got if not wait else got.result()
        got = self._host_all_reduce(gather)
        return got if wait else _Done(got)

    def _host_all_reduce(self, gather) -> np.ndarray | None:
        from diffc.runtime import pending
        from diffc.runtime.device import synchronize

        clock = self.timings
        if self.profile:
            t = time.perf_counter()
            synchronize()
            clock["kernel"] += time.perf_counter() - t
        t = time.perf_counter()
        s = self._download(gather, grads=self.world > 1)
        # Without profile the reads were queued behind the kernel and one wait took both: the
        # kernel's time, not the round trip's (the reads of a few hundred bytes are negligible)
        clock["download" if self.profile else "kernel"] += time.perf_counter() - t
        pending.settle()  # a checked launch's error, before its gradients are used
        self._uploads.clear()  # done: the queue is empty
        self.calls += 1
        if self.world == 1:
            return s.host[s.n:].reshape(1, s.k).copy() if gather is not None else None
        total = self._sum(s)
        t = time.perf_counter()
        if self.mean:
            total[:s.n] /= np.float32(self.world)
        self._upload(total)
        clock["upload"] += time.perf_counter() - t
        return total[s.n:].reshape(self.world, s.k).copy() if gather is not None else None

    def _download(self, gather, grads: bool = True) -> _Staging:
        """The gradients (unless not `grads`) into the staging's host array, this rank's gathered
        values into its slots (zeros in the other ranks'): all reads enqueued, then one wait."""
        import pyopencl as cl

        from diffc.runtime.device import device
        from diffc.runtime.tensor import Tensor

        mine = None
        if gather is None:
            k = 0
        elif isinstance(gather, Tensor):
            if gather.dtype != np.float32:
                raise TypeError(f"diffc.distributed.all_reduce: gather takes a float32 Tensor, got {gather.dtype.name} "
                                "(one holding a float's bits: .view(np.float32))")
            k = gather.size
        else:
            mine = np.asarray(gather, np.float32).reshape(-1)
            k = mine.size
        s = self._staging_for(k)
        queue = device().queue
        reads = []  # kept until the wait (see _uploads)
        for tensors, at, raw in self._buffers if grads else ():
            if tensors[0].size:
                reads.append(cl.enqueue_copy(queue, raw if raw is not None else s.host[at:at + tensors[0].size],
                                             tensors[0].buffer, is_blocking=False))
        slots = s.host[s.n:]
        slots.fill(0)
        own = slots[self.rank * k:(self.rank + 1) * k]
        if mine is not None:
            own[:] = mine
        elif k:
            reads.append(cl.enqueue_copy(queue, own, gather.buffer, is_blocking=False))
        queue.finish()
        reads.clear()
        for tensors, at, raw in self._buffers if grads else ():
            if raw is not None:
                np.copyto(s.host[at:at + raw.size], raw)
        return s

    def _sum(self, s: _Staging) -> np.ndarray:
        """The staging's host array summed over the ranks (stage, barrier, collective, unstage):
        the host array holding the sums."""
        import torch.distributed as dist

        clock = self.timings
        t = time.perf_counter()
        if s.dev is not s.host_t:
            s.dev.copy_(s.host_t, non_blocking=True)
            if self.profile:
                self._gpu_wait()
        clock["stage"] += time.perf_counter() - t
        if self.profile:
            t = time.perf_counter()
            dist.barrier(group=self.comm_group)
            clock["barrier"] += time.perf_counter() - t

        t = time.perf_counter()
        if self.ordered:
            dist.all_gather(s.parts_dev, s.dev, group=self.comm_group)
        else:
            dist.all_reduce(s.dev, group=self.comm_group)
        if self.profile:
            self._gpu_wait()
        clock["collective"] += time.perf_counter() - t

        t = time.perf_counter()
        if self.ordered:
            if s.gathered_host_t is not s.gathered_dev:
                s.gathered_host_t.copy_(s.gathered_dev, non_blocking=True)
            self._gpu_wait()
            sum_in_rank_order(s.parts_host, out=s.result)
        elif s.dev is not s.host_t:
            s.host_t.copy_(s.dev, non_blocking=True)
            self._gpu_wait()
        clock["unstage"] += time.perf_counter() - t
        return s.result

    def _upload(self, total: np.ndarray) -> None:
        """The sums back into the gradient buffers, rounded to each one's dtype; enqueued, not
        waited for (these host arrays are not written again before the next call's kernel wait)."""
        import pyopencl as cl

        from diffc.runtime.device import device

        queue = device().queue
        for tensors, at, raw in self._buffers:
            if not tensors[0].size:
                continue
            src = total[at:at + tensors[0].size]
            if raw is not None:
                np.copyto(raw, src, casting="same_kind")  # rounds to the tensor's dtype, as astype does
                src = raw
            self._uploads.append(cl.enqueue_copy(queue, tensors[0].buffer, src, is_blocking=False))
            for g in tensors:
                g.uninitialized = False

    def max(self, value: float) -> float:
        """The largest `value` over the ranks, in a collective of its own (a step's loss rides in
        the gradients' instead: all_reduce(gather=loss).max())."""
        import torch
        import torch.distributed as dist

        t = torch.tensor([value], dtype=torch.float64, device=self.torch_device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.comm_group)
        return float(t.item())

    def broadcast_(self, tensor, src: int = 0) -> None:
        """Overwrites `tensor` (a diffc.Tensor) on every rank with rank src's contents."""
        import torch
        import torch.distributed as dist

        raw = tensor.to_numpy().reshape(-1).view(np.uint8).copy()
        t = torch.from_numpy(raw).to(self.torch_device)
        dist.broadcast(t, src, group=self.comm_group)
        tensor.copy_from_numpy(t.cpu().numpy().view(tensor.dtype).reshape(tensor.shape))

    def same_on_every_rank(self, tensor) -> bool:
        """Whether `tensor` holds the same bits on every rank (all ranks must call it)."""
        import torch
        import torch.distributed as dist

        mine = tensor.to_numpy().reshape(-1).view(np.uint8)
        t = torch.from_numpy(mine.copy()).to(self.torch_device)
        dist.broadcast(t, 0, group=self.comm_group)
        same = torch.tensor([int(np.array_equal(t.cpu().numpy(), mine))], device=self.torch_device)
        dist.all_reduce(same, op=dist.ReduceOp.MIN, group=self.comm_group)
        return bool(same.item())

    def report(self) -> str:
        """Milliseconds per all_reduce in each phase; the host round trip's and the collective's
        sum (the kernel wait is the gradient kernel's time, not the all-reduce's)."""
        n = max(self.calls, 1)
        per = {k: v / n for k, v in self.timings.items()}
        trip = sum(per[k] for k in ROUND_TRIP)
        # Without profile=True the collective's time includes waiting for the slower ranks.
        names = {"collective": "collective" if self.profile else "collective (and waiting for other ranks)"}
        phases = "  ".join(f"{names.get(k, k)} {v * 1e3:.3f} ms" for k, v in per.items() if k != "barrier" or self.profile)
        return (f"all_reduce over {self.world} ranks ({self.calls} calls, {self.size} values, {self.transport} transport): "
                f"{phases}; host round trip {trip * 1e3:.3f} ms, with the collective {(trip + per['collective']) * 1e3:.3f} ms")


class _Done:
    """all_reduce(wait=False)'s handle of values already there."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _gather_values(gather) -> tuple[int, np.ndarray | None]:
    """(k, the numbers as float32, or None for a Tensor) of all_reduce's `gather`."""
    from diffc.runtime.tensor import Tensor

    if gather is None:
        return 0, None
    if isinstance(gather, Tensor):
        if gather.dtype != np.float32:
            raise TypeError(f"diffc.distributed.all_reduce: gather takes a float32 Tensor, got {gather.dtype.name} "
                            "(one holding a float's bits: .view(np.float32))")
        return gather.size, None
    mine = np.asarray(gather, np.float32).reshape(-1)
    return mine.size, mine


class _SharedSum:
    """transport="shared": the collective on the gradients' own memory (shared_zeros). The
    gathered values ride in a shared float32 tensor of `world` slots per value (this rank's
    written on diffc's queue, the others zero), summed in the same group of collectives."""

    def __init__(self, grads: list, views: list, group, world: int, rank: int):
        import torch
        import torch.distributed as dist

        missing = [i for i, v in enumerate(views) if v is None]
        if missing:
            raise ValueError(f"diffc.distributed.DataParallel: transport='shared' sums gradients where they are, but "
                             f"gradient tensors {missing} are not in shared memory: make them with "
                             "diffc.distributed.shared_zeros (which needs torch CUDA and the CUDA bindings on an NVIDIA "
                             "GPU, or a CPU device)")
        self.world, self.rank = world, rank
        self.grads = grads
        seen: dict[int, object] = {}
        for g, v in zip(grads, views):
            seen.setdefault(id(g.buffer), (g, v))
        self.views = [v for _, v in seen.values()]
        self.tensors = [g for g, _ in seen.values()]
        kinds = {"cuda" if v.is_cuda else "host" for v in self.views}
        self.kind = kinds.pop() if len(kinds) == 1 else "mixed"
        backend = dist.get_backend(group)
        if self.kind == "mixed" or (self.kind == "cuda") != (backend == "nccl"):
            raise ValueError(f"diffc.distributed.DataParallel: transport='shared' with {backend} needs the gradients in "
                             f"{'CUDA' if backend == 'nccl' else 'host'} memory (shared_zeros on "
                             f"{'an NVIDIA GPU' if backend == 'nccl' else 'a CPU device'})")
        self.group = group
        self.torch_device = self.views[0].device
        if self.kind == "cuda" and self.torch_device.index != torch.cuda.current_device():
            raise ValueError(f"diffc.distributed.DataParallel: the gradients are on {self.torch_device} (diffc's OpenCL "
                             f"device), but this rank's NCCL device is cuda:{torch.cuda.current_device()}: set "
                             "CUDA_DEVICE_ORDER=PCI_BUS_ID so that CUDA numbers the GPUs as OpenCL does")
        self.slots = None  # (k, the diffc Tensor, its torch view)
        self._host_slots = None
        self._uploads: list = []

    def _slots_for(self, k: int):
        if self.slots is None or self.slots[0] != k:
            t = shared_zeros(self.world * k, np.float32)
            self.slots = (k, t, shared_view(t))
            if self.kind == "cuda":
                import torch

                self._host_slots = torch.empty(self.world * k, dtype=torch.float32, pin_memory=True)
        return self.slots

    def _before(self) -> None:
        """The collective's side waits for diffc's queued work (the gradient kernel)."""
        from diffc.runtime import pending
        from diffc.runtime.device import device

        if self.kind == "cuda":
            from diffc.runtime import cuda_shared

            sh = cuda_shared.shared()
            sh.before_torch(sh.stream())
        else:
            device().queue.finish()
            pending.settle()  # a checked launch's error, before its gradients are summed

    def _after(self) -> None:
        """diffc's queue waits for the collective (the next kernel reads the sums)."""
        if self.kind == "cuda":
            from diffc.runtime import cuda_shared

            sh = cuda_shared.shared()
            sh.after_torch(sh.stream())

    def all_reduce(self, gather, mean: bool, profile: bool, clock: dict):
        import pyopencl as cl
        import torch
        import torch.distributed as dist

        from diffc.runtime.device import device, synchronize

        k, mine = _gather_values(gather)
        # the earlier calls' copies from host numbers: on a GPU they may still sit behind the wait
        # for the last collective, and a dropped event would wait for its copy holding the GIL,
        # which that wait's thread needs (ZEROING in runtime/waiting.py): only finished ones go
        self._uploads = [e for e in self._uploads if e.command_execution_status > cl.command_execution_status.COMPLETE]
        if profile:
            t = time.perf_counter()
            synchronize()
            clock["kernel"] += time.perf_counter() - t
        queue = device().queue
        slots = None
        if k:
            _, slots, slots_view = self._slots_for(k)
            at = self.rank * k * 4
            cl.enqueue_fill_buffer(queue, slots.buffer, np.float32(0), 0, slots.nbytes)
            if mine is not None:  # (kept until the queue has copied it: see DataParallel._uploads)
                self._uploads.append(cl.enqueue_copy(queue, slots.buffer, mine, dst_offset=at, is_blocking=False))
            else:
                cl.enqueue_copy(queue, slots.buffer, gather.buffer, byte_count=k * 4, dst_offset=at)
        if self.world == 1:  # nothing to sum: only the gathered values are read
            return self._read_now(slots) if k else _Done(None)
        t = time.perf_counter()
        self._before()
        if profile:
            dist.barrier(group=self.group)
            clock["barrier"] += time.perf_counter() - t
            t = time.perf_counter()
        for v in self.views:
            if v.numel():
                dist.all_reduce(v, group=self.group)
                if mean:
                    v.div_(self.world)
        if k:
            dist.all_reduce(slots_view, group=self.group)
        for g in self.grads:
            g.uninitialized = False
        if self.kind != "cuda":
            clock["collective"] += time.perf_counter() - t
            return _Done(slots_view.numpy().reshape(self.world, k).copy() if k else None)
        handle = None
        if k:
            self._host_slots.copy_(slots_view, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            handle = _Gathered(self._host_slots, event, self.world, k)
        self._after()
        if profile:
            torch.cuda.current_stream().synchronize()
        clock["collective"] += time.perf_counter() - t
        return handle or _Done(None)

    @staticmethod
    def _read_now(slots) -> _Done:
        """One rank: the gathered values read back at once (no collective to wait behind)."""
        import pyopencl as cl

        from diffc.runtime import pending
        from diffc.runtime.device import device

        a = np.empty(slots.size, np.float32)
        cl.enqueue_copy(device().queue, a, slots.buffer, is_blocking=True)
        pending.settle()
        return _Done(a.reshape(1, -1))


class _Gathered:
    """The shared transport's gathered values on their way to the host: result() waits for them
    (before the next all_reduce, which reuses the host slots)."""

    __slots__ = ("host", "event", "shape")

    def __init__(self, host, event, world: int, k: int):
        self.host, self.event, self.shape = host, event, (world, k)

    def result(self) -> np.ndarray:
        self.event.synchronize()
        return self.host.numpy().reshape(self.shape).copy()
