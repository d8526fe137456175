"""One training step of a 4 -> 64 -> 64 -> 64 -> 4 network written with Slang's cooperative
vectors (CoopVec<float, 64>, coopVecMatMulAdd; the backward of each layer built from
coopVecOuterProductAccumulate, coopVecReduceSumAccumulate and a transposed coopVecMatMul, as
Slang's examples/mlp-training-coopvec writes it) against PyTorch doing the same step.

A step: learnGradient over a batch of n samples (each work-item: one sample's forward and
backward, its gradient added into the 8,900 shared float parameters' gradients), then
adjustParameters (p -= lr * g; g = 0). Loss: sum over the batch of ||net(x) - t||^2, leaky ReLU
(slope 1/8) after every layer but the last. PyTorch: the same network from the same float32
parameters, the same loss, backward, p -= lr * grad, eagerly and through torch.compile, on the
device kind diffc runs on (CUDA for a GPU). Before timing, one step's updated parameters of
diffc, torch and a float64 numpy step are compared.

    DIFFC_DEVICE=gpu python bench/bench_coopvec.py --log2 14 18 --runs 5
    python bench/bench_coopvec.py --forms coopvec --log2 10 --runs 2 --no-torch

Rows per batch: torch eager and torch.compile once, then each of diffc's forms (`--forms`): the
CoopVec form above and the loop form (LoopStep: mlp.slang's loops widened to the same layers,
half parameters, the tutorial's data and loss; the same shape and FLOPs). TFLOP/s:
FLOP_PER_SAMPLE (52,224) x batch / diffc's step.

cooperative-layers (passes/cooperative_layers.py) sums each layer's outer products and bias sums
over the work-group's samples in local memory and adds once per element and group, in both
forms; the matrix-vector products still run per work-item (the pass's float tiles for them,
DIFFC_COOP_MATVEC=1, are slower: below). Measured 2026-11-27, one run of `--log2 14 18 20
--runs 3` on an NVIDIA H200 (NVIDIA's OpenCL, driver 580.159.04, "ptx" atomics; torch
2.11.0+cu130, float32 on CUDA), min ms of a step; ratios are torch's time over diffc's:
    batch   form      diffc    torch eager   torch.compile   diffc/eager   diffc/compile   TFLOP/s
    2^14    coopvec   0.718    2.239         1.424           3.12          1.98            1.19
    2^14    loop      1.068                                  2.10          1.33            0.80
    2^18    coopvec   5.138    3.232         1.707           0.63          0.33            2.66
    2^18    loop      7.010                                  0.46          0.24            1.95
    2^20    coopvec   18.787   10.485        4.370           0.56          0.23            2.91
    2^20    loop      26.563                                 0.39          0.165           2.06
  An earlier run the same day on an H200 (torch.compile 0.990 / 1.708 / 4.194 ms): the CoopVec
  form 0.784 / 5.024 / 18.604 ms; with the matrix-vector tiles 0.956 / 7.554 / 28.763; without
  cooperative-layers (DIFFC_COOPERATIVE=0) 3.921 ms at 2^14. Before the pass (the same kind of
  card, one run of `--log2 14 18 20 22`): 2.383 / 17.877 / 69.863 / 270.8 ms, 0.8 TFLOP/s at
  2^22; the loop form 10.9 / 82.3 ms at 2^14 / 2^18 (bench_distributed's `wide`).
  2.91 TFLOP/s is 0.6% of the tensor-core probe's 495: each work-item's own matrix-vector
  products (weights re-read per sample, float FMAs) are now most of the step.
  An NVIDIA H100 the same day (matrix-vector tiles on): 1.014 / 7.440 / 29.050 / 111.1 ms at
  2^14 / 18 / 20 / 22 against torch.compile 1.863 / 2.038 / 4.862 / 17.565; the pass off 4.157
  / 30.994 ms at 2^14 / 2^18.
  The tensor-core group product (DIFFC_COOP_MMA=1, mma.sync tiles, half inputs), H200 the same
  day, one run: 0.848 / 6.981 / 27.347 ms at 2^14 / 18 / 20 (torch.compile 1.869 / 1.427 / 4.375;
  1.01 / 1.96 / 2.00 TFLOP/s), without it 0.710 / 5.223 / 18.491 on the same machine; its step
  within 1.54e-3 of the float64 step's largest update (half inputs), against 1.16e-7 without.
  One step from the same parameters: diffc within 1.2e-7, torch within 1.1e-7 of a float64 step
  (max error over the largest update).
  PoCL (this machine's 2 cores, torch 2.14 CPU float32), CoopVec form, one run under a load of
  8-10 from other jobs: 86.1 ms at 2^10 (before the pass: 128.3 on quieter cores; with the
  matrix-vector tiles 183.0), 1568 ms at 2^14 against torch eager 1804 and torch.compile 929
  (0.59 of the better).
  PoCL, 2-core shared machine, load 7-8 (2026-11-28, `--log2 14 --runs 3`, the tree before and
  after in one sitting, before first): CPU devices now let clang reassociate coopVecMatMul's dot
  products (`#pragma clang fp reassociate`: PoCL's LLVM vectorizes no float sum kept in order)
  and interchange the transposed products' loops (interchange-matvec: rows read contiguously
  where the strided dot took gathers, the same sums):
    batch   form      diffc      torch eager   torch.compile   diffc/eager   diffc/compile
    2^14    coopvec   1043.6     162.8         236.8           0.156         0.227    before
    2^14    loop      13139      162.8         236.8           0.012         0.018    before
    2^14    coopvec   298.8      1494.7        575.9           5.00          1.93     after
    2^14    loop      14873      1494.7        575.9           0.100         0.039    after
    2^14    coopvec   761.1      1231.6        221.6           1.62          0.291    after, again (tests running)
  torch's CPU step swings 10x with the load (its two threads wait on each other when another
  job takes a core: eager 163 ms in the first run, 1495 in the second); the CoopVec step, 3.5x
  faster (learnGradient alone, alternated at 2^12: 468 -> 87 ms with the reassociation), is
  still ~0.5x of torch's best seen here (eager 163, torch.compile 159 in an earlier run). What
  is left (perf): no one loop; the forward products twice (each layer's backward recomputes
  it: merge-calls cannot merge across the pass's barriers and gradient atomics), PoCL's
  per-work-item copies of values live across barriers, the tiles' per-work-item addresses. The
  loop form (half sums in the user's order, a group of 256) is not vectorized at all.
"""

from __future__ import annotations

import argparse
import os
import time

import coopvec_network  # (beside this file: the network the CoopVec tests check too)
import numpy as np

import diffc
from diffc.runtime.module import load_module_from_string

LAYERS = [(4, 64), (64, 64), (64, 64), (64, 4)]
# a training step's multiply-adds a sample, two FLOPs each: the forward product, the backward
# product (dx; the first layer's is computed too) and the weight gradient's outer product
FLOP_PER_SAMPLE = 2 * 3 * sum(i * o for i, o in LAYERS)
LR = 1e-3

SLOPE = 0.125
SOURCE = coopvec_network.network_source(LAYERS, SLOPE, group=64) + """
[shader("compute")]
[numthreads(64, 1, 1)]
void adjustParameters(uint3 tid : SV_DispatchThreadID, float* params, float* grads, float lr, int count)
{
    if (tid.x >= count)
        return;
    params[tid.x] = params[tid.x] - lr * grads[tid.x];
    grads[tid.x] = 0.0;
}
"""


def layout():
    return coopvec_network.offsets(LAYERS)


def numpy_step(p: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """One SGD step in float64 (the reference both are compared with)."""
    return p - LR * coopvec_network.loss_gradient(p, LAYERS, samples[:, :4].T, samples[:, 4:].T, SLOPE)


class DiffcStep:
    def __init__(self, p0: np.ndarray, samples: np.ndarray):
        self.m = load_module_from_string(SOURCE, "coopvec_mlp.slang")
        self.p0, self.n = p0, len(samples)
        self.params = diffc.Tensor.from_numpy(p0.copy())
        self.grads = diffc.Tensor.from_numpy(np.zeros_like(p0))
        self.samples = diffc.Tensor.from_numpy(samples.astype(np.float32).ravel())
        offsets, _ = layout()
        self.net = {f"l{k}": dict(w=self.params.at(w), dw=self.grads.at(w), b=self.params.at(b), db=self.grads.at(b))
                    for k, (w, b) in enumerate(offsets)}

    def run(self) -> None:
        self.m.learnGradient.dispatch(thread_count=self.n, net=self.net, samples=self.samples, count=self.n)
        self.m.adjustParameters.dispatch(thread_count=len(self.p0), params=self.params, grads=self.grads,
                                         lr=np.float32(LR), count=len(self.p0))

    def sync(self) -> None:
        diffc.synchronize()


class LoopStep:
    """The loop form of the same network: examples/mlp/mlp.slang (half parameters, the
    tutorial's loops over the weights, `m[i * N + j] += a[i] * b[j]` atomic outer products) with
    its layers widened to LAYERS (bench_distributed.wide_source), its learnGradient (2 inputs x,
    y -> x, y, x^2, y^2; targets the tutorial's polynomials) and adjustParameters. The same
    network shape and FLOPs as DiffcStep; its data and loss are the tutorial's."""

    def __init__(self, p0: np.ndarray, samples: np.ndarray):
        import sys
        from pathlib import Path

        here = Path(__file__).resolve().parent
        for d in (here, here.parent / "examples" / "mlp"):
            if str(d) not in sys.path:
                sys.path.insert(0, str(d))
        from bench_distributed import wide_source
        from train import network_of, optimizer_step

        path = Path(os.environ.get("TMPDIR", "/tmp")) / "diffc_bench_coopvec_loop.slang"
        text = wide_source(LAYERS)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        self.m = diffc.load_module(path)
        self.params = diffc.Tensor.from_numpy(p0.astype(np.float16))
        self.grads = diffc.Tensor.zeros(len(p0), np.float16)
        self.network = network_of(self.params, self.grads, LAYERS)
        self.n = len(samples)
        self.inputs = diffc.Tensor.from_numpy(samples[:, :2].astype(np.float32).ravel())  # (uploaded once, as DiffcStep's)
        self.loss = diffc.Tensor.zeros(1, np.uint32)
        self.step = optimizer_step(self.m, self.params, self.grads, "sgd", None)

    def run(self) -> None:
        self.loss.fill(0)
        self.m.learnGradient.dispatch(thread_count=self.n, network=self.network, lossBuffer=self.loss,
                                      inputs=self.inputs, count=self.n)
        self.step()

    def sync(self) -> None:
        diffc.synchronize()


class TorchStep:
    def __init__(self, torch, dev, p0: np.ndarray, samples: np.ndarray, compiled: bool):
        self.torch, self.dev = torch, dev
        self.p0 = torch.tensor(p0, device=dev)
        self.p = self.p0.clone().requires_grad_(True)
        self.x = torch.tensor(samples[:, :4], dtype=torch.float32, device=dev)
        self.t = torch.tensor(samples[:, 4:], dtype=torch.float32, device=dev)
        offsets, _ = layout()

        def loss(p, x, t):
            h = x
            for k, ((n_in, n_out), (w, b)) in enumerate(zip(LAYERS, offsets)):
                y = h @ p[w:b].view(n_out, n_in).T + p[b:b + n_out]
                h = y if k == len(LAYERS) - 1 else torch.maximum(y, y * 0.125)
            return ((h - t) ** 2).sum()

        self.loss = torch.compile(loss) if compiled else loss

    def run(self) -> None:
        loss = self.loss(self.p, self.x, self.t)
        loss.backward()
        with self.torch.no_grad():
            self.p -= LR * self.p.grad
            self.p.grad = None

    def sync(self) -> None:
        if self.dev.type == "cuda":
            self.torch.cuda.synchronize()


def timed(step, runs: int) -> list[float]:
    step.run()
    step.sync()  # warm up (builds, compiles)
    out = []
    for _ in range(runs):
        step.sync()
        t0 = time.perf_counter()
        step.run()
        step.sync()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2", type=int, nargs="+", default=[14, 18])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--forms", nargs="+", choices=["coopvec", "loop"], default=["coopvec", "loop"],
                    help="diffc's rows: the CoopVec form, the loop form (mlp.slang widened)")
    args = ap.parse_args()
    print("diffc device:", diffc.device())
    _, n_params = layout()
    rng = np.random.default_rng(0)
    p0 = np.zeros(n_params, np.float32)
    for (n_in, n_out), (w, b) in zip(LAYERS, layout()[0]):
        p0[w:b] = rng.normal(0, np.sqrt(2.0 / n_in), n_in * n_out)
    torch = dev = None
    if not args.no_torch:
        import torch

        dev = torch.device("cuda" if diffc.device().kind == "gpu" and torch.cuda.is_available() else "cpu")
        print("torch", torch.__version__, dev)
    # correctness: one step from the same parameters
    check = rng.uniform(-1, 1, (256, 8))
    want = numpy_step(p0.astype(np.float64), check)
    d = DiffcStep(p0, check)
    d.run()
    d.sync()
    got = d.params.to_numpy().astype(np.float64)
    print(f"one step, 256 samples: max |diffc - float64| / max |update| = "
          f"{np.abs(got - want).max() / np.abs(want - p0).max():.2e}")
    if torch is not None:
        t = TorchStep(torch, dev, p0, check, compiled=False)
        t.run()
        print(f"                       max |torch - float64| / max |update| = "
              f"{np.abs(t.p.detach().cpu().numpy() - want).max() / np.abs(want - p0).max():.2e}")
    steps = {"coopvec": DiffcStep, "loop": LoopStep}
    print(f"{'batch':>6} {'form':>8} {'diffc ms':>10} {'eager ms':>10} {'compile ms':>11} {'diffc/eager':>12} "
          f"{'diffc/compile':>14} {'TFLOP/s':>8}")
    for k in args.log2:
        n = 1 << k
        samples = rng.uniform(-1, 1, (n, 8))
        e = c = float("nan")
        if torch is not None:
            e = min(timed(TorchStep(torch, dev, p0, samples, False), args.runs))
            c = min(timed(TorchStep(torch, dev, p0, samples, True), args.runs))
        for form in args.forms:
            d = min(timed(steps[form](p0, samples), args.runs))
            print(f"  2^{k:<3} {form:>8} {d * 1e3:10.3f} {e * 1e3:10.3f} {c * 1e3:11.3f} "
                  f"{e / d:12.3f} {c / d:14.3f} {FLOP_PER_SAMPLE * n / d / 1e12:8.2f}", flush=True)


if __name__ == "__main__":
    main()
