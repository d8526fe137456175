"""One rank of test_distributed.py's gather test (under torchrun, gloo): DataParallel.all_reduce
sums gradients and returns every rank's gathered values exactly, in each mode and transport;
the MLP's batch max loss through the gradients' collective equals one process's over the whole
batch. Prints "ok: ..." per check; an AssertionError fails the process."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from diffc.distributed import DataParallel, init, shared_zeros

rank, world = init()
import diffc  # noqa: E402  (after init(): each rank takes its own device)

MLP = Path(__file__).resolve().parent.parent / "examples" / "mlp"
sys.path.insert(0, str(MLP))
from train import dispatch_loss, init_params, layout, max_loss, network_of  # noqa: E402


def grads_of(r: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Rank r's gradients at a step (float16 and float32), the same on every rank that asks."""
    rng = np.random.default_rng(100 * step + r)
    return (rng.uniform(-4, 4, 5).astype(np.float16), rng.uniform(-1e3, 1e3, (2, 3)).astype(np.float32))


def losses_of(r: int, step: int) -> np.ndarray:
    """Values a sum with other ranks' values would not keep: extremes, infinity, a subnormal, -0."""
    special = np.array([3.4e38, -3.4e38, np.inf, 1e-45, -0.0, 1.0 + 2.0**-23, -7.25], np.float32)
    return np.roll(special, 2 * r + step)  # each rank's in other places


for ordered in (False, True):
    for transport in ("device", "host"):
        for mean in (False, True):
            half, single = diffc.Tensor.zeros(5, np.float16), diffc.Tensor.zeros((2, 3), np.float32)
            dp = DataParallel([half, single, single.detach()], ordered=ordered, transport=transport, mean=mean)
            for step in range(3):  # the staging is reused: each call must start from this call's values
                h, s = grads_of(rank, step)
                half.copy_from_numpy(h)
                single.copy_from_numpy(s)
                mine = losses_of(rank, step)
                values = diffc.Tensor.from_numpy(mine) if step % 2 else mine
                got = dp.all_reduce(gather=values)
                want = np.stack([losses_of(r, step) for r in range(world)])
                assert got.shape == (world, mine.size) and got.dtype == np.float32
                np.testing.assert_array_equal(got, want)  # exact (-0 reads as 0)
                assert got.max() == want.max()
                sums = [np.sum([grads_of(r, step)[i].astype(np.float32) for r in range(world)], axis=0, dtype=np.float32)
                        for i in range(2)]
                if mean:
                    sums = [x / np.float32(world) for x in sums]
                np.testing.assert_array_equal(half.to_numpy(), sums[0].astype(np.float16))
                np.testing.assert_array_equal(single.to_numpy(), sums[1])
            assert dp.all_reduce() is None
            print(f"ok: rank {rank} ordered={ordered} transport={transport} mean={mean}", flush=True)

# The MLP's batch max loss, carried in the gradients' collective, against one process's.
layers = [(4, 16), (16, 4)]
_, total = layout(layers)
m = diffc.load_module(MLP / "mlp.slang")
params = diffc.Tensor.from_numpy(init_params(np.random.default_rng(7), layers))
xy = np.random.default_rng(8).uniform(-1, 1, (37, 2))
grads = diffc.Tensor.zeros(total, np.float16)
dp = DataParallel([grads])
loss = dispatch_loss(m, network_of(params, grads, layers), xy[dp.shard(len(xy))])
batch_max = dp.all_reduce(gather=loss.view(np.float32)).max()
whole = max_loss(m, network_of(params, diffc.Tensor.zeros(total, np.float16), layers), xy)
assert batch_max == whole and whole > 0, (batch_max, whole)
print(f"ok: rank {rank} batch max loss {batch_max!r} equals one process's", flush=True)

# transport="shared": gradients in memory diffc and torch share (host memory the OpenCL buffer
# uses on a CPU device, CUDA memory on an NVIDIA GPU), summed where they are; sums in the
# gradients' dtype.
from diffc.distributed import shared_view  # noqa: E402

for mean in (False, True):
    half, single = shared_zeros(5, np.float16), shared_zeros((2, 3), np.float32)
    if shared_view(half) is None:  # a GPU whose memory torch cannot share here
        print(f"ok: rank {rank} transport=shared mean={mean} skipped: no shared memory on this device", flush=True)
        continue
    dp = DataParallel([half, single, single.detach()], mean=mean)
    assert dp.transport == "shared", dp.transport
    for step in range(3):
        h, s = grads_of(rank, step)
        half.copy_from_numpy(h)
        single.copy_from_numpy(s)
        mine = losses_of(rank, step)
        values = diffc.Tensor.from_numpy(mine) if step % 2 else mine
        handle = dp.all_reduce(gather=values, wait=False)
        got = handle.result()
        want = np.stack([losses_of(r, step) for r in range(world)])
        np.testing.assert_array_equal(got, want)
        for i, t in enumerate((half, single)):
            parts = [grads_of(r, step)[i] for r in range(world)]
            total = parts[0].copy()
            for p in parts[1:]:
                total = (total + p).astype(t.dtype)  # (two ranks: one rounding either way)
            if mean:
                total = (total / t.dtype.type(world)).astype(t.dtype)
            np.testing.assert_array_equal(t.to_numpy(), total)
    assert dp.all_reduce() is None
    print(f"ok: rank {rank} transport=shared mean={mean}", flush=True)
