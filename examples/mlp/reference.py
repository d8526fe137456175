"""A float64 numpy model of examples/mlp/mlp.slang: the network, its loss, the loss's gradient
with respect to the parameters, and one training step (learnGradient over a batch, then
adjustParameters), over a whole batch at once. Parameters are one flat array in train.py's
layout (W1 16x4, b1 16, W2 4x16, b2 4, row-major).

    from reference import sgd_step      # with examples/mlp on sys.path, as for train.py
"""

from __future__ import annotations

import numpy as np

from model import layout

LEARNING_RATE = 0.01  # Optimizer::learningRate
LEAK = 0.01  # the leaky ReLU's slope below 0

_OFFSETS, N_PARAMS = layout()
(_W1, _B1), (_W2, _B2) = _OFFSETS


def unpack(params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(W1 16x4, b1, W2 4x16, b2) views of the flat parameters."""
    return (params[_W1:_B1].reshape(16, 4), params[_B1:_W2], params[_W2:_B2].reshape(4, 16), params[_B2:])


def groundtruth_columns(x, y) -> tuple:
    """The four polynomials the network learns (mlp.slang's groundtruth), elementwise over x and
    y: numpy arrays or anything else with arithmetic operators (torch tensors)."""
    return (x + y) / (1 + y * y), 2 * x + y, 0.5 * x * x + 1.2 * y, x + 0.5 * y * y


def groundtruth(xy: np.ndarray) -> np.ndarray:
    """groundtruth_columns for n x 2 inputs: n x 4."""
    return np.stack(groundtruth_columns(xy[:, 0], xy[:, 1]), axis=1)


def _backward(params, xy) -> tuple[np.ndarray, ...]:
    """Each sample's loss, the first layer's input and the hidden layer's output, and the
    gradients of the loss with respect to both layers' pre-activations (rows: samples)."""
    params, xy = np.asarray(params, np.float64), np.asarray(xy, np.float64).reshape(-1, 2)
    w1, b1, w2, b2 = unpack(params)
    x, y = xy[:, 0], xy[:, 1]
    inp = np.stack([x, y, x * x, y * y], axis=1)
    z1 = inp @ w1.T + b1
    h = np.where(z1 < 0, LEAK * z1, z1)
    z2 = h @ w2.T + b2
    out = np.where(z2 < 0, LEAK * z2, z2)
    d = out - groundtruth(xy)
    dz2 = 2 * d * np.where(z2 < 0, LEAK, 1.0)
    dz1 = (dz2 @ w2) * np.where(z1 < 0, LEAK, 1.0)
    return np.sum(d * d, axis=1), inp, h, dz1, dz2


def loss_and_grad(params: np.ndarray, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's loss ||MLP(x, y) - f(x, y)||^2 (n,) and the gradient of their sum with
    respect to the parameters (the sum learnGradient accumulates), in float64."""
    losses, inp, h, dz1, dz2 = _backward(params, xy)
    return losses, np.concatenate([(dz1.T @ inp).ravel(), dz1.sum(0), (dz2.T @ h).ravel(), dz2.sum(0)])


def sample_grads(params: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Each sample's gradient with respect to the parameters: n x N_PARAMS (their sum is
    loss_and_grad's)."""
    _, inp, h, dz1, dz2 = _backward(params, xy)
    n = len(inp)
    outer = lambda a, b: np.einsum("ni,nj->nij", a, b).reshape(n, -1)  # noqa: E731
    return np.concatenate([outer(dz1, inp), dz1, outer(dz2, h), dz2], axis=1)


def sgd_step(params: np.ndarray, xy: np.ndarray, lr: float = LEARNING_RATE) -> np.ndarray:
    """The parameters after one training step over the batch xy."""
    return np.asarray(params, np.float64) - lr * loss_and_grad(params, xy)[1]
