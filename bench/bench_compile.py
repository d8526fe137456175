"""Compile time, cold and warm: the MLP tutorial's first training step and the AD + kernel
pipelines on a generated function of about 10,000 ops, each in a fresh process.

    python bench/bench_compile.py                       # this tree
    python bench/bench_compile.py --tree OLD --tree .   # trees side by side, runs interleaved

Rows:
* `mlp first step`: examples/mlp/train.py's first step (load mlp.slang, evaluate, one training
  step: learnGradient and adjustParameters lowered, emitted, built and run). cold: empty
  caches (diffc's, DIFFC_CACHE_DIR, and PoCL's kernel cache, POCL_CACHE_DIR, both temporary
  folders here); warm: a second process over the caches the first filled.
* `10k-op pipelines`: bench_ad_pipeline.py's function with a compute entry point that calls its
  bwd_diff and fwd_diff, through `diffc.compiler.lower_kernels` (AD_PIPELINE, then
  KERNEL_PIPELINE) and the OpenCL emitter; parsing not counted. cold: the first run in a
  process; warm: the second, in the same process, over a fresh parse.
* `learnGradient OpenCL`: lines of `diffc compile examples/mlp/mlp.slang --entry learnGradient`.
* `learnGradient build`: the device's build of that program as a dispatch here would emit it
  (`--device auto`: on PoCL, its CPU form), with an empty PoCL cache: the compiler's front end
  and whatever it does at build time, not the compile of a kernel at its first launch.

Times are wall seconds, with the process's CPU seconds (user + system, all threads: PoCL's
compiler included) beside them: on a shared machine CPU time is the fairer number. Imports
(Python, xDSL, pyopencl) are not counted.

Measured for issue 24 (2026-11-27, PoCL on the shared 2-core CPU machine, load average 5 to 11:
wall times are several times CPU times), `--tree` the commit before the work (9e93488) and
after it, one run:

    9e93488  mlp first step         cold    681.10 s   172.98 s
    9e93488  mlp first step         warm      1.64 s     0.81 s
    9e93488  learnGradient OpenCL            25056 lines
    after    mlp first step         cold     30.22 s    15.00 s
    after    mlp first step         warm      1.51 s     0.72 s
    after    learnGradient OpenCL            15584 lines

(the 10,000-op pipelines, `--skip mlp`, one run: 37.52 / 39.81 s CPU cold / warm before, 30.02 /
35.44 s after; the differentiation passes and xDSL's canonicalize hold most of it.) Where the
cold step's CPU went after (cProfile with a CPU clock, so PoCL's compiler threads count): the
kernel passes about half (merge-calls, bounds-check, accumulate-gradients), PoCL's build of the
program's source and its compile of the one kernel launched about a third, emitting OpenCL, the
front end and the differentiation the rest. Before, asking PoCL for the program's binary
compiled all six variants of learnGradient: 140 s of the 173.

After diff-lower rewrote in place, cached-canonicalize replaced xDSL's canonicalize in the
differentiation pipeline and the derivative rules built their ops by `create` (2026-11-28, same
machine, load 3 to 10, `--tree` 90a7e85 and after, one run, CPU seconds):

    90a7e85  mlp first step  cold 17.83  warm 1.25    10,000-op pipelines  cold 37.90  warm 37.41
    after    mlp first step  cold 11.91  warm 0.85    10,000-op pipelines  cold 14.49  warm 19.09

(67,403 lines of OpenCL both.) The 10,000-op pipelines' CPU now, by pass: diff-fwd 2.8,
diff-rev 3.6, diff-checkpoint 0.9, diff-lower 0.6, forward-handle-results 0.3 + 0.04,
cached-canonicalize 5.3 (xDSL's canonicalize: its walker's three walks and its patterns), xDSL's
cse 3.6, the kernel passes 2.5 (merge-calls 0.9, bounds-check 0.7), emitting 1.2.

Then, for the size of the generated code (2026-11-28, the same machine, load average about 2;
`--skip pipeline`, 90a7e85 against the work, one run):

    90a7e85  mlp first step         cold     14.56 s    13.83 s
    90a7e85  mlp first step         warm      0.94 s     0.90 s
    90a7e85  learnGradient OpenCL            15584 lines
    90a7e85  learnGradient build    cold      5.56 s     5.22 s   (18849 lines for this device)
    after    mlp first step         cold      8.32 s     7.73 s
    after    mlp first step         warm      1.02 s     0.91 s
    after    learnGradient OpenCL             4533 lines
    after    learnGradient build    cold      2.76 s     2.19 s   (4408 lines for this device)

PoCL's build optimizes every kernel of the program, launched or not. Before the last step
(loops holding a barrier unrolled on CPUs too), each kernel built alone with the functions
(0.9 s) cost: learnGradient +1.4 s and its __inbounds variant +1.8 s (reduce-atomics' kernels,
which a CPU dispatch does not launch), each accumulated or finish kernel +0.2 to +0.4 s, most
of it unrolling `#pragma unroll` loops (on CPUs every constant loop up to 32 trips gets one).

The 10,000-op pipelines again (2026-11-28, PoCL, 2-core shared machine, load average 6 to 8:
wall about twice CPU; `--tree` f864d2f (/work/main) and after, `--skip mlp --skip lines --skip
build`, one run, CPU seconds; 40,086 lines of OpenCL both):

    f864d2f  10,000-op pipelines  cold 19.37  warm 19.17
    after    10,000-op pipelines  cold 14.66  warm 13.37

By pass (the same machine a minute later, one process each, CPU seconds, f864d2f / after):
diff-fwd 2.06 / 1.60, diff-rev 2.75 / 2.97, diff-checkpoint 0.89 / 0.92, diff-lower 0.52 / 0.53,
forward-handle-results 0.27 / 0.27, cached-canonicalize 4.52 / 2.60 (its walks after the first
visit only the ops a rewrite touched; the worklist filled by one plain walk), cse 3.05 /
linear-cse 1.00 (diffc/kernel_support/cse.py as a pass: one scoped table, operand ids),
merge-calls 0.66 / 0.20, bounds-check 0.69 / 0.56, the other kernel passes 0.61 / 0.67, emitting
1.21 / 0.93; in all 17.32 / 12.33 (the cycle collector held back while passes run:
compiler.fewer_collections). What is left is mostly building and visiting ops: the
differentiation makes 95,000 ops of which canonicalize and CSE drop 30,000 (mostly tangents and
primal copies of values the function never uses, as the activity analysis marks varied values,
not useful ones; and repeated constants).

Then a kernel and its __inbounds variant share one body (bounds-check's @K__body, called with a
constant flag and always inlined), every function but the kernels is `static`, a load the next
store uses is read inside it, and reduce-atomics issues a run of a group's adds as one add in an
unrolled loop (2026-11-28, PoCL, 2-core shared machine, load average 5 to 9; `--skip pipeline`,
f864d2f against the work, one run, wall and CPU seconds):

    f864d2f  mlp first step         cold     13.42 s     8.03 s
    f864d2f  mlp first step         warm      1.60 s     1.08 s
    f864d2f  learnGradient OpenCL             4533 lines
    f864d2f  learnGradient build    cold      3.26 s     1.63 s   (4408 lines for this device)
    after    mlp first step         cold     11.41 s     5.75 s
    after    mlp first step         warm      0.71 s     0.58 s
    after    learnGradient OpenCL             2312 lines
    after    learnGradient build    cold      1.09 s     1.04 s   (2258 lines for this device)

(two runs before the last step, in either order, agreed: build 2.11 / 1.73 s CPU before, 1.24 /
0.90 s after; first step cold 7.0 / 7.1 s CPU before, 6.0 / 5.9 s after.) What PoCL's build
spent on learnGradient's program before: about 0.2 s of fixed cost, about half of the rest
compiling the program's non-kernel functions on their own (external, so kept beside their
inlined copies: `static` lets it drop them), and little per kernel once the bodies were shared
(the program with its six kernels removed, functions kept, built in about the same time). The
2,312 lines: the accumulated kernel's body (about 610: its 148 private sums are one line each,
unrolled by accumulate-gradients), reduce-atomics' kernel body (about 500), the network's
functions (about 900), the finish kernel's body (about 100), result structs and prototypes
(about 150), and the six kernels' calls of their bodies.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

MLP_CHILD = r"""
import json, os, resource, sys, time
sys.path.insert(0, os.path.join(sys.argv[1], "examples", "mlp"))
import numpy as np, pyopencl, xdsl
import diffc
import train
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0, c0 = time.perf_counter(), cpu()
train.train(steps=1, every=1, log=lambda *a: None)
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": cpu() - c0}))
"""

PIPELINE_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1] + "/bench")
from bench_compile import pipeline_module_text
from diffc import compiler
from diffc.pipeline import KernelSettings
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
text, ops = pipeline_module_text(int(sys.argv[2]))
out = {"ops": ops}
for run in ("cold", "warm"):
    module = compiler.parse_ir(text, "bench.mlir")
    t0, c0 = time.perf_counter(), cpu()
    compiler.lower_kernels(module, KernelSettings())
    source = compiler.emit_opencl(module)
    out[run] = {"wall": time.perf_counter() - t0, "cpu": cpu() - c0}
out["lines"] = source.count("\n")
print(json.dumps(out))
"""


def pipeline_module_text(n_ops: int) -> tuple[str, int]:
    """bench_ad_pipeline's function @f and a compute entry point over buffers that calls its
    bwd_diff and its fwd_diff (so both modes are lowered into a kernel)."""
    sys.path.insert(0, str(HERE))
    from bench_ad_pipeline import generate

    text, count = generate(n_ops)
    f = text[:text.index("func.func @main_bwd")]
    pointer = '{{diff.abi = #diff.abi<pointer of "{0}">}}'
    offset = '{{diff.abi = #diff.abi<offset of "{0}">}}'
    loads = "\n".join(
        f"      %i{k} = arith.addi %tid_i, %c{k} : index\n"
        f"      %j{k} = arith.addi %xs_off, %i{k} : index\n"
        f"      %x{k} = memref.load %xs[%j{k}] : memref<?xf32>" for k in range(4))
    stores = "\n".join(
        f"      %s{k} = arith.addi %grads_off, %i{k} : index\n"
        f"      memref.store %g#{k}, %grads[%s{k}] : memref<?xf32>" for k in range(4))
    entry = f"""
func.func @main_kernel(%tid: i32 {{diffc.semantic = "SV_DispatchThreadID"}}, %xs: memref<?xf32> {pointer.format("xs")}, %xs_off: index {offset.format("xs")}, %grads: memref<?xf32> {pointer.format("grads")}, %grads_off: index {offset.format("grads")}, %count: i32) attributes {{diffc.shader = "compute", diffc.numthreads = array<i64: 64, 1, 1>}} {{
  %inside = arith.cmpi ult, %tid, %count : i32
  scf.if %inside {{
      %tid_i0 = arith.index_cast %tid : i32 to index
      %c4 = arith.constant 4 : index
      %tid_i = arith.muli %tid_i0, %c4 : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
{loads}
      %one = arith.constant 1.0 : f32
      %g:4 = diff.bwd_diff @f(%x0, %x1, %x2, %x3, %one) : (f32, f32, f32, f32, f32) -> (f32, f32, f32, f32)
{stores}
      %zero = arith.constant 0.0 : f32
      %p0 = diff.make_pair %x0, %one : f32
      %p1 = diff.make_pair %x1, %zero : f32
      %p2 = diff.make_pair %x2, %zero : f32
      %p3 = diff.make_pair %x3, %zero : f32
      %y = diff.fwd_diff @f(%p0, %p1, %p2, %p3) : (!diff.pair<f32>, !diff.pair<f32>, !diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>
      %dy = diff.differential %y : !diff.pair<f32>
      %t = arith.addi %xs_off, %c0 : index
      memref.store %dy, %xs[%t] : memref<?xf32>
  }}
  func.return
}}
"""
    return f + entry, count


def run_child(code: str, args: list[str], tree: Path, env: dict) -> dict:
    # the tree first, then whatever the caller's path had (packages installed with --target)
    path = os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, **env, PYTHONPATH=path)
    out = subprocess.run([sys.executable, "-c", code, str(tree), *args], env=env, capture_output=True, text=True,
                         cwd=str(tree))
    if out.returncode:
        raise RuntimeError(f"{tree}: {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


BUILD_CHILD = r"""
import json, resource, sys, time
import pyopencl as cl
from diffc.runtime.device import device
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
source = sys.stdin.read()
dev = device()
t0, c0 = time.perf_counter(), cpu()
cl.Program(dev.context, source).build(cache_dir=False)
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": cpu() - c0}))
"""


def _env(tree: Path) -> dict:
    """The environment of a child process running `tree`: its root first on the path, then what
    the path held (where the dependencies may be installed)."""
    path = os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p)
    return dict(os.environ, PYTHONPATH=path)


def program_build(tree: Path) -> tuple[dict, int]:
    """The device's build of learnGradient's program as a dispatch here builds it (`diffc compile
    --device auto`), in a fresh process with an empty PoCL cache; and its lines."""
    source = subprocess.run([sys.executable, "-m", "diffc.cli", "compile", "examples/mlp/mlp.slang", "--entry",
                             "learnGradient", "--emit", "opencl", "--device", "auto"],
                            env=_env(tree), capture_output=True, text=True,
                            cwd=str(tree), check=True).stdout
    with tempfile.TemporaryDirectory(prefix="diffc-bench-") as tmp:
        env = dict(_env(tree), POCL_CACHE_DIR=tmp)
        out = subprocess.run([sys.executable, "-c", BUILD_CHILD], input=source, env=env, capture_output=True,
                             text=True, cwd=str(tree), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1]), source.count("\n")


def opencl_lines(tree: Path) -> int:
    out = subprocess.run([sys.executable, "-m", "diffc.cli", "compile", "examples/mlp/mlp.slang", "--entry",
                          "learnGradient", "--emit", "opencl"], env=_env(tree),
                         capture_output=True, text=True, cwd=str(tree), check=True)
    return out.stdout.count("\n")


def fmt(r: dict) -> str:
    return f"{r['wall']:8.2f} s {r['cpu']:8.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", type=Path, help="a source tree to measure (default: this one)")
    ap.add_argument("--ops", type=int, default=10_000)
    ap.add_argument("--skip", action="append", default=[], choices=("mlp", "pipeline", "lines", "build"))
    args = ap.parse_args()
    trees = [t.resolve() for t in (args.tree or [HERE.parent])]
    print(f"{'tree':24s} {'row':22s} {'':5s} {'wall':>10s} {'cpu':>10s}")
    for tree in trees:
        name = str(tree)[-24:]
        if "mlp" not in args.skip:
            with tempfile.TemporaryDirectory(prefix="diffc-bench-") as tmp:
                env = {"DIFFC_CACHE_DIR": tmp + "/diffc", "POCL_CACHE_DIR": tmp + "/pocl"}
                for what in ("cold", "warm"):
                    print(f"{name:24s} {'mlp first step':22s} {what:5s} {fmt(run_child(MLP_CHILD, [], tree, env))}",
                          flush=True)
        if "pipeline" not in args.skip:
            r = run_child(PIPELINE_CHILD, [str(args.ops)], tree, {})
            row = f"{r['ops']:,}-op pipelines"
            for what in ("cold", "warm"):
                print(f"{name:24s} {row:22s} {what:5s} {fmt(r[what])}   ({r['lines']} lines of OpenCL)", flush=True)
        if "lines" not in args.skip:
            print(f"{name:24s} {'learnGradient OpenCL':22s} {'':5s} {opencl_lines(tree):8d} lines", flush=True)
        if "build" not in args.skip:
            r, lines = program_build(tree)
            print(f"{name:24s} {'learnGradient build':22s} {'cold':5s} {fmt(r)}   ({lines} lines for this device)",
                  flush=True)


if __name__ == "__main__":
    main()
