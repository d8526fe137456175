"""learnGradient of examples/mlp (accumulate-gradients' kernels) over the launch settings the pass
and runtime choose from: the accumulated kernel's work-group size R (DIFFC_ACCUM_WORK_GROUP,
one build each), work-groups per compute unit (DIFFC_ACCUM_GROUPS), atomic and deterministic
mode; min device time of a few runs per batch, so the defaults can be picked from data.

    python bench/bench_accumulate_sweep.py --log2 18 20 22 --work-group 32 64 128 --groups 2 4 8 16
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mlp import MLP_DIR, DiffcStep, device_timed, half_inputs, init_params  # noqa: E402

import diffc  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log2", type=int, nargs="+", default=[18, 20, 22])
    ap.add_argument("--work-group", type=int, nargs="+", default=[64])
    ap.add_argument("--groups", type=int, nargs="+", default=[2, 4, 8, 16])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    from diffc.runtime.device import settings_changed
    from diffc.runtime.dispatch import entry_program

    print(f"device: {diffc.device()!r}")
    rng = np.random.default_rng(0)
    p0 = init_params(rng)
    batches = {log2: half_inputs(1 << log2, rng) for log2 in args.log2}
    print(f"{'R':>5s} {'groups/CU':>9s} {'batch':>6s} {'atomic ms':>10s} {'determ. ms':>10s}")
    for r in args.work_group:
        with settings_changed(accumulate_work_group=r):
            m = diffc.load_module(MLP_DIR / "mlp.slang")
            entry_program(m)
        for g in args.groups:
            os.environ["DIFFC_ACCUM_GROUPS"] = str(g)
            for log2, xy in batches.items():
                times = []
                for det in (False, True):
                    step = DiffcStep(m, p0, xy, deterministic=det)
                    measure = device_timed(step, slice(0, 1))
                    measure()
                    times.append(min(measure() for _ in range(args.runs)))
                print(f"{r:5d} {g:9d} {'2^%d' % log2:>6s} {times[0] * 1e3:10.3f} {times[1] * 1e3:10.3f}", flush=True)


if __name__ == "__main__":
    main()
