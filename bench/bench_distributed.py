"""Data-parallel scaling of a training step (diffc/distributed.py) over 1, 2, 4, ... processes,
one per device, started with torchrun (gloo on CPUs, NCCL where CUDA is visible).

A step: every process takes its shard of a batch of n samples, runs learnGradient over it
(gradients accumulated into its half gradient tensor), the gradients are summed over the
processes (DataParallel.all_reduce: OpenCL buffer -> host -> collective -> host -> OpenCL
buffer), and every process runs adjustParameters. Models:

  mlp    examples/mlp/mlp.slang as the tutorial writes it: 4 -> 16 -> 4 (148 parameters)
  wide   the same layers, 64 wide and 4 deep: 4 -> 64 -> 64 -> 64 -> 4 (8900 parameters); its
         Slang is mlp.slang with MyNetwork's layers replaced (wide_source)

For each model, batch and process count it prints the step time (the slowest rank's mean over
the timed steps), samples per second overall and per process, the scaling efficiency (samples
per second per process against one process), the all-reduce's share of a step (host round trip
plus collective, rank 0), the host round trip alone (download, stage, unstage, upload) and how
long rank 0 waited at a barrier before each collective for the slower ranks (not in the share).

    python bench/bench_distributed.py                       # 1 and 2 processes, batches 2^10 2^14
    python bench/bench_distributed.py --procs 1 2 4 --log2 14 18 20 --models mlp wide --steps 20

On several GPUs each process takes the OpenCL GPU of its local rank (DIFFC_DEVICE_INDEX).

Measured 2026-11-24 on this machine: PoCL, 2 cores of an AMD EPYC shared with other engineers'
work (so 2 processes share the 2 cores that 1 process already spreads its work-groups over:
no speed-up is possible here, the table measures the overhead), gloo, torch 2.13.0+cpu,
`--procs 1 2 --log2 10 12 --models mlp wide --steps 5` (one run):

  model   params   batch   procs   step ms   samples/s   per process   efficiency   all-reduce share   host round trip ms   waiting for other ranks ms
  mlp     148      2^10    1       8.349     1.227e+05   1.227e+05     1.00         2.2%               0.124                0.089
  mlp     148      2^10    2       20.484    4.999e+04   2.499e+04     0.20         29.9%              1.252                1.049
  mlp     148      2^12    1       17.161    2.387e+05   2.387e+05     1.00         1.1%               0.128                0.136
  mlp     148      2^12    2       54.566    7.507e+04   3.753e+04     0.16         5.9%               1.616                7.704
  wide    8900     2^10    1       2667.153  383.9       383.9         1.00         0.0%               1.033                0.356
  wide    8900     2^10    2       2032.109  503.9       252           0.66         0.2%               0.402                146.610
  wide    8900     2^12    1       10592.931 386.7       386.7         1.00         0.0%               0.317                0.210
  wide    8900     2^12    2       7449.159  549.9       274.9         0.71         0.1%               2.087                304.671

  Read it as overhead, not scaling: one process already spreads its work-groups over both cores,
  so two processes share the same cores (and the other engineers' work) and the step cannot get
  faster; the small model's two-process steps are dominated by the processes' contention, the
  wide one's by its arithmetic (its half gradients overflow at these batches: timings only). The
  host round trip (OpenCL buffer -> host -> torch -> host -> OpenCL buffer) costs 0.1-2 ms; the
  all-reduce as a whole (round trip and gloo) is at most 30% of the small model's step.

Measured 2026-11-24 on 2 NVIDIA H200 (one host; OpenCL on each GPU, NCCL through cuda:rank,
torch 2.11), `--procs 1 2 --log2 14 18 20 --models mlp wide --steps 20` (one run):

  model   params   batch   procs   step ms   samples/s   per process   efficiency   all-reduce share   host round trip ms   waiting for other ranks ms
  mlp     148      2^14    1       0.895     1.83e+07    1.83e+07      1.00         71.0%              0.581                0.073
  mlp     148      2^14    2       1.394     1.176e+07   5.878e+06     0.32         55.4%              0.673                0.382
  mlp     148      2^18    1       1.321     1.984e+08   1.984e+08     1.00         75.6%              0.936                0.120
  mlp     148      2^18    2       1.284     2.041e+08   1.021e+08     0.51         67.8%              0.783                0.166
  mlp     148      2^20    1       2.288     4.583e+08   4.583e+08     1.00         84.5%              1.855                0.107
  mlp     148      2^20    2       1.886     5.559e+08   2.78e+08      0.61         76.7%              1.331                0.203
  wide    8900     2^14    1       13.923    1.177e+06   1.177e+06     1.00         97.5%              13.495               0.121
  wide    8900     2^14    2       14.463    1.133e+06   5.664e+05     0.48         95.7%              13.720               0.368
  wide    8900     2^18    1       104.300   2.513e+06   2.513e+06     1.00         99.4%              103.572              0.290
  wide    8900     2^18    2       53.048    4.942e+06   2.471e+06     0.98         98.3%              51.963               0.579
  wide    8900     2^20    1       409.994   2.558e+06   2.558e+06     1.00         99.8%              409.102              0.355
  wide    8900     2^20    2       211.559   4.956e+06   2.478e+06     0.97         99.4%              210.175              0.843

  The round trip's download waits for learnGradient to finish, so "host round trip" and the
  all-reduce share include the gradient kernel's own device time: read them as an upper bound.
  The wide model scales at 0.98 / 0.97 of 2x (goal >= 0.9); the tutorial MLP's step (1-2 ms, of
  which ~1 ms is the fixed cost of reading 148 gradients back, NCCL and writing them again) does
  not: 0.32 / 0.51 / 0.61. Not run: 4 GPUs (no such machine could be had).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MLP_DIR = ROOT / "examples" / "mlp"
MODELS = {"mlp": [(4, 16), (16, 4)], "wide": [(4, 64), (64, 64), (64, 64), (64, 4)]}


def wide_source(layers) -> str:
    """mlp.slang with MyNetwork's layers replaced by `layers` ((inputs, outputs) per layer)."""
    text = (MLP_DIR / "mlp.slang").read_text()
    members = ("    public FeedForwardLayer<4, 16> layer1; // input to hidden\n"
               "    public FeedForwardLayer<16, 4> layer2; // hidden to output\n")
    chain = "        return layer2.eval(layer1.eval(input));\n"
    if members not in text or chain not in text:
        raise SystemExit("bench_distributed: examples/mlp/mlp.slang's MyNetwork changed; update wide_source")
    new_members = "".join(f"    public FeedForwardLayer<{i}, {o}> layer{k + 1};\n" for k, (i, o) in enumerate(layers))
    call = "input"
    for k in range(len(layers)):
        call = f"layer{k + 1}.eval({call})"
    return text.replace(members, new_members).replace(chain, f"        return {call};\n")


def load(model: str):
    import diffc

    if model == "mlp":
        return diffc.load_module(MLP_DIR / "mlp.slang")
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"diffc_bench_{model}.slang"
    text = wide_source(MODELS[model])
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return diffc.load_module(path)


STEP_PHASES = ("kernel", "download", "stage", "barrier", "collective", "unstage", "upload", "optimizer")


def worker(models: list[str], log2s: list[int], steps: int, warmup: int, transports: list[str]) -> None:
    """One rank (under torchrun): per model, batch and transport, times `steps` data-parallel
    steps as training runs them, then `steps` more with every phase timed (profile); rank 0
    prints one JSON line per row."""
    import torch.distributed as dist

    from diffc.distributed import DataParallel, init

    rank, world = init()
    import diffc

    sys.path.insert(0, str(MLP_DIR))
    from train import init_params, layout, network_of

    for model in models:
        layers = MODELS[model]
        m = load(model)
        _, total = layout(layers)
        for log2 in log2s:
            for transport in transports:
                n = 1 << log2
                rng = np.random.default_rng(log2)
                params = diffc.Tensor.from_numpy(init_params(rng, layers))
                grads = diffc.Tensor.zeros(total, np.float16)
                network = network_of(params, grads, layers)
                loss = diffc.Tensor.zeros(1, np.uint32)
                loss_value = loss.view(np.float32)
                fast = DataParallel([grads], transport=transport)
                profiled = DataParallel([grads], transport=transport, profile=True)
                xy = rng.uniform(-1, 1, (n, 2)).astype(np.float32)[fast.shard(n)]
                inputs = diffc.Tensor.from_numpy(xy.ravel())
                count = len(xy)
                clock = {"dispatch": 0.0, "optimizer": 0.0}

                def step(dp):
                    """A training step: the gradients and the batch's max loss, one collective for
                    both, the optimizer. Under profile it also waits for the optimizer (so that its
                    device time is not the next step's kernel wait) and times the host's dispatch."""
                    t = time.perf_counter()
                    loss.fill(0)
                    m.learnGradient.dispatch(thread_count=count, network=network, lossBuffer=loss, inputs=inputs, count=count)
                    clock["dispatch"] += time.perf_counter() - t
                    batch_max = dp.all_reduce(gather=loss_value).max()
                    t = time.perf_counter()
                    m.adjustParameters.dispatch(thread_count=total, params=params, gradients=grads, count=total)
                    if dp.profile:
                        diffc.synchronize()
                    clock["optimizer"] += time.perf_counter() - t
                    return batch_max

                def timed(dp) -> float:
                    """Seconds per step over `steps` steps, the slowest rank's."""
                    for _ in range(warmup):
                        step(dp)
                    diffc.synchronize()
                    dp.timings = dict.fromkeys(dp.timings, 0.0)
                    dp.calls = 0
                    clock.update(dispatch=0.0, optimizer=0.0)
                    dist.barrier()
                    t0 = time.perf_counter()
                    for _ in range(steps):
                        step(dp)
                    diffc.synchronize()
                    return dp.max(time.perf_counter() - t0) / steps

                step_s = timed(fast)
                profiled_s = timed(profiled)
                per = {k: v / steps for k, v in profiled.timings.items()}
                per["kernel"] += clock["dispatch"] / steps  # the kernel's dispatch and its wait
                per["optimizer"] = clock["optimizer"] / steps
                if rank == 0:
                    print("ROW " + json.dumps({
                        "model": model, "params": total, "log2": log2, "procs": world, "transport": transport,
                        "step_ms": step_s * 1e3, "profiled_step_ms": profiled_s * 1e3,
                        "phases_ms": {k: per[k] * 1e3 for k in STEP_PHASES}, "device": diffc.device().name,
                        "backend": dist.get_backend()}), flush=True)
    dist.destroy_process_group()


def table(rows: list[dict]) -> str:
    base = {(r["model"], r["log2"], r["transport"]): r for r in rows if r["procs"] == 1}
    out = ["model   params   batch   procs   transport   step ms    samples/s   per process   efficiency   |   "
           "profiled step ms   " + "   ".join(STEP_PHASES) + "   all-reduce share"]
    for r in rows:
        rate = (1 << r["log2"]) / (r["step_ms"] / 1e3)
        per = rate / r["procs"]
        b = base.get((r["model"], r["log2"], r["transport"]))
        eff = f"{per / ((1 << b['log2']) / (b['step_ms'] / 1e3)):.2f}" if b else "-"
        ph = r["phases_ms"]
        share = sum(ph[k] for k in ("download", "stage", "collective", "unstage", "upload")) / r["profiled_step_ms"]
        phases = "  ".join(f"{ph[k]:<{max(len(k), 6)}.3f}" for k in STEP_PHASES)
        out.append(f"{r['model']:<7} {r['params']:<8} 2^{r['log2']:<5} {r['procs']:<7} {r['transport']:<11} "
                   f"{r['step_ms']:<10.3f} {rate:<11.4g} {per:<13.4g} {eff:<12} |   {r['profiled_step_ms']:<18.3f} "
                   f"{phases}   {share:.1%}")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--log2", type=int, nargs="+", default=[10, 14])
    ap.add_argument("--models", nargs="+", choices=sorted(MODELS), default=["mlp", "wide"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--transport", nargs="+", choices=["device", "host"], default=["device"],
                    help="where the collective runs: the process group's device (NCCL: the GPU) or the host (gloo)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # one rank, under torchrun
    a = ap.parse_args()
    if a.worker:
        worker(a.models, a.log2, a.steps, a.warmup, a.transport)
        return
    rows = []
    for procs in a.procs:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={procs}",
               __file__, "--worker", "--steps", str(a.steps), "--warmup", str(a.warmup),
               "--log2", *map(str, a.log2), "--models", *a.models, "--transport", *a.transport]
        run = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        if run.returncode != 0:
            sys.exit(f"bench_distributed: {procs} processes failed:\n{run.stdout}{run.stderr}")
        found = [json.loads(line[4:]) for line in run.stdout.splitlines() if line.startswith("ROW ")]
        rows += found
        if found:
            print(f"# {procs} process(es) on {found[0]['device']}, {found[0]['backend']}", flush=True)
    rows.sort(key=lambda r: (r["model"], r["log2"], r["transport"], r["procs"]))
    print(table(rows))


if __name__ == "__main__":
    main()
