"""Runs examples/pointers/scene.slang (Slang's differentiable pointer types) with diffc's
dispatch API.

The scene's single mesh points into a tensor of triangles (12 floats each: v0, v1, v2 as float4),
its differential into a tensor of the same shape. Every thread evaluates foo(scene) into
`values` and runs bwd_diff(foo) with the gradient dOut, which the custom backward derivative
__bwd_foo writes into dscene.meshes[0].triangles[0].v0.x.

    python examples/pointers/scene.py [--threads 64] [--dout 2.5] [--first 1] [--seed 0]

`first` is the triangle the mesh starts at (the pointer's offset into the tensor).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import diffc

FLOATS_PER_TRIANGLE = 12  # struct Triangle { float4 v0, v1, v2; }


def run(threads: int = 64, d_out: float = 2.5, first: int = 1, seed: int = 0) -> dict:
    """Dispatches sceneGradient; returns the triangles, foo's values per thread, the gradient
    tensor after the dispatch, and what numpy says they should be."""
    rng = np.random.default_rng(seed)
    triangles = rng.uniform(-1, 1, (first + 2, 3, 4)).astype(np.float32)
    m = diffc.load_module(Path(__file__).with_name("scene.slang"))
    tri = diffc.Tensor.from_numpy(triangles.ravel())
    dtri = diffc.Tensor.zeros(triangles.size, np.float32)
    values = diffc.Tensor.zeros(threads, np.float32)
    offset = first * FLOATS_PER_TRIANGLE
    m.sceneGradient.dispatch(
        thread_count=threads,
        scene={"meshes": {"triangles": tri.at(offset)}, "count": 1},
        dscene={"meshes": {"triangles": dtri.at(offset)}, "count": 1},
        values=values, dOut=d_out, count=threads,
    )
    # foo = interpolate(0, (0.5, 0.5)).x = 0.5 v0.x + 0.5 v1.x + 0 v2.x of the mesh's first triangle
    t = triangles[first].astype(np.float64)
    want_value = 0.5 * t[0, 0] + 0.5 * t[1, 0]
    want_grad = np.zeros(triangles.shape)
    want_grad[first, 0, 0] = d_out
    return {
        "triangles": triangles,
        "values": values.to_numpy(),
        "grad": dtri.to_numpy().reshape(triangles.shape),
        "want_value": want_value,
        "want_grad": want_grad,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--dout", type=float, default=2.5)
    ap.add_argument("--first", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    r = run(a.threads, a.dout, a.first, a.seed)
    print(f"foo(scene) = {r['values'][0]:.6f} on every thread: {bool(np.all(r['values'] == r['values'][0]))}")
    print(f"numpy: 0.5 * v0.x + 0.5 * v1.x = {r['want_value']:.6f}")
    nz = np.argwhere(r["grad"] != 0)
    print(f"gradient written: dscene.meshes[0].triangles[0].v0.x = {r['grad'][a.first, 0, 0]:.6f} (dOut = {a.dout})")
    print(f"nonzero gradient entries (triangle, vertex, component): {[tuple(int(i) for i in x) for x in nz]}")


if __name__ == "__main__":
    main()
