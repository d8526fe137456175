"""A float64 numpy replica of a train.py run: the same initial parameters, data and optimizer
(model.py), every step computed in float64 by reference.py's model of the network, and the same
evaluation (the largest loss over the fixed evaluation set). train.py's half-precision curve
should track it: the differences are half precision's roundings, not a different computation.

    from replica import replay          # with examples/mlp on sys.path, as for train.py
"""

from __future__ import annotations

import numpy as np

from model import Adam, next_batch, start
from reference import LEARNING_RATE, loss_and_grad


def adam_update(p, first, second, g, t: int, adam: Adam):
    """One Adam step at step t (from 1) with gradient g: the new parameters and moments."""
    first = adam.beta1 * first + (1 - adam.beta1) * g
    second = adam.beta2 * second + (1 - adam.beta2) * g * g
    c1, c2 = adam.corrections(t)
    return p - adam.lr * (first / c1) / (np.sqrt(second / c2) + adam.eps), first, second


def replay(steps: int, batch: int, every: int, seed: int, optimizer: str = "sgd", adam: Adam = Adam()):
    """train(steps, batch, every, seed, optimizer=..., adam=...) in float64: the final
    parameters and the largest evaluation loss before training and every `every` steps."""
    p0, eval_inputs, rng = start(seed)
    p = p0.astype(np.float64)
    first, second = np.zeros_like(p), np.zeros_like(p)
    history = [float(loss_and_grad(p, eval_inputs)[0].max())]
    for step in range(1, steps + 1):
        g = loss_and_grad(p, next_batch(rng, batch))[1]
        if optimizer == "sgd":
            p -= LEARNING_RATE * g
        elif optimizer == "adam":
            p, first, second = adam_update(p, first, second, g, step, adam)
        else:
            raise ValueError(f"unknown optimizer {optimizer!r} (sgd or adam)")
        if step % every == 0:
            history.append(float(loss_and_grad(p, eval_inputs)[0].max()))
    return p, history
