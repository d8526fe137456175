#!/bin/bash
# Issue 24, smaller OpenCL for the same kernels: a kernel's variants share one always-inlined body,
# functions are static, reduce-atomics' group adds of a run are one add in a `#pragma unroll`
# loop. Checks whether NVIDIA's compiler inlined the shared bodies (no call of a *__body left in
# the PTX), then runs the MLP step's GPU bench (its rows: accumulated, deterministic=False,
# reduce-atomics alone), to compare with the same bench on the main branch.
# Run from the repository root with PYTHONPATH set to it, DIFFC_DEVICE=gpu; about 2 minutes.
set -euo pipefail
OUT=${OUT:-/tmp/i24-out}
mkdir -p "$OUT"
python -m diffc.cli compile examples/mlp/mlp.slang --entry learnGradient --emit opencl --device auto > "$OUT/learnGradient.cl"
python - "$OUT" <<'PY'
import sys, pyopencl as cl
from diffc.runtime.device import device
out = sys.argv[1]
dev = device()
src = open(f"{out}/learnGradient.cl").read()
prg = cl.Program(dev.context, src).build(cache_dir=False)
ptx = bytes(prg.get_info(cl.program_info.BINARIES)[0]).decode(errors="replace")
open(f"{out}/learnGradient.ptx", "w").write(ptx)
calls = [l.strip() for l in ptx.splitlines() if "call" in l and "__body" in l]
bodies = [l.strip() for l in ptx.splitlines() if l.lstrip().startswith((".func", ".visible .func")) and "__body" in l]
print("device:", dev.cl_device.name, "| PTX lines:", ptx.count("\n"))
print("calls of a shared body left in the PTX:", len(calls), "| body functions defined:", len(bodies))
for k in prg.all_kernels():
    print(f"  {k.function_name}: registers/private bytes {k.get_work_group_info(cl.kernel_work_group_info.PRIVATE_MEM_SIZE, dev.cl_device)}")
PY
python bench/bench_mlp.py --log2 20 --runs 5 --no-racy
