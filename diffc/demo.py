"""`diffc demo`: compile a small Slang module, differentiate it both ways and run the kernels on
the default device, checking every number against numpy."""

from __future__ import annotations

import sys
import time

import numpy as np

SOURCE = """
[Differentiable]
float polynomial(float a, float b, float c, float x) {
    return a * x * x + b * x + c;
}

[Differentiable]
float wave(float x, no_diff float k) {
    return sin(k * x) * exp(-0.5 * x * x);
}
"""


def _check(name: str, got: np.ndarray, want: np.ndarray) -> bool:
    ok = bool(np.allclose(got, want, rtol=1e-5, atol=1e-5))
    print(f"  {name:<34} {np.array2string(got, precision=4, max_line_width=90)}  {'ok' if ok else 'MISMATCH'}")
    if not ok:
        print(f"  {'expected':<34} {np.array2string(want, precision=4, max_line_width=90)}")
    return ok


def main() -> int:
    import diffc
    from diffc.runtime.module import load_module_from_string

    print(f"diffc {diffc.__version__} on {diffc.device()}")
    t0 = time.perf_counter()
    m = load_module_from_string(SOURCE, "demo.slang")

    x_np = np.array([1, 2, 3, 4], dtype=np.float32)
    x = diffc.Tensor.from_numpy(x_np).with_grads(zero=True)
    ok = True

    print("\nSlangPy's polynomial 2x^2 + 8x - 1 over x = [1 2 3 4]:")
    y = m.polynomial(a=2, b=8, c=-1, x=x, _result="tensor")
    ok &= _check("forward", y.to_numpy(), 2 * x_np**2 + 8 * x_np - 1)
    y = y.with_grads()
    y.grad.copy_from_numpy(np.ones(4, dtype=np.float32))
    m.polynomial.bwds(a=2, b=8, c=-1, x=x, _result=y)
    ok &= _check("bwds: x.grad = 4x + 8", x.grad.to_numpy(), 4 * x_np + 8)
    m.polynomial.bwds(a=2, b=8, c=-1, x=x, _result=y)
    ok &= _check("bwds again accumulates", x.grad.to_numpy(), 2 * (4 * x_np + 8))
    x.grad.copy_from_numpy(np.ones(4, dtype=np.float32))
    t = m.polynomial.fwds(a=2, b=8, c=-1, x=x, _result="tensor")
    ok &= _check("fwds: tangent for dx = 1", t.grad.to_numpy(), 4 * x_np + 8)

    n = 1 << 20
    print(f"\nsin(3x) * exp(-x^2/2) and its gradient over {n} points:")
    xs = np.linspace(-3, 3, n, dtype=np.float32)
    xt = diffc.Tensor.from_numpy(xs).with_grads(zero=True)
    w = m.wave(x=xt, k=3.0, _result="tensor").with_grads()
    w.grad.copy_from_numpy(np.ones(n, dtype=np.float32))
    m.wave.bwds(x=xt, k=3.0, _result=w)
    x64 = xs.astype(np.float64)
    want = 3 * np.cos(3 * x64) * np.exp(-0.5 * x64**2) - x64 * np.sin(3 * x64) * np.exp(-0.5 * x64**2)
    got = xt.grad.to_numpy()
    err = float(np.max(np.abs(got - want)))
    good = err < 1e-4
    ok &= good
    print(f"  max |gradient - analytic| = {err:.2e}  {'ok' if good else 'MISMATCH'}")

    print(f"\n{'all results agree with numpy' if ok else 'SOME RESULTS DISAGREE'} "
          f"({time.perf_counter() - t0:.2f} s including compilation)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
