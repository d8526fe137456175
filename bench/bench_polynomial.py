"""Seed 003's polynomial 2x^2 + 8x - 1 over 2^N floats on the chosen device.

End-to-end call times of `m.polynomial(...)` and `m.polynomial.bwds(...)` (synchronised loops,
minimum and median of several runs) against the device's buffer-copy bandwidth, PyTorch eager
and torch.compile on the same GPU when torch is importable, and the Python overhead per call
with tiny tensors. Prints one table.

    python bench/bench_polynomial.py                 # 2^26 floats
    python bench/bench_polynomial.py --log2 16 --runs 5   # small, for the CPU (PoCL)
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import diffc

HERE = Path(__file__).resolve().parent


def timed(fn, sync, runs: int, inner: int = 1) -> list[float]:
    """Seconds per call of `fn`, one number per run (each run: `inner` calls then a sync)."""
    fn()
    sync()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        out.append((time.perf_counter() - t0) / inner)
    return out


def torch_rows(n: int, runs: int, xs: np.ndarray) -> list[tuple[str, list[float], float]]:
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available() or diffc.device().kind != "gpu":
        return []
    dev = torch.device("cuda")
    x = torch.from_numpy(xs).to(dev)
    g = torch.ones_like(x)
    sync = torch.cuda.synchronize

    def f(t):
        return 2 * t * t + 8 * t - 1

    rows = []
    rows.append(("torch eager forward", timed(lambda: f(x), sync, runs), 8.0 * n))
    xr = x.clone().requires_grad_(True)

    def eager_fb():
        y = f(xr)
        y.backward(g)

    rows.append(("torch eager forward+backward", timed(eager_fb, sync, runs), 16.0 * n))
    try:
        fc = torch.compile(f)
        rows.append(("torch.compile forward", timed(lambda: fc(x), sync, runs), 8.0 * n))

        def compiled_fb():
            y = fc(xr)
            y.backward(g)

        rows.append(("torch.compile forward+backward", timed(compiled_fb, sync, runs), 16.0 * n))
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
    print(f"n = 2^{args.log2} = {n} floats ({n * 4 / 2**20:.0f} MiB per array), {args.runs} runs")

    m = diffc.load_module(HERE / "polynomial.mlir")
    xs = np.linspace(-1, 1, n, dtype=np.float32)
    x = diffc.Tensor.from_numpy(xs).with_grads(zero=True)
    out = diffc.Tensor.zeros((n,), np.float32).with_grads()
    out.grad.fill(1.0)
    sync = q.finish

    rows: list[tuple[str, list[float], float]] = []  # name, seconds per call, bytes moved

    # Device copy bandwidth: read n floats, write n floats.
    src, dst = x.buffer, out.buffer
    rows.append(("OpenCL buffer copy", timed(lambda: cl.enqueue_copy(q, dst, src, byte_count=4 * n), sync, args.runs), 8.0 * n))

    def fwd():
        m.polynomial(a=2, b=8, c=-1, x=x, _result=out)

    def fwd_alloc():
        m.polynomial(a=2, b=8, c=-1, x=x, _result="tensor")

    def bwd():
        m.polynomial.bwds(a=2, b=8, c=-1, x=x, _result=out)

    rows.append(("diffc m.polynomial (into _result)", timed(fwd, sync, args.runs), 8.0 * n))
    rows.append(("diffc m.polynomial (new tensor)", timed(fwd_alloc, sync, args.runs), 8.0 * n))
    # bwds reads x, out.grad and x.grad, writes x.grad
    rows.append(("diffc m.polynomial.bwds", timed(bwd, sync, args.runs), 16.0 * n))
    # Device time alone (OpenCL profiling events): copy, forward kernel, bwds kernel.
    def event_times(launch) -> list[float]:
        out = []
        for _ in range(args.runs):
            ev = launch()
            ev.wait()
            out.append((ev.profile.end - ev.profile.start) * 1e-9)
        return out

    def fwd_event():
        fwd()
        return m.polynomial.last_event

    def bwd_event():
        bwd()
        return m.polynomial.last_event

    rows.append(("  device time: buffer copy", event_times(lambda: cl.enqueue_copy(q, dst, src, byte_count=4 * n)), 8.0 * n))
    rows.append(("  device time: forward kernel", event_times(fwd_event), 8.0 * n))
    rows.append(("  device time: bwds kernel", event_times(bwd_event), 16.0 * n))
    check = m.polynomial(a=2, b=8, c=-1, x=x, _result="numpy")
    err = float(np.max(np.abs(check - (2 * xs * xs + 8 * xs - 1))))

    if not args.no_torch:
        rows.extend(torch_rows(n, args.runs, xs))

    # Python overhead per call, tiny tensors: asynchronous calls, one sync per run.
    tx = diffc.Tensor.from_numpy(np.array([1, 2, 3, 4], np.float32)).with_grads(zero=True)
    tout = diffc.Tensor.zeros((4,), np.float32).with_grads()
    tiny = [
        ("overhead: m.polynomial, 4 floats", lambda: m.polynomial(a=2, b=8, c=-1, x=tx, _result=tout)),
        ("overhead: m.polynomial.bwds, 4 floats", lambda: m.polynomial.bwds(a=2, b=8, c=-1, x=tx, _result=tout)),
    ]
    over = [(name, timed(fn, sync, args.runs, args.tiny_calls)) for name, fn in tiny]

    copy_bw = 8.0 * n / min(rows[0][1])
    fwd_min = min(rows[1][1])
    print()
    print(f"{'what':40s} {'min ms':>9s} {'median ms':>10s} {'GB/s':>8s} {'vs copy':>8s} {'vs diffc fwd':>12s}")
    for name, ts, nbytes in rows:
        lo, med = min(ts), statistics.median(ts)
        bw = nbytes / lo / 1e9
        print(f"{name:40s} {lo * 1e3:9.3f} {med * 1e3:10.3f} {bw:8.1f} {bw * 1e9 / copy_bw:8.2f} {lo / fwd_min:12.2f}")
    for name, ts in over:
        print(f"{name:40s} {min(ts) * 1e6:7.1f}us {statistics.median(ts) * 1e6:8.1f}us")
    print()
    print(f"forward effective bandwidth / copy bandwidth: {8.0 * n / fwd_min / copy_bw:.2f} (target >= 0.95)")
    print(f"bwds time / forward time: {min(rows[3][1]) / fwd_min:.2f} (target <= 2)")
    print(f"max |diffc - numpy| over the forward result: {err:.3g}")


if __name__ == "__main__":
    main()
