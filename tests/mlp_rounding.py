"""Rounding bounds for examples/mlp/mlp.slang's half-precision forward and backward passes,
sample by sample: the kernel's operations in its order, on rounding.Rounded values, so that
`v` is the float64 model's value (examples/mlp/reference.py: the exact slope 0.01 and constant
1.2) and `e` bounds how far the kernel's half result can be from it."""

from __future__ import annotations

import numpy as np

from rounding import Rounded

LEAK_USED = float(np.float16(0.01))  # mlp.slang's 0.01h
LEAK = 0.01  # the float64 model's
UNDERFLOW = 2.0**-25 / LEAK_USED  # below this, z * 0.01h rounds to a zero, which is not < 0


def _layer(inputs: list[Rounded], w: np.ndarray, b: np.ndarray) -> tuple[list[Rounded], list[Rounded]]:
    """matMulAdd (sum = bias; sum += w * x, in input order) and the leaky ReLU: (z, output)."""
    zs = []
    for o in range(w.shape[0]):
        s = Rounded(np.full(inputs[0].v.shape, b[o]))
        for i, x in enumerate(inputs):
            s = s + x * float(w[o, i])
        zs.append(s)
    return zs, [_leaky(z) for z in zs]


def _leaky(z: Rounded) -> Rounded:
    """Computed: z < 0 ? z * 0.01h : z. The model's leaky ReLU is 1-Lipschitz, so the input's
    error passes through; where the computed z may be negative, the product's rounding and the
    slope's difference from 0.01 add."""
    v = np.where(z.v < 0, LEAK * z.v, z.v)
    extra = (z.u * LEAK_USED + abs(LEAK_USED - LEAK)) * (np.abs(z.v) + z.e)
    return Rounded(v, z.e + np.where(z.may_be_negative(), extra, 0.0), z.u)


def _slope(d: Rounded, z: Rounded) -> Rounded:
    """evalBwd's d * (Z < 0 ? 0.01h : 1), Z the computed output. The model takes its slope from
    the exact z; the kernel from its own, which near 0 may be the other one: the bound is the
    worse of the two choices the kernel can make."""
    scaled = d * Rounded.constant(LEAK_USED, LEAK)
    v = np.where(z.v < 0, scaled.v, d.v)
    negative_possible = z.may_be_negative()
    positive_possible = (z.v + z.e >= 0) | (np.abs(z.v) - z.e < UNDERFLOW)
    e = np.maximum(np.where(negative_possible, np.abs(scaled.v - v) + scaled.e, 0.0),
                   np.where(positive_possible, np.abs(d.v - v) + d.e, 0.0))
    return Rounded(v, e, d.u)


def _groundtruth(x: Rounded, y: Rounded) -> list[Rounded]:
    yy = y * y
    return [(x + y) / (1.0 + yy), x.exact_times(2) + y, x.exact_times(0.5) * x + Rounded.constant(float(np.float16(1.2)), 1.2) * y,
            x + y.exact_times(0.5) * y]


def forward(params: np.ndarray, xy: np.ndarray):
    """(loss, inp, z1, h, z2, d) per sample; xy must be half values (what the kernel reads)."""
    from reference import unpack

    w1, b1, w2, b2 = unpack(np.asarray(params, np.float64))
    x, y = Rounded(xy[:, 0]), Rounded(xy[:, 1])
    inp = [x, y, x * x, y * y]
    z1, h = _layer(inp, w1, b1)
    z2, out = _layer(h, w2, b2)
    d = [o - g for o, g in zip(out, _groundtruth(x, y))]
    loss = d[0] * d[0]
    for di in d[1:]:
        loss = loss + di * di
    return loss, inp, z1, h, z2, d


def sample_gradients(params: np.ndarray, xy: np.ndarray) -> Rounded:
    """Each sample's gradient as the kernel adds it (n x 148, train.py's layout), bounded: the
    loss's derivative 2 d (exact doublings of the computed d), then each layer's evalBwd: the
    slope, the outer product's rounded products, the bias gradient, and W^T dz (sum from 0, in
    order) for the layer below."""
    from reference import unpack

    w1, _, w2, _ = unpack(np.asarray(params, np.float64))
    _, inp, z1, h, z2, d = forward(params, xy)
    dz2 = [_slope(di.exact_times(2), z) for di, z in zip(d, z2)]
    dh = []
    for o in range(16):
        s = Rounded(np.zeros_like(xy[:, 0]))
        for i in range(4):
            s = s + dz2[i] * float(w2[i, o])
        dh.append(s)
    dz1 = [_slope(g, z) for g, z in zip(dh, z1)]
    parts = ([dz1[o] * inp[i] for o in range(16) for i in range(4)] + dz1
             + [dz2[i] * h[j] for i in range(4) for j in range(16)] + dz2)
    return Rounded(np.stack([p.v for p in parts], axis=1), np.stack([p.e for p in parts], axis=1))


def kernel_sample_gradients(params: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """The half gradient learnGradient computes for each sample (n x 148) at `params` (half):
    one dispatch per sample, whose single value per parameter lands in a zeroed half buffer
    exactly (float32 total of one half value, rounded to half: itself)."""
    import diffc
    from train import HERE, layout, max_loss, network_of

    m = diffc.load_module(HERE / "mlp.slang")
    p, grads = diffc.Tensor.from_numpy(np.asarray(params, np.float16)), diffc.Tensor.zeros(layout()[1], np.float16)
    network = network_of(p, grads)
    rows = []
    for i in range(len(xy)):
        grads.fill(0)
        max_loss(m, network, xy[i:i + 1])
        rows.append(grads.to_numpy().astype(np.float64))
    return np.array(rows)
