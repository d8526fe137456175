"""Data-parallel scaling of a training step (diffc/distributed.py) over 1, 2, 4, ... processes,
one per device, started with torchrun (gloo on CPUs, NCCL where CUDA is visible).

A step, as examples/mlp/train.py --distributed runs it: every process clears its loss, runs
learnGradient over its shard of a batch of n samples (gradients accumulated into its half
gradient tensor, the shard's largest loss into a uint32), sums the gradients over the processes
and gathers every process's loss in one collective (DataParallel.all_reduce(gather=loss)), and
runs adjustParameters. Models:

  mlp    examples/mlp/mlp.slang as the tutorial writes it: 4 -> 16 -> 4 (148 parameters)
  wide   the same layers, 64 wide and 4 deep: 4 -> 64 -> 64 -> 64 -> 4 (8900 parameters); its
         Slang is mlp.slang with MyNetwork's layers replaced (wide_source)

Each model, batch, transport and process count is timed twice over `--steps` steps. First as
training runs (step ms: the slowest rank's mean; samples per second overall and per process;
efficiency: samples per second per process against one process with the same transport). Then
with every phase timed (DataParallel(profile=True), rank 0's mean per step; profiled step ms is
that run's step, a little longer: the phases' waits cost time of their own):

  kernel      dispatching learnGradient and waiting for the device to finish it
  download    the gradients and the loss, OpenCL buffers -> host (one read each, one wait)
  stage       host -> the collective's tensor (pinned host memory -> the GPU under NCCL; none on the host)
  barrier     waiting for the slower ranks before the collective (not in the share)
  collective  the all-reduce (NCCL on the GPU, or gloo on the host)
  unstage     back to host memory (none on the host)
  upload      host -> OpenCL buffers (enqueued: its device time lands in the optimizer's)
  optimizer   dispatching adjustParameters and waiting for it
  all-reduce share = (download + stage + collective + unstage + upload) / profiled step

--transport: "device" runs the collective on the process group's device (with NCCL: two copies
to and from the GPU around it); "host" over a gloo group made once on the host (no CUDA at all,
for a few hundred bytes possibly cheaper). Under gloo both are the same collective. "shared"
keeps the gradients in memory diffc and torch share (diffc.distributed.shared_zeros: on an
NVIDIA GPU memory CUDA and OpenCL share, runtime/cuda_shared.py; on a CPU device host memory)
and sums them there: no download, stage, unstage or upload, and on the GPU no host wait (the
optimizer is queued behind the NCCL sum, and the step reads the gathered loss after queuing it).
"cuda" keeps parameters, gradients, the batch and the loss in torch CUDA tensors: learnGradient and
adjustParameters dispatch as CUDA kernels on torch's stream (runtime/cuda_dispatch.py) and the
gradients are summed by a plain NCCL all-reduce (in their half dtype) and the loss by a MAX
all-reduce, all in torch's CUDA context: no OpenCL, no copies, no context switch (its rows time
the step only; the phase columns are zero).
After the full table comes the scaling table: per model, batch and transport, the one-process
step and the efficiency at each process count (samples per second per process against one
process: the fraction of N x that N processes reach).

The runs for the shared path on a machine with 4 GPUs (2: --procs 1 2):

    python bench/bench_distributed.py --procs 1 2 4 --models mlp --log2 22 24 26 28 --steps 20 --transport shared device
    python bench/bench_distributed.py --procs 1 2 4 --models wide --log2 10 12 14 16 --steps 5 --transport shared device

    python bench/bench_distributed.py                       # 1 and 2 processes, batches 2^10 2^14
    python bench/bench_distributed.py --procs 1 2 4 --log2 22 24 26 27 28 --models mlp --steps 20 --transport device host
    python bench/bench_distributed.py --procs 1 2 4 --log2 14 18 --models wide --steps 5 --transport device host
    python bench/bench_distributed.py --collectives --procs 1 2 4 8 --steps 300   # host only

The second and third are the runs for a machine with 2 or 4 GPUs (`--procs 1` on a machine with
one); on several GPUs each process takes the OpenCL GPU of its local rank (DIFFC_DEVICE_INDEX).
The last times only gloo's collectives of the models' gradients over N processes on the host,
without a device: the host transport's collective as that machine's host gives it to N GPUs.

One process does no collective and no round trip (DataParallel with one rank only reads the
loss), so the efficiency of N processes is against a plain training step on one device.

Measured 2026-11-24 (commit after 5778bf6) on one NVIDIA H100 80GB HBM3 (OpenCL; torch 2.11,
the machine's host an Intel Xeon; one run): `--procs 1 --log2 14 18 20 22 24 26 27 28 --models
mlp --transport device host`, `--procs 1 --log2 14 18 --models wide --steps 5`, host transport
rows (device transport within 5% of them: with one rank neither makes the round trip):

  model  batch  step ms   samples/s  | kernel  download (the loss)  optimizer
  mlp    2^14   0.351     4.67e+07   | 0.212   0.042                0.118
  mlp    2^18   0.363     7.21e+08   | 0.199   0.040                0.107
  mlp    2^20   0.375     2.80e+09   | 0.215   0.039                0.109
  mlp    2^22   0.519     8.08e+09   | 0.357   0.043                0.114
  mlp    2^24   1.036     1.62e+10   | 0.853   0.061                0.135
  mlp    2^26   2.915     2.30e+10   | 2.665   0.075                0.148
  mlp    2^27   5.169     2.60e+10   | 5.028   0.050                0.104
  mlp    2^28   10.056    2.67e+10   | 9.868   0.087                0.129
  wide   2^14   10.995    1.49e+06   | 10.717  0.092                0.129
  wide   2^16   21.566    3.04e+06   | 21.136  0.160                0.242
  wide   2^17   42.122    3.11e+06   | 41.878  0.300                0.252
  wide   2^18   82.669    3.17e+06   | 82.367  0.138                0.187

(the wide model's 2^16 and 2^17 rows from a second run, `--log2 16 17 18 --steps 5 --transport
host`, whose 2^18 step took 82.515 ms)

and `--collectives --procs 1 2 4 8 --steps 300` on its host (median us; min in brackets):

  model (values)   procs:  1            2             4             8
  mlp (148 + N)   gather   56.1 (51.8)  143.4 (120.3) 377.5 (292.2) 800.7 (658.8)
                  reduce   41.2 (38.4)  208.2 (157.0) 586.8 (479.0) 1269.5 (1090.6)
  wide (8900 + N) gather   53.8 (49.9)  161.9 (133.1) 409.5 (317.2) 993.7 (771.5)
                  reduce   47.8 (36.8)  210.8 (170.5) 618.2 (525.5) 1388.9 (1118.6)

  A projection from these parts, not a measurement: N GPUs take the one-GPU step at batch n/N
  plus the host collective over N ranks plus the gradients' download and upload (~0.06 ms for
  the MLP's 148). The tutorial MLP at 2^28 would then run at 0.94 of 2x on 2 GPUs (5.169 +
  0.143 + 0.06 ms against 10.056 / 2) and 0.75 of 4x on 4 (2.915 + 0.378 + 0.06), where the
  gloo ring's latency is a tenth of the step; the wide model (8900 gradients, ~0.3 ms of
  round trip) at 2^18 at 0.97 of 2x (42.122 + 0.162 + 0.3 against 82.669 / 2) and 0.93 of 4x
  (21.566 + 0.410 + 0.3). None of it was run: no machine with more than one GPU could be had.

Measured 2026-11-24, before 5778bf6 (one rank then made the round trip and a collective), on
this machine: PoCL, 2 cores of an AMD EPYC shared with other engineers'
work (2 processes share the 2 cores that 1 process already spreads its work-groups over, so no
speed-up is possible here and the table measures overhead; the load of the others' work moved
the one-process step from 5 to 8 ms between runs), gloo, torch 2.13.0+cpu,
`--procs 1 2 --log2 10 12 --models mlp --steps 20 --transport device host` and
`--procs 1 2 --log2 10 --models wide --steps 3` (one run each; phases in ms per step):

  model  params batch procs transport  step ms   samples/s  per process  efficiency | profiled step  kernel    download  stage  barrier  collective  unstage  upload  optimizer  share
  mlp    148    2^10  1     device     5.458     1.876e+05  1.876e+05    1.00       | 5.456          5.206     0.029     0.000  0.058    0.044       0.000    0.017   0.081      1.7%
  mlp    148    2^10  2     device     9.006     1.137e+05  5.685e+04    0.30       | 10.247         3.049     0.278     0.000  3.489    3.020       0.001    0.078   0.281      33.0%
  mlp    148    2^10  1     host       5.534     1.85e+05   1.85e+05     1.00       | 5.538          5.291     0.030     0.000  0.057    0.042       0.000    0.017   0.081      1.6%
  mlp    148    2^10  2     host       7.350     1.393e+05  6.966e+04    0.38       | 11.844         3.937     0.039     0.000  4.255    2.773       0.001    0.082   0.601      24.4%
  mlp    148    2^12  1     device     21.904    1.87e+05   1.87e+05     1.00       | 28.070         26.595    0.067     0.001  0.866    0.081       0.000    0.025   0.398      0.6%
  mlp    148    2^12  2     device     24.380    1.68e+05   8.4e+04      0.45       | 23.607         11.206    0.280     0.000  6.902    3.913       0.001    0.078   1.175      18.1%
  mlp    148    2^12  1     host       26.489    1.546e+05  1.546e+05    1.00       | 25.950         25.046    0.342     0.000  0.082    0.052       0.000    0.090   0.312      1.9%
  mlp    148    2^12  2     host       26.768    1.53e+05   7.651e+04    0.49       | 27.368         20.641    0.290     0.000  5.105    1.017       0.000    0.055   0.211      5.0%
  wide   8900   2^10  1     device     1268.068  807.5      807.5        1.00       | 816.652        815.405   0.126     0.000  0.204    0.094       0.000    0.059   0.198      0.0%
  wide   8900   2^10  2     device     1108.314  923.9      462          0.57       | 1392.272       1349.811  0.087     0.000  40.265   1.711       0.000    0.066   0.279      0.1%

  Read it as overhead, not scaling. With the kernel's time in its own column, the host round
  trip of the 148 gradients and the loss (download + upload) costs 0.05-0.4 ms a step here and
  the collective on one rank 0.04-0.09 ms; with two processes on two loaded cores the
  collective (1-4 ms) and the barrier are the processes waiting for each other's turn on the
  cores. Under gloo "device" and "host" are the same collective: their differences are noise.
  (A single-process comparison on this machine, 300 reductions of the 148 half gradients and the
  batch's max loss: 0.23 ms a step with two collectives and fresh host arrays each time, 0.17 ms
  with one collective and reused staging; with 2 processes 0.88 -> 0.59 ms.)

Measured 2026-11-28 on 2 NVIDIA H200 (one host, driver 580.159.04, torch 2.11, NCCL),
`--procs 1 2 --log2 14 18 --models mlp wide --steps 10 --transport cuda shared`, one run; every
dispatch of the cuda rows ran as a CUDA kernel (no fallback):

  model   params   batch   procs   transport   step ms    samples/s   per process   efficiency
  mlp     148      2^14    1       cuda        0.372      4.405e+07   4.405e+07     1.00
  mlp     148      2^14    2       cuda        0.487      3.365e+07   1.683e+07     0.38
  mlp     148      2^14    1       shared      0.380      4.317e+07   4.317e+07     1.00
  mlp     148      2^14    2       shared      1.099      1.491e+07   7.453e+06     0.17
  mlp     148      2^18    1       cuda        0.770      3.406e+08   3.406e+08     1.00
  mlp     148      2^18    2       cuda        0.530      4.942e+08   2.471e+08     0.73
  mlp     148      2^18    1       shared      0.366      7.155e+08   7.155e+08     1.00
  mlp     148      2^18    2       shared      1.065      2.461e+08   1.231e+08     0.17
  wide    8900     2^14    1       cuda        1.256      1.304e+07   1.304e+07     1.00
  wide    8900     2^14    2       cuda        1.107      1.481e+07   7.403e+06     0.57
  wide    8900     2^14    1       shared      1.285      1.275e+07   1.275e+07     1.00
  wide    8900     2^14    2       shared      1.660      9.872e+06   4.936e+06     0.39
  wide    8900     2^18    1       cuda        9.346      2.805e+07   2.805e+07     1.00
  wide    8900     2^18    2       cuda        4.370      5.999e+07   2.999e+07     1.07
  wide    8900     2^18    1       shared      6.135      4.273e+07   4.273e+07     1.00
  wide    8900     2^18    2       shared      3.790      6.917e+07   3.458e+07     0.81
  model   batch   transport   1-process step ms   2 procs
  mlp     2^14    cuda        0.372               0.38
  mlp     2^14    shared      0.380               0.17
  mlp     2^18    cuda        0.770               0.73
  mlp     2^18    shared      0.366               0.17
  wide    2^14    cuda        1.256               0.57
  wide    2^14    shared      1.285               0.39
  wide    2^18    cuda        9.346               1.07
  wide    2^18    shared      6.135               0.81

  With no OpenCL in the step (cuda) two processes scale better than with the shared transport:
  the wide model 0.57 / 1.07 of 2x at 2^14 / 2^18 (shared 0.39 / 0.81), the MLP 0.38 / 0.73
  (0.17 / 0.17). But one process's step is slower through NVRTC's build of the same kernels
  than through NVIDIA's OpenCL: 9.3 against 6.1 ms (wide, 2^18), 0.77 against 0.37 ms (MLP,
  2^18), so the 2^18 wide row's 1.07 partly reflects the slower one-process base. 4 GPUs: not lent.

Measured 2026-11-28 on 2 NVIDIA H200 (one host, driver 580.159.04; OpenCL on each GPU, NCCL,
torch 2.11), `--procs 1 2 --log2 14 18 --models mlp wide --steps 10 --transport shared device`,
one run, the first with the shared transport finishing (it had hung: diffc/runtime/waiting.py,
ZEROING):

  model   params   batch   procs   transport   step ms    samples/s   per process   efficiency   |   profiled step ms   kernel   download   stage   barrier   collective   unstage   upload   optimizer   all-reduce share
  mlp     148      2^14    1       device      0.294      5.582e+07   5.582e+07     1.00         |   0.363              0.203   0.040     0.000   0.000    0.000       0.000    0.000   0.109       10.9%
  mlp     148      2^14    2       device      0.887      1.848e+07   9.239e+06     0.17         |   1.271              0.265   0.084     0.183   0.235    0.130       0.054    0.055   0.227       39.8%
  mlp     148      2^14    1       shared      0.383      4.275e+07   4.275e+07     1.00         |   0.391              0.198   0.000     0.000   0.000    0.000       0.000    0.000   0.106       0.0%
  mlp     148      2^14    2       shared      1.159      1.413e+07   7.067e+06     0.17         |   1.886              0.288   0.000     0.000   0.550    0.306       0.000    0.000   0.594       16.2%
  mlp     148      2^18    1       device      0.288      9.098e+08   9.098e+08     1.00         |   0.325              0.178   0.037     0.000   0.000    0.000       0.000    0.000   0.100       11.2%
  mlp     148      2^18    2       device      0.951      2.755e+08   1.378e+08     0.15         |   1.383              0.288   0.092     0.184   0.290    0.137       0.057    0.056   0.232       38.0%
  mlp     148      2^18    1       shared      0.288      9.105e+08   9.105e+08     1.00         |   0.376              0.193   0.000     0.000   0.000    0.000       0.000    0.000   0.101       0.0%
  mlp     148      2^18    2       shared      1.120      2.34e+08    1.17e+08      0.13         |   1.940              0.322   0.000     0.000   0.479    0.351       0.000    0.000   0.641       18.1%
  wide    8900     2^14    1       device      1.021      1.604e+07   1.604e+07     1.00         |   1.233              1.017   0.061     0.000   0.000    0.000       0.000    0.000   0.135       5.0%
  wide    8900     2^14    2       device      1.794      9.13e+06    4.565e+06     0.28         |   2.236              1.023   0.125     0.094   0.472    0.113       0.041    0.090   0.238       20.7%
  wide    8900     2^14    1       shared      1.018      1.609e+07   1.609e+07     1.00         |   1.187              0.982   0.000     0.000   0.000    0.000       0.000    0.000   0.111       0.0%
  wide    8900     2^14    2       shared      1.599      1.025e+07   5.123e+06     0.32         |   3.412              1.189   0.000     0.000   0.940    0.463       0.000    0.000   0.605       13.6%
  wide    8900     2^18    1       device      5.965      4.395e+07   4.395e+07     1.00         |   7.117              6.784   0.103     0.000   0.000    0.000       0.000    0.000   0.196       1.4%
  wide    8900     2^18    2       device      3.790      6.917e+07   3.459e+07     0.79         |   4.670              3.439   0.154     0.106   0.431    0.115       0.042    0.090   0.240       10.9%
  wide    8900     2^18    1       shared      6.033      4.345e+07   4.345e+07     1.00         |   6.982              6.649   0.000     0.000   0.000    0.000       0.000    0.000   0.163       0.0%
  wide    8900     2^18    2       shared      3.781      6.933e+07   3.467e+07     0.80         |   5.119              3.466   0.000     0.000   0.552    0.288       0.000    0.000   0.673       5.6%
  model   batch   transport   1-process step ms   2 procs
  mlp     2^14    device      0.294               0.17
  mlp     2^14    shared      0.383               0.17
  mlp     2^18    device      0.288               0.15
  mlp     2^18    shared      0.288               0.13
  wide    2^14    device      1.021               0.28
  wide    2^14    shared      1.018               0.32
  wide    2^18    device      5.965               0.79
  wide    2^18    shared      6.033               0.80

  Scaling is poor: two processes add 0.6-0.9 ms to every step whichever transport sums, so only
  the wide model at 2^18 (a 6 ms step) gets near (0.80 of 2x). The shared transport drops the
  download and upload (0.1-0.25 ms), but its step is no shorter: the GPU now switches between
  torch's CUDA context (NCCL) and OpenCL's at the collective (about 0.27 ms each way, as
  bench_cuda_interop.py measures), which the host round trip paid in its copies instead. 4 GPUs:
  no such machine was lent.

Measured 2026-11-24 on 2 NVIDIA H200 (one host; OpenCL on each GPU, NCCL through cuda:rank,
torch 2.11), `--procs 1 2 --log2 14 18 20 --models mlp wide --steps 20`, before the kernel wait
had its own phase and before the one-collective step (two collectives a step, staging tensors
made every step; one run; the table's columns then):

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

  Its "host round trip" and share are mis-measured: the round trip's download waited for
  learnGradient, so they include the gradient kernel's device time (the wide model's 409 ms
  "round trip" is its kernel). The wide model scaled at 0.98 / 0.97 of 2x (goal >= 0.9), the
  tutorial MLP at 0.32 / 0.51 / 0.61. Not yet run: this version on the GPUs (the second
  command above, both transports), and 4 GPUs (no such machine could be had).
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

    from diffc.distributed import DataParallel, init, shared_zeros

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
                if transport == "cuda":
                    row = cuda_row(m, layers, total, n, rng, steps, warmup, rank, world)
                    if rank == 0:
                        print("ROW " + json.dumps({
                            "model": model, "params": total, "log2": log2, "procs": world, "transport": transport,
                            **row, "device": diffc.device().name, "backend": dist.get_backend()}), flush=True)
                    continue
                params = diffc.Tensor.from_numpy(init_params(rng, layers))
                grads = shared_zeros(total, np.float16) if transport == "shared" else diffc.Tensor.zeros(total, np.float16)
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
                    gathered = dp.all_reduce(gather=loss_value, wait=False)
                    t = time.perf_counter()
                    m.adjustParameters.dispatch(thread_count=total, params=params, gradients=grads, count=total)
                    if dp.profile:
                        diffc.synchronize()
                    clock["optimizer"] += time.perf_counter() - t
                    return gathered.result().max()  # (the shared transport: read after the optimizer is queued)

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


def cuda_row(m, layers, total: int, n: int, rng, steps: int, warmup: int, rank: int, world: int) -> dict:
    """transport "cuda": `steps` data-parallel steps over torch CUDA tensors (dispatch through the
    CUDA kernel path, NCCL on the gradients where they are); the slowest rank's ms per step."""
    import torch
    import torch.distributed as dist

    from diffc.runtime import cuda_dispatch, cuda_kernels
    from train import init_params, layout

    dev = torch.device("cuda", torch.cuda.current_device())
    offsets, _ = layout(layers)
    params = torch.from_numpy(init_params(rng, layers)).to(dev)
    grads = torch.zeros(total, dtype=torch.float16, device=dev)
    network = {f"layer{i + 1}": {"weights": params[w:b], "weightsGrad": grads[w:b], "biases": params[b:b + o],
                                 "biasesGrad": grads[b:b + o]}
               for i, ((w, b), (_, o)) in enumerate(zip(offsets, layers))}
    per = n // world
    xy = rng.uniform(-1, 1, (n, 2)).astype(np.float32)[rank * per:(rank + 1) * per]
    inputs = torch.from_numpy(xy.ravel()).to(dev)
    loss = torch.zeros(1, dtype=torch.int32, device=dev)  # a float's bits: non-negative floats order as ints

    def step() -> float:
        loss.zero_()
        m.learnGradient.dispatch(thread_count=per, network=network, lossBuffer=loss, inputs=inputs, count=per)
        dist.all_reduce(grads)
        dist.all_reduce(loss, op=dist.ReduceOp.MAX)
        m.adjustParameters.dispatch(thread_count=total, params=params, gradients=grads, count=total)
        return loss.item()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    took = torch.tensor([(time.perf_counter() - t0) / steps], device=dev)
    dist.all_reduce(took, op=dist.ReduceOp.MAX)
    paths = {f"{e} {path}": count for (e, path), count in cuda_dispatch.PATHS.items()}
    falls = {str(k): v for k, v in cuda_kernels.FALLBACKS.items()}
    ms = float(took) * 1e3
    return {"step_ms": ms, "profiled_step_ms": ms, "phases_ms": dict.fromkeys(STEP_PHASES, 0.0),
            "paths": paths, "fallbacks": falls}


def collective_worker(models: list[str], steps: int) -> None:
    """One rank (under torchrun), host only: the gloo collective of each model's gradients and a
    loss per rank, all-reduced and gathered, timed over `steps` calls after a barrier each (the
    host transport's collective without a device: what a machine's host gives N GPUs)."""
    import statistics

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    world = dist.get_world_size()
    sys.path.insert(0, str(MLP_DIR))
    from train import layout

    for model in models:
        n = layout(MODELS[model])[1] + world
        t, gathered = torch.zeros(n), torch.zeros(world, n)
        parts = list(gathered)
        for name, call in (("all_reduce", lambda: dist.all_reduce(t)), ("all_gather", lambda: dist.all_gather(parts, t))):
            times = []
            for k in range(steps + 10):
                dist.barrier()
                start = time.perf_counter()
                call()
                if k >= 10:
                    times.append(time.perf_counter() - start)
            if dist.get_rank() == 0:
                print("ROW " + json.dumps({"model": model, "values": n, "procs": world, "collective": name,
                                           "median_us": statistics.median(times) * 1e6, "min_us": min(times) * 1e6}),
                      flush=True)
    dist.destroy_process_group()


def collective_table(rows: list[dict]) -> str:
    out = ["model   values   procs   collective   median us   min us"]
    for r in rows:
        out.append(f"{r['model']:<7} {r['values']:<8} {r['procs']:<7} {r['collective']:<12} "
                   f"{r['median_us']:<11.1f} {r['min_us']:.1f}")
    return "\n".join(out)


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


def scaling_table(rows: list[dict]) -> str:
    """Per model, batch and transport: the one-process step and, for each process count, the
    efficiency (samples/s per process against one process: the fraction of N x reached)."""
    procs = sorted({r["procs"] for r in rows})
    runs: dict = {}
    for r in rows:
        runs.setdefault((r["model"], r["log2"], r["transport"]), {})[r["procs"]] = r
    out = ["model   batch   transport   1-process step ms   " + "   ".join(f"{p} procs" for p in procs if p > 1)]
    for (model, log2, transport), by in runs.items():
        base = by.get(1)
        cells = []
        for p in procs:
            if p == 1:
                continue
            r = by.get(p)
            cells.append(f"{base['step_ms'] / r['step_ms'] / p:<7.2f}" if r and base else "-      ")
        step = f"{base['step_ms']:.3f}" if base else "-"
        out.append(f"{model:<7} 2^{log2:<5} {transport:<11} {step:<19} " + "   ".join(cells))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--log2", type=int, nargs="+", default=[10, 14])
    ap.add_argument("--models", nargs="+", choices=sorted(MODELS), default=["mlp", "wide"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--transport", nargs="+", choices=["device", "host", "shared", "cuda"], default=["device"],
                    help="where the collective runs: the process group's device (NCCL: the GPU), the host (gloo), "
                         "on the gradients' own memory shared by diffc and torch (no round trip), or 'cuda': torch CUDA "
                         "tensors throughout, diffc's kernels in torch's context")
    ap.add_argument("--collectives", action="store_true",
                    help="time only gloo's all-reduce and all-gather of each model's gradients over the processes "
                         "(host only, no device; --steps calls)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # one rank, under torchrun
    a = ap.parse_args()
    if a.worker:
        if a.collectives:
            collective_worker(a.models, a.steps)
        else:
            worker(a.models, a.log2, a.steps, a.warmup, a.transport)
        return
    rows = []
    for procs in a.procs:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={procs}",
               __file__, "--worker", "--steps", str(a.steps), "--warmup", str(a.warmup),
               "--log2", *map(str, a.log2), "--models", *a.models, "--transport", *a.transport,
               *(["--collectives"] if a.collectives else [])]
        run = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        if run.returncode != 0:
            sys.exit(f"bench_distributed: {procs} processes failed:\n{run.stdout}{run.stderr}")
        found = [json.loads(line[4:]) for line in run.stdout.splitlines() if line.startswith("ROW ")]
        rows += found
        if found and not a.collectives:
            print(f"# {procs} process(es) on {found[0]['device']}, {found[0]['backend']}", flush=True)
    if a.collectives:
        rows.sort(key=lambda r: (r["model"], r["collective"], r["procs"]))
        print(collective_table(rows))
        return
    rows.sort(key=lambda r: (r["model"], r["log2"], r["transport"], r["procs"]))
    print(table(rows))
    for r in rows:
        if r["transport"] == "cuda":  # which path the dispatches took, and any fallback's reason
            print(f"# {r['model']} 2^{r['log2']} {r['procs']} procs, cuda: {r['paths']} {r['fallbacks'] or ''}")
    print()
    print(scaling_table(rows))


if __name__ == "__main__":
    main()
