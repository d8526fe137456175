"""What it costs to alternate diffc's OpenCL work with torch's CUDA work on one GPU: the part of
a module call with torch CUDA tensors that is neither the diffc call nor the two copies.

diffc runs on the GPU through NVIDIA's OpenCL, which has its own context on the device; torch
uses a CUDA context. A call with CUDA tensors copies the inputs to the host (torch), calls diffc
(OpenCL), and copies the result back (torch). Each row below is one operation or a pair of them
repeated back to back, every operation waited for; a pair that costs more than its two parts
alone pays for the GPU going from one context to the other.

Rows: "ocl" an OpenCL launch of m.polynomial on a diffc Tensor (waited for); "cuda kernel" a
torch kernel (x.add_(0)); "d2h" / "h2d" a 64-byte copy between a CUDA tensor and pinned or
pageable host memory; "alloc" torch.empty on CUDA; then "ocl + X" for each X, and two CUDA-only
pairs to compare; then module calls with a CUDA tensor (call_rows): through the host (the path
before shared memory), through shared memory with one device copy in, on a tensor of diffc's
pool (no copy), the last without waiting (the host's time per call), and a step (torch kernel,
call, torch kernel on its result) each way.

    DIFFC_DEVICE=gpu python bench/bench_cuda_interop.py [--rounds 15] [--reps 100] [--calls-only]
    DIFFC_DEVICE=gpu python bench/bench_cuda_interop.py --training [--steps 200]

Training loops (`--training`, training_rows): the same model trained two ways at batch 2^14
and 2^18, torch with torch.optim.SGD on CUDA tensors through the CUDA kernel path against
diffc's own loop on diffc Tensors (call, bwds, one optimizer dispatch); issue 23 asks the torch
loop to be within 10% of diffc's. The model is a function of scalars (2 -> 4 tanh units -> 1,
17 parameters as 0-d tensors), not the wide MLP: the CUDA kernel path calls functions whose
parameters are scalars, and the MLP's learnGradient is an entry point over a struct of
pointers (dispatch, on OpenCL).

CUDA kernel rows (runtime/cuda_kernels.py: the call's kernel compiled by NVRTC and launched in
torch's own context on its current stream, the default path of calls with CUDA tensors): "call
cuda kernel" (waited for), "call cuda kernel, no wait" (the host's time per call: what the issue
bounds by 30 us), "torch kernel, no wait" (x.add_(0) for scale), "call+bwd cuda kernel, grad"
(a call that requires grad, .sum().backward(), waited for), "step cuda kernel" (a torch kernel,
the call, a torch kernel on its result); after the table, the GPU's time per call (CUDA events
around calls queued back to back) against a torch kernel's.

Without CUDA, or with diffc on a device other than a GPU, it says so and exits.

Measured 2026-11-24 on an NVIDIA H100 80GB HBM3 (NVIDIA OpenCL 3.0, driver 580.159.04; torch
2.11.0+cu130), median us of 15 rounds of 100 (beyond its parts: the pair less its two rows):
    ocl 33.7, cuda kernel 22.6, d2h pageable 14.6, d2h pinned 12.3, h2d pageable 21.9,
    h2d pinned 17.8, alloc 5.3
    ocl + cuda kernel 335.3 (+278.9), ocl + d2h pageable 50.1 (+1.8), ocl + d2h pinned 46.1
    (+0.1), ocl + h2d pageable 337.4 (+281.8), ocl + h2d pinned 324.7 (+273.2), ocl + alloc
    39.5 (+0.5); cuda kernel + d2h pinned 36.9 (+1.9), h2d pageable + d2h pinned 33.9 (-0.4)
So a CUDA kernel or a host->device copy after an OpenCL launch (or an OpenCL launch after
either) costs about 280 us more than the two alone; device->host copies and allocations do
not; CUDA-only pairs cost their parts. That switch is what a call with CUDA tensors spends
beyond its copies (bench_torch_call.py: a no-grad call of 417 us, ~290 beyond the diffc call
and the two copies): the result's copy back to CUDA, and whatever CUDA work the caller does
between calls. It is not the bridge's Python and no host-side staging removes it; a zero-copy
path (OpenCL and CUDA sharing memory) would still alternate the two contexts' work. A training
loop avoids it by keeping its data in diffc Tensors (README; docs/architecture.md).

Shared memory (diffc/runtime/cuda_shared.py), measured 2026-11-27 on an NVIDIA H200 (driver
580.159.04, torch 2.11.0+cu130, cuda-bindings 13.5.0), median us of 5 rounds of 40, each call
waited for: call via host 457.1, call shared with a copy in 433.3, call shared on a pool tensor
214.8 (its host time alone, not waited for: 142.3); step via host 501.4, step shared 499.6.
No byte goes through the host and the host never waits, but each switch between torch's CUDA
context and OpenCL's still costs the GPU ~270 us: a pool tensor's call pays one (its result's
wait on torch's stream), a copied one two, and a step's torch kernels pay them either way.

CUDA kernels in torch's context (runtime/cuda_kernels.py: the emitter's CUDA target, NVRTC,
launched on torch's current stream), measured 2026-11-28 on an NVIDIA H200 (driver 580.159.04,
torch 2.11.0+cu130, cuda-bindings 13.5.0, NVRTC 13.0), `--calls-only --rounds 5 --reps 40`,
median us (the first of two runs the same day; the second, on a busier host, read 47.6 / 29.8
/ 11.5 / 80.6 / 516.8 for the same rows):
    call cuda kernel 30.8 (not waited for: 17.8), torch kernel not waited for 7.6,
    step cuda kernel 48.2 (torch kernel, call, torch kernel), against step shared 516.8 and
    step via host 525.7; call shared on a pool tensor 191.6, call via host 459.4.
So a call costs about 10 us of host time beyond a torch kernel (17.8 against 7.6) and the step
no context switch: 48 us instead of ~500. gpu/cuda_kernels_check.py's per-call line the same
day: host 25.2 us a call against torch's x.add_(0) 7.7. A call + backward through torch's
autograd still costs about twice a torch autograd.Function with the same graph (sum+backward
host 319 against 154 us; the backward launch alone 47 us): not found yet.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import diffc

HERE = Path(__file__).resolve().parent


def rows(torch, m):
    x = np.linspace(0, 1, 16, dtype=np.float32)
    xd = diffc.Tensor.from_numpy(x)
    queue = diffc.device().queue
    xc = torch.from_numpy(x).cuda()
    pinned = torch.empty(16, dtype=torch.float32, pin_memory=True)
    pageable = torch.empty(16, dtype=torch.float32)
    sync = torch.cuda.synchronize

    def ocl():
        m.polynomial(a=2.0, b=8.0, c=-1.0, x=xd)
        queue.finish()

    def cuda_kernel():
        xc.add_(0.0)
        sync()

    def d2h_pageable():
        pageable.copy_(xc)

    def d2h_pinned():
        pinned.copy_(xc)

    def h2d_pageable():
        xc.copy_(pageable)
        sync()

    def h2d_pinned():
        xc.copy_(pinned, non_blocking=True)
        sync()

    def alloc():
        torch.empty(16, device="cuda")

    singles = {"ocl": ocl, "cuda kernel": cuda_kernel, "d2h pageable": d2h_pageable, "d2h pinned": d2h_pinned,
               "h2d pageable": h2d_pageable, "h2d pinned": h2d_pinned, "alloc": alloc}
    out = {name: (f,) for name, f in singles.items()}
    out.update({f"ocl + {name}": (ocl, f) for name, f in singles.items() if f is not ocl})
    out["cuda kernel + d2h pinned"] = (cuda_kernel, d2h_pinned)
    out["h2d pageable + d2h pinned"] = (h2d_pageable, d2h_pinned)
    out.update(call_rows(torch, m, xc, sync))
    return out


def call_rows(torch, m, xc, sync):
    """m.polynomial on a CUDA tensor, each call waited for (torch.cuda.synchronize): through the
    host (both CUDA paths off: the path before shared memory), over shared memory with one device
    copy in, on a tensor of diffc's pool (no copy), and as a CUDA kernel in torch's own context
    (cuda_kernels.py, the default where it runs); "no wait": the host's time per call alone, the
    device's work left queued; "grad": a call that requires grad and its backward."""
    from diffc.runtime import cuda_kernels, cuda_shared

    def poly(x):
        return m.polynomial(a=2.0, b=8.0, c=-1.0, x=x)

    out = {}
    why = cuda_kernels.unavailable()
    if why is not None:
        print(f"CUDA kernel rows skipped: {why}")
    else:
        xg = xc.clone().requires_grad_(True)

        def kernel():
            poly(xc)
            sync()

        def kernel_no_wait():
            poly(xc)

        def torch_no_wait():  # a torch kernel's own host time, for scale
            xc.add_(0.0)

        def kernel_grad():
            poly(xg).sum().backward()
            sync()

        def step_kernel():
            poly(xc.add_(0.0)).add_(1.0)
            sync()

        out.update({"call cuda kernel": (kernel,), "call cuda kernel, no wait": (kernel_no_wait,),
                    "torch kernel, no wait": (torch_no_wait,),
                    "call+bwd cuda kernel, grad": (kernel_grad,), "step cuda kernel": (step_kernel,)})

    why = cuda_shared.unavailable()
    if why is not None:
        print(f"shared memory rows skipped: {why}")
        return out
    pooled = cuda_shared.empty(xc.shape)
    pooled.copy_(xc)

    def off(*flags):
        def run(f):
            def g():
                saved = [flag[0] for flag in flags]
                for flag in flags:
                    flag[0] = False
                try:
                    f()
                finally:
                    for flag, v in zip(flags, saved):
                        flag[0] = v
            return g
        return run

    shared = off(cuda_kernels.ENABLED)  # the path over shared memory
    host = off(cuda_kernels.ENABLED, cuda_shared.ENABLED)  # through the host

    @host
    def host_path():
        poly(xc)
        sync()

    @shared
    def shared_copy():
        poly(xc)
        sync()

    @shared
    def shared_pool():
        poly(pooled)
        sync()

    @shared
    def shared_pool_no_wait():
        poly(pooled)

    @host
    def step_host():  # a torch kernel, the call, a torch kernel on its result: a training step's shape
        poly(xc.add_(0.0)).add_(1.0)
        sync()

    @shared
    def step_shared():
        poly(pooled.add_(0.0)).add_(1.0)
        sync()

    out.update({"call via host": (host_path,), "call shared, copy in": (shared_copy,),
                "call shared, pool": (shared_pool,), "call shared, pool, no wait": (shared_pool_no_wait,),
                "step via host": (step_host,), "step shared, pool": (step_shared,)})
    return out


def device_us(torch, m, xc, reps: int = 200) -> dict[str, float]:
    """The GPU's time per call (CUDA events around `reps` calls queued back to back) of the CUDA
    kernel path, and of a torch kernel for scale."""
    from diffc.runtime import cuda_kernels

    if cuda_kernels.unavailable() is not None:
        return {}
    out = {}
    for name, f in (("cuda kernel call", lambda: m.polynomial(a=2.0, b=8.0, c=-1.0, x=xc)),
                    ("torch kernel", lambda: xc.add_(0.0))):
        for _ in range(20):
            f()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            f()
        end.record()
        torch.cuda.synchronize()
        out[name] = start.elapsed_time(end) * 1e3 / reps
    return out


# -- a training loop: torch (CUDA path, torch.optim) against diffc alone ------------------------

TRAIN_HIDDEN = 4  # tanh units of the fitted function (parameters: 4 per unit and one bias)


def training_source(hidden: int = TRAIN_HIDDEN) -> tuple[str, list[str]]:
    """(Slang source, parameter names): `fit(x, y, t, params...)`, the squared error of a one
    hidden layer network (2 -> hidden tanh units -> 1) on sample (x, y) with target t, every
    parameter a scalar (the CUDA kernel path calls functions of scalars: the wide model's
    learnGradient is an entry point over struct and pointer parameters, which stays on OpenCL);
    and `sgd`, diffc's optimizer step over one buffer holding the parameters `stride` floats
    apart (a parameter of the call is a 0-d Tensor on its own sub-buffer of it)."""
    names = [f"{k}{j}" for j in range(hidden) for k in ("wx", "wy", "b", "v")] + ["c"]
    terms = "".join(f"    o += v{j} * tanh(wx{j} * x + wy{j} * y + b{j});\n" for j in range(hidden))
    params = ", ".join(f"float {n}" for n in names)
    src = (f"[Differentiable]\nfloat fit(float x, float y, float t, {params}) {{\n    float o = c;\n{terms}"
           "    float e = o - t;\n    return e * e;\n}\n\n"
           "[shader(\"compute\")]\n[numthreads(32, 1, 1)]\n"
           "void sgd(uint32_t tid : SV_DispatchThreadID, uniform float* params, uniform float* grads, uniform float lr,\n"
           "         uniform uint32_t stride, uniform uint32_t count)\n{\n"
           "    if (tid >= count) return;\n    uint32_t i = tid * stride;\n"
           "    params[i] = params[i] - lr * grads[i];\n    grads[i] = 0.0;\n}\n")
    return src, names


def training_rows(torch, log2s=(14, 18), steps: int = 200, device: str = "cuda", lr: float = 0.05) -> None:
    """Seconds per training step of the same model two ways, batch 2^k for k in `log2s`, both
    from the same parameters on the same batch: a torch loop (parameters 0-d torch tensors on
    `device`, `m.fit` a torch op through the CUDA kernel path, loss.mean().backward(),
    torch.optim.SGD's step) and diffc's own loop (diffc Tensors: the call into a kept result
    whose .grad holds 1/n, `.bwds` into the parameters' gradients, one `sgd` dispatch that steps
    and zeroes them: learnGradient + adjustParameters' shape). Prints per batch both times, the
    ratio torch / diffc (the issue's bound: <= 1.1) and the largest parameter difference after
    the same steps (the two loops compute the same thing) and how far the parameters moved."""
    import tempfile

    import pyopencl as cl

    from diffc.runtime import cuda_kernels

    src, names = training_source()
    path = Path(tempfile.mkdtemp()) / "fit.slang"
    path.write_text(src)
    m = diffc.load_module(path)
    rng = np.random.default_rng(5)
    init = rng.normal(0, 0.5, len(names)).astype(np.float32)
    dev = diffc.device()
    stride = max(1, dev.cl_device.mem_base_addr_align // 8 // 4)  # floats between sub-buffers
    k = len(names)
    print(f"training loop: fit() with {k} parameters ({TRAIN_HIDDEN} tanh units), lr {lr}, {steps} steps a row; "
          f"torch on {device}, diffc on {dev.name}")
    print(f"{'batch':>8s} {'diffc us/step':>14s} {'torch us/step':>14s} {'torch/diffc':>12s} {'param diff':>11s} {'moved':>8s}")
    for log2 in log2s:
        n = 1 << log2
        xy = rng.uniform(-1, 1, (2, n)).astype(np.float32)
        target = (np.sin(2 * xy[0]) * xy[1]).astype(np.float32)

        # diffc alone
        flat = np.zeros(k * stride, np.float32)
        flat[::stride] = init
        pbuf = diffc.Tensor.from_numpy(flat)
        gbuf = diffc.Tensor.zeros(flat.shape)
        params = []
        for j in range(k):
            region = (j * stride * 4, 4)
            p = diffc.Tensor((), np.float32, _buffer=pbuf.buffer.get_sub_region(*region), _storage=pbuf._storage)
            p.grad = diffc.Tensor((), np.float32, _buffer=gbuf.buffer.get_sub_region(*region), _storage=gbuf._storage)
            params.append(p)
        xt, yt, tt = (diffc.Tensor.from_numpy(a) for a in (xy[0], xy[1], target))
        out = diffc.Tensor.empty((n,)).with_grads(zero=False)
        out.grad.fill(1.0 / n)  # d mean / d out

        def diffc_step():
            m.fit(xt, yt, tt, *params, _result=out)
            m.fit.bwds(xt, yt, tt, *params, _result=out)
            m.sgd.dispatch(thread_count=k, params=pbuf, grads=gbuf, lr=lr, stride=stride, count=k)

        # torch with the CUDA kernel path
        tp = [torch.tensor(float(v), device=device, requires_grad=True) for v in init]
        tx, ty, tt_ = (torch.from_numpy(a).to(device) for a in (xy[0], xy[1], target))
        opt = torch.optim.SGD(tp, lr=lr)

        def torch_step():
            loss = m.fit(tx, ty, tt_, *tp).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        times = {}
        for name, step, wait in (("diffc", diffc_step, diffc.synchronize), ("torch", torch_step, sync)):
            for _ in range(steps):  # the same number of steps before the timing, for the parameters' check
                step()
            wait()
        got_diffc = pbuf.to_numpy()[::stride]
        got_torch = np.array([p.item() for p in tp], np.float32)
        diff = float(np.abs(got_diffc - got_torch).max())
        moved = float(np.abs(got_torch - init).max())  # (so that a zero diff is not two loops standing still)
        for _ in range(3):  # rounds, interleaved; the best of them
            for name, step, wait in (("diffc", diffc_step, diffc.synchronize), ("torch", torch_step, sync)):
                wait()
                t = time.perf_counter()
                for _ in range(steps):
                    step()
                wait()
                times.setdefault(name, []).append((time.perf_counter() - t) / steps * 1e6)
        d, t_ = min(times["diffc"]), min(times["torch"])
        print(f"{'2^' + str(log2):>8s} {d:14.1f} {t_:14.1f} {t_ / d:12.2f} {diff:11.2g} {moved:8.2g}", flush=True)
    if device == "cuda":
        print(f"CUDA kernel path fallbacks: {cuda_kernels.FALLBACKS or 'none'}; "
              f"torch on CUDA: {torch.cuda.get_device_name()}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--reps", type=int, default=100, help="repetitions of a row per round")
    ap.add_argument("--calls-only", action="store_true", help="only the module-call rows (no context-switch pairs)")
    ap.add_argument("--training", action="store_true",
                    help="only the training loops: torch (CUDA path, torch.optim) against diffc alone, batch 2^14 and 2^18")
    ap.add_argument("--training-device", default="cuda",
                    help="torch's device for --training (cpu: a check of the loops where there is no GPU)")
    ap.add_argument("--steps", type=int, default=200, help="training steps per timed round (--training)")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("torch is not installed: nothing to compare (pip install -e '.[torch]')")
        return
    if args.training and args.training_device == "cpu":
        training_rows(torch, steps=args.steps, device="cpu")
        return
    if not torch.cuda.is_available() or diffc.device().kind != "gpu":
        print(f"needs CUDA and diffc on a GPU (CUDA: {torch.cuda.is_available()}, diffc: {diffc.device()!r}): skipped")
        return
    print(f"diffc: {diffc.device()!r}; torch {torch.__version__} on {torch.cuda.get_device_name()}")
    if args.training:
        training_rows(torch, steps=args.steps)
        return
    m = diffc.load_module(HERE.parent / "examples" / "poly.slang")
    if args.calls_only:
        x = torch.linspace(0, 1, 16, device="cuda")
        table = call_rows(torch, m, x, torch.cuda.synchronize)
    else:
        table = rows(torch, m)
    times: dict[str, list[float]] = {name: [] for name in table}
    for fs in table.values():  # warm-up: builds, allocations, first launches
        for _ in range(30):
            for f in fs:
                f()
    for _ in range(args.rounds):  # rows interleaved, so that drift hits them alike
        for name, fs in table.items():
            t0 = time.perf_counter()
            for _ in range(args.reps):
                for f in fs:
                    f()
            times[name].append((time.perf_counter() - t0) / args.reps)
    med = {name: statistics.median(v) * 1e6 for name, v in times.items()}
    print(f"{'row':28s} {'median us':>10s} {'min us':>8s} {'beyond its parts':>17s}")
    for name, v in times.items():
        parts = name.split(" + ")
        extra = med[name] - sum(med[p] for p in parts) if len(parts) == 2 else None
        extra_s = f"{extra:17.1f}" if extra is not None else ""
        print(f"{name:28s} {med[name]:10.1f} {min(v) * 1e6:8.1f} {extra_s}")
    xc = torch.linspace(0, 1, 16, device="cuda")
    for name, us in device_us(torch, diffc.load_module(HERE.parent / "examples" / "poly.slang"), xc).items():
        print(f"device us per {name} (CUDA events, {name}s queued back to back): {us:.1f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
