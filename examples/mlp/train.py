"""Trains examples/mlp/mlp.slang (Slang's MLP tutorial) with diffc's dispatch API.

All parameters live in one half tensor and their gradients in another; each layer's pointers
point into them at its offset. Each step runs learnGradient over a batch of random inputs in
[-1, 1]^2 (accumulating gradients with atomic adds, recording the batch's largest loss) and then
adjustParameters over every parameter.

    python examples/mlp/train.py [--steps 1000] [--batch 64] [--every 100] [--seed 0]

prints, every `every` steps, the largest loss over a fixed set of 256 evaluation inputs.

Data-parallel (diffc/distributed.py): one process per device, each draws the same batch, runs
learnGradient over its shard of it, the gradients are summed over the processes through
torch.distributed, and every process runs adjustParameters on the sums:

    torchrun --standalone --nproc-per-node=2 examples/mlp/train.py --distributed [--deterministic --ordered]

--deterministic accumulates each shard's gradients in a fixed order (dispatch(deterministic=True));
--ordered adds the ranks' sums in rank order; with both, the parameters after N steps are bit for
bit those of `--shards 2` in one process (which computes the two shards in turn and adds them the
same way), and within rounding of one process over the whole batch. --save FILE writes the final
parameters (rank 0), as float16 .npy.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import diffc

# Layer shapes (inputs, outputs) and where each layer's weights and biases start in the buffers.
LAYERS = [(4, 16), (16, 4)]


def layout(layers=LAYERS) -> tuple[list[tuple[int, int]], int]:
    offsets, at = [], 0
    for n_in, n_out in layers:
        offsets.append((at, at + n_in * n_out))
        at += n_in * n_out + n_out
    return offsets, at


def init_params(rng: np.random.Generator, layers=LAYERS) -> np.ndarray:
    offsets, total = layout(layers)
    p = np.zeros(total, np.float32)
    for (n_in, n_out), (w, b) in zip(layers, offsets):
        p[w:b] = rng.normal(0.0, np.sqrt(2.0 / n_in), n_in * n_out)  # biases start at 0
    return p.astype(np.float16)


def network_of(params: diffc.Tensor, grads: diffc.Tensor, layers=LAYERS) -> dict:
    """MyNetwork's fields: each layer's pointers into the parameter and gradient tensors."""
    offsets, _ = layout(layers)
    return {
        f"layer{i + 1}": {"weights": params.at(w), "weightsGrad": grads.at(w),
                          "biases": params.at(b), "biasesGrad": grads.at(b)}
        for i, (w, b) in enumerate(offsets)
    }


def max_loss(m, network: dict, inputs: np.ndarray, deterministic: bool = False) -> float:
    """learnGradient over `inputs` (n x 2); the largest loss it records (0 for no inputs)."""
    loss = diffc.Tensor.zeros(1, np.uint32)
    n = len(inputs)
    if n:
        m.learnGradient.dispatch(thread_count=n, network=network, lossBuffer=loss, deterministic=deterministic,
                                 inputs=diffc.Tensor.from_numpy(inputs.astype(np.float32).ravel()), count=n)
    return float(loss.to_numpy().view(np.float32)[0])  # the buffer holds the float's bits


def batch_gradient(m, network: dict, grads: diffc.Tensor, xy: np.ndarray, *, shards: int = 1, dp=None,
                   deterministic: bool = False) -> float:
    """Leaves the gradient of the batch xy's summed loss in `grads` (zero before); returns the
    batch's largest loss. dp (a diffc.distributed.DataParallel): this process computes its shard
    and the ranks' sums are added; shards > 1 (one process): the shards one after another, added
    as dp's ordered mode adds the ranks'."""
    from diffc.distributed import shard, sum_in_rank_order

    if dp is not None:
        loss = max_loss(m, network, xy[dp.shard(len(xy))], deterministic)
        dp.all_reduce()
        return dp.max(loss)
    if shards == 1:
        return max_loss(m, network, xy, deterministic)
    parts, loss = [], -np.inf
    for k in range(shards):
        loss = max(loss, max_loss(m, network, xy[shard(len(xy), k, shards)], deterministic))
        parts.append(grads.to_numpy())
        grads.fill(0)
    grads.copy_from_numpy(sum_in_rank_order(parts))
    return loss


def train(steps: int = 1000, batch: int = 64, every: int = 100, seed: int = 0, log=print, *,
          shards: int = 1, distributed: bool = False, ordered: bool = False, deterministic: bool = False):
    """Runs `steps` training steps. Returns the parameters (float16 numpy array) and the largest
    loss over a fixed evaluation set before training and at every `every` steps. distributed:
    data-parallel over the initialized torch.distributed group (diffc.distributed.init()), the
    ranks' gradients added in rank order if `ordered`; shards, deterministic: see batch_gradient."""
    rng = np.random.default_rng(seed)
    m = diffc.load_module(Path(__file__).with_name("mlp.slang"))
    _, total = layout()
    params = diffc.Tensor.from_numpy(init_params(rng))
    grads = diffc.Tensor.zeros(total, np.float16)
    network = network_of(params, grads)
    dp = None
    if distributed:
        from diffc.distributed import DataParallel

        dp = DataParallel([grads], ordered=ordered)
    # Evaluation runs the same kernel on a fixed set, with its gradients sent to a scratch tensor.
    eval_inputs = rng.uniform(-1, 1, (256, 2))
    eval_net = network_of(params, diffc.Tensor.zeros(total, np.float16))
    history = [max_loss(m, eval_net, eval_inputs)]
    log(f"step {0:5d}  max loss {history[0]:.5f}")
    for step in range(1, steps + 1):
        xy = rng.uniform(-1, 1, (batch, 2))  # every rank draws the whole batch, then takes its shard
        batch_max = batch_gradient(m, network, grads, xy, shards=shards, dp=dp, deterministic=deterministic)
        m.adjustParameters.dispatch(thread_count=total, params=params, gradients=grads, count=total)
        if step % every == 0:
            history.append(max_loss(m, eval_net, eval_inputs))
            log(f"step {step:5d}  max loss {history[-1]:.5f}  (this batch: {batch_max:.5f})")
    if dp is not None:
        log(dp.report())
        if not dp.same_on_every_rank(params):
            raise RuntimeError(f"rank {dp.rank}: the parameters differ between ranks")
        log(f"parameters identical on all {dp.world} ranks")
    return params.to_numpy(), history


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--distributed", action="store_true", help="data-parallel over torch.distributed (under torchrun)")
    ap.add_argument("--deterministic", action="store_true", help="fixed-order gradient accumulation")
    ap.add_argument("--ordered", action="store_true", help="add the ranks' gradients in rank order")
    ap.add_argument("--shards", type=int, default=1, help="one process computing the batch in this many shards")
    ap.add_argument("--save", help="write the final parameters here (.npy, float16)")
    a = ap.parse_args()
    rank, log = 0, print
    if a.distributed:
        from diffc.distributed import init

        rank, _ = init()  # before diffc picks a device: each rank takes its own
        log = print if rank == 0 else (lambda line: None)
    params, _ = train(a.steps, a.batch, a.every, a.seed, log, shards=a.shards, distributed=a.distributed,
                      ordered=a.ordered, deterministic=a.deterministic)
    if a.save and rank == 0:
        np.save(a.save, params)


if __name__ == "__main__":
    main()
