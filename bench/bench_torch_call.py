"""Per-call overhead of torch tensors in module calls (diffc/runtime/torch_bridge.py) over the
raw diffc call, with tiny tensors (so the time is overhead, not the kernel's work).

Rows, `--calls` calls each after a warm-up, interleaved in 20 rounds (the median round; wall
time and this thread's CPU time), every call waiting for its result:
  diffc Tensor       m.polynomial(..., x=t) with a diffc.Tensor, result left on the device
                     (a replayed launch plan; plus a read back of the result, to compare)
  numpy              m.polynomial(..., x=array, _result="numpy"): upload, launch, download
  torch, no grad     the same with a torch CPU tensor (numpy views in and out)
  torch, grad        with x.requires_grad: through the torch.autograd.Function
  torch, grad (other order)  the same with the other torch_bridge.OVERLAP: the device's work
                     waited for before the autograd graph is built (the default on CPU devices)
                     or after (overlapped, the default on GPUs)
  torch fwd+bwd      y = m.polynomial(...); y.backward(g): the call kernel, then the bwds kernel
  raw fwd+bwd        the same two launches done by hand with diffc Tensors and numpy
The wrapper's overhead is each torch row minus the numpy row it wraps.
`--count` prints instead the OpenCL calls each row makes per call (copies and whether they
wait, launches, argument sets, buffer creations, waits).

With CUDA (torch.cuda.is_available()), rows for torch CUDA tensors too: the bridge takes them
through the host, and the round trip's phases are timed alone: "CUDA->host copy" (x.cpu()),
the diffc call on host data (the numpy row: copies to diffc's OpenCL device, launch, read back),
"host->CUDA copy" (the result's .to(device)); then each CUDA row's overhead over numpy and
what is left of it beyond the two copies. Without CUDA these rows are skipped, with a line
saying so.

"host Python only": numpy, torch no grad and torch requires_grad again with the device's part
(Function._call_host) stubbed out, so that only the wrapper's host Python is timed. On this
CPU-only machine the rows above count time spent waiting for PoCL's worker threads in the
thread's CPU time, and how much depends on what ran between calls (an empty autograd Function
of ~9 us run before each numpy call made the pair ~18 us dearer than the two alone), so these
rows are the ones to compare for the wrapper's own cost.

    python bench/bench_torch_call.py [--n 16] [--calls 2000] [--count]

On the GPU host (pip install -e ".[torch]" with a CUDA build of torch; diffc on the GPU's
OpenCL device), the CUDA rows included:
    DIFFC_DEVICE=gpu python bench/bench_torch_call.py --calls 4000

Measured 2026-11-24 on the H100 80GB HBM3's host (latest; `--calls 4000`, median of 20
interleaved rounds, wall): diffc Tensor 34.3 us, numpy 96.5, torch no grad 107.3 (+10.8 over
numpy), torch requires_grad 124.1 (+27.7: the device's work overlapped with building the
autograd graph, the GPU default of torch_bridge.OVERLAP; waiting first: +34.3), torch fwd+bwd
359.8 against 377.8 by hand; host Python alone: numpy 1.9, no grad 4.8, requires_grad 10.5 (+8.5).
(Earlier runs on the same host: requires_grad +71.7 before staging, +34.9 after it, +32-36 after
the call path's first cuts.) CUDA tensors (torch 2.11.0+cu130): CUDA->host 17.8 us, host->CUDA
26.8, a no-grad call 499.7 us (358.6 beyond the diffc call and the two copies), requires_grad
517.7, fwd+bwd 1491.5 wall. What is beyond the copies is the GPU switching between diffc's
OpenCL context and torch's CUDA context (bench/bench_cuda_interop.py: ~280 us each time a CUDA
kernel or host->device copy meets an OpenCL launch); the thread spins in the blocking read
meanwhile (its CPU time equals the wall time).

Measured 2026-11-24 on this CPU-only machine (PoCL pthread device, AMD EPYC, 2 cores shared with
other processes; thread CPU time, rows interleaved, 2000 calls each), before -> after staging
(runtime/staging.py: arrays copied without waiting into kept device tensors, launches replayed,
the backward reading the forward's copies; C++ autograd apply; once_differentiable only under
create_graph):
  diffc Tensor (on device)       23-42 us  ->  24-33 us
  numpy                         104-152 us ->  53-66 us
  torch, no grad                135-186 us ->  74-88 us   (+30-34 -> +21 over numpy)
  torch, requires_grad          165-218 us ->  99-113 us  (+60-66 -> +46 over numpy; goal < 30)
  raw fwd+bwd                   278-399 us -> 228-268 us
  torch fwd+bwd (autograd)      482-610 us -> 257-260 us  (+204-211 -> -8..+28 over raw)
Then (same machine, the two versions run one after the other, thread CPU time) before -> after
the call path's cuts (keyword arguments bound in one step, the numpy view of a small tensor
passed again reused, host arguments made once outside the autograd Function, one pass over
the arguments, no new dict for the kept device copies):
  numpy                          51.1 us ->  50.2 us
  torch, no grad                 70.3 us ->  62.5 us  (+19.3 -> +12.2 over numpy)
  torch, requires_grad           94.3 us ->  83.7 us  (+43.2 -> +33.4 over numpy)
  raw fwd+bwd / torch fwd+bwd   218.4 / 244.7 us -> 214.9 / 235.2 us (+26.2 -> +20.4 over raw)
  host Python only: numpy 4.6 -> 4.1 us, torch no grad 13.4 -> 8.8 us (+8.7 -> +4.7), torch
  requires_grad 25.0 -> 17.2 us (+20.3 -> +13.1 over numpy). Of the requires_grad path's
  remaining ~13 us, torch's autograd Function (C++ apply, graph node, ctx, save_for_backward,
  from_numpy, teardown) is ~8 (measured alone with an empty forward).
Then (same machine, load 2.5-7 from other engineers' test runs) what the requires_grad forward
does on the device that the no-grad call does not: nothing. --count gives the same OpenCL calls
for numpy, torch no grad and torch requires_grad rows: one copy in without waiting, one
replayed launch (one set_arg: the new result buffer), one read of the result, no buffer made
(the pool's). What makes the requires_grad call dearer than its stubbed Python is that
torch's graph is built cold after each device wait: an empty autograd Function costs 7 us
alone and 17-25 us of thread CPU after a diffc call or after a plain 30 us time.sleep (a loop
of Python arithmetic costs 1.9 alone and 1.6-3.6 after the sleep): the thread's caches are
others' after it sleeps. So the cuts: the pyopencl copies called without enqueue_copy's
dispatch (~4 us each) and a queue finish instead of a blocking read's wrapper (an event's
wait was ~14 us dearer on PoCL), no save_for_backward (~2.5 us: the inputs and their version
counters kept with the graph instead), isinstance(v, torch.Tensor) only for types that can be
tensors (~0.2 us per number). Building the graph while the device runs (torch_bridge.OVERLAP)
was ~14 us dearer in wall time and ~3 in thread CPU here (PoCL's threads and the host's Python
share the two busy cores), so on CPU devices the call waits first; GPUs overlap. Before (the
branch's start, loaded as a second package in the same process, rows interleaved; 6 runs of
2000 calls each, load 2.5-3; median [range], us, wall / this thread's CPU) -> after:
  numpy                            81.0 [54-124] / 50.0 [49-52]  ->  72.8 [36-118] / 43.8 [36-44]
  torch requires_grad over numpy   39.7 [35-97] / 35.5 [35-43]   ->  35.4 [30-39] / 32.2 [32-34]
  torch no grad over numpy         14.1 [-8-16] / 13.5 [11-14]   ->  13.9 [10-47] / 11.5 [10-13]
  torch fwd+bwd                   372 [242-532] / 239 [231-267]  ->  300 [217-425] / 222 [210-232]
So the requires_grad call is ~10 us cheaper (wall and CPU), ~3-4 of it in its overhead over the
numpy call, which stays above the 30 us goal while PoCL's waits show in the wall time (numpy
~70-80 us wall against ~43 CPU); this file's own rows, after, three runs: torch requires_grad
+31.9/+33.4/+33.5 us wall, +30.0/+31.4/+31.0 CPU over numpy (the other order +45.3/+46.2/+46.7,
+33.8/+34.9/+34.9). In the spells when the waits do not show (numpy's wall time = its CPU time,
~45 us), 4 runs: requires_grad +24.1-25.7 us wall, +26.4-27.5 CPU over numpy (before +38.2-41.3,
+36.5-37.9), no grad +5.2-6.4 / +7.8-8.1 (before +14.1-18.9 / +13.9-15.8); this file's rows then:
+24.5 wall / +26.7 CPU (the other order +23.7 / +26.2): under the 30 us goal.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from pathlib import Path

import numpy as np
import torch

import diffc
from diffc.runtime import torch_bridge

HERE = Path(__file__).resolve().parent


def measure(rows: dict, calls: int, rounds: int = 20) -> dict[str, tuple[float, float]]:
    """{row: (wall, CPU time of this thread)} per call in microseconds: the median over `rounds`
    rounds, each timing `calls // rounds` calls of every row in turn, so that a change in the
    machine's load (other processes, frequency) touches all rows alike. The thread's CPU time
    is the host-side overhead (PoCL runs kernels on its own threads)."""
    for fn in rows.values():  # warm-up: kernels built, pools filled
        for _ in range(max(calls // 10, 20)):
            fn()
    per = max(calls // rounds, 1)
    wall: dict[str, list] = {name: [] for name in rows}
    cpu: dict[str, list] = {name: [] for name in rows}
    for _ in range(rounds):
        for name, fn in rows.items():
            c0 = time.thread_time()
            t0 = time.perf_counter()
            for _ in range(per):
                fn()
            wall[name].append((time.perf_counter() - t0) / per)
            cpu[name].append((time.thread_time() - c0) / per)
    return {name: (statistics.median(wall[name]) * 1e6, statistics.median(cpu[name]) * 1e6) for name in rows}


def host_only(f, xn, xt, xg, calls: int) -> dict[str, tuple[float, float]]:
    """The same numpy and torch calls with the device's part (Function._call_host: copies in,
    launch, blocking read; the torch path's _start_host and _finish_host, the same split around
    its own host work) replaced by a stub that returns a result at once: the wrapper's host
    Python alone. On a machine whose OpenCL device is its own busy CPU, the rows above include
    waits for PoCL's threads whose length depends on what ran between calls; these do not."""
    from unittest import mock

    from diffc.runtime.module import Function

    result = np.zeros(xn.shape, np.float32)
    _, staged = f._call_host([2.0, 8.0, -1.0, xn])  # (the backward's device copies, as a real call keeps)
    stub = lambda self, host: (result.copy(), staged)  # noqa: E731
    start = lambda self, host: (result.copy(), staged, [])  # noqa: E731 (the torch path's split call)
    finish = lambda events: None  # noqa: E731
    rows = {
        "numpy": lambda: f(a=2.0, b=8.0, c=-1.0, x=xn, _result="numpy"),
        "torch, no grad": lambda: f(a=2.0, b=8.0, c=-1.0, x=xt),
        "torch, requires_grad": lambda: f(a=2.0, b=8.0, c=-1.0, x=xg),
    }
    with mock.patch.object(Function, "_call_host", stub), mock.patch.object(Function, "_start_host", start), \
            mock.patch.object(Function, "_finish_host", staticmethod(finish)):
        return measure(rows, calls * 4)


def cuda_rows(f, xn, g, calls: int) -> dict | None:
    """With torch CUDA tensors: the same calls, and each phase of the round trip through the host
    that torch_bridge makes for them (diffc runs on OpenCL, not on CUDA memory) timed alone:
    the CUDA->host copy of the input, the diffc call on host data (the numpy row), the
    host->CUDA copy of the result. Every row waits for CUDA (torch.cuda.synchronize)."""
    if not torch.cuda.is_available():
        return None
    sync = torch.cuda.synchronize
    xc = torch.from_numpy(xn).cuda()
    xcg = xc.clone().requires_grad_()
    gc = g.cuda()
    out = f(a=2.0, b=8.0, c=-1.0, x=xn, _result="numpy")

    def d2h():
        xc.cpu().numpy()  # (a copy to pageable memory: returns once it is done)

    def h2d():
        torch.from_numpy(out).to(xc.device)
        sync()

    def cuda_nograd():
        f(a=2.0, b=8.0, c=-1.0, x=xc)
        sync()

    def cuda_grad():
        f(a=2.0, b=8.0, c=-1.0, x=xcg)
        sync()

    def cuda_fwd_bwd():
        xcg.grad = None
        f(a=2.0, b=8.0, c=-1.0, x=xcg).backward(gc)
        sync()

    return {
        "CUDA->host copy (x.cpu())": d2h,
        "host->CUDA copy (result)": h2d,
        "torch CUDA, no grad": cuda_nograd,
        "torch CUDA, requires_grad": cuda_grad,
        "torch CUDA fwd+bwd (autograd)": cuda_fwd_bwd,
    }


def count_cl() -> collections.Counter:
    """Counts, from now on, the OpenCL calls a call makes: copies in (write) and out (read),
    blocking or not, kernel launches, argument sets, buffer creations, waits (event, finish).
    Must run before the first call: launch plans and staging.py take their pyopencl entry
    points at their first use."""
    import pyopencl as cl

    counts: collections.Counter = collections.Counter()

    def counted(owner, name: str, key=None):
        orig = getattr(owner, name)

        def run(*a, **k):
            counts[key(a, k) if key else name] += 1
            return orig(*a, **k)

        setattr(owner, name, run)

    blocking = lambda a, k: k.get("is_blocking", True)  # noqa: E731
    counted(cl._cl, "_enqueue_write_buffer", lambda a, k: f"write{'' if blocking(a, k) else ' (no wait)'}")
    counted(cl._cl, "_enqueue_read_buffer", lambda a, k: f"read{'' if blocking(a, k) else ' (no wait)'}")
    counted(cl, "enqueue_copy", lambda a, k: f"enqueue_copy{'' if blocking(a, k) else ' (no wait)'}")
    for name in ("enqueue_nd_range_kernel", "enqueue_fill_buffer", "Buffer"):
        counted(cl, name)
    for name in ("set_arg", "set_args"):
        counted(cl.Kernel, name)
    counted(cl.CommandQueue, "finish")
    counted(cl.Event, "wait")
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16, help="elements per tensor")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--count", action="store_true", help="count the OpenCL calls per call of each row instead")
    args = ap.parse_args()
    counts = count_cl() if args.count else None
    m = diffc.load_module(HERE.parent / "examples" / "poly.slang")
    f = m.polynomial
    xn = np.linspace(-1, 1, args.n, dtype=np.float32)
    xd = diffc.Tensor.from_numpy(xn)
    xt = torch.from_numpy(xn.copy())
    xg = xt.clone().requires_grad_()
    g = torch.ones(args.n)

    def diffc_tensor():
        f(a=2.0, b=8.0, c=-1.0, x=xd)
        diffc.synchronize()

    def diffc_tensor_read():
        f(a=2.0, b=8.0, c=-1.0, x=xd).to_numpy()

    def numpy_call():
        f(a=2.0, b=8.0, c=-1.0, x=xn, _result="numpy")

    def torch_nograd():
        f(a=2.0, b=8.0, c=-1.0, x=xt)

    def torch_grad():
        f(a=2.0, b=8.0, c=-1.0, x=xg)

    def torch_fwd_bwd():
        xg.grad = None
        f(a=2.0, b=8.0, c=-1.0, x=xg).backward(g)

    def raw_fwd_bwd():
        out = f(a=2.0, b=8.0, c=-1.0, x=xn, _result="numpy")
        x = diffc.Tensor.from_numpy(xn).with_grads(zero=True)
        res = diffc.Tensor(out.shape, np.float32)
        res.grad = diffc.Tensor.from_numpy(g.numpy())
        f.bwds(a=2.0, b=8.0, c=-1.0, x=x, _result=res)
        x.grad.to_numpy()

    rows = {
        "diffc Tensor (on device)": diffc_tensor,
        "diffc Tensor + to_numpy": diffc_tensor_read,
        "numpy": numpy_call,
        "torch, no grad": torch_nograd,
        "torch, requires_grad": torch_grad,
        "raw fwd+bwd (numpy, Tensors)": raw_fwd_bwd,
        "torch fwd+bwd (autograd)": torch_fwd_bwd,
    }
    torch_grad()  # (torch_bridge.OVERLAP set by the device)
    default = torch_bridge.OVERLAP[0]
    other = f"torch, requires_grad ({'waits first' if default else 'overlapped'})"

    def torch_grad_other():  # the other order of the device's work and the autograd graph
        torch_bridge.OVERLAP[0] = not default
        try:
            f(a=2.0, b=8.0, c=-1.0, x=xg)
        finally:
            torch_bridge.OVERLAP[0] = default

    rows[other] = torch_grad_other
    if counts is not None:
        for name, fn in rows.items():
            for _ in range(20):
                fn()
            counts.clear()
            for _ in range(100):
                fn()
            print(f"  {name:34s} " + ", ".join(f"{k} {v / 100:g}" for k, v in sorted(counts.items())))
        return
    cuda = cuda_rows(f, xn, g, args.calls)
    rows.update(cuda or {})
    times = measure(rows, args.calls)
    print(f"device: {diffc.device().name}; {args.n} float32 elements; {args.calls} calls of each row, "
          "interleaved in 20 rounds, median round")
    print(f"  {'':30s} {'wall':>9s}    {'thread CPU':>10s}")
    for name, (us, cpu) in times.items():
        print(f"  {name:34s} {us:9.1f} us {cpu:9.1f} us")

    def over(a: str, b: str, t=times) -> str:
        return f"{t[a][0] - t[b][0]:7.1f} us wall, {t[a][1] - t[b][1]:7.1f} us thread CPU"

    print(f"torch wrapper overhead, no grad:      {over('torch, no grad', 'numpy')} over numpy")
    print(f"torch wrapper overhead, autograd fwd: {over('torch, requires_grad', 'numpy')} over numpy "
          f"(device's work {'overlapped' if default else 'waited for first'}: the default here)")
    print(f"  the other order:                    {over(other, 'numpy')} over numpy")
    print(f"torch wrapper overhead, fwd+bwd:      {over('torch fwd+bwd (autograd)', 'raw fwd+bwd (numpy, Tensors)')} over raw")
    if cuda is None:
        print(f"CUDA rows skipped: torch.cuda.is_available() is False (torch {torch.__version__})")
    else:
        trip = times["CUDA->host copy (x.cpu())"][0] + times["host->CUDA copy (result)"][0]
        print(f"CUDA tensors ({torch.cuda.get_device_name()}), through the host: round trip = CUDA->host "
              f"{times['CUDA->host copy (x.cpu())'][0]:.1f} us + diffc call (numpy row) {times['numpy'][0]:.1f} us + "
              f"host->CUDA {times['host->CUDA copy (result)'][0]:.1f} us (wall)")
        for row in ("torch CUDA, no grad", "torch CUDA, requires_grad"):
            print(f"  {row}: {over(row, 'numpy')} over numpy; {times[row][0] - times['numpy'][0] - trip:7.1f} us "
                  "wall beyond the two copies")
        print(f"  torch CUDA fwd+bwd: {over('torch CUDA fwd+bwd (autograd)', 'raw fwd+bwd (numpy, Tensors)')} over raw")
    host = host_only(f, xn, xt, xg, args.calls)
    print("host Python only (the device's part stubbed out: host_only()):")
    for name, (us, cpu) in host.items():
        print(f"  {name:34s} {us:9.1f} us {cpu:9.1f} us")
    print(f"  torch wrapper, no grad:      {over('torch, no grad', 'numpy', host)} over numpy")
    print(f"  torch wrapper, autograd fwd: {over('torch, requires_grad', 'numpy', host)} over numpy")


if __name__ == "__main__":
    main()
