"""`groupshared` globals (frontend/features/groupshared.py): work-group memory that a group's work-items
share after a barrier, its elements, fields and scalars as places in memory, atomics on it,
functions that use it, bounds-checked indices, and its place in differentiation (a constant to
the derivative; a derivative-carrying store into it is E0006)."""

from __future__ import annotations

import numpy as np
import pytest
from slang_harness import compile_error

from diffc import cli


def _run(tmp_path, capsys, src: str, groups: str = "1,1,1") -> tuple[int, list[float], str]:
    path = tmp_path / "k.slang"
    path.write_text(src)
    rc = cli.main(["run", str(path), "--groups", groups])
    out, err = capsys.readouterr()
    return rc, [float(v) for v in out.split()[2:]], err


def _buffer(name: str, values, out: bool = False) -> str:
    data = " ".join(str(v) for v in values)
    return f"//TEST_INPUT:ubuffer(data=[{data}], stride=4):{'out,' if out else ''}name={name}\n"


def test_a_tree_reduction_sums_each_group_through_work_group_memory(tmp_path, capsys):
    x = np.random.default_rng(0).integers(-50, 50, 4 * 64).astype(np.float32) / 8  # exact sums
    src = _buffer("input", x.tolist()) + "RWStructuredBuffer<float> input;\n" + _buffer("sums", [0] * 4, out=True) + """
RWStructuredBuffer<float> sums;
groupshared float partial[64];

float pairSum(uint i, uint stride) { return partial[i] + partial[i + stride]; }

[numthreads(64, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID, uint3 gtid : SV_GroupThreadID, uint3 gid : SV_GroupID) {
    partial[gtid.x] = input[tid.x];
    GroupMemoryBarrierWithGroupSync();
    for (uint stride = 32; stride > 0; stride >>= 1) {
        if (gtid.x < stride)
            partial[gtid.x] = pairSum(gtid.x, stride);
        GroupMemoryBarrierWithGroupSync();
    }
    if (gtid.x == 0)
        sums[gid.x] = partial[0];
}
"""
    rc, got, err = _run(tmp_path, capsys, src, "4,1,1")
    assert rc == 0, err
    np.testing.assert_array_equal(got, x.reshape(4, 64).sum(axis=1))


def test_arrays_of_vectors_structs_matrices_and_halves_are_laid_out_as_their_scalars(tmp_path, capsys):
    src = _buffer("output", [0] * 4, out=True) + """
RWStructuredBuffer<float> output;
struct P { float a; float3 b; };
groupshared P ps[2];
groupshared float2 grid[2][4];
groupshared float2x2 m;
groupshared half h[4];

[numthreads(4, 1, 1)]
void computeMain(uint3 gtid : SV_GroupThreadID) {
    uint i = gtid.x;
    h[i] = half(i) + half(0.5);
    grid[i / 2][i % 2 + 2] = float2(i, -1.0);
    grid[i / 2][i % 2].y = float(10 * i);
    if (i < 2) { ps[i].a = 1.0 + i; ps[i].b = float3(i, 2.0 * i, 3.0); }
    if (i == 0) { m = float2x2(1, 2, 3, 4); m[1][0] = 7.0; }
    GroupMemoryBarrierWithGroupSync();
    output[i] = float(h[3 - i]) + ps[i % 2].b.y * 10.0 + ps[1].a * 100.0 + m[1][0] * 1000.0
              + m[0][1] * 10000.0 + grid[(3 - i) / 2][(3 - i) % 2].y * 100000.0 + grid[i / 2][i % 2 + 2].x;
}
"""
    rc, got, err = _run(tmp_path, capsys, src)
    assert rc == 0, err
    i = np.arange(4)
    want = (3 - i + 0.5) + (2.0 * (i % 2)) * 10 + 2 * 100 + 7 * 1000 + 2 * 10000 + 10 * (3 - i) * 100000 + i
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_interlocked_atomics_and_a_scalar_written_by_one_work_item(tmp_path, capsys):
    x = np.random.default_rng(1).integers(0, 100, 16)
    src = _buffer("input", x.tolist()) + "RWStructuredBuffer<int> input;\n" + _buffer("output", [0] * 6, out=True) + """
RWStructuredBuffer<int> output;
groupshared int total;
groupshared uint largest[1];
groupshared int first;

[numthreads(8, 1, 1)]
void computeMain(uint3 tid : SV_DispatchThreadID, uint3 gtid : SV_GroupThreadID, uint3 gid : SV_GroupID) {
    if (gtid.x == 0) { total = 0; largest[0] = 0; first = input[tid.x]; }
    GroupMemoryBarrierWithGroupSync();
    int before;
    InterlockedAdd(total, input[tid.x], before);
    InterlockedMax(largest[0], uint(input[tid.x]));
    GroupMemoryBarrierWithGroupSync();
    if (gtid.x == 3) { output[3 * gid.x] = total; output[3 * gid.x + 1] = int(largest[0]); output[3 * gid.x + 2] = first; }
}
"""
    rc, got, err = _run(tmp_path, capsys, src, "2,1,1")
    assert rc == 0, err
    g = x.reshape(2, 8)
    assert got == [v for k in range(2) for v in (g[k].sum(), g[k].max(), g[k][0])]


def test_an_index_past_the_end_is_a_located_error_naming_the_variable(tmp_path, capsys):
    src = _buffer("output", [0] * 8, out=True) + """RWStructuredBuffer<float> output;
groupshared float tile[8];
float at(int i) { return tile[i]; }
[numthreads(8, 1, 1)]
void computeMain(uint3 gtid : SV_GroupThreadID) {
    tile[gtid.x] = float(gtid.x);
    GroupMemoryBarrierWithGroupSync();
    output[gtid.x] = at(int(gtid.x) + 1);
}
"""
    rc, got, err = _run(tmp_path, capsys, src)
    assert rc == 1 and "Traceback" not in err
    assert "k.slang:4:26: error[E0011]" in err and "groupshared 'tile' (in function 'at') at index 8, outside its 8" in err


def test_derivatives_of_a_function_reading_work_group_memory_treat_it_as_constant(tmp_path, capsys):
    """d/dx (x^2 w[i] + w[i+1]) = 2 x w[i], for the w the group wrote, against float64 central
    differences of that function, in both modes."""
    xs = [0.5, -1.25, 2.0, 3.0]
    src = _buffer("xs", xs) + "RWStructuredBuffer<float> xs;\n" + _buffer("output", [0] * 12, out=True) + """
RWStructuredBuffer<float> output;
groupshared float w[4];

[Differentiable]
float f(float x, uint i) { return x * x * w[i] + w[(i + 1) % 4]; }

[numthreads(4, 1, 1)]
void computeMain(uint3 gtid : SV_GroupThreadID) {
    uint i = gtid.x;
    w[i] = 0.5 * float(i) - 0.75;
    GroupMemoryBarrierWithGroupSync();
    var dp = diffPair(xs[i]);
    bwd_diff(f)(dp, i, 1.0);
    output[i] = dp.d;
    output[4 + i] = fwd_diff(f)(diffPair(xs[i], 1.0), i).d;
    output[8 + i] = f(xs[i], i);
}
"""
    rc, got, err = _run(tmp_path, capsys, src)
    assert rc == 0, err
    w = 0.5 * np.arange(4) - 0.75

    def f(x, i):
        return x * x * w[i] + w[(i + 1) % 4]

    h = 1e-6
    fd = [(f(x + h, i) - f(x - h, i)) / (2 * h) for i, x in enumerate(xs)]
    np.testing.assert_allclose(got[0:4], fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[4:8], fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[8:12], [f(x, i) for i, x in enumerate(xs)], rtol=1e-6)


STORE = """
RWStructuredBuffer<float> outputBuffer;
groupshared float shared;
[Differentiable]
float pass(float v, uint id) {
    if (id == 0)
        shared = VALUE;
    GroupMemoryBarrierWithGroupSync();
    return shared;
}
[numthreads(4, 1, 1)]
void computeMain(uint3 gtid : SV_GroupThreadID) {
    var dp = diffPair(3.0);
    bwd_diff(pass)(dp, gtid.x, 1.0);
    outputBuffer[gtid.x] = dp.d;
}
"""


def test_a_derivative_carrying_store_into_work_group_memory_is_refused_unless_detached(tmp_path, capsys):
    msg = compile_error(STORE.replace("VALUE", "v"))
    assert "prog.slang:7:9: error[E0006]" in msg and "detach" in msg
    rc, got, err = _run(tmp_path, capsys, _buffer("outputBuffer", [9] * 4, out=True)
                        + STORE.replace("VALUE", "detach(v) * 2.0"))
    assert rc == 0, err
    assert got == [0.0] * 4  # the value read back carries no derivative


@pytest.mark.parametrize("decl, message", [
    ("groupshared float tile[4] = {1, 2, 3, 4};", "groupshared variable 'tile' has an initializer"),
    ("groupshared bool flags[4];", "holds bools"),
    ("struct M { float a; int b; };\ngroupshared M mixed[2];", "mixes scalar types"),
    ("groupshared RWStructuredBuffer<float> b;", "is not supported"),
])
def test_work_group_memory_it_cannot_hold_is_a_located_error(decl, message):
    msg = compile_error(decl + "\n[numthreads(1, 1, 1)]\nvoid computeMain() {}\n")
    assert "error[E0008]" in msg and message in msg and "prog.slang:" in msg
