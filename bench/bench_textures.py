"""Textures' run-time cost (frontend/textures.py): an N x N float4 texture read per work-item as
`tex[uint2(x, y)]` (bounds-guarded, 0 outside) against the same texels read from a plain
`RWStructuredBuffer<float>`; bilinear `SampleLevel` at a uv per work-item; and the backward pass
of a loss through `SampleLevel` with respect to uv. Device time of each dispatch (OpenCL
profiling), rows round-robin, minimum used; the values and the uv gradients are checked against
a float64 numpy reference of the filter on a sample of work-items before timing is reported.

    python bench/bench_textures.py                      # 2048 x 2048 texels
    DIFFC_DEVICE=gpu python bench/bench_textures.py     # on the GPU
    python bench/bench_textures.py --size 256 --runs 3  # small, for PoCL

Measured (PoCL on 2 shared CPU cores, 2026-11-24, --size 256 --runs 3, min device time):
readTexture 0.194 ms, readBuffer 0.184 ms (1.06), sample 2.675 ms, sampleBackward 3.452 ms;
max error 1.7e-06.
NVIDIA H100 80GB HBM3 (OpenCL 3.0 CUDA, driver 580.159.04; after f97ac29; 2048 x 2048 float4, 10
runs, min device time): readTexture 0.034 ms, readBuffer 0.033 (texture / buffer 1.03), sample
0.056, sampleBackward 0.066; max error of sampled values and uv gradients 2.9e-4 (float32 against
the float64 filter and finite differences).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_polynomial import Row, device_timed, round_robin  # noqa: E402

import diffc  # noqa: E402
from diffc.runtime.module import load_module_from_string  # noqa: E402

SRC = """
Texture2D<float4> tex;
SamplerState samp;
RWStructuredBuffer<float> plain;
RWStructuredBuffer<float> out;
RWStructuredBuffer<float> grad;

[shader("compute")]
[numthreads(16, 16, 1)]
void readTexture(uint3 tid : SV_DispatchThreadID, uniform uint n)
{
    float4 v = tex[tid.xy];
    out[tid.y * n + tid.x] = v.x + v.y + v.z + v.w;
}

[shader("compute")]
[numthreads(16, 16, 1)]
void readBuffer(uint3 tid : SV_DispatchThreadID, uniform uint n)
{
    if (tid.x >= n || tid.y >= n)
        return;
    uint i = (tid.y * n + tid.x) * 4;
    out[tid.y * n + tid.x] = plain[i] + plain[i + 1] + plain[i + 2] + plain[i + 3];
}

float2 uvOf(uint2 p, uint n) { return (float2(p) + float2(0.37, 0.81)) / float(n) * 1.1 - 0.05; }

[Differentiable]
float loss(float2 uv)
{
    float4 v = tex.SampleLevel(samp, uv, 0);
    return v.x * v.y + v.z - v.w;
}

[shader("compute")]
[numthreads(16, 16, 1)]
void sample(uint3 tid : SV_DispatchThreadID, uniform uint n)
{
    if (tid.x >= n || tid.y >= n)
        return;
    out[tid.y * n + tid.x] = loss(uvOf(tid.xy, n));
}

[shader("compute")]
[numthreads(16, 16, 1)]
void sampleBackward(uint3 tid : SV_DispatchThreadID, uniform uint n)
{
    if (tid.x >= n || tid.y >= n)
        return;
    var duv = diffPair(uvOf(tid.xy, n));
    bwd_diff(loss)(duv, 1.0);
    uint i = tid.y * n + tid.x;
    grad[2 * i] = duv.d.x;
    grad[2 * i + 1] = duv.d.y;
}
"""


def bilinear(tex: np.ndarray, u: float, v: float) -> np.ndarray:
    """D3D's bilinear filter with clamp-to-edge addressing, in float64: texel (i, j)'s centre is
    at ((i + 0.5) / W, (j + 0.5) / H). (tests/test_textures.py checks SampleLevel against it.)"""
    h, w = tex.shape[:2]
    px, py = u * w - 0.5, v * h - 0.5
    x0, y0 = int(np.floor(px)), int(np.floor(py))
    fx, fy = px - x0, py - y0

    def at(x, y):
        return tex[min(max(y, 0), h - 1), min(max(x, 0), w - 1)].astype(np.float64)

    return (at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx) * (1 - fy) + (at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx) * fy


def check(tex: np.ndarray, out: np.ndarray, grad: np.ndarray, n: int, samples: int = 200) -> float:
    """The largest error of the sampled losses and their uv gradients (central differences of
    the float64 filter) on `samples` work-items away from the texel-centre lines."""
    rng = np.random.default_rng(1)
    worst = 0.0

    def loss(u, v):
        s = bilinear(tex, u, v)
        return s[0] * s[1] + s[2] - s[3]

    for _ in range(samples):
        x, y = (int(k) for k in rng.integers(0, n, 2))
        uv = ((np.array([x, y], np.float32) + np.float32([0.37, 0.81])) / np.float32(n) * np.float32(1.1)
              - np.float32(0.05)).astype(np.float64)
        frac = (uv * n - 0.5) % 1
        if min(np.min(frac), np.min(1 - frac)) < 0.02:
            continue
        e = 1e-7
        fd = [(loss(uv[0] + e, uv[1]) - loss(uv[0] - e, uv[1])) / (2 * e),
              (loss(uv[0], uv[1] + e) - loss(uv[0], uv[1] - e)) / (2 * e)]
        i = y * n + x
        scale = 1 + abs(fd[0]) + abs(fd[1])
        worst = max(worst, abs(out[i] - loss(*uv)), abs(grad[2 * i] - fd[0]) / scale, abs(grad[2 * i + 1] - fd[1]) / scale)
    return worst


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=2048, help="texture is SIZE x SIZE float4 texels (default 2048)")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per row (default 10)")
    args = ap.parse_args(argv)
    n = args.size
    print(f"device: {diffc.device()!r}")
    print(f"{n} x {n} float4 texels, one work-item each, {args.runs} runs, round-robin, device time")
    m = load_module_from_string(SRC, "bench_textures.slang")
    texels = np.random.default_rng(0).random((n, n, 4)).astype(np.float32)
    tex = diffc.Tensor.from_numpy(texels)
    plain = diffc.Tensor.from_numpy(texels.reshape(-1))
    out, grad = diffc.Tensor.zeros(n * n), diffc.Tensor.zeros(2 * n * n)
    bufs = {"readTexture": dict(tex=tex, out=out, n=n), "readBuffer": dict(plain=plain, out=out, n=n),
            "sample": dict(tex=tex, out=out, n=n), "sampleBackward": dict(tex=tex, grad=grad, n=n)}

    def launcher(entry):
        return lambda: getattr(m, entry).dispatch(thread_count=(n, n), **bufs[entry])

    rows = [Row(name, 0.0, device_timed(launcher(name))) for name in ("readTexture", "readBuffer", "sample", "sampleBackward")]
    round_robin(rows, args.runs)

    launcher("readTexture")()
    assert np.allclose(out.to_numpy(), texels.sum(-1).reshape(-1), rtol=1e-6), "texel reads"
    launcher("sample")()
    launcher("sampleBackward")()
    err = check(texels, out.to_numpy(), grad.to_numpy(), n)
    print(f"{'row':16s} {'min ms':>9s} {'median ms':>10s} {'texel GB/s':>11s}")
    for row in rows:
        best = min(row.times)
        print(f"{row.name:16s} {best * 1e3:9.3f} {statistics.median(row.times) * 1e3:10.3f} "
              f"{texels.nbytes / best / 1e9:11.1f}")
    print(f"texture read / buffer read: {min(rows[0].times) / min(rows[1].times):.2f}")
    print(f"max error of sampled values and uv gradients (vs float64 filter, finite differences): {err:.3g}")


if __name__ == "__main__":
    main()
