"""Trains examples/mlp/mlp.slang (Slang's MLP tutorial) with diffc's dispatch API.

All parameters live in one half tensor and their gradients in another; each layer's pointers
point into them at its offset. Each step runs learnGradient over a batch of random inputs in
[-1, 1]^2 (accumulating gradients with atomic adds, recording the batch's largest loss) and then
adjustParameters over every parameter.

    python examples/mlp/train.py [--steps 1000] [--batch 64] [--every 100] [--seed 0]
                                 [--optimizer sgd|adam] [--lr 0.03] [--plot loss.png] [--no-progress]

prints, every `every` steps, the largest loss over a fixed set of 256 evaluation inputs, with a
progress bar on stderr when it is a terminal. --optimizer adam runs adam.slang's adamStep (float
moments, learning rate --lr) in place of the tutorial's adjustParameters (SGD, lr 0.01 fixed in
mlp.slang). --plot FILE writes that evaluation curve (blue) and a float64 numpy replica's
(orange; replica.py: the same initialization, data and optimizer) as a PNG, log-scale loss
against steps, with labelled axes and a legend; a smaller --every gives a finer curve.

Data-parallel (diffc/distributed.py): one process per device, each draws the same batch, runs
learnGradient over its shard of it, the gradients are summed over the processes through
torch.distributed, and every process runs adjustParameters on the sums:

    torchrun --standalone --nproc-per-node=2 examples/mlp/train.py --distributed [--deterministic --ordered]
                                                                     [--transport auto|device|host]

--deterministic accumulates each shard's gradients in a fixed order (dispatch(deterministic=True));
--ordered adds the ranks' sums in rank order (without it DataParallel decides: rank order too for
the tutorial's 148 gradients on the host, where gathering is the faster collective); with both,
the parameters after N steps are bit for bit those of `--shards 2` in one process (which computes
the two shards in turn and adds them the same way), and within rounding of one process over the
whole batch. The batch's largest loss
rides in the gradients' collective (one a step). --transport host runs that collective on the
host over gloo even where the process group is NCCL (no copies to and from the GPU). --save FILE
writes the final parameters (rank 0), as float16 .npy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import diffc

from model import LAYERS, Adam, init_params, layout, next_batch, start  # noqa: F401  (LAYERS, init_params: for callers)
from png_plot import line_plot
from progress import ProgressBar
from replica import replay

HERE = Path(__file__).resolve().parent


def network_of(params: diffc.Tensor, grads: diffc.Tensor, layers=LAYERS) -> dict:
    """MyNetwork's fields: each layer's pointers into the parameter and gradient tensors."""
    offsets, _ = layout(layers)
    return {
        f"layer{i + 1}": {"weights": params.at(w), "weightsGrad": grads.at(w),
                          "biases": params.at(b), "biasesGrad": grads.at(b)}
        for i, (w, b) in enumerate(offsets)
    }


def dispatch_loss(m, network: dict, inputs: np.ndarray, deterministic: bool = False) -> diffc.Tensor:
    """learnGradient over `inputs` (n x 2), enqueued; the tensor its largest loss goes to (a
    uint32 holding the float's bits, 0 for no inputs)."""
    loss = diffc.Tensor.zeros(1, np.uint32)
    n = len(inputs)
    if n:
        m.learnGradient.dispatch(thread_count=n, network=network, lossBuffer=loss, deterministic=deterministic,
                                 inputs=diffc.Tensor.from_numpy(inputs.astype(np.float32).ravel()), count=n)
    return loss


def max_loss(m, network: dict, inputs: np.ndarray, deterministic: bool = False) -> float:
    """learnGradient over `inputs` (n x 2); the largest loss it records (0 for no inputs)."""
    return float(dispatch_loss(m, network, inputs, deterministic).view(np.float32).to_numpy()[0])


def batch_gradient(m, network: dict, grads: diffc.Tensor, xy: np.ndarray, *, shards: int = 1, dp=None,
                   deterministic: bool = False) -> float:
    """Leaves the gradient of the batch xy's summed loss in `grads` (zero before); returns the
    batch's largest loss. dp (a diffc.distributed.DataParallel): this process computes its shard
    and the ranks' sums are added; shards > 1 (one process): the shards one after another, added
    as dp's ordered mode adds the ranks'."""
    from diffc.distributed import shard, sum_in_rank_order

    if dp is not None:
        loss = dispatch_loss(m, network, xy[dp.shard(len(xy))], deterministic)
        return float(dp.all_reduce(gather=loss.view(np.float32)).max())  # one collective: gradients and losses
    if shards == 1:
        return max_loss(m, network, xy, deterministic)
    parts, loss = [], -np.inf
    for k in range(shards):
        loss = max(loss, max_loss(m, network, xy[shard(len(xy), k, shards)], deterministic))
        parts.append(grads.to_numpy())
        grads.fill(0)
    grads.copy_from_numpy(sum_in_rank_order(parts))
    return loss


def optimizer_step(m, params: diffc.Tensor, grads: diffc.Tensor, optimizer: str, adam: Adam):
    """A function that applies one step of `optimizer` ("sgd": the tutorial's adjustParameters;
    "adam": adam.slang's adamStep, with its moments) to params and clears grads."""
    total = params.size
    if optimizer == "sgd":
        return lambda: m.adjustParameters.dispatch(thread_count=total, params=params, gradients=grads, count=total)
    if optimizer != "adam":
        raise ValueError(f"unknown optimizer {optimizer!r} (sgd or adam)")
    kernels = diffc.load_module(HERE / "adam.slang")
    first, second = diffc.Tensor.zeros(total, np.float32), diffc.Tensor.zeros(total, np.float32)
    steps = [0]

    def step():
        steps[0] += 1
        c1, c2 = adam.corrections(steps[0])
        kernels.adamStep.dispatch(thread_count=total, params=params, gradients=grads, firstMoment=first,
                                  secondMoment=second, learningRate=adam.lr, beta1=adam.beta1, beta2=adam.beta2,
                                  epsilon=adam.eps, correction1=c1, correction2=c2, count=total)

    step.moments = (first, second)  # for on_step
    return step


def train(steps: int = 1000, batch: int = 64, every: int = 100, seed: int = 0, log=print, *,
          optimizer: str = "sgd", adam: Adam = Adam(), progress: bool = False, on_step=None,
          shards: int = 1, distributed: bool = False, ordered: bool | None = None, deterministic: bool = False,
          transport: str = "auto"):
    """Runs `steps` training steps. Returns the parameters (float16 numpy array) and the largest
    loss over a fixed evaluation set before training and at every `every` steps. optimizer:
    "sgd" or "adam" (settings `adam`); progress: a progress bar on stderr; on_step(step, xy,
    params, moments): called after each step with its inputs, the parameters and Adam's moments
    (float16 and float32 numpy arrays; moments None for SGD). distributed:
    data-parallel over the initialized torch.distributed group (diffc.distributed.init()), the
    ranks' gradients added in rank order if `ordered` (None: DataParallel's default), through `transport` (DataParallel's); shards,
    deterministic: see batch_gradient."""
    p0, eval_inputs, rng = start(seed)
    m = diffc.load_module(HERE / "mlp.slang")
    _, total = layout()
    params = diffc.Tensor.from_numpy(p0)
    grads = diffc.Tensor.zeros(total, np.float16)
    apply_step = optimizer_step(m, params, grads, optimizer, adam)
    network = network_of(params, grads)
    dp = None
    if distributed:
        from diffc.distributed import DataParallel

        dp = DataParallel([grads], ordered=ordered, transport=transport)
    # Evaluation runs the same kernel on a fixed set, with its gradients sent to a scratch tensor.
    eval_net = network_of(params, diffc.Tensor.zeros(total, np.float16))
    history = [max_loss(m, eval_net, eval_inputs)]
    log(f"step {0:5d}  max loss {history[0]:.5f}")
    bar = ProgressBar(steps) if progress else None
    for step in range(1, steps + 1):
        xy = next_batch(rng, batch)  # every rank draws the whole batch, then takes its shard
        batch_max = batch_gradient(m, network, grads, xy, shards=shards, dp=dp, deterministic=deterministic)
        apply_step()
        if on_step is not None:
            moments = getattr(apply_step, "moments", None)
            on_step(step, xy, params.to_numpy(), moments and tuple(t.to_numpy() for t in moments))
        if bar is not None:
            bar.update(step, f"batch max loss {batch_max:.4f}")
        if step % every == 0:
            history.append(max_loss(m, eval_net, eval_inputs))
            if bar is not None:
                bar.clear()
            log(f"step {step:5d}  max loss {history[-1]:.5f}  (this batch: {batch_max:.5f})")
            if bar is not None:
                bar.update(step, f"batch max loss {batch_max:.4f}")
    if bar is not None:
        bar.close()
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
    ap.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    ap.add_argument("--lr", type=float, default=Adam.lr, help="Adam's learning rate (SGD's is mlp.slang's 0.01)")
    ap.add_argument("--plot", help="write the loss curve and the float64 replica's as a PNG here")
    ap.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                    help="a progress bar on stderr (default: when stderr is a terminal)")
    ap.add_argument("--distributed", action="store_true", help="data-parallel over torch.distributed (under torchrun)")
    ap.add_argument("--deterministic", action="store_true", help="fixed-order gradient accumulation")
    ap.add_argument("--ordered", action="store_true", default=None,
                    help="add the ranks' gradients in rank order (without it: DataParallel's default)")
    ap.add_argument("--transport", choices=["auto", "device", "host"], default="auto",
                    help="where the ranks' gradients are summed: the process group's device, or the host over gloo (auto: the host for up to 64 KiB)")
    ap.add_argument("--shards", type=int, default=1, help="one process computing the batch in this many shards")
    ap.add_argument("--save", help="write the final parameters here (.npy, float16)")
    a = ap.parse_args()
    if a.shards < 1 or (a.shards > 1 and a.distributed):
        ap.error("--shards takes a count >= 1, and emulates ranks in one process (not with --distributed)")
    rank, log = 0, print
    if a.distributed:
        from diffc.distributed import init

        rank, _ = init()  # before diffc picks a device: each rank takes its own
        log = print if rank == 0 else (lambda line: None)
    progress = sys.stderr.isatty() if a.progress is None else a.progress
    adam = Adam(lr=a.lr)
    params, history = train(a.steps, a.batch, a.every, a.seed, log, optimizer=a.optimizer, adam=adam,
                            progress=progress and rank == 0, shards=a.shards, distributed=a.distributed,
                            ordered=a.ordered, deterministic=a.deterministic, transport=a.transport)
    if a.save and rank == 0:
        np.save(a.save, params)
    if a.plot and rank == 0:
        plot(a.plot, history, a.steps, a.batch, a.every, a.seed, a.optimizer, adam, log)


def plot(path: str, history: list[float], steps: int, batch: int, every: int, seed: int, optimizer: str,
         adam: Adam, log=print) -> list[float]:
    """Writes diffc's evaluation curve and the float64 replica's (replica.py) as a PNG; returns
    the replica's curve."""
    _, reference = replay(steps, batch, every, seed, optimizer, adam)
    xs = [every * i for i in range(len(history))]
    line_plot(path, [(xs, reference, "orange", "float64 numpy replica"),
                     (xs, history, "blue", f"diffc, half ({diffc.device().kind})")],
              xlabel="training steps", ylabel="largest evaluation loss (log scale)")
    worst = max(abs(a - b) / b for a, b in zip(history, reference))
    log(f"wrote {path}: largest evaluation loss against steps (log scale); blue: diffc (half, "
        f"{diffc.device().name}), orange: float64 numpy replica; largest relative gap {worst:.2%}")
    return reference


if __name__ == "__main__":
    main()
