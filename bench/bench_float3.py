"""A call over float3 tensors (SlangPy-style, `(n, 3)` arrays for a `float3` parameter) against
the device's buffer copy of the same bytes: the bandwidth the record path (runtime/record_calls.py)
reaches, as a fraction of the copy's.

    float3 shade(float3 p, float s) { return p * s + p.yzx * 0.5; }   # reads 12 B, writes 12 B

Rows, measured round-robin (bench_polynomial.py's Row), each row's minimum used: the OpenCL
buffer copy of 12n bytes (reads 12n, writes 12n), `m.shade(p=p, s=2.0, _result=out)` (the same
traffic), `m.shade.bwds(...)` (reads p, out.grad and p.grad, writes p.grad: twice the traffic),
each timed by the host (launch and wait) and by the device (OpenCL profiling). The ratio column
is the row's bandwidth over the copy's (the goal: >= 0.9 for the call on a GPU).

    python bench/bench_float3.py                      # 2^24 float3 elements
    DIFFC_DEVICE=gpu python bench/bench_float3.py     # on the GPU
    python bench/bench_float3.py --log2 20 --runs 3   # small, for PoCL

Measured (PoCL on 2 shared CPU cores, load about 1.5, 2026-11-24, 2^24 elements, 3 runs):
copy 23.3 ms (17.3 GB/s), call 28.9 ms (0.80 of the copy's bandwidth), bwds 43.1 ms (1.08:
four arrays' traffic).
NVIDIA H100 80GB HBM3 (OpenCL, 2026-11-24, 2^24 elements, 10 runs, min): copy 0.159 ms
(2527 GB/s), call 0.184 ms (0.86 of the copy's wall-clock bandwidth), bwds 0.248 ms; device time
of the call kernel against the copy kernel: 0.99 (goal >= 0.90).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_polynomial import Row, device_timed, host_timed, round_robin  # noqa: E402

import diffc  # noqa: E402

SRC = """
[Differentiable] float3 shade(float3 p, float s) { return p * s + p.yzx * 0.5; }
"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2", type=int, default=24, help="number of float3 elements is 2^LOG2 (default 24)")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per row (default 10)")
    args = ap.parse_args(argv)

    import pyopencl as cl

    dev = diffc.device()
    q = dev.queue
    n = 1 << args.log2
    nbytes = 12 * n
    print(f"device: {dev!r}")
    print(f"n = 2^{args.log2} = {n} float3 ({nbytes / 2**20:.0f} MiB per array), {args.runs} runs, round-robin")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "float3.slang"
        path.write_text(SRC)
        m = diffc.load_module(path)
    ps = np.random.default_rng(0).uniform(-1, 1, (n, 3)).astype(np.float32)
    p = diffc.Tensor.from_numpy(ps).with_grads(zero=True)
    out = diffc.Tensor.zeros((n, 3), np.float32).with_grads()
    out.grad.fill(1.0)
    sync = q.finish
    src, dst = p.buffer, out.buffer

    def copy():
        return cl.enqueue_copy(q, dst, src, byte_count=nbytes)

    def call():
        m.shade(p=p, s=2.0, _result=out)
        return m.shade.last_event

    def bwds():
        m.shade.bwds(p=p, s=2.0, _result=out)
        return m.shade.last_event

    # bytes moved: the copy and the call read and write 12n each; bwds reads 36n, writes 12n
    rows = [
        Row("OpenCL buffer copy (12n B)", 2.0 * nbytes, host_timed(copy, sync)),
        Row("m.shade(p: (n, 3)) into _result", 2.0 * nbytes, host_timed(call, sync)),
        Row("m.shade.bwds", 4.0 * nbytes, host_timed(bwds, sync)),
        Row("  device time: buffer copy", 2.0 * nbytes, device_timed(copy)),
        Row("  device time: call kernel", 2.0 * nbytes, device_timed(call)),
        Row("  device time: bwds kernel", 4.0 * nbytes, device_timed(bwds)),
    ]
    round_robin(rows, args.runs)

    # what was timed is right: the call against numpy, bwds's gradient by hand (s + 0.5, one per lane)
    got = m.shade(p=p, s=2.0, _result="numpy")
    err = float(np.max(np.abs(got - (ps * 2.0 + ps[:, [1, 2, 0]] * 0.5))))
    p.grad.fill(0)
    bwds()
    g_err = float(np.max(np.abs(p.grad.to_numpy() - 2.5)))

    host_copy = min(rows[0].times)
    device_copy = min(rows[3].times)
    print(f"{'row':40s} {'min ms':>9s} {'median ms':>10s} {'GB/s':>8s} {'vs copy':>8s}")
    for i, row in enumerate(rows):
        best = min(row.times)
        base = device_copy if i >= 3 else host_copy
        base_bw = rows[3 if i >= 3 else 0].nbytes / base
        bw = row.nbytes / best
        print(f"{row.name:40s} {best * 1e3:9.3f} {statistics.median(row.times) * 1e3:10.3f} "
              f"{bw / 1e9:8.2f} {bw / base_bw:8.2f}")
    print(f"max |call - numpy| = {err:.3g}; max |bwds grad - 2.5| = {g_err:.3g}")
    call_ratio = (rows[4].nbytes / min(rows[4].times)) / (rows[3].nbytes / device_copy)
    print(f"call bandwidth / copy bandwidth (device time): {call_ratio:.2f} (goal on a GPU: >= 0.90)")


if __name__ == "__main__":
    main()
