"""Vector lanes chosen at run time (`v[k]`, `v[k] = x`: vector.extract / insert with a dynamic
position) in OpenCL C, run on PoCL against numpy, and the same Slang run in the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyopencl")

import diffc  # noqa: E402
from diffc.backend.opencl import emit_opencl  # noqa: E402
from diffc.runtime.module import load_module_from_string  # noqa: E402

from slang_helpers import lowered, run  # noqa: E402

SRC = """
float pick(float4 v, int k, float x)
{
    v[k] = v[k] * x;                    // insert at a runtime lane
    v[(k + 1) % 4] += 1.0;
    return v[k] + 10.0 * v[(k + 1) % 4] + 100.0 * v[(k + 2) % 4];
}

[shader("compute")]
[numthreads(4, 1, 1)]
void lanes(uint3 tid : SV_DispatchThreadID, float* out, float x)
{
    int k = int(tid.x);
    out[k] = pick(float4(1.0, 2.0, 3.0, 4.0), k, x);
}
"""


def expected(k: int, x: float) -> float:
    v = np.array([1.0, 2.0, 3.0, 4.0])
    v[k] *= x
    v[(k + 1) % 4] += 1.0
    return v[k] + 10 * v[(k + 1) % 4] + 100 * v[(k + 2) % 4]


def test_the_opencl_source_selects_lanes_by_the_runtime_index():
    source = emit_opencl(lowered(SRC))
    assert "== 2 ?" in source


def test_interpreter_reads_and_writes_runtime_lanes():
    m = lowered(SRC)
    for k in range(4):
        assert run(m, "pick", [1.0, 2.0, 3.0, 4.0], k, 2.5)[0] == pytest.approx(expected(k, 2.5))


def test_pocl_reads_and_writes_runtime_lanes():
    m = load_module_from_string(SRC, "lanes.slang")
    out = diffc.Tensor.zeros(4)
    m.lanes.dispatch(thread_count=4, out=out, x=2.5)
    np.testing.assert_allclose(out.numpy(), [expected(k, 2.5) for k in range(4)], rtol=1e-6)
