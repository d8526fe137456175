"""The CoopVec network that bench_coopvec.py times and the CoopVec tests check (Slang source and
its float64 numpy model), written once: a layer `Layer<I, O>` whose matMulAdd has a backward
derivative built from coopVecOuterProductAccumulate, coopVecReduceSumAccumulate and a transposed
coopVecMatMul, leaky ReLU (max(y, y * slope)) after every layer but the last, and a loss
sum ||net(x) - t||^2.

The parameters are one flat array: each layer's O x I weights (row-major), then its O biases
(`offsets`). A sample is its inputs then its targets, one row of `samples`."""

from __future__ import annotations

import numpy as np

HEADER = "static const CoopVecComponentType F = CoopVecComponentType.Float32;\n"

LAYER = """
struct Layer<int I, int O>
{
    float* w;
    float* dw;
    float* b;
    float* db;

    CoopVec<float, O> matMulAdd(CoopVec<float, I> x)
    {
        return coopVecMatMulAdd<float, O>(x, F, w, F, b, F, CoopVecMatrixLayout.LAYOUT, false, 0);
    }

    [BackwardDerivativeOf(matMulAdd)]
    void matMulAddBwd(inout DifferentialPair<CoopVec<float, I>> x, CoopVec<float, O> g)
    {
        coopVecOuterProductAccumulate(g, x.p, dw, 0, CoopVecMatrixLayout.LAYOUT, F);
        coopVecReduceSumAccumulate(g, db);
        x = diffPair(x.p, coopVecMatMul<float, I>(g, F, w, F, CoopVecMatrixLayout.TrainingOptimal, true, 0));
    }

    [Differentiable]
    CoopVec<float, O> eval(CoopVec<float, I> x)
    {
        let y = matMulAdd(x);
        return max(y, y * SLOPE);
    }
}
"""


def layer_source(slope: float, layout: str = "TrainingOptimal") -> str:
    """`Layer<I, O>`: weights in `layout` (RowMajor or an optimal one; packed either way) for
    the product and the outer product; the transposed product needs an optimal layout."""
    return LAYER.replace("LAYOUT", layout).replace("SLOPE", repr(float(slope)))


def network_source(layers: list[tuple[int, int]], slope: float, group: int, layout: str = "TrainingOptimal",
                   condition: str = "") -> str:
    """HEADER, the layer, `struct Network` of `layers` ((inputs, outputs) each), the loss and the
    kernel learnGradient(net, samples, count): one sample a work-item, `group` work-items a
    group, the backward pass under `condition` (a statement prefix such as `if (...)`, or none)."""
    n_in, n_out = layers[0][0], layers[-1][1]
    fields = "".join(f"    Layer<{i}, {o}> l{k};\n" for k, (i, o) in enumerate(layers))
    chain = "x"
    for k in range(len(layers) - 1):
        chain = f"l{k}.eval({chain})"
    chain = f"l{len(layers) - 1}.matMulAdd({chain})"
    step = "    bwd_diff(loss)(net, x, t, 1.0);"
    if condition:
        step = f"    {condition}\n    {step}"
    squares = " + ".join(f"d[{k}] * d[{k}]" for k in range(n_out))
    return HEADER + layer_source(slope, layout) + f"""
struct Network
{{
{fields}
    [Differentiable]
    CoopVec<float, {n_out}> eval(CoopVec<float, {n_in}> x) {{ return {chain}; }}
}}

[Differentiable]
float loss(Network net, no_diff CoopVec<float, {n_in}> x, no_diff CoopVec<float, {n_out}> t)
{{
    let d = net.eval(x) - t;
    return {squares};
}}

[shader("compute")]
[numthreads({group}, 1, 1)]
void learnGradient(uint3 tid : SV_DispatchThreadID, Network net, float* samples, int count)
{{
    if (tid.x >= count)
        return;
    let x = coopVecLoad<{n_in}>(samples + tid.x * {n_in + n_out});
    let t = coopVecLoad<{n_out}>(samples + tid.x * {n_in + n_out} + {n_in});
{step}
}}
"""


def offsets(layers: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], int]:
    """Each layer's (weights, biases) offsets in the flat parameters, and their length."""
    out, at = [], 0
    for n_in, n_out in layers:
        out.append((at, at + n_in * n_out))
        at += n_in * n_out + n_out
    return out, at


def forward(p: np.ndarray, layers, x: np.ndarray, slope: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """In float64, x (inputs x samples): each layer's input and, after the loop, the output
    (`hs`), and each layer's product plus bias (`ys`)."""
    hs, ys = [np.asarray(x, np.float64)], []
    for k, ((n_in, n_out), (w, b)) in enumerate(zip(layers, offsets(layers)[0])):
        y = p[w:b].reshape(n_out, n_in) @ hs[-1] + p[b:b + n_out, None]
        ys.append(y)
        hs.append(y if k == len(layers) - 1 else np.maximum(y, y * slope))
    return hs, ys


def loss(p: np.ndarray, layers, x: np.ndarray, t: np.ndarray, slope: float) -> float:
    """The loss summed over the samples (columns of x and t), in float64."""
    hs, _ = forward(p, layers, x, slope)
    return float(((hs[-1] - t) ** 2).sum())


def loss_gradient(p: np.ndarray, layers, x: np.ndarray, t: np.ndarray, slope: float) -> np.ndarray:
    """The summed loss's gradient in the parameters, in float64. Where y = 0 the activation's
    slope is the mean of 1 and `slope` (half of each, as diffc's max differentiates a tie)."""
    hs, ys = forward(p, layers, x, slope)
    g = 2 * (hs[-1] - t)
    grad = np.zeros_like(p, dtype=np.float64)
    for k in reversed(range(len(layers))):
        (n_in, n_out), (w, b) = layers[k], offsets(layers)[0][k]
        if k != len(layers) - 1:
            g = g * np.where(ys[k] > 0, 1.0, np.where(ys[k] == 0, (1 + slope) / 2, slope))
        grad[w:b] = (g @ hs[k].T).ravel()
        grad[b:b + n_out] = g.sum(axis=1)
        g = p[w:b].reshape(n_out, n_in).T @ g
    return grad
