"""Compile time and peak memory of the differentiation pipeline on a generated function of about
10,000 ops (straight-line arithmetic and math, branches and a counted loop), in both modes.

    python bench/bench_ad_pipeline.py                # 10,000 ops, 3 runs, best time
    python bench/bench_ad_pipeline.py --ops 2000 --runs 1

Prints the op count of the input function, the best CPU time (process time: fair on a shared
machine; wall time beside it) of diff-fwd,diff-rev,diff-checkpoint,diff-lower over a fresh
parse (parsing not counted), and the peak Python memory (tracemalloc) of one run. The IR is
generated deterministically, so numbers taken before and after a change compare the same input.

Measured on the shared 2-core CPU machine (one run each, same load), 10,000 ops: before the
differentiation core (commit b20859f) 19.40 s CPU, peak 152.4 MiB; after it 15.72 s CPU, peak
152.4 MiB (diff-fwd now takes loop-carried tangents from the activity analysis instead of
translating a loop body again until its tangents reach a fixed point).

Again when issue 10 closed (2026-11-24, the same machine under a load of 3 to 4, runs of the two
commits interleaved, best of 3 each; b20859f measured with `--passes
diff-fwd,diff-rev,diff-checkpoint,diff-lower` on a copy of its tree):

    b20859f (before the core)        12.37 / 12.41 s CPU   peak 152.4 MiB
    0ae76a5                          12.75 s CPU (1 run)   peak 162.3 MiB
    8fc6fce                          12.85 / 12.77 s CPU   peak 162.3 MiB
    552d227                          13.01 s CPU (1 run)   peak 162.3 MiB

The whole difference is output size: since b20859f the partials of arith.maximumf split a tie
half and half as Slang does (a compare and a subtraction more per op; the generated function
has 1,545 of them), so the differentiated IR holds 5.9% more ops (26,577 at b20859f, 28,137 at
552d227, counted on a 3,000-op input: 780 more arith.cmpf and as many arith.subf), and time (+3.5%) and peak memory
(+6.5%) grew with it: per op out, the pipeline is no slower. The core's changes between them
moved neither (0ae76a5 and 552d227 agree).

After the kernel ABI roles became IR data and the front end's last AST activity rules moved
onto diffc.ad.activity (commit 50e7860, 2026-11-24, same machine, load 3.3 to
4.2, best of 3; none of it touches the differentiation passes):

    50e7860                          12.50 s CPU (13.87 s wall)   peak 162.3 MiB

When the kernel pipeline moved into the compiler (issue 21, 2026-11-27, load about 1.5, one
run each, interleaved; the differentiation passes untouched): e2e0ce9 15.26 s CPU, after it
15.33 s CPU, peak 162.3 MiB both.

After diff-lower rewrote in place (no clone of every op) and the derivative rules built their
ops by `create` (2026-11-28, load 3 to 10, one run each): 90a7e85 19.64 s CPU, peak 162.3 MiB;
after 7.57 s CPU, peak 83.3 MiB.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
import tracemalloc

from xdsl.passes import PassPipeline
from xdsl.transforms import get_all_passes

from diffc import interp
from diffc.registry import PASSES

CLEANUP = ("canonicalize", "cached-canonicalize", "cse", "linear-cse")  # generic passes after the differentiation: not measured


def ad_passes() -> str:
    """The differentiation passes of the pipeline (diffc.pipeline.AD_PIPELINE, where it is
    defined, without the cleanup passes)."""
    from diffc.pipeline import AD_PIPELINE

    return ",".join(p for p in AD_PIPELINE if p not in CLEANUP)


def generate(n_ops: int, seed: int = 0) -> str:
    """`@f(%x0, %x1, %x2, %x3) -> f32`: a chain of binary/unary float ops over a pool of recent
    values; every 50th step an scf.if on a comparison, every 200th a 4-iteration scf.for."""
    rng = random.Random(seed)
    lines: list[str] = []
    pool = ["%x0", "%x1", "%x2", "%x3"]
    k = 0
    count = 0

    def fresh() -> str:
        nonlocal k
        k += 1
        return f"%v{k}"

    def pick() -> str:
        return pool[-1 - rng.randrange(min(len(pool), 16))]

    def binop(ind: str, out: list[str]) -> str:
        nonlocal count
        v = fresh()
        op = rng.choice(["arith.addf", "arith.mulf", "arith.subf", "arith.maximumf"])
        out.append(f"{ind}{v} = {op} {pick()}, {pick()} : f32")
        count += 1
        return v

    def unop(ind: str, out: list[str]) -> str:
        nonlocal count
        v = fresh()
        op = rng.choice(["math.sin", "math.cos", "math.tanh"])
        out.append(f"{ind}{v} = {op} {pick()} : f32")
        count += 1
        return v

    ind = "  "
    lines.append(f"{ind}%c0 = arith.constant 0 : index")
    lines.append(f"{ind}%c1 = arith.constant 1 : index")
    lines.append(f"{ind}%c4 = arith.constant 4 : index")
    count += 3
    step = 0
    while count < n_ops:
        step += 1
        if step % 200 == 0:
            init = pick()
            r, acc, iv = fresh(), fresh(), fresh()
            lines.append(f"{ind}{r} = scf.for {iv} = %c0 to %c4 step %c1 iter_args({acc} = {init}) -> (f32) {{")
            pool.append(acc)
            a = binop(ind + "  ", lines)
            b = unop(ind + "  ", lines)
            c = fresh()
            lines.append(f"{ind}  {c} = arith.mulf {a}, {b} : f32")
            lines.append(f"{ind}  scf.yield {c} : f32")
            lines.append(f"{ind}}}")
            del pool[pool.index(acc):]
            pool.append(r)
            count += 3
        elif step % 50 == 0:
            cnd, r = fresh(), fresh()
            lines.append(f"{ind}{cnd} = arith.cmpf olt, {pick()}, {pick()} : f32")
            lines.append(f"{ind}{r} = scf.if {cnd} -> (f32) {{")
            t = binop(ind + "  ", lines)
            lines.append(f"{ind}  scf.yield {t} : f32")
            lines.append(f"{ind}}} else {{")
            e = unop(ind + "  ", lines)
            lines.append(f"{ind}  scf.yield {e} : f32")
            lines.append(f"{ind}}}")
            pool.append(r)
            count += 4
        elif rng.random() < 0.3:
            pool.append(unop(ind, lines))
        else:
            pool.append(binop(ind, lines))
    body = "\n".join(lines)
    return (
        "func.func @f(%x0: f32, %x1: f32, %x2: f32, %x3: f32) -> f32 attributes {diff.differentiable} {\n"
        f"{body}\n  func.return {pool[-1]} : f32\n}}\n"
        "func.func @main_bwd(%a: f32, %b: f32, %c: f32, %d: f32, %dy: f32) -> (f32, f32, f32, f32) {\n"
        "  %g:4 = diff.bwd_diff @f(%a, %b, %c, %d, %dy) : (f32, f32, f32, f32, f32) -> (f32, f32, f32, f32)\n"
        "  func.return %g#0, %g#1, %g#2, %g#3 : f32, f32, f32, f32\n}\n"
        "func.func @main_fwd(%a: !diff.pair<f32>, %b: !diff.pair<f32>, %c: !diff.pair<f32>, %d: !diff.pair<f32>) -> !diff.pair<f32> {\n"
        "  %y = diff.fwd_diff @f(%a, %b, %c, %d) : (!diff.pair<f32>, !diff.pair<f32>, !diff.pair<f32>, !diff.pair<f32>) -> !diff.pair<f32>\n"
        "  func.return %y : !diff.pair<f32>\n}\n"
    ), count


def run_once(text: str, spec: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of the passes `spec` over a fresh parse."""
    module = interp.parse_module(text)
    passes = PassPipeline.parse_spec({**get_all_passes(), **PASSES}, spec)
    ctx = interp.make_context()
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    passes.apply(ctx, module)
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--passes", help="the passes to time (default: the differentiation passes of diffc.pipeline; "
                    "give them by name to measure a commit from before diffc/pipeline.py)")
    args = ap.parse_args()
    spec = args.passes or ad_passes()
    text, count = generate(args.ops)
    times = [run_once(text, spec) for _ in range(args.runs)]
    tracemalloc.start()
    run_once(text, spec)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"ops in @f: {count}")
    wall = min(t for t, _ in times)
    cpu = min(c for _, c in times)
    print(f"{spec} (bwd_diff and fwd_diff of @f): best of {args.runs}: {cpu:.2f} s CPU "
          f"({wall:.2f} s wall), peak {peak / 2**20:.1f} MiB (tracemalloc, one run)")


if __name__ == "__main__":
    main()
