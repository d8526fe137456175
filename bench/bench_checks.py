"""What the safety checks cost: the MLP training step (examples/mlp, two dispatches) and the
polynomial's calls over tensors (examples/poly.slang), with and without them, on the chosen
device. Prints one table of minimum times over round-robin runs and each row's ratio to the
unchecked one.

MLP step rows (host wall time of the two dispatches and the wait for them; device time of the
two kernels from OpenCL profiling):
  no checks              DIFFC_BOUNDS_CHECK=0
  checks, blocking read  bounds checks everywhere, the status read after each launch (the
                         state before launch-time proofs and lazy reads)
  checks, lazy read      the status read at the next synchronizing point (runtime/pending.py)
  checks, lazy + proofs  the default: accesses proven in bounds at launch run unchecked
                         (kernel_support/bounds_proofs.py: learnGradient's accumulated kernels, the
                         layers' weight reads through pointers, adjustParameters; the
                         "reduce-atomics only" rows, DIFFC_ACCUMULATE=0, run the entry kernel
                         itself)
Copy-kernel rows (an entry point `out[tid.x] = 2 * in[tid.x]` under `if (tid.x >= n) return;`,
device time): no checks, checks without proofs, checks with proofs (the launch is proven, so
the twin without checks runs).
Polynomial rows: the polynomial's reverse derivative as an entry point (`polyBwd`: bwd_diff of
examples/poly.slang's polynomial per element, device time), the same three builds; and the
calls over tensors, which get no bounds checks (their indices are in bounds by construction),
`bwds` with and without the sanitizer (check=True).
The last column names the kernels each row's dispatches launched (an `__inbounds` name: the
variant without checks ran; `-`: calls over tensors).

    python bench/bench_checks.py                    # batch 2^14, 2^22 polynomial elements
    python bench/bench_checks.py --log2 12 --poly-log2 20 --runs 5
NVIDIA H100 80GB HBM3 (2026-11-24, MLP batch 2^14, 7 runs, min device ms; ratio to no checks):
no checks 0.087; checks, blocking read 0.161 (1.86); lazy read 0.157 (1.81); lazy read + proofs
(the default) 0.129 (1.49); reduce-atomics only: none 0.170, checks 0.211 (1.24). Copy kernel:
checks cost nothing measurable. That run predates proofs for the accumulated kernels and for
accesses inside callees (kernel_support/bounds_proofs.py): learnGradient__accum's checks then
stayed in its grid-stride loop. Now the default launches learnGradient__accum__inbounds, which
has no bounds check left (the finish kernel's variant keeps one, in its one work-group).
The same H100 after those proofs, merge-calls and the one-group-per-slot finish kernel (one run of
`python bench/bench_checks.py`, min of 7; ratio to no checks): MLP step device time no checks
0.038 ms, checks with blocking read 0.039 (1.02), lazy read 0.037 (0.97), lazy read + proofs (the
default; the three __inbounds variants ran) 0.037 (0.97), host time of the step 0.139 against
0.136 (1.02); reduce-atomics only: 0.173, checks 0.215 (1.24), checks + proofs 0.174 (1.00).
Copy kernel 0.020 / 0.017 / 0.017 (twice__inbounds ran); polynomial bwd entry point 0.021 /
0.018 / 0.017 (polyBwd__inbounds); polynomial bwds under the sanitizer 3.4x the host time. The
goal (checks cost <= 3% on the MLP and polynomial steps) holds: the differences are run-to-run
noise.
PoCL 3.1 on this machine's 2 shared AMD EPYC cores (2026-11-24, `--log2 10 --poly-log2 14
--runs 2`: small and few runs, read the ratios only), min device ms of the MLP step, ratio to no
checks: no checks 4.90; checks without proofs (blocking / lazy read) 5.45 / 5.48 (1.11 / 1.12);
lazy read + proofs (default: learnGradient__accum__inbounds, ..._finish__inbounds,
adjustParameters__inbounds ran) 4.85 (0.99); reduce-atomics only: 4.84, checks 5.41 (1.12),
proofs 4.86 (1.00). Polynomial bwd entry point: 0.017 / 0.018 / 0.017 ms (polyBwd__inbounds ran).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import diffc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_mlp import MLP_DIR, DiffcStep, half_inputs, init_params  # noqa: E402

sys.path.remove(str(HERE))


def load_mlp(bounds_check: bool, proofs: bool, accumulate: bool = True):
    """The MLP module with its entry points built under the given settings."""
    from diffc.runtime.device import settings_changed
    from diffc.runtime.dispatch import entry_program

    with settings_changed(bounds_check=bounds_check, bounds_proofs=proofs, accumulate=accumulate):
        m = diffc.load_module(MLP_DIR / "mlp.slang")
        entry_program(m)
    return m


class Row:
    def __init__(self, name: str, measure, kernels=lambda: "-"):
        self.name, self.measure, self.times, self.kernels = name, measure, [], kernels


def launched(m, *entries: str) -> str:
    """The kernels the entry points' last dispatches launched (their plans' first launches)."""
    from diffc.runtime.dispatch import entry_program

    plans = entry_program(m).plans
    return " ".join(k.function_name for e in entries for k, _, _ in plans[e][0].launches)


def mlp_rows(p0: np.ndarray, xy: np.ndarray) -> list[Row]:
    from diffc.runtime import pending

    rows = []
    for name, checked, proofs, lazy, accumulate in (
            ("no checks", False, False, True, True),
            ("checks, blocking read", True, False, False, True),
            ("checks, lazy read", True, False, True, True),
            ("checks, lazy read + proofs (default)", True, True, True, True),
            ("no checks, reduce-atomics only", False, False, True, False),
            ("checks, lazy read, reduce-atomics only", True, False, True, False),
            ("checks, lazy read + proofs, reduce-atomics only", True, True, True, False)):
        step = DiffcStep(load_mlp(checked, proofs, accumulate), p0, xy)

        def host(step=step, lazy=lazy):
            saved, pending.LAZY = pending.LAZY, lazy
            try:
                step.reset()
                diffc.synchronize()
                t0 = time.perf_counter()
                step.run()
                diffc.synchronize()
                return time.perf_counter() - t0
            finally:
                pending.LAZY = saved

        def device(step=step):
            step.reset()
            events = step.run()
            diffc.synchronize()
            return sum((e.profile.end - e.profile.start) * 1e-9 for e in events if e is not None)

        kernels = lambda m=step.m: launched(m, "learnGradient", "adjustParameters")  # noqa: E731
        rows += [Row(f"MLP step, host: {name}", host, kernels), Row(f"MLP step, device: {name}", device, kernels)]
    return rows


COPY = """
[shader("compute")]
[numthreads(256, 1, 1)]
void twice(uint3 tid: SV_DispatchThreadID, float* src, float* dst, uint n) {
    if (tid.x >= n) return;
    dst[tid.x] = 2.0 * src[tid.x];
}
"""


def entry_rows(source: str, filename: str, entry: str, what: str, args: dict, n: int) -> list[Row]:
    """Device time of one dispatch of `entry` (of `source`) over n threads, built without checks,
    with checks but no proofs, and as by default (checks and proofs)."""
    from diffc.runtime.device import settings_changed
    from diffc.runtime.dispatch import entry_program
    from diffc.runtime.module import load_module_from_string

    rows = []
    for name, checked, proofs in (("no checks", False, False), ("checks, no proofs", True, False),
                                  ("checks + proofs (default)", True, True)):
        with settings_changed(bounds_check=checked, bounds_proofs=proofs):
            m = load_module_from_string(source, filename)
            entry_program(m)

        def device(m=m):
            ev = getattr(m, entry).dispatch(thread_count=n, **args)
            diffc.synchronize()
            return (ev.profile.end - ev.profile.start) * 1e-9

        rows.append(Row(f"{what}, device: {name}", device, lambda m=m: launched(m, entry)))
    return rows


def copy_rows(n: int) -> list[Row]:
    src = diffc.Tensor.from_numpy(np.arange(n, dtype=np.float32))
    dst = diffc.Tensor.zeros(n, np.float32)
    return entry_rows(COPY, "copy.slang", "twice", "copy kernel", {"src": src, "dst": dst, "n": n}, n)


POLY = """
[Differentiable]
float polynomial(no_diff float a, no_diff float b, no_diff float c, float x) {
    return a * x * x + b * x + c;
}

[shader("compute")]
[numthreads(256, 1, 1)]
void polyBwd(uint3 tid: SV_DispatchThreadID, float* xs, float* dxs, uint n) {
    if (tid.x >= n) return;
    var x = diffPair(xs[tid.x]);
    bwd_diff(polynomial)(2.0, 8.0, -1.0, x, 1.0);
    dxs[tid.x] = x.d;
}
"""


def poly_entry_rows(n: int) -> list[Row]:
    rng = np.random.default_rng(0)
    xs = diffc.Tensor.from_numpy(rng.uniform(-1, 1, n).astype(np.float32))
    dxs = diffc.Tensor.zeros(n, np.float32)
    return entry_rows(POLY, "poly_entry.slang", "polyBwd", "polynomial bwd entry point", {"xs": xs, "dxs": dxs, "n": n}, n)


def poly_rows(n: int) -> list[Row]:
    rows = []
    rng = np.random.default_rng(0)
    for name, check in (("bwds", False), ("bwds, sanitizer (check=True)", True)):
        m = diffc.load_module(ROOT / "examples" / "poly.slang", check=check)
        x = diffc.Tensor.from_numpy(rng.uniform(-1, 1, n).astype(np.float32)).with_grads(zero=True)
        y = diffc.Tensor.zeros(n, np.float32).with_grads()
        y.grad.fill(1.0)

        def host(m=m, x=x, y=y):
            diffc.synchronize()
            t0 = time.perf_counter()
            m.polynomial.bwds(a=2.0, b=8.0, c=-1.0, x=x, _result=y)
            diffc.synchronize()
            return time.perf_counter() - t0

        rows.append(Row(f"polynomial {name}, host", host))
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2", type=int, default=14, help="MLP batch 2^LOG2 (default 14)")
    ap.add_argument("--poly-log2", type=int, default=22, help="copy kernel and polynomial elements 2^N (default 22)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    print(f"device: {diffc.device()!r}")
    rng = np.random.default_rng(0)
    rows = (mlp_rows(init_params(rng), half_inputs(1 << args.log2, rng)) + copy_rows(1 << args.poly_log2)
            + poly_entry_rows(1 << args.poly_log2) + poly_rows(1 << args.poly_log2))
    for r in rows:  # warm up (builds, first launches)
        r.measure()
    for _ in range(args.runs):  # round robin: a changing load skews every row alike
        for r in rows:
            r.times.append(r.measure())
    print(f"MLP batch 2^{args.log2}, copy kernel and polynomial 2^{args.poly_log2} elements; {args.runs} runs per "
          "row, minimum; ratio: to the group's first row")
    print(f"{'what':66s} {'min ms':>9s} {'ratio':>7s}  kernels launched")
    base: dict[str, float] = {}
    for r in rows:
        lo = min(r.times)
        group = r.name.split(":")[0] if ":" in r.name else r.name.split(",")[0]
        if "reduce-atomics only" in r.name:
            group += ", reduce-atomics only"
        base.setdefault(group, lo)
        print(f"{r.name:66s} {lo * 1e3:9.3f} {lo / base[group]:7.3f}  {r.kernels()}")


if __name__ == "__main__":
    main()
