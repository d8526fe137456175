"""What train.py and its float64 replica (replica.py) share, without diffc: the parameter layout,
the initialization, the data every run draws and the optimizers' settings.

Both draw from one numpy Generator in the same order (the initial parameters, the evaluation
inputs, then one batch per step), so a seed fixes the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Layer shapes (inputs, outputs) and where each layer's weights and biases start in the buffers.
LAYERS = [(4, 16), (16, 4)]
EVAL_POINTS = 256  # the fixed evaluation set's size


def layout(layers=LAYERS) -> tuple[list[tuple[int, int]], int]:
    """Each layer's (weights, biases) offsets in the flat parameters, and their total."""
    offsets, at = [], 0
    for n_in, n_out in layers:
        offsets.append((at, at + n_in * n_out))
        at += n_in * n_out + n_out
    return offsets, at


def init_params(rng: np.random.Generator, layers=LAYERS) -> np.ndarray:
    """He-initialized weights and zero biases, rounded to float16 (what the kernels store)."""
    offsets, total = layout(layers)
    p = np.zeros(total, np.float32)
    for (n_in, n_out), (w, b) in zip(layers, offsets):
        p[w:b] = rng.normal(0.0, np.sqrt(2.0 / n_in), n_in * n_out)  # biases start at 0
    return p.astype(np.float16)


def start(seed: int, layers=LAYERS) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """A run's initial parameters, its evaluation inputs (EVAL_POINTS x 2) and the generator
    that then draws its batches (next_batch)."""
    rng = np.random.default_rng(seed)
    params = init_params(rng, layers)
    return params, rng.uniform(-1, 1, (EVAL_POINTS, 2)), rng


def next_batch(rng: np.random.Generator, batch: int) -> np.ndarray:
    """The next step's inputs: batch x 2 in [-1, 1]."""
    return rng.uniform(-1, 1, (batch, 2))


@dataclass(frozen=True)
class Adam:
    """Adam's settings: Kingma and Ba's but for the step, 0.03 (of 0.003, 0.01, 0.03 and 0.1, the
    one that trains this network fastest at batch 64 in the float64 replica)."""

    lr: float = 0.03
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8

    def corrections(self, t: int) -> tuple[float, float]:
        """1 - beta1^t and 1 - beta2^t: the moments' bias corrections at step t (from 1)."""
        return 1.0 - self.beta1**t, 1.0 - self.beta2**t
