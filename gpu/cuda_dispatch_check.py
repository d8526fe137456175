"""GPU check of entry-point dispatches with torch CUDA tensors (diffc/runtime/cuda_dispatch.py),
run by gpu/cuda_kernels.sh (DIFFC_DEVICE=gpu, an NVIDIA GPU):

  mlp   the MLP tutorial (examples/mlp/mlp.slang) trained --steps steps by learnGradient and
        adjustParameters over torch CUDA tensors, against the same steps over diffc Tensors
        (OpenCL); PASS when every parameter agrees within 2 half-precision ulps.
  wide  a timed training loop of the wide model (bench_distributed.wide_source, 4->64->64->64->4)
        at batch 2^14 and 2^18: diffc's own loop (learnGradient + adjustParameters on diffc
        Tensors) against torch's (learnGradient through dispatch on torch CUDA tensors, the
        gradients a torch tensor that torch.optim.SGD applies); ms per step and torch/diffc
        (issue 23: <= 1.1).

Each launch's path is printed: "cuda" (torch's stream) or the fallback's reason."""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch

import diffc
from diffc.runtime import cuda_kernels

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "examples" / "mlp"))
DEV = torch.device("cuda")


def path_of(entry: str) -> str:
    """How many of the entry's dispatches with torch tensors ran on torch's stream, how many fell back (and why)."""
    from diffc.runtime.cuda_dispatch import PATHS

    cuda, back = PATHS.get((entry, "cuda"), 0), PATHS.get((entry, "fallback"), 0)
    why = cuda_kernels.FALLBACKS.get((entry, "dispatch"))
    return f"cuda x{cuda}, fallback x{back}" + (f" (FALLBACK: {why})" if back else "")


def torch_network(p: torch.Tensor, g: torch.Tensor, layers) -> dict:
    from model import layout

    offsets, _ = layout(layers)
    return {f"layer{i + 1}": {"weights": p[w:b], "weightsGrad": g[w:b], "biases": p[b:b + o], "biasesGrad": g[b:b + o]}
            for i, ((w, b), (_, o)) in enumerate(zip(offsets, layers))}


def mlp(steps: int, n: int) -> bool:
    from model import LAYERS, init_params, layout
    from train import network_of

    m = diffc.load_module(ROOT / "examples/mlp/mlp.slang")
    _, total = layout(LAYERS)
    rng = np.random.default_rng(7)
    p0 = init_params(rng, LAYERS)
    batches = [rng.uniform(-1, 1, (n, 2)).astype(np.float32).ravel() for _ in range(steps)]
    # diffc Tensors (OpenCL)
    params, grads = diffc.Tensor.from_numpy(p0), diffc.Tensor.zeros(total, np.float16)
    network, loss = network_of(params, grads, LAYERS), diffc.Tensor.zeros(1, np.uint32)
    for xy in batches:
        loss.fill(0)
        m.learnGradient.dispatch(thread_count=n, network=network, lossBuffer=loss, inputs=diffc.Tensor.from_numpy(xy),
                                 count=n, deterministic=True)
        m.adjustParameters.dispatch(thread_count=total, params=params, gradients=grads, count=total)
    want = params.to_numpy().astype(np.float64)
    # torch CUDA tensors
    tp, tg = torch.from_numpy(p0.copy()).to(DEV), torch.zeros(total, dtype=torch.float16, device=DEV)
    tnet, tloss = torch_network(tp, tg, LAYERS), torch.zeros(1, dtype=torch.int32, device=DEV)
    for xy in batches:
        tloss.zero_()
        m.learnGradient.dispatch(thread_count=n, network=tnet, lossBuffer=tloss, inputs=torch.from_numpy(xy).to(DEV),
                                 count=n, deterministic=True)
        m.adjustParameters.dispatch(thread_count=total, params=tp, gradients=tg, count=total)
    torch.cuda.synchronize()
    got = tp.cpu().numpy().astype(np.float64)
    ulp = np.spacing(np.maximum(np.abs(want), 2.0 ** -14).astype(np.float16)).astype(np.float64)
    worst = float(np.max(np.abs(got - want) / ulp))
    moved = float(np.max(np.abs(want - p0.astype(np.float64))))
    print(f"mlp: {steps} steps at batch {n}: learnGradient {path_of('learnGradient')}, adjustParameters "
          f"{path_of('adjustParameters')}; parameters moved up to {moved:.4f}; torch vs diffc: max "
          f"{float(np.max(np.abs(got - want))):.3g} = {worst:.2f} half ulps, {int(np.sum(got == want))}/{total} equal; "
          f"last loss bits equal: "
          f"{int(tloss.cpu()[0]) == int(loss.to_numpy()[0])}")
    return worst <= 2.0 and moved > 0 and bool(np.isfinite(want).all())


def wide(log2s: list[int], seconds: float) -> list[float]:
    import bench_distributed as bd
    from model import init_params, layout
    from train import network_of

    layers = bd.MODELS["wide"]
    m = bd.load("wide")
    _, total = layout(layers)
    ratios = []
    for log2 in log2s:
        n = 1 << log2
        rng = np.random.default_rng(log2)
        p0 = init_params(rng, layers)
        xy = rng.uniform(-1, 1, (n, 2)).astype(np.float32).ravel()
        params, grads = diffc.Tensor.from_numpy(p0), diffc.Tensor.zeros(total, np.float16)
        network, loss, inputs = network_of(params, grads, layers), diffc.Tensor.zeros(1, np.uint32), diffc.Tensor.from_numpy(xy)

        def diffc_step():
            loss.fill(0)
            m.learnGradient.dispatch(thread_count=n, network=network, lossBuffer=loss, inputs=inputs, count=n)
            m.adjustParameters.dispatch(thread_count=total, params=params, gradients=grads, count=total)

        weight = torch.nn.Parameter(torch.from_numpy(p0.copy()).to(DEV))
        weight.grad = torch.zeros_like(weight)
        opt = torch.optim.SGD([weight], lr=0.01)  # the tutorial's Optimizer::step: p -= 0.01 g; g = 0
        tnet = torch_network(weight.detach(), weight.grad, layers)
        tloss, tin = torch.zeros(1, dtype=torch.int32, device=DEV), torch.from_numpy(xy).to(DEV)

        def torch_step():
            tloss.zero_()
            m.learnGradient.dispatch(thread_count=n, network=tnet, lossBuffer=tloss, inputs=tin, count=n)
            opt.step()
            opt.zero_grad(set_to_none=False)

        def timed(step, sync) -> tuple[float, int]:
            for _ in range(3):
                step()
            sync()
            t0, k = time.perf_counter(), 0
            while time.perf_counter() - t0 < seconds:
                for _ in range(5):
                    step()
                k += 5
                sync()
            return (time.perf_counter() - t0) / k, k

        if log2 == log2s[0]:  # the first steps build the programs (OpenCL's, then CUDA's: lowering, NVRTC)
            for name, step, sync in (("diffc", diffc_step, diffc.synchronize), ("torch", torch_step, torch.cuda.synchronize)):
                t = time.perf_counter()
                step()
                sync()
                print(f"wide: first {name} step (building its program) {time.perf_counter() - t:.1f} s", flush=True)
        times = {}
        for rnd in range(2):  # alternated: a clock or load change hits both
            for name, step, sync in (("diffc", diffc_step, diffc.synchronize), ("torch", torch_step, torch.cuda.synchronize)):
                t, k = timed(step, sync)
                times[name] = min(times.get(name, t), t)
        ratio = times["torch"] / times["diffc"]
        ratios.append(ratio)
        print(f"wide 2^{log2}: diffc loop {times['diffc'] * 1e3:.3f} ms/step, torch loop (dispatch on torch tensors + "
              f"torch.optim.SGD) {times['torch'] * 1e3:.3f} ms/step, torch/diffc {ratio:.3f} "
              f"({'PASS' if ratio <= 1.1 else 'FAIL'} <= 1.1); learnGradient {path_of('learnGradient')}")
    return ratios


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=["mlp", "wide"])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=256)  # (the tutorial's summed gradients at lr 0.01 overflow half by 4096)
    ap.add_argument("--log2", type=int, nargs="+", default=[14, 18])
    ap.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args()
    print("device:", torch.cuda.get_device_name())
    t = time.time()
    try:
        if a.part == "mlp":
            ok = mlp(a.steps, a.batch)
            print("PASS" if ok else "FAIL", "mlp", f"({time.time() - t:.1f} s)")
        else:
            wide(a.log2, a.seconds)
            print(f"wide done ({time.time() - t:.1f} s)")
    except Exception:
        traceback.print_exc(limit=8)
        print("FAIL", a.part, "(an exception)")
    print("FALLBACKS:", {k: v for k, v in cuda_kernels.FALLBACKS.items() if k[1] == "dispatch"} or "none")


if __name__ == "__main__":
    main()
