"""One training step of examples/mlp/mlp.slang (Slang's MLP tutorial: 4 -> 16 -> 4, leaky ReLU,
half precision parameters) against PyTorch doing the same step, side by side.

A step is learnGradient over a batch of n samples (each thread: one sample's backward pass,
adding its gradient into the 148 shared half parameters with atomic adds, and its loss into the
batch's largest loss) then adjustParameters (SGD, lr 0.01, and the gradients cleared). PyTorch's
step: the same network from the same parameters, loss = sum over the batch of
||MLP(x, y) - f(x, y)||^2 (and the batch's largest loss), backward, p -= lr * grad, on the same
kind of device as diffc: float16 parameters on CUDA when diffc runs on a GPU, float32 on the CPU
when diffc runs on a CPU (PoCL), eagerly and through torch.compile. Every timed run starts from
the same parameters (reset before the clock starts). Rows run round-robin (diffc's among
themselves, then torch's); the ratios use each row's minimum.

Before timing, one step from identical parameters on identical (half-representable) inputs is
compared: diffc's and torch's updated parameters against each other and against a float64
numpy step (examples/mlp/reference.py).

    python bench/bench_mlp.py                        # 2^10 ... 2^22 on a GPU, 2^10 ... 2^18 on a CPU
    python bench/bench_mlp.py --log2 10 14 --runs 5 --no-torch
    python bench/bench_mlp.py --log2 10 14 18 20 22 --no-racy    # the issue's table

Rows per batch: the default build's step (accumulate-gradients: a grid-stride loop, private
sums, one transposed reduction per work-group, per-group partial sums added in a fixed order by a
finish kernel: deterministic), the host time of enqueueing that step (dispatch plans replay the
bound kernels; bounds checks deferred), the same step with deterministic=False (one atomic per
group and parameter), the step built with reduce-atomics alone (DIFFC_ACCUMULATE=0), and
learnGradient with racy plain adds (*, unless --no-racy).

Measured 2026-11-24 (latest), one run of `--log2 10 14 18 20 22 --runs 20 --no-racy` on an
NVIDIA H100 80GB HBM3 (NVIDIA's OpenCL, driver 580.159.04, "ptx" atomics; torch 2.11.0+cu130,
float16 on CUDA); min ms; ratios are step throughput over torch.compile's:
    batch   learnGradient (default)   atomics per group   reduce-atomics only   diffc / torch.compile (dispatched, captured step)
    2^10    0.029                     0.075               0.090                 12.5   17.0
    2^14    0.028                     0.315               0.171                 14.1   19.0
    2^18    0.031                     1.439               1.230                 12.9   18.8
    2^20    0.057                     1.366               3.605                 10.0   14.1
    2^22    0.170                     1.215               7.782                  8.18   8.98
  At 2^22: diffc step 0.218 ms dispatched, 0.199 captured, device time of both kernels 0.174,
  torch.compile 1.782, torch eager 2.441. diffc's own Python in a step (its launches stubbed):
  0.028-0.043 ms dispatched (min; medians 0.036-0.047), 0.005-0.008 captured. The host time of a
  dispatched step varies run to run on this machine (an earlier run the same day gave 0.290 ms at
  2^22, 7.22x). Deterministic mode (the default) is also the fastest: atomics per group is 4-40x
  slower on the GPU.

  PoCL on this machine's 2 cores (AMD EPYC) on quiet cores (load 0.02-0.66), torch 2.13.0+cpu
  float32, the same day, `--log2 14 18 --runs 5 --no-racy`, min ms:
    batch   diffc step   captured   learnGradient (determ.)   atomics per group   reduce-atomics only   torch eager   torch.compile   diffc / torch.compile (dispatched, captured)
    2^14    1.173        1.132      1.109                     1.099               13.449                1.592         3.260           2.78   2.88
    2^18    17.349       17.228     17.207                    17.226              214.891               30.400        54.430          3.14   3.16
  The accumulated kernel's group is one work-item on CPU devices (kernel_settings.work_group: no
  barrier, so PoCL keeps the 148 private sums in registers; 64 work-items took 19.3 / 321 ms in
  bench_accumulate_sweep.py), and so are the finish kernel's groups (kernel_settings.finish_group:
  0.15 ms with 256, 0.009 with one), so deterministic mode costs what atomics per group costs
  (1.03 / 1.00x here). Before (64 work-items): 0.59 / 0.63 of torch.compile on quiet cores. Runs
  on loaded cores (load 2-4.6, while other engineers' tests ran) gave 3.2-6.1 / 1.7-7.8x: torch's
  step slows far more under load than diffc's, so only quiet-core ratios are quoted.


Measured 2026-11-21, millions of samples per second from the minimum time of 10 runs (GPU) or
5 (CPU); learnGradient ms: its minimum device time; ratio = diffc's throughput / torch's (> 1:
diffc faster):

  NVIDIA H200 (diffc on NVIDIA's OpenCL, driver 580.159.04, "ptx" atomics; reduce-atomics: each
  work-group sums its 256 samples' gradients in local memory, then one warp-aggregated
  red.global.add.noftz.f16 per parameter and group; torch 2.11.0+cu130, float16 on CUDA)
    batch   diffc step   learnGradient ms   learnGradient, adds not atomic (*)   torch eager   torch.compile   ratio eager / compile
    2^10    4.86         0.084              34.1                                  1.31          1.65            3.71  / 2.95
    2^14    55.0         0.169              88.0                                  19.6          24.5            2.81  / 2.24
    2^18    188          1.25               48.6                                  336           405             0.56  / 0.465

  the same H200, next run, without reduce-atomics (DIFFC_REDUCE_ATOMICS=0: every work-item's
  half add goes to the warp-aggregated red)
    2^10    4.67         0.094              34.4
    2^14    24.7         0.532              88.8
    2^18    10.0         25.6               48.7

  earlier, the same kind of H200 (half adds: a compare-and-swap loop on the 32-bit word)
    2^10    0.483        1.96               34.6
    2^14    0.461        35.7               87.2
    2^18    0.116        2542               48.8

  CPU: PoCL on 2 cores of an AMD EPYC shared with other work (noisy), torch 2.13.0+cpu, float32
    batch   diffc step   learnGradient, adds not atomic (*)   torch eager   torch.compile   ratio eager / compile
    2^10    0.285        0.442                                 3.40          2.88            0.084 / 0.099
    2^14    0.341        0.449                                 15.8          6.81            0.022 / 0.050
    2^18    0.350        0.454                                 1.53          1.34            0.23  / 0.26
  (before reduce-atomics; with it, learnGradient's median device time on the same, busier cores,
  reduce-atomics on / off in consecutive runs: 4.02 / 5.74 ms at 2^10, 64.6 / 91.4 ms at 2^14,
  967 / 1393 ms at 2^18, about 1.4x faster)

  One step at batch 256 from the same parameters: max |diffc - torch| 0.0020 on the H200 (0.0029
  without reduce-atomics, 0.0088 with compare-and-swap adds), 0.0082 on the CPU (largest update
  3.17; at most 0.28 of the half-precision tolerance, step_tolerance, on the H200).

  2026-11-24, the same PoCL, with accumulate-gradients (one run of `--log2 14 18 --runs 3`, the 2
  cores shared with about a dozen other busy processes, load average ~14: torch's own step took
  0.9-1.2 s where it takes milliseconds on idle cores, so read only the ratios within a batch);
  min ms of learnGradient's device time (step ms for torch):
    batch   accumulate-gradients   deterministic   reduce-atomics only   racy adds (*)   torch eager   torch.compile
    2^14    602                    455             523                   601             420           900
    2^18    7994                   10370           7445                  9232            2028          1213
  Step ratio diffc / torch.compile: 1.38 at 2^14, 0.13 at 2^18. On this CPU the four strategies
  cost the same within the noise: the per-sample work (three forward passes and the hand-written
  backward, sample by sample) is the time, not the accumulation; the pass's gain is on GPUs, where
  the issue's hand-written kernel of the same shape reaches 0.097 ms at 2^20 (not measured here).

Where the time goes: every thread adds its sample's gradient into the same 148 half parameters
with atomic adds. A compare-and-swap loop on the 32-bit word holding two halves makes all threads
of the batch contend for 74 words and retry: learnGradient took 66x (2^10), 190x (2^14) and 473x
(2^18) the time of the same kernel with plain (racy) adds (*). Warp aggregation (the lanes of a
warp sum with shuffles, one lane issues a native half `red`, backend/opencl/ptx_atomics.py) made
that 3.1x, 2.9x and 4.8x. The reduce-atomics pass (passes/reduce_atomics.py) now sums each
work-group's gradients in local memory first (tree reductions of up to 16 parameters at a time,
one red per parameter and group): 2.8x, 0.91x and 0.23x the racy kernel, whose plain
read-modify-writes of the same 148 halves from every sample contend too; 3.1x faster than warp
aggregation at 2^14 and 20x at 2^18. diffc's step beats torch's launch-bound one (~0.7 ms) up to
2^14; at 2^18 torch's batched matrix products are 1.8x (eager) and 2.2x (compiled) faster. On the
CPU the rest is per-sample work (three forward passes, the hand-written backward's loops) run
sample by sample, against torch's batched matrix products.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import diffc

MLP_DIR = Path(__file__).resolve().parent.parent / "examples" / "mlp"
sys.path.insert(0, str(MLP_DIR))
from reference import LEAK, LEARNING_RATE, N_PARAMS, groundtruth_columns, sample_grads, sgd_step, unpack  # noqa: E402
from train import init_params, network_of  # noqa: E402

sys.path.remove(str(MLP_DIR))


def half_inputs(n: int, rng: np.random.Generator) -> np.ndarray:
    """n x 2 float32 inputs in [-1, 1] that float16 holds exactly (the kernel reads them as half)."""
    return rng.uniform(-1, 1, (n, 2)).astype(np.float16).astype(np.float32)


def step_tolerance(p0: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Per parameter, how far one half-precision step may land from the float64 one. Each of the
    n atomic half additions into a gradient rounds by at most u * |partial sum| <= u * S (S: the
    sum over the samples of that parameter's |gradient|, u = 2^-11, the unit roundoff of half);
    as a random walk the n roundings come to about sqrt(n) * u * S, of which 3x is allowed. The
    stored parameter rounds to half too: one ulp of it (float16's) is allowed, half an ulp for
    the rounding and half for the gradient's error carrying it across a rounding boundary."""
    u = 2.0**-11
    s = np.abs(sample_grads(p0, xy)).sum(axis=0)
    new = np.abs(sgd_step(p0, xy)).astype(np.float16)
    return LEARNING_RATE * 3 * np.sqrt(len(xy)) * u * s + np.spacing(new).astype(np.float64)


def load_variant(accumulate: bool):
    """The MLP module built with accumulate-gradients (the default) or with reduce-atomics
    alone (DIFFC_ACCUMULATE=0 DIFFC_COOPERATIVE=0), its entry points lowered and built now."""
    from diffc.runtime.device import settings_changed
    from diffc.runtime.dispatch import entry_program

    changes = {"accumulate": True} if accumulate else {"accumulate": False, "cooperative": False}
    with settings_changed(**changes):
        m = diffc.load_module(MLP_DIR / "mlp.slang")
        entry_program(m)
    return m


class DiffcStep:
    """diffc's training step on one batch, with its tensors allocated once."""

    def __init__(self, m, p0: np.ndarray, xy: np.ndarray, deterministic: bool | None = None):
        self.deterministic = deterministic
        self.m, self.p0, self.n = m, diffc.Tensor.from_numpy(p0.astype(np.float16)), len(xy)
        self.params = self.p0.clone()
        self.grads = diffc.Tensor.zeros(N_PARAMS, np.float16)
        self.loss = diffc.Tensor.zeros(1, np.uint32)
        self.inputs = diffc.Tensor.from_numpy(np.ascontiguousarray(xy, np.float32).ravel())
        self.network = network_of(self.params, self.grads)

    def reset(self) -> None:
        self.params.copy_(self.p0)
        self.grads.fill(0)
        self.loss.fill(0)

    def run(self):
        """Enqueues the step; returns the two kernels' OpenCL events."""
        # deferred bounds checks, as a training loop would: the step does not wait for the device
        learn = self.m.learnGradient.dispatch(thread_count=self.n, network=self.network, lossBuffer=self.loss,
                                              inputs=self.inputs, count=self.n, deterministic=self.deterministic,
                                              deferred_checks=True)
        adjust = self.m.adjustParameters.dispatch(thread_count=N_PARAMS, params=self.params, gradients=self.grads,
                                                  count=N_PARAMS, deferred_checks=True)
        return learn, adjust


class TorchStep:
    """The same step in PyTorch: one flat parameter tensor, the layers views into it."""

    def __init__(self, torch, dev, dtype, p0: np.ndarray, xy: np.ndarray, compiled: bool):
        self.torch = torch
        self.p0 = torch.from_numpy(p0.astype(np.float32)).to(dev, dtype)
        self.p = self.p0.clone().requires_grad_(True)
        self.xy = torch.from_numpy(np.ascontiguousarray(xy, np.float32)).to(dev, dtype)
        self.losses = torch.compile(self.losses_of, dynamic=False) if compiled else self.losses_of

    @staticmethod
    def losses_of(p, xy):
        """(sum over the batch of each sample's loss, the largest sample loss)."""
        import torch
        import torch.nn.functional as F

        w1, b1, w2, b2 = unpack(p)
        x, y = xy[:, 0], xy[:, 1]
        h = F.leaky_relu(torch.stack([x, y, x * x, y * y], dim=1) @ w1.T + b1, LEAK)
        out = F.leaky_relu(h @ w2.T + b2, LEAK)
        gt = torch.stack(groundtruth_columns(x, y), dim=1)
        per_sample = ((out - gt) ** 2).sum(dim=1)
        return per_sample.sum(), per_sample.max()

    def reset(self) -> None:
        with self.torch.no_grad():
            self.p.copy_(self.p0)
        self.p.grad = None

    def run(self) -> None:
        total, _largest = self.losses(self.p, self.xy)
        total.backward()
        with self.torch.no_grad():
            self.p.sub_(self.p.grad, alpha=LEARNING_RATE)
        self.p.grad = None  # as adjustParameters clears the gradients


def torch_target():
    """(torch, device, dtype, words) for PyTorch on the same kind of device as diffc's, or None
    where torch (or CUDA, for a GPU) is missing."""
    try:
        import torch
    except ImportError:
        return None
    if diffc.device().kind == "gpu":
        if not torch.cuda.is_available():
            return None
        return torch, torch.device("cuda"), torch.float16, "cuda, float16"
    return torch, torch.device("cpu"), torch.float32, "cpu, float32"


def check_step(n: int = 256, seed: int = 0, with_torch: bool = True) -> dict:
    """One step from identical parameters on identical inputs: the updated parameters of diffc,
    of torch (when with_torch and torch_target() has one) and of the float64 reference. Returns
    {"p0", "xy", "reference", "diffc", "diffc_grads" (after the step), "torch" (or None),
    "torch_where"}, parameters in float64."""
    rng = np.random.default_rng(seed)
    p0 = init_params(rng)
    xy = half_inputs(n, rng)
    m = diffc.load_module(MLP_DIR / "mlp.slang")
    step = DiffcStep(m, p0, xy)
    step.run()
    out = {"p0": p0, "xy": xy, "reference": sgd_step(p0, xy),
           "diffc": step.params.to_numpy().astype(np.float64), "diffc_grads": step.grads.to_numpy(),
           "torch": None, "torch_where": None}
    target = torch_target() if with_torch else None
    if target is not None:
        torch, dev, dtype, where = target
        ts = TorchStep(torch, dev, dtype, p0, xy, compiled=False)
        ts.run()
        out["torch"] = ts.p.detach().to("cpu", torch.float64).numpy()
        out["torch_where"] = where
    return out


# learnGradient with its atomic half adds made plain read-modify-writes: racy (concurrent adds to
# one parameter are lost), so its results are wrong; only its time says what the atomics cost.
# The half add is a compare-and-swap helper that returns the old value, or (NVIDIA's "ptx" atomics)
# a warp-aggregated red that returns nothing; whichever the program has is replaced.
_RACY_HALF_ADDS = {
    "diffc_atomic_fetch_add_half_global": """float diffc_atomic_fetch_add_half_global(volatile __global half* p, float v) {
    float old = vload_half(0, (__global half*)p);
    vstore_half(old + v, 0, (__global half*)p);
    return old;
}
""",
    "diffc_warp_atomic_add_f16": """void diffc_warp_atomic_add_f16(volatile __global half* p, float v) {
    vstore_half(vload_half(0, (__global half*)p) + v, 0, (__global half*)p);
}
""",
}


def racy_source(source: str) -> str:
    """`source` with its half atomic add helper replaced by the racy one."""
    for name, racy in _RACY_HALF_ADDS.items():
        start = source.find(f" {name}(volatile")
        if start >= 0:
            start = source.rindex("\n", 0, start) + 1
            end = source.index("\n}\n", start) + 3
            return source[:start] + racy + source[end:]
    raise ValueError("learnGradient's program has no half atomic add helper")


class RacyLearnGradient:
    """The diffc step's learnGradient, rebuilt with racy_source, on the step's arguments. It is
    built without reduce-atomics: every work-item adds (racily) into the parameters, the kernel
    the atomics' cost is measured against."""

    def __init__(self, m, step: DiffcStep):
        import pyopencl as cl

        from diffc.runtime.device import settings_changed
        from diffc.runtime.dispatch import bind, entry_program
        from diffc.runtime.program import build_program

        with settings_changed(reduce_atomics=False, accumulate=False):
            prog = entry_program(diffc.load_module(m.path))
        source = racy_source(prog.source)
        options = tuple(prog.build_options)
        kernel = prog.kernels["learnGradient"]
        self.kernel = cl.Kernel(build_program(source, options), kernel.c_name)
        self.kernel.set_args(*bind("learnGradient (racy)", kernel, {
            "network": step.network, "lossBuffer": step.loss, "inputs": step.inputs, "count": step.n}, prog.index_dtype))
        self.prog = prog  # owns the bounds-check status buffer the kernel's arguments point at
        self.local_size = kernel.numthreads
        self.global_size = (-(-step.n // kernel.numthreads[0]) * kernel.numthreads[0], 1, 1)
        self.step = step

    def reset(self) -> None:
        self.step.reset()

    def run(self):
        import pyopencl as cl

        return (cl.enqueue_nd_range_kernel(diffc.device().queue, self.kernel, self.global_size, self.local_size),)


class CapturedStep:
    """The same step recorded once with diffc.capture() and replayed (no argument comparison)."""

    def __init__(self, step: DiffcStep):
        self.step = step
        with diffc.capture() as self.replay:
            step.run()
        diffc.synchronize()

    def reset(self) -> None:
        self.step.reset()

    def run(self):
        return (self.replay(),)


class Row:
    """One line of the table: measure() gives the seconds of one run (the step's parameters reset
    first, outside the clock)."""

    def __init__(self, name: str, n: int, measure):
        self.name, self.n, self.measure = name, n, measure
        self.times: list[float] = []


def host_timed(step, sync):
    def measure() -> float:
        step.reset()
        sync()
        t0 = time.perf_counter()
        step.run()
        sync()
        return time.perf_counter() - t0

    return measure


def python_timed(step, sync):
    """The host time of enqueueing one step (Python and the OpenCL enqueues; nothing waits)."""

    def measure() -> float:
        step.reset()
        sync()
        t0 = time.perf_counter()
        step.run()
        t = time.perf_counter() - t0
        sync()
        return t

    return measure


def python_only_timed(step, sync):
    """diffc's own host Python in enqueueing one step: the same as python_timed with the kernel
    launches themselves stubbed out (pyopencl.enqueue_nd_range_kernel returns a ready event), so
    what is left is the argument checks, plan replays, bounds and status bookkeeping."""
    import pyopencl as cl

    ready = cl.enqueue_marker(diffc.device().queue)

    def measure() -> float:
        step.reset()
        sync()
        real, cl.enqueue_nd_range_kernel = cl.enqueue_nd_range_kernel, lambda *a, **k: ready
        try:
            t0 = time.perf_counter()
            step.run()
            t = time.perf_counter() - t0
        finally:
            cl.enqueue_nd_range_kernel = real
        sync()
        return t

    return measure


def device_timed(step, which: slice):
    """The profiled device time of the step's kernels `which` (of learnGradient, adjustParameters)."""

    def measure() -> float:
        step.reset()
        events = step.run()
        for ev in events:
            ev.wait()
        return sum((ev.profile.end - ev.profile.start) * 1e-9 for ev in events[which])

    return measure


def round_robin(rows: list[Row], runs: int) -> None:
    for row in rows:
        row.measure()  # warm-up: builds, compiles, allocates
    for _ in range(runs):
        for row in rows:
            row.times.append(row.measure())


def diffc_rows(m, p0: np.ndarray, xy: np.ndarray, m_reduce=None, racy: bool = True) -> list[Row]:
    """Rows 0-2: the default build (accumulate-gradients); then deterministic mode, then (with
    m_reduce, built by load_variant(False)) reduce-atomics alone, then (racy) the racy kernel."""
    step, n, sync = DiffcStep(m, p0, xy), len(xy), diffc.device().queue.finish  # the default: deterministic
    det = DiffcStep(m, p0, xy, deterministic=False)
    captured = CapturedStep(DiffcStep(m, p0, xy))
    rows = [
        Row("diffc step (learnGradient + adjustParameters)", n, host_timed(step, sync)),
        Row("  device time: both kernels", n, device_timed(step, slice(0, 2))),
        Row("  device time: learnGradient", n, device_timed(step, slice(0, 1))),
        Row("  host: enqueueing the step (no wait)", n, python_timed(step, sync)),
        Row("diffc captured step (diffc.capture, replayed)", n, host_timed(captured, sync)),
        Row("  host: enqueueing the captured step (no wait)", n, python_timed(captured, sync)),
        Row("  host: Python of the step (launches stubbed)", n, python_only_timed(step, sync)),
        Row("  host: Python of the captured step (stubbed)", n, python_only_timed(captured, sync)),
        Row("diffc step, atomics per group (determ.=False)", n, host_timed(det, sync)),
        Row("  device time: learnGradient, atomics per group", n, device_timed(det, slice(0, 1))),
    ]
    if m_reduce is not None:
        ra = DiffcStep(m_reduce, p0, xy)
        rows += [Row("diffc step, reduce-atomics only", n, host_timed(ra, sync)),
                 Row("  device time: learnGradient, reduce-atomics only", n, device_timed(ra, slice(0, 1)))]
    if racy:
        rows.append(Row("  device time: learnGradient, adds not atomic (*)", n,
                        device_timed(RacyLearnGradient(m, step), slice(0, 1))))
    return rows


def torch_rows(target, p0: np.ndarray, xy: np.ndarray) -> list[Row]:
    torch, dev, dtype, where = target
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    rows = [Row(f"torch eager step ({where})", len(xy), host_timed(TorchStep(torch, dev, dtype, p0, xy, False), sync))]
    try:
        compiled = TorchStep(torch, dev, dtype, p0, xy, True)
        compiled.run()  # compiles here, so a missing toolchain is caught now
        rows.append(Row(f"torch.compile step ({where})", len(xy), host_timed(compiled, sync)))
    except Exception as e:  # no compiler toolchain: say so, keep the rest
        print(f"torch.compile unavailable: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2", type=int, nargs="+", default=None,
                    help="batch sizes 2^LOG2 (default: 10 14 18 20 22 on a GPU, 10 14 18 on a CPU)")
    ap.add_argument("--no-racy", action="store_true", help="skip the racy-adds row (its build is slow)")
    ap.add_argument("--no-reduce-atomics", action="store_true", help="skip the reduce-atomics-only rows")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per row (default 10)")
    ap.add_argument("--check-batch", type=int, default=256, help="batch of the one-step comparison (default 256)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args(argv)

    print(f"device: {diffc.device()!r}")
    if args.log2 is None:
        args.log2 = [10, 14, 18, 20, 22] if diffc.device().kind == "gpu" else [10, 14, 18]
    target = None if args.no_torch else torch_target()
    if target is not None:
        torch = target[0]
        name = torch.cuda.get_device_name() if target[1].type == "cuda" else "cpu"
        print(f"torch {torch.__version__} on {name} ({target[3]}), {torch.get_num_threads()} CPU threads")
    elif not args.no_torch:
        print("torch: not importable (or no CUDA for a GPU run): diffc alone")

    c = check_step(args.check_batch, args.seed, with_torch=target is not None)
    tol = step_tolerance(c["p0"], c["xy"])
    update = np.abs(c["reference"] - c["p0"]).max()
    print(f"\none step, batch {args.check_batch}, same parameters and inputs (largest update {update:.4g}, "
          f"half-precision tolerance {tol.min():.3g} to {tol.max():.3g}):")
    pairs = [("diffc", "reference")] + ([("torch", "reference"), ("diffc", "torch")] if c["torch"] is not None else [])
    for a, b in pairs:
        diff = np.abs(c[a] - c[b])
        print(f"  max |{a} - {b}| = {diff.max():.3g}   largest share of the tolerance {np.max(diff / tol):.3f}")
    if c["torch"] is not None:
        print(f"  (torch: {c['torch_where']})")

    m = load_variant(True)
    m_reduce = None if args.no_reduce_atomics else load_variant(False)
    rng = np.random.default_rng(args.seed)
    p0 = init_params(rng)
    print(f"\n{args.runs} runs per row; samples/s from the min and median time")
    print(f"{'batch':>8s} {'what':48s} {'min ms':>9s} {'median ms':>10s} {'Msamples/s':>11s} {'(median)':>9s}")
    summary = []
    for log2 in args.log2:
        xy = half_inputs(1 << log2, rng)
        rows = diffc_rows(m, p0, xy, m_reduce, racy=not args.no_racy)
        round_robin(rows, args.runs)
        torch_part = torch_rows(target, p0, xy) if target is not None else []
        round_robin(torch_part, args.runs)  # apart: switching between torch's and OpenCL's work costs time
        for r in rows + torch_part:
            lo, med = min(r.times), statistics.median(r.times)
            print(f"{f'2^{log2}':>8s} {r.name:48s} {lo * 1e3:9.3f} {med * 1e3:10.3f} {r.n / lo / 1e6:11.3f} {r.n / med / 1e6:9.3f}")
        summary.append((log2, rows, torch_part))
    if target is not None:
        print("\nratios, diffc step throughput / torch step throughput (min times; > 1: diffc faster):")
        for log2, rows, torch_part in summary:
            for mine in (rows[0], rows[4]):  # dispatched, captured
                d = min(mine.times)
                for r in torch_part:
                    print(f"  2^{log2:<3d} {mine.name.split(' (')[0]:20s} / {r.name:40s} {min(r.times) / d:10.3g}")
    print("\nlearnGradient device time (min) by strategy, and the default's share of the step's device time:")
    for log2, rows, _ in summary:
        by = {r.name.strip(): min(r.times) * 1e3 for r in rows}
        parts = [f"accumulate-gradients (deterministic) {by['device time: learnGradient']:.3f} ms",
                 f"atomics per group {by['device time: learnGradient, atomics per group']:.3f} ms"]
        if "device time: learnGradient, reduce-atomics only" in by:
            parts.append(f"reduce-atomics only {by['device time: learnGradient, reduce-atomics only']:.3f} ms")
        if "device time: learnGradient, adds not atomic (*)" in by:
            parts.append(f"racy adds (*) {by['device time: learnGradient, adds not atomic (*)']:.3f} ms")
        share = by["device time: learnGradient"] / by["device time: both kernels"]
        print(f"  2^{log2:<3d} " + ", ".join(parts) + f"; share {share:.3f}")


if __name__ == "__main__":
    main()
