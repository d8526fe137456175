"""Operator overloading costs nothing at run time: one complex polynomial, z^3 + z * c + z with
z = a + ib, written once with a struct and overloaded operators (`Cx operator*(Cx, Cx)`, ...)
and once by hand on floats, called over n-element tensors, primal and backward, device time of
each kernel (OpenCL profiling), rows measured round-robin, minimum used. The goal: the
operators' kernels within a few percent of the hand-written ones (the overloads are calls the
OpenCL compiler inlines). Also the front end's time on a program without overloads, with and
without an unrelated overload declared (it must not change).

    python bench/bench_operators.py                     # 2^24 elements
    DIFFC_DEVICE=gpu python bench/bench_operators.py    # on the GPU
    python bench/bench_operators.py --log2 16 --runs 3  # small, for PoCL

Measured (PoCL on 2 shared CPU cores, 2026-11-24, 2^20 elements, 5 runs, min device time):
call 1.579 ms plain, 1.543 ms operators (0.98); bwds 2.412 ms plain, 2.351 ms operators (0.97);
front end 166.5 ms without overloads, 166.1 ms with one declared.
NVIDIA H100 80GB HBM3 (OpenCL 3.0 CUDA, driver 580.159.04; after c5945fb; 2^24 elements, 10
runs, min device time): call 0.072 ms plain, 0.071 operators (0.99); bwds 0.157 plain, 0.158
operators (1.01); front end on that machine's host 140.8 ms without overloads, 106.9 ms with one
declared (one run each: the difference is the host's noise, not the overload).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_polynomial import Row, device_timed, round_robin  # noqa: E402

import diffc  # noqa: E402

SRC = """
struct Cx : IDifferentiable { float re; float im; };
[Differentiable] Cx operator+(Cx a, Cx b) { Cx r = { a.re + b.re, a.im + b.im }; return r; }
[Differentiable] Cx operator*(Cx a, Cx b)
{
    Cx r = { a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re };
    return r;
}
[Differentiable]
float poly_ops(float a, float b)
{
    Cx z = { a, b };
    Cx c = { 0.5, -0.25 };
    Cx w = z * z * z + z * c + z;
    return w.re + 2.0 * w.im;
}
[Differentiable]
float poly_plain(float a, float b)  // the same arithmetic, the overloads' bodies written inline
{
    float z2re = a * a - b * b, z2im = a * b + b * a;
    float z3re = z2re * a - z2im * b, z3im = z2re * b + z2im * a;
    float cre = 0.5, cim = -0.25;
    float zcre = a * cre - b * cim, zcim = a * cim + b * cre;
    float wre = z3re + zcre + a, wim = z3im + zcim + b;
    return wre + 2.0 * wim;
}
"""


def _expected(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The value and the gradient (d/da, d/db) by hand: f = Re(w) + 2 Im(w) of the holomorphic
    w(z) = z^3 + 0.5z - 0.25iz + z, so dw/dz = 3z^2 + 1.5 - 0.25i, d/da = Re + 2 Im of dw/dz and
    d/db = Re + 2 Im of i dw/dz."""
    z = a.astype(np.float64) + 1j * b.astype(np.float64)
    w = z**3 + z * (0.5 - 0.25j) + z
    dw = 3 * z**2 + (1.5 - 0.25j)
    return w.real + 2 * w.imag, dw.real + 2 * dw.imag, (1j * dw).real + 2 * (1j * dw).imag


def front_end_ms(runs: int) -> tuple[float, float]:
    """Seconds (min of runs) to compile a program without overloads, and the same with one
    unrelated operator overload declared."""
    from diffc.frontend import compile_slang

    body = "".join(f"[Differentiable] float g{i}(float x, float3 v) {{ return x * v.x - -x + (v * x).y + "
                   f"sin(x) * {i}.0 / (1.0 + x * x); }}\n" for i in range(60))
    extra = "struct Q { float v; };\nQ operator+(Q a, Q b) { return a; }\n"
    best = []
    for src in (body, extra + body):
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            compile_slang(src, "fe.slang")
            times.append(time.perf_counter() - t0)
        best.append(min(times))
    return best[0], best[1]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2", type=int, default=24, help="number of elements is 2^LOG2 (default 24)")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per row (default 10)")
    args = ap.parse_args(argv)

    dev = diffc.device()
    n = 1 << args.log2
    print(f"device: {dev!r}")
    print(f"n = 2^{args.log2} = {n} elements, {args.runs} runs, round-robin, device time")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "operators.slang"
        path.write_text(SRC)
        m = diffc.load_module(path)
    rng = np.random.default_rng(0)
    an, bn = (rng.uniform(-1, 1, n).astype(np.float32) for _ in range(2))
    a = diffc.Tensor.from_numpy(an).with_grads(zero=True)
    b = diffc.Tensor.from_numpy(bn).with_grads(zero=True)
    out = diffc.Tensor.zeros((n,), np.float32).with_grads()
    out.grad.fill(1.0)

    def launcher(fn, backward: bool):
        def launch():
            (fn.bwds if backward else fn)(a=a, b=b, _result=out)
            return fn.last_event
        return launch

    rows = [Row(f"{name} {'bwds' if bwd else 'call'}", 0.0, device_timed(launcher(getattr(m, name), bwd)))
            for bwd in (False, True) for name in ("poly_plain", "poly_ops")]
    round_robin(rows, args.runs)

    # what was timed is right: both functions' values and gradients against the hand-derived ones
    want, want_da, want_db = _expected(an, bn)
    errors = []
    for name in ("poly_plain", "poly_ops"):
        fn = getattr(m, name)
        got = fn(a=a, b=b, _result="numpy")
        a.grad.fill(0)
        b.grad.fill(0)
        fn.bwds(a=a, b=b, _result=out)
        scale = 1.0 + np.abs(want).max()
        errors.append(max(float(np.max(np.abs(got - want))), float(np.max(np.abs(a.grad.to_numpy() - want_da))),
                          float(np.max(np.abs(b.grad.to_numpy() - want_db)))) / scale)

    print(f"{'row':24s} {'min ms':>9s} {'median ms':>10s}")
    for row in rows:
        print(f"{row.name:24s} {min(row.times) * 1e3:9.3f} {statistics.median(row.times) * 1e3:10.3f}")
    call_ratio = min(rows[1].times) / min(rows[0].times)
    bwds_ratio = min(rows[3].times) / min(rows[2].times)
    print(f"max relative error (values and gradients): plain {errors[0]:.3g}, operators {errors[1]:.3g}")
    print(f"operators / plain device time: call {call_ratio:.2f}, bwds {bwds_ratio:.2f} (goal: <= 1.05)")
    plain_fe, with_op_fe = front_end_ms(max(3, args.runs))
    print(f"front end, 60 functions: {plain_fe * 1e3:.1f} ms without overloads, {with_op_fe * 1e3:.1f} ms "
          f"with one unrelated overload declared")


if __name__ == "__main__":
    main()
