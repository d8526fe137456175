"""GPU check of calls with torch CUDA tensors run as CUDA kernels in torch's context
(diffc/runtime/cuda_kernels.py). Each part prints PASS or FAIL with its numbers and goes on past a
failure; the last line counts them. Run by gpu/cuda_kernels.sh (DIFFC_DEVICE=gpu, an NVIDIA GPU).

Reference numbers: the same function called with CPU tensors (diffc's own path: OpenCL on the
device diffc chose, through the host), and torch's autograd in float64 (gradcheck)."""

from __future__ import annotations

import sys
import threading
import time
import traceback
import warnings

import numpy as np
import torch

import diffc
from diffc.runtime import cuda_kernels, cuda_shared, torch_bridge

SRC = """
[Differentiable]
float wave(float a, float x, float y) { return a * sin(x) * y + exp(0.5 * x) - y * y / (1.0 + x * x); }

[Differentiable]
double wave64(double a, double x, double y) { return a * sin(x) * y + exp(0.5 * x) - y * y / (1.0 + x * x); }

[Differentiable]
T cubeT<T : __BuiltinFloatingPointType>(T x) { return x * x * x + sin(x); }

[Differentiable]
float powered(float x, int n) {
    float r = 1.0;
    [MaxIters(16)]
    for (int i = 0; i < n; i++) r *= x;
    return r + select(x > 0.5, x, -x);
}

[Differentiable]
float steps(float x, int n) {
    float s = 0.0;
    [MaxIters(8)]
    while (s < x * 4.0 && n > 0) { s += 0.5 + 0.01 * x; n -= 1; }
    return s * x;
}
"""

RESULTS: list[tuple[str, bool]] = []
T0 = time.time()


def part(name: str):
    def wrap(f):
        t = time.time()
        try:
            detail = f()
            ok = True
        except Exception:
            detail = traceback.format_exc(limit=6)
            ok = False
        RESULTS.append((name, ok))
        print(f"[{'PASS' if ok else 'FAIL'}] {name} ({time.time() - t:.1f} s){': ' + str(detail) if detail else ''}",
              flush=True)
        return f
    return wrap


def no_other_path():
    """Any call that leaves the CUDA kernel path fails loudly (host trips, shared memory)."""
    def refuse(*a, **k):
        raise AssertionError("a call left the CUDA kernel path: " + repr(cuda_kernels.FALLBACKS))
    torch_bridge._host = refuse
    cuda_shared.usable = refuse


def cpu_reference(f, kwargs: dict, grad_of: list[str] | None = None, weights=None):
    """f's result (and the gradients of `grad_of`) with the CUDA tensors as CPU tensors: diffc's own path."""
    cpu = {k: (v.detach().cpu().requires_grad_(grad_of is not None and k in grad_of) if isinstance(v, torch.Tensor)
               else v) for k, v in kwargs.items()}
    y = f(**cpu)
    if grad_of is None:
        return y.detach(), {}
    (y * (weights.cpu() if weights is not None else 1)).sum().backward()
    return y.detach(), {k: cpu[k].grad for k in grad_of}


def close(name, got, want, rtol, atol) -> str:
    got, want = got.detach().cpu().double(), want.detach().cpu().double()
    err = (got - want).abs().max().item() if got.numel() else 0.0
    if got.shape != want.shape or not torch.allclose(got, want, rtol=rtol, atol=atol):
        raise AssertionError(f"{name}: shape {tuple(got.shape)} vs {tuple(want.shape)}, max abs diff {err:.3g}")
    return f"{name} max abs diff {err:.2g}"


def main() -> int:
    warnings.simplefilter("always")
    why = cuda_kernels.unavailable()
    print(f"diffc device: {diffc.device()!r}")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()} (capability {torch.cuda.get_device_capability()})")
    print(f"cuda_kernels.unavailable(): {why}")
    if why is not None:
        print("RESULT: the CUDA kernel path cannot run here")
        return 1
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "funcs.slang"
    path.write_text(SRC)
    m = diffc.load_module(path)
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(0)
    n = 100_000
    x = (torch.rand(n, generator=g) * 4 - 2).to(dev)
    y = (torch.rand(n, generator=g) * 3).to(dev)
    w = (torch.rand(n, generator=g) - 0.5).to(dev)
    saved = (torch_bridge._host, cuda_shared.usable)
    ref = {}
    # references first (CPU tensors: through diffc's own path), then the CUDA path alone
    ref["wave"] = cpu_reference(m.wave, dict(a=1.5, x=x, y=y), ["x", "y"], w)
    ref["wave_b"] = cpu_reference(m.wave, dict(a=torch.tensor([1.5], device=dev), x=x, y=y), ["a", "x"], w)
    ref["powered"] = cpu_reference(m.powered, dict(x=x, n=3), ["x"], w)
    ref["steps"] = cpu_reference(m.steps, dict(x=x.abs() * 0.2, n=6), ["x"], w)
    no_other_path()

    @part("forward: wave(a=1.5, x, y) on 100k CUDA elements against the CPU path")
    def _():
        out = m.wave(a=1.5, x=x, y=y)
        assert out.is_cuda and out.dtype == torch.float32
        return close("wave", out, ref["wave"][0], 1e-5, 1e-5)

    @part("backward: x and y gradients of sum(w * wave) against the CPU path")
    def _():
        xr, yr = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
        out = m.wave(a=1.5, x=xr, y=yr)
        (out * w).sum().backward()
        return ", ".join([close("dx", xr.grad, ref["wave"][1]["x"], 1e-4, 1e-5),
                          close("dy", yr.grad, ref["wave"][1]["y"], 1e-4, 1e-5)])

    @part("broadcast: a of shape (1,) (its gradient summed on the device) against the CPU path")
    def _():
        a = torch.tensor([1.5], device=dev, requires_grad=True)
        xr = x.clone().requires_grad_(True)
        out = m.wave(a=a, x=xr, y=y)
        (out * w).sum().backward()
        return ", ".join([close("y", out, ref["wave_b"][0], 1e-5, 1e-5),
                          close("da", a.grad, ref["wave_b"][1]["a"], 1e-3, 1e-3),
                          close("dx", xr.grad, ref["wave_b"][1]["x"], 1e-4, 1e-5)])

    @part("int parameter and a loop: powered(x, n=3)")
    def _():
        xr = x.clone().requires_grad_(True)
        out = m.powered(x=xr, n=3)
        (out * w).sum().backward()
        return ", ".join([close("y", out, ref["powered"][0], 1e-5, 1e-5),
                          close("dx", xr.grad, ref["powered"][1]["x"], 1e-4, 1e-5)])

    @part("a while loop with [MaxIters] (status slots read after the launch): steps(x, n=6)")
    def _():
        xr = (x.abs() * 0.2).requires_grad_(True)
        out = m.steps(x=xr, n=6)
        (out * w).sum().backward()
        return ", ".join([close("y", out, ref["steps"][0], 1e-5, 1e-5),
                          close("dx", xr.grad, ref["steps"][1]["x"], 1e-4, 1e-5)])

    @part("a loop past its [MaxIters] raises LoopOverrunError from the backward")
    def _():
        xr = (x.abs() + 5.0).requires_grad_(True)
        out = m.steps(x=xr, n=1000)
        try:
            out.sum().backward()
        except Exception as e:
            assert "MaxIters" in str(e), str(e)
            return type(e).__name__
        raise AssertionError("no error")

    @part("gradcheck in float64: wave64 on CUDA doubles against torch's finite differences")
    def _():
        gg = torch.Generator().manual_seed(1)
        args = [(torch.rand(6, generator=gg, dtype=torch.float64) * 2 - 1).to(dev).requires_grad_(True)
                for _ in range(3)]
        assert torch.autograd.gradcheck(lambda a, xx, yy: m.wave64(a=a, x=xx, y=yy), args, eps=1e-6, atol=1e-7)
        return "ok"

    @part("a generic function: float64 CUDA tensors take its double instance (gradcheck), float32 its float one")
    def _():
        gg = torch.Generator().manual_seed(2)
        xd = (torch.rand(8, generator=gg, dtype=torch.float64) * 2 - 1).to(dev).requires_grad_(True)
        assert torch.autograd.gradcheck(lambda xx: m.cubeT(x=xx), (xd,), eps=1e-6, atol=1e-7)
        out = m.cubeT(x=xd)
        assert out.dtype == torch.float64, out.dtype
        out32 = m.cubeT(x=x)
        assert out32.dtype == torch.float32
        return close("float32 instance", out32, x.double() ** 3 + torch.sin(x.double()), 1e-5, 1e-5)

    @part("stream order: torch work on a side stream, the call, torch work on its result, no sync between")
    def _():
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            big = torch.linspace(-2, 2, 1 << 22, device=dev)
            xs = big.sin().mul_(2.0)  # queued on s
            out = m.wave(a=0.5, x=xs, y=xs)
            res = out * 2.0 + 1.0
        s.synchronize()
        want = torch_wave(0.5, xs.double(), xs.double()) * 2.0 + 1.0
        return close("res", res, want, 1e-4, 1e-4)

    @part("float16 and non-contiguous inputs are converted on the device")
    def _():
        xh = x[::2].half()
        out = m.wave(a=1.5, x=xh, y=y[::2])
        want = torch_wave(1.5, xh.double(), y[::2].double())
        return close("y", out, want, 1e-4, 1e-4)

    @part("no fallback was taken")
    def _():
        assert not cuda_kernels.FALLBACKS, cuda_kernels.FALLBACKS
        return "FALLBACKS empty"

    @part("host time per call (not waited for) and GPU time per call, 16 elements")
    def _():
        xs = torch.linspace(0, 1, 16, device=dev)
        xg = xs.clone().requires_grad_(True)
        rows = {}
        for name, f in (("call", lambda: m.wave(a=1.5, x=xs, y=xs)),
                        ("call, requires_grad", lambda: m.wave(a=1.5, x=xg, y=xs)),
                        ("call + backward", lambda: m.wave(a=1.5, x=xg, y=xs).sum().backward()),
                        ("torch x.add_(0)", lambda: xs.add_(0.0))):
            for _ in range(50):
                f()
            torch.cuda.synchronize()
            reps = 2000
            t = time.perf_counter()
            for _ in range(reps):
                f()
            host = (time.perf_counter() - t) / reps * 1e6
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(reps):
                f()
            end.record()
            torch.cuda.synchronize()
            rows[name] = f"host {host:.1f} us, device {start.elapsed_time(end) * 1e3 / reps:.1f} us"
        return "; ".join(f"{k}: {v}" for k, v in rows.items())

    @part("call + backward, 16 elements: the path of each launch, host and device time of forward and backward")
    def _():
        xs = torch.linspace(0, 1, 16, device=dev)
        xg = xs.clone().requires_grad_(True)
        taken: list = []

        def spy(obj, name, label):
            real = getattr(obj, name)

            def f(*a, **k):
                got = real(*a, **k)
                taken.append(f"{label}{' (fell back)' if got is None else ''} on {threading.current_thread().name}")
                return got
            setattr(obj, name, f)
            return real

        saved_fwd = spy(cuda_kernels, "forward", "forward: CUDA kernel")
        saved_bwd = spy(cuda_kernels, "backward", "backward: CUDA kernel")
        try:
            m.wave(a=1.5, x=xg, y=xs).sum().backward()
        finally:
            cuda_kernels.forward, cuda_kernels.backward = saved_fwd, saved_bwd
        torch.cuda.synchronize()

        class TorchTwin(torch.autograd.Function):  # the same shape of graph, torch's own kernels
            @staticmethod
            def forward(ctx, xx):
                return xx * 2.0

            @staticmethod
            def backward(ctx, gg):
                return gg * 2.0

        rows = {}
        for name, fwd in (("diffc", lambda: m.wave(a=1.5, x=xg, y=xs)), ("torch Function", lambda: TorchTwin.apply(xg)),
                          ("torch op", lambda: xg * 2.0)):
            for _ in range(30):
                fwd().sum().backward()
            torch.cuda.synchronize()
            hf, hb, df, db = [], [], [], []
            for _ in range(300):  # each waited for after it: host times without a full queue
                e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
                e0.record()
                t0 = time.perf_counter()
                out = fwd()
                t1 = time.perf_counter()
                e1.record()
                loss = out.sum()
                t2 = time.perf_counter()
                loss.backward()
                t3 = time.perf_counter()
                e2.record()
                torch.cuda.synchronize()
                hf.append(t1 - t0)
                hb.append(t3 - t2)
                df.append(e0.elapsed_time(e1) * 1e-3)
                db.append(e1.elapsed_time(e2) * 1e-3)
            med = lambda v: sorted(v)[len(v) // 2] * 1e6  # noqa: E731
            rows[name] = (f"forward host {med(hf):.1f} us device {med(df):.1f} us, "
                          f"sum+backward host {med(hb):.1f} us device {med(db):.1f} us")
        gy = torch.ones(16, device=dev)  # the backward's kernel alone, on this thread, without torch's engine
        alone = lambda: cuda_kernels.backward(m.wave, [1.5, xg, xs], [1, 2], [xg, xs], (True, False), gy)  # noqa: E731
        for _ in range(30):
            alone()
        torch.cuda.synchronize()
        ha, da = [], []
        for _ in range(300):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            t0 = time.perf_counter()
            alone()
            t1 = time.perf_counter()
            e1.record()
            torch.cuda.synchronize()
            ha.append(t1 - t0)
            da.append(e0.elapsed_time(e1) * 1e-3)
        rows["cuda_kernels.backward alone"] = (f"host {sorted(ha)[150] * 1e6:.1f} us "
                                              f"device {sorted(da)[150] * 1e6:.1f} us")
        print("    launches: " + "; ".join(taken))
        print(f"    CUDA context current on each launching thread before its first launch: {cuda_kernels.CONTEXTS}")
        for k, v in rows.items():
            print(f"    {k}: {v}")
        assert any(t.startswith("backward: CUDA kernel on") for t in taken), taken
        return "; ".join(f"{k}: {v}" for k, v in rows.items())

    @part("torch.compile(fullgraph=True) of a step calling wave on CUDA tensors")
    def _():
        if time.time() - T0 > 45:
            return "skipped: the script's time is spent"

        def step(xx, yy):
            return (m.wave(a=1.5, x=xx * 1.0, y=yy) * 2.0).sum()

        compiled = torch.compile(step, fullgraph=True)
        xr = x[:1000].clone().requires_grad_(True)
        loss = compiled(xr, y[:1000])
        loss.backward()
        want_x = x[:1000].detach().double().requires_grad_(True)
        want = (torch_wave(1.5, want_x, y[:1000].double()) * 2.0).sum()
        want.backward()
        return ", ".join([close("loss", loss, want, 1e-4, 1e-2), close("dx", xr.grad, want_x.grad, 1e-4, 1e-4)])

    torch_bridge._host, cuda_shared.usable = saved
    print(f"fallbacks: {cuda_kernels.FALLBACKS}")
    failed = [n for n, ok in RESULTS if not ok]
    print(f"RESULT: {len(RESULTS) - len(failed)} passed, {len(failed)} failed{': ' + '; '.join(failed) if failed else ''}")
    return 1 if failed else 0


def torch_wave(a, x, y):
    return a * torch.sin(x) * y + torch.exp(0.5 * x) - y * y / (1.0 + x * x)


if __name__ == "__main__":
    sys.exit(main())
