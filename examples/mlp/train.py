"""Trains examples/mlp/mlp.slang (Slang's MLP tutorial) with diffc's dispatch API.

All parameters live in one half tensor and their gradients in another; each layer's pointers
point into them at its offset. Each step runs learnGradient over a batch of random inputs in
[-1, 1]^2 (accumulating gradients with atomic adds, recording the batch's largest loss) and then
adjustParameters over every parameter.

    python examples/mlp/train.py [--steps 1000] [--batch 64] [--every 100] [--seed 0]

prints, every `every` steps, the largest loss over a fixed set of 256 evaluation inputs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import diffc

# Layer shapes (inputs, outputs) and where each layer's weights and biases start in the buffers.
LAYERS = [(4, 16), (16, 4)]


def layout() -> tuple[list[tuple[int, int]], int]:
    offsets, at = [], 0
    for n_in, n_out in LAYERS:
        offsets.append((at, at + n_in * n_out))
        at += n_in * n_out + n_out
    return offsets, at


def init_params(rng: np.random.Generator) -> np.ndarray:
    offsets, total = layout()
    p = np.zeros(total, np.float32)
    for (n_in, n_out), (w, b) in zip(LAYERS, offsets):
        p[w:b] = rng.normal(0.0, np.sqrt(2.0 / n_in), n_in * n_out)  # biases start at 0
    return p.astype(np.float16)


def network_of(params: diffc.Tensor, grads: diffc.Tensor) -> dict:
    """MyNetwork's fields: each layer's pointers into the parameter and gradient tensors."""
    offsets, _ = layout()
    return {
        f"layer{i + 1}": {"weights": params.at(w), "weightsGrad": grads.at(w),
                          "biases": params.at(b), "biasesGrad": grads.at(b)}
        for i, (w, b) in enumerate(offsets)
    }


def max_loss(m, network: dict, inputs: np.ndarray) -> float:
    """learnGradient over `inputs` (n x 2); the largest loss it records."""
    loss = diffc.Tensor.zeros(1, np.uint32)
    n = len(inputs)
    m.learnGradient.dispatch(thread_count=n, network=network, lossBuffer=loss,
                             inputs=diffc.Tensor.from_numpy(inputs.astype(np.float32).ravel()), count=n)
    return float(loss.to_numpy().view(np.float32)[0])  # the buffer holds the float's bits


def train(steps: int = 1000, batch: int = 64, every: int = 100, seed: int = 0, log=print):
    """Runs `steps` training steps. Returns the parameters (float16 numpy array) and the largest
    loss over a fixed evaluation set before training and at every `every` steps."""
    rng = np.random.default_rng(seed)
    m = diffc.load_module(Path(__file__).with_name("mlp.slang"))
    _, total = layout()
    params = diffc.Tensor.from_numpy(init_params(rng))
    grads = diffc.Tensor.zeros(total, np.float16)
    network = network_of(params, grads)
    # Evaluation runs the same kernel on a fixed set, with its gradients sent to a scratch tensor.
    eval_inputs = rng.uniform(-1, 1, (256, 2))
    eval_net = network_of(params, diffc.Tensor.zeros(total, np.float16))
    history = [max_loss(m, eval_net, eval_inputs)]
    log(f"step {0:5d}  max loss {history[0]:.5f}")
    for step in range(1, steps + 1):
        batch_max = max_loss(m, network, rng.uniform(-1, 1, (batch, 2)))
        m.adjustParameters.dispatch(thread_count=total, params=params, gradients=grads, count=total)
        if step % every == 0:
            history.append(max_loss(m, eval_net, eval_inputs))
            log(f"step {step:5d}  max loss {history[-1]:.5f}  (this batch: {batch_max:.5f})")
    return params.to_numpy(), history


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    train(a.steps, a.batch, a.every, a.seed)


if __name__ == "__main__":
    main()
