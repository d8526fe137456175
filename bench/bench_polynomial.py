"""Seed 003's polynomial 2x^2 + 8x - 1 over 2^N floats on the chosen device.

End-to-end call times, side by side: the device's buffer copy, `m.polynomial(...)` into an
existing `_result`, with a fresh result tensor (from the buffer pool, and with the pool off),
`m.polynomial.bwds(...)`, and bwds with a broadcast scalar tensor `a` (its gradient is a sum over
all elements), plus PyTorch eager and torch.compile on the same kind of device when torch is
importable, the device time of each kernel (OpenCL profiling events), and the Python overhead
per call with tiny tensors. The rows are measured round-robin (run k of every row, then run
k + 1), so a machine whose load changes during the benchmark skews them alike (torch's rows
run round-robin among themselves afterwards); each row's minimum over the runs is what the
ratios use. Prints one table.

    python bench/bench_polynomial.py                 # 2^26 floats
    python bench/bench_polynomial.py --log2 22 --runs 5 --no-torch   # small, for the CPU (PoCL)
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import diffc
from diffc.runtime.tensor import buffer_pool

HERE = Path(__file__).resolve().parent


class Row:
    """One line of the table: `measure()` gives the seconds of one run."""

    def __init__(self, name: str, nbytes: float, measure, warmup=None):
        self.name, self.nbytes, self.measure = name, nbytes, measure
        self.warmup = warmup or measure
        self.times: list[float] = []


def host_timed(fn, sync, inner: int = 1):
    """A measure(): `inner` calls of fn, then sync; seconds per call."""

    def measure() -> float:
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        return (time.perf_counter() - t0) / inner

    return measure


def device_timed(launch):
    """A measure(): the profiled device time of the OpenCL event `launch()` returns."""

    def measure() -> float:
        ev = launch()
        ev.wait()
        return (ev.profile.end - ev.profile.start) * 1e-9

    return measure


def round_robin(rows: list[Row], runs: int) -> None:
    for row in rows:
        row.warmup()
    for _ in range(runs):
        for row in rows:
            row.times.append(row.measure())


def torch_rows(n: int, xs: np.ndarray) -> list[Row]:
    """PyTorch on the same kind of device as diffc's: CUDA for a GPU, the CPU for a CPU."""
    try:
        import torch
    except ImportError:
        return []
    if diffc.device().kind == "gpu":
        if not torch.cuda.is_available():
            return []
        dev, sync, where = torch.device("cuda"), torch.cuda.synchronize, "cuda"
    else:
        dev, sync, where = torch.device("cpu"), (lambda: None), "cpu"
    x = torch.from_numpy(xs).to(dev)
    g = torch.ones_like(x)

    def f(t):
        return 2 * t * t + 8 * t - 1

    xr = x.clone().requires_grad_(True)

    def fb(fn):
        def run():
            y = fn(xr)
            y.backward(g)

        return run

    rows = [
        Row(f"torch eager forward ({where})", 8.0 * n, host_timed(lambda: f(x), sync)),
        Row(f"torch eager forward+backward ({where})", 16.0 * n, host_timed(fb(f), sync)),
    ]
    try:
        fc = torch.compile(f)
        fc(x)
        fb(fc)()
        rows.append(Row(f"torch.compile forward ({where})", 8.0 * n, host_timed(lambda: fc(x), sync)))
        rows.append(Row(f"torch.compile forward+backward ({where})", 16.0 * n, host_timed(fb(fc), sync)))
    except Exception as e:  # no compiler toolchain: say so, keep the rest
        print(f"torch.compile unavailable: {type(e).__name__}: {e}")
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2", type=int, default=26, help="number of floats is 2^LOG2 (default 26)")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per row (default 10)")
    ap.add_argument("--tiny-calls", type=int, default=2000, help="calls per run for the overhead rows")
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args(argv)

    import pyopencl as cl

    dev = diffc.device()
    q = dev.queue
    n = 1 << args.log2
    print(f"device: {dev!r}")
    print(f"n = 2^{args.log2} = {n} floats ({n * 4 / 2**20:.0f} MiB per array), {args.runs} runs, round-robin")

    m = diffc.load_module(HERE / "polynomial.mlir")
    xs = np.linspace(-1, 1, n, dtype=np.float32)
    x = diffc.Tensor.from_numpy(xs).with_grads(zero=True)
    a = diffc.Tensor.from_numpy(np.array([2.0], np.float32)).with_grads(zero=True)  # broadcast
    out = diffc.Tensor.zeros((n,), np.float32).with_grads()
    out.grad.fill(1.0)
    sync = q.finish
    pool = buffer_pool()
    src, dst = x.buffer, out.buffer

    def copy():
        return cl.enqueue_copy(q, dst, src, byte_count=4 * n)

    def fwd():
        m.polynomial(a=2, b=8, c=-1, x=x, _result=out)
        return m.polynomial.last_event

    def fwd_new():
        m.polynomial(a=2, b=8, c=-1, x=x, _result="tensor")

    def fwd_new_unpooled():
        pool.enabled = False
        try:
            m.polynomial(a=2, b=8, c=-1, x=x, _result="tensor")
        finally:
            pool.enabled = True  # the unpooled result is freed, not pooled, when dropped

    def bwd():
        m.polynomial.bwds(a=2, b=8, c=-1, x=x, _result=out)
        return m.polynomial.last_event

    def bwd_broadcast():
        m.polynomial.bwds(a=a, b=8, c=-1, x=x, _result=out)
        return m.polynomial.last_event

    # bytes: forward reads x, writes the result; bwds reads x, out.grad and x.grad, writes x.grad
    rows = [
        Row("OpenCL buffer copy", 8.0 * n, host_timed(copy, sync)),
        Row("diffc forward into _result", 8.0 * n, host_timed(fwd, sync)),
        Row("diffc forward, new tensor (pooled)", 8.0 * n, host_timed(fwd_new, sync)),
        Row("diffc forward, new tensor (pool off)", 8.0 * n, host_timed(fwd_new_unpooled, sync)),
        Row("diffc bwds", 16.0 * n, host_timed(bwd, sync)),
        Row("diffc bwds, broadcast a (1,)", 16.0 * n, host_timed(bwd_broadcast, sync)),
        Row("  device time: buffer copy", 8.0 * n, device_timed(copy)),
        Row("  device time: forward kernel", 8.0 * n, device_timed(fwd)),
        Row("  device time: bwds kernel", 16.0 * n, device_timed(bwd)),
        Row("  device time: broadcast bwds kernel", 16.0 * n, device_timed(bwd_broadcast)),
    ]
    round_robin(rows, args.runs)
    if not args.no_torch:  # apart: switching between torch's and OpenCL's contexts costs time
        torch_part = torch_rows(n, xs)
        round_robin(torch_part, args.runs)
        rows.extend(torch_part)

    # correctness of what was timed
    check = m.polynomial(a=2, b=8, c=-1, x=x, _result="numpy")
    err = float(np.max(np.abs(check - (2 * xs * xs + 8 * xs - 1))))
    a.with_grads(zero=True)
    bwd_broadcast()
    want = float(np.sum(xs.astype(np.float64) ** 2))
    a_err = abs(float(a.grad.to_numpy()[0]) - want) / want

    # Python overhead per call, tiny tensors: asynchronous calls, one sync per run.
    tx = diffc.Tensor.from_numpy(np.array([1, 2, 3, 4], np.float32)).with_grads(zero=True)
    tout = diffc.Tensor.zeros((4,), np.float32).with_grads()
    tiny = [
        Row("overhead: m.polynomial, 4 floats", 0, host_timed(lambda: m.polynomial(a=2, b=8, c=-1, x=tx, _result=tout), sync, args.tiny_calls)),
        Row("overhead: m.polynomial, 4 floats, new tensor", 0, host_timed(lambda: m.polynomial(a=2, b=8, c=-1, x=tx), sync, args.tiny_calls)),
        Row("overhead: m.polynomial.bwds, 4 floats", 0, host_timed(lambda: m.polynomial.bwds(a=2, b=8, c=-1, x=tx, _result=tout), sync, args.tiny_calls)),
    ]
    round_robin(tiny, args.runs)

    by_name = {r.name: min(r.times) for r in rows}
    copy_t = by_name["OpenCL buffer copy"]
    fwd_t = by_name["diffc forward into _result"]
    print()
    print(f"{'what':44s} {'min ms':>9s} {'median ms':>10s} {'GB/s':>8s} {'vs copy':>8s} {'time/fwd':>9s}")
    for r in rows:
        lo, med = min(r.times), statistics.median(r.times)
        bw = r.nbytes / lo
        print(f"{r.name:44s} {lo * 1e3:9.3f} {med * 1e3:10.3f} {bw / 1e9:8.1f} {bw * copy_t / (8.0 * n):8.2f} {lo / fwd_t:9.2f}")
    for r in tiny:
        print(f"{r.name:44s} {min(r.times) * 1e6:7.1f}us {statistics.median(r.times) * 1e6:8.1f}us")
    print()
    print("ratios (min times; bandwidth relative to the buffer copy):")
    for name in ("diffc forward into _result", "diffc forward, new tensor (pooled)", "diffc forward, new tensor (pool off)"):
        print(f"  {name + ' / copy':52s} {8.0 * n / by_name[name] * copy_t / (8.0 * n):6.2f}  (target >= 0.95)")
    print(f"  {'bwds time / forward time':52s} {by_name['diffc bwds'] / fwd_t:6.2f}  (target <= 2)")
    print(f"  {'broadcast bwds time / bwds time':52s} {by_name['diffc bwds, broadcast a (1,)'] / by_name['diffc bwds']:6.2f}")
    print(f"  {'device: bwds kernel / forward kernel':52s} {by_name['  device time: bwds kernel'] / by_name['  device time: forward kernel']:6.2f}")
    print(f"max |diffc - numpy| over the forward result: {err:.3g}")
    print(f"broadcast gradient of a: relative error against the float64 sum: {a_err:.3g}")
    print(f"buffer pool: {pool.stats()}")


if __name__ == "__main__":
    main()
