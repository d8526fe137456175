"""`diffc suite` over a folder of Slang tests, cold and warm, trees side by side.

    python bench/bench_suite.py SLANG_TESTS_DIR                       # this tree
    python bench/bench_suite.py SLANG_TESTS_DIR --tree OLD --tree .   # runs interleaved

Each tree gets its own empty caches (diffc's, DIFFC_CACHE_DIR, and PoCL's kernel cache,
POCL_CACHE_DIR: temporary folders), then runs the suite three times over them:
* `cold`: empty caches: every file compiled, every program built;
* `rerun`: the caches the cold run filled: a file comes from diffc run's module cache (its
  program built again from PoCL's cache, then its binary kept: diffc/runtime/program.py);
* `warm`: a third run, what every later run of unchanged files costs.
Rows of the trees' runs alternate (A cold, B cold, A rerun, ...), so that both see the same
machine load. Times are wall seconds and the CPU seconds of the suite and its workers (user +
system, PoCL's compiler threads included): on a shared machine CPU time is the fairer number.
The suite's verdicts (`-v`: a line for every file) must be the same in every run of every tree.

Measured for issue 24 (2026-11-28, PoCL 3.1 on the shared 2-core CPU machine, load average 8 to
10: wall times are two to three times CPU times; /work/shared/slang-tests, 294 files), `--tree`
f864d2f (before the work) and after it, one run, interleaved:

    base       cold   262.82 s wall  115.54 s CPU   283/294 passed, 2 known differences
    after      cold   272.67 s wall  126.43 s CPU   283/294 passed, 2 known differences
    base       rerun  126.03 s wall   43.98 s CPU   283/294 passed, 2 known differences
    after      rerun  118.63 s wall   41.98 s CPU   283/294 passed, 2 known differences
    base       warm   111.30 s wall   40.86 s CPU   283/294 passed, 2 known differences
    after      warm    13.39 s wall    6.56 s CPU   283/294 passed, 2 known differences

Warm: 8.3x less wall time, 6.2x less CPU. Every file's output (values, stderr) was the same as
before in all three runs (compared whole, outside this bench). Cold is unchanged within the noise
of this machine: each file is still compiled (front end, AD and kernel passes, emitting: about
half of its CPU) and built by PoCL (about 0.25 s of fixed cost a program, a third), and its kernel
compiled at its launch. The rerun pays for the binaries it keeps (asking PoCL for one compiles the
program's kernel again) about what it saves.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = ("cold", "rerun", "warm")


def suite(tree: Path, tests: str, env: dict) -> tuple[float, float, list[str]]:
    """(wall s, CPU s, the sorted verdict lines) of one `diffc suite -v` in tree `tree`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "diffc.cli", "suite", tests, "-v"], cwd=tree, env=env,
                         capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = sorted(ln for ln in out.stdout.splitlines() if ln.startswith(("ok ", "FAIL ", "KNOWN ")))
    summary = [ln for ln in out.stdout.splitlines() if " passed" in ln]
    return wall, cpu, lines + [s.rsplit(" (", 1)[0] for s in summary]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tests", help="the folder of Slang tests (e.g. /work/shared/slang-tests)")
    ap.add_argument("--tree", action="append", help="a diffc checkout to time (repeatable; default: this one)")
    args = ap.parse_args()
    tests = str(Path(args.tests).resolve())
    trees = [Path(t).resolve() for t in (args.tree or [Path(__file__).resolve().parent.parent])]
    with tempfile.TemporaryDirectory() as tmp:
        envs = []
        for k, tree in enumerate(trees):
            env = dict(os.environ, PYTHONPATH=str(tree), DIFFC_CACHE_DIR=f"{tmp}/diffc{k}",
                       POCL_CACHE_DIR=f"{tmp}/pocl{k}", DIFFC_PROGRESS="0")
            os.makedirs(env["POCL_CACHE_DIR"])
            envs.append(env)
        verdicts = None
        for run in RUNS:
            for tree, env in zip(trees, envs):
                wall, cpu, lines = suite(tree, tests, env)
                same = verdicts is None or lines == verdicts
                verdicts = verdicts or lines
                print(f"{tree.name:14} {run:6} {wall:8.2f} s wall {cpu:8.2f} s CPU   {lines[-1]}"
                      + ("" if same else "   VERDICTS DIFFER"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
