"""Data-parallel training over torch.distributed.

diffc computes each rank's gradients over its shard of the batch on that rank's own OpenCL
device; torch.distributed (gloo on CPUs, NCCL for CUDA GPUs) sums them across ranks; every rank
then runs the same optimizer on the same sums, so the parameters stay identical everywhere.
One process per device, started by torchrun:

    from diffc.distributed import DataParallel, init

    rank, world = init()              # the process group, and this rank's OpenCL device
    dp = DataParallel([grads])        # the gradient tensors (diffc.Tensor) to sum over ranks
    rows = dp.shard(len(batch))       # this rank's rows of every step's batch
    ... dispatch the gradient kernel over batch[rows] into grads ...
    dp.all_reduce()                   # grads hold the whole batch's sums, on every rank
    ... dispatch the optimizer ...

The host round trip. diffc's tensors are OpenCL buffers, which no torch backend can read, so
each reduction goes through host memory in five phases (`dp.timings`, seconds summed over calls;
`dp.report()` prints them):

    download    OpenCL buffers -> one float32 host array (every gradient tensor, concatenated)
    stage       host array -> the backend's tensor (a view for gloo; a copy to the GPU for NCCL)
    wait        with profile=True only: a barrier, so that waiting for a slower rank is not
                counted as the collective's time
    collective  the all-reduce (or the all-gather of ordered mode) itself
    unstage     back to host memory (a view for gloo)
    upload      host -> OpenCL buffers, rounded to each tensor's dtype

Sums are taken in float32 whatever the tensors' dtype, so half gradients round once, after the
sum. With `ordered=True` every rank gathers all ranks' gradients and adds them in rank order
(`sum_in_rank_order`): the result is then bit for bit what one process gets computing the
shards one after another and adding them the same way, whatever the backend's reduction
algorithm or the number of ranks (gloo's ring all-reduce adds in an order that depends on both).
Together with `dispatch(..., deterministic=True)` (runtime/accumulate.py) a distributed run is
reproducible bit for bit. It is not bit-identical to one process summing the whole batch in one
kernel: there each shard's sum is never rounded to the tensor's dtype on its own.
"""

from __future__ import annotations

import atexit
import os
import time
from typing import Sequence

import numpy as np

PHASES = ("download", "stage", "wait", "collective", "unstage", "upload")


def init(backend: str | None = None) -> tuple[int, int]:
    """Initializes torch.distributed (from torchrun's environment) unless it already is, and
    points diffc at this rank's device: DIFFC_DEVICE_INDEX = LOCAL_RANK unless set, which must
    happen before diffc first uses a device. backend: "nccl" when CUDA is available, else
    "gloo". Returns (rank, world size)."""
    import torch
    import torch.distributed as dist

    from diffc.runtime import device as device_module

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if "DIFFC_DEVICE_INDEX" not in os.environ:
        if device_module._current is not None and local_rank != 0:
            raise RuntimeError("diffc.distributed.init: diffc chose its device before init(); call init() first")
        os.environ["DIFFC_DEVICE_INDEX"] = str(local_rank)
    if not dist.is_initialized():
        if backend is None:
            backend = "nccl" if torch.cuda.is_available() else "gloo"
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


def shard(n: int, rank: int, world: int) -> slice:
    """Rank `rank`'s contiguous rows of a batch of n: the first n % world ranks take one more."""
    base, extra = divmod(n, world)
    start = rank * base + min(rank, extra)
    return slice(start, start + base + (rank < extra))


def sum_in_rank_order(parts: Sequence[np.ndarray]) -> np.ndarray:
    """parts[0] + parts[1] + ... in float32, left to right: ordered mode's reduction, and what a
    single process emulating several ranks must use to get the same bits."""
    total = np.array(parts[0], np.float32, copy=True)
    for p in parts[1:]:
        total += np.asarray(p, np.float32)
    return total


class DataParallel:
    """Sums diffc gradient tensors over the ranks of a torch.distributed process group."""

    def __init__(self, grads: Sequence, *, group=None, ordered: bool = False, mean: bool = False,
                 profile: bool = False):
        import torch
        import torch.distributed as dist

        if not dist.is_initialized():
            raise RuntimeError("diffc.distributed.DataParallel: torch.distributed is not initialized (call init())")
        self.grads = list(grads)
        self.group, self.ordered, self.mean, self.profile = group, ordered, mean, profile
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        self.torch_device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend(group) == "nccl" else torch.device("cpu")
        self.sizes = [g.size for g in self.grads]
        self.timings = dict.fromkeys(PHASES, 0.0)
        self.calls = 0

    def shard(self, n: int) -> slice:
        return shard(n, self.rank, self.world)

    def _collective_sum(self, host: np.ndarray, clock: dict) -> np.ndarray:
        import torch
        import torch.distributed as dist

        t = time.perf_counter()
        local = torch.from_numpy(host).to(self.torch_device)
        clock["stage"] += time.perf_counter() - t
        if self.profile:
            t = time.perf_counter()
            dist.barrier(group=self.group)
            clock["wait"] += time.perf_counter() - t
        t = time.perf_counter()
        if self.ordered:
            parts = [torch.empty_like(local) for _ in range(self.world)]
            dist.all_gather(parts, local, group=self.group)
            if self.torch_device.type == "cuda":
                torch.cuda.synchronize()
            clock["collective"] += time.perf_counter() - t
            t = time.perf_counter()
            out = sum_in_rank_order([p.cpu().numpy() for p in parts])
        else:
            dist.all_reduce(local, group=self.group)
            if self.torch_device.type == "cuda":
                torch.cuda.synchronize()
            clock["collective"] += time.perf_counter() - t
            t = time.perf_counter()
            out = local.cpu().numpy()
        clock["unstage"] += time.perf_counter() - t
        return out

    def all_reduce(self) -> None:
        """Replaces every gradient tensor with its sum (its mean with mean=True) over the ranks."""
        clock = self.timings
        t = time.perf_counter()
        host = np.concatenate([g.to_numpy().reshape(-1).astype(np.float32) for g in self.grads])
        clock["download"] += time.perf_counter() - t
        total = self._collective_sum(host, clock)
        if self.mean:
            total /= np.float32(self.world)
        t = time.perf_counter()
        at = 0
        for g, n in zip(self.grads, self.sizes):
            g.copy_from_numpy(total[at:at + n].reshape(g.shape))
            at += n
        clock["upload"] += time.perf_counter() - t
        self.calls += 1

    def max(self, value: float) -> float:
        """The largest `value` over the ranks (e.g. a batch's largest loss)."""
        import torch
        import torch.distributed as dist

        t = torch.tensor([value], dtype=torch.float64, device=self.torch_device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.group)
        return float(t.item())

    def broadcast_(self, tensor, src: int = 0) -> None:
        """Overwrites `tensor` (a diffc.Tensor) on every rank with rank src's contents."""
        import torch
        import torch.distributed as dist

        raw = tensor.to_numpy().reshape(-1).view(np.uint8).copy()
        t = torch.from_numpy(raw).to(self.torch_device)
        dist.broadcast(t, src, group=self.group)
        tensor.copy_from_numpy(t.cpu().numpy().view(tensor.dtype).reshape(tensor.shape))

    def same_on_every_rank(self, tensor) -> bool:
        """Whether `tensor` holds the same bits on every rank (all ranks must call it)."""
        import torch
        import torch.distributed as dist

        mine = tensor.to_numpy().reshape(-1).view(np.uint8)
        t = torch.from_numpy(mine.copy()).to(self.torch_device)
        dist.broadcast(t, 0, group=self.group)
        same = torch.tensor([int(np.array_equal(t.cpu().numpy(), mine))], device=self.torch_device)
        dist.all_reduce(same, op=dist.ReduceOp.MIN, group=self.group)
        return bool(same.item())

    def report(self) -> str:
        """Milliseconds per all_reduce in each phase, and the host round trip's (every phase but
        the wait and the collective) share."""
        n = max(self.calls, 1)
        per = {k: v / n for k, v in self.timings.items()}
        total = sum(per.values())
        trip = total - per["collective"] - per["wait"]
        # Without profile=True the collective's time includes waiting for the slower ranks.
        names = {"collective": "collective" if self.profile else "collective (and waiting for other ranks)"}
        phases = "  ".join(f"{names.get(k, k)} {v * 1e3:.3f} ms" for k, v in per.items() if k != "wait" or self.profile)
        share = trip / total if total else 0.0
        return (f"all_reduce over {self.world} ranks ({self.calls} calls, {sum(self.sizes)} values): {phases}; "
                f"host round trip {trip * 1e3:.3f} ms ({share:.0%} of {total * 1e3:.3f} ms)")
