"""Module load time, cold (empty cache) against cached (a second process, unchanged module):
`diffc.load_module(path)` and the first call after it, each in a fresh process.

    python bench/bench_module_load.py [module.slang ...]     # default: examples/mlp/mlp.slang, examples/poly.slang

The cache (diffc/runtime/module_cache.py) lives in a temporary DIFFC_CACHE_DIR here, so the
user's cache is neither used nor changed. Import time (Python, xDSL, pyopencl) and choosing the
OpenCL device are printed apart: no cache can save them. For a module with an element-wise function (poly.slang), the first call
`m.polynomial(...)` is timed too: cached, it reads its OpenCL C from the module cache and its
binary from the program cache. For a module with compute entry points (mlp.slang), the first
call column is what the first `dispatch` waits for: the entry points lowered and built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import diffc
from diffc.runtime import module
t1 = time.perf_counter()
m = diffc.load_module(sys.argv[1])
t2 = time.perf_counter()
diffc.device()  # choosing the OpenCL device: no cache can save it either
t3 = time.perf_counter()
first_call = None
if "polynomial" in dir(m):
    m.polynomial(a=2.0, b=8.0, c=-1.0, x=np.arange(4, dtype=np.float32), _result="numpy")
    first_call = time.perf_counter() - t3
elif any(getattr(m, f).is_entry for f in dir(m) if not f.startswith("_") and f in m._signatures):
    from diffc.runtime.dispatch import entry_program
    entry_program(m)  # what the first dispatch waits for: lowered, emitted, built
    first_call = time.perf_counter() - t3
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "device": t3 - t2, "first_call": first_call}))
"""


def child(path: str, cache: str) -> dict:
    env = dict(os.environ, DIFFC_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD, path], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    paths = sys.argv[1:] or [str(HERE.parent / "examples" / "mlp" / "mlp.slang"), str(HERE.parent / "examples" / "poly.slang")]
    print(f"{'module':16s} {'':7s} {'import':>8s} {'device':>8s} {'load_module':>12s} {'first call':>11s}")
    for path in paths:
        with tempfile.TemporaryDirectory(prefix="diffc-bench-cache-") as cache:
            for what in ("cold", "cached", "cached"):
                r = child(path, cache)
                call = f"{r['first_call'] * 1e3:9.1f} ms" if r["first_call"] is not None else f"{'-':>11s}"
                print(f"{Path(path).name:16s} {what:7s} {r['import']:7.2f}s {r['device']:7.2f}s {r['load'] * 1e3:9.1f} ms {call}")


if __name__ == "__main__":
    main()
