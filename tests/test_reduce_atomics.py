"""reduce-atomics on PoCL: entry points whose work-group-uniform atomic adds are summed per
work-group (passes/reduce_atomics.py) give the sums numpy gives, for counts that leave the last
group partly inactive and group sizes that are no power of two; adds the pass leaves alone
(divergent branches, per-work-item addresses) still add up."""

from __future__ import annotations

import re

import numpy as np
import pytest

import diffc
from diffc.runtime.device import SETTINGS as device_settings
from diffc.runtime.dispatch import entry_program
from diffc.runtime.module import load_module_from_string

COUNTS = [1, 2, 63, 64, 99, 100, 101, 255, 256, 257, 1000]

# Three float sums in a loop of constant bound (unrolled into one batch), an int count after it,
# a half sum in a callee through a pointer, all behind `if (tid >= count) return;`.
UNIFORM = """
RWStructuredBuffer<Atomic<float>> sums;
RWStructuredBuffer<Atomic<int>> hits;

void addHalf(half* p, half v)
{
    half original;
    InterlockedAddF16Emulated(p, v, original);
}

[shader("compute")]
[numthreads(GROUP, 1, 1)]
void accumulate(uint32_t tid : SV_DispatchThreadID, uniform float* values, uniform half* halfSum, uniform uint32_t count)
{
    if (tid >= count) return;
    float v = values[tid];
    for (int i = 0; i < 3; i++)
        sums[i] += v * float(i + 1);
    hits[0] += 1;
    addHalf(halfSum + 1, half(v));
}
"""

# The pass leaves these adds as they are: in a branch only some work-items take, and at an
# address each work-item computes from its data (a histogram).
DIVERGENT = """
RWStructuredBuffer<Atomic<float>> sums;
RWStructuredBuffer<Atomic<int>> histogram;

[shader("compute")]
[numthreads(64, 1, 1)]
void divergent(uint32_t tid : SV_DispatchThreadID, uniform float* values, uniform uint32_t count)
{
    if (tid >= count) return;
    float v = values[tid];
    if (v > 2.0)
        sums[0] += v;
    histogram[int(v)] += 1;
}
"""

# Two adds of one block with a loop of reductions between them: their contributions wait in the
# local buffer that the loop's reductions use, unless they are reduced apart.
AROUND_A_LOOP = """
RWStructuredBuffer<Atomic<float>> sums;

[shader("compute")]
[numthreads(64, 1, 1)]
void around(uint32_t tid : SV_DispatchThreadID, uniform float* values, uniform uint32_t count)
{
    if (tid >= count) return;
    float v = values[tid];
    sums[0] += v;
    for (int i = 0; i < 40; i++)
        sums[1] += 2.0 * v;
    sums[2] += 3.0 * v;
}
"""

# A 2-d group (8 x 4): the work-items' linear local ids must cover the group once each.
GRID = """
RWStructuredBuffer<Atomic<float>> total;

[shader("compute")]
[numthreads(8, 4, 1)]
void grid(uint3 tid : SV_DispatchThreadID, uniform float* values, uniform uint32_t width, uniform uint32_t height)
{
    if (tid.x >= width || tid.y >= height) return;
    total[0] += values[tid.y * width + tid.x];
}
"""


@pytest.fixture(autouse=True)
def _reduce_atomics_alone(monkeypatch):
    """These tests are about reduce-atomics: build without accumulate-gradients, which since it
    takes integer adds too rewrites some of these kernels (and has tests of its own), and without
    cooperative-layers, which sums a loop of adds like UNIFORM's over the group itself."""
    monkeypatch.setitem(device_settings, "accumulate", False)
    monkeypatch.setitem(device_settings, "cooperative", False)


def _module(text: str, name: str):
    return load_module_from_string(text, name)


def _reduced(m) -> bool:
    return "barrier(" in entry_program(m).source


@pytest.fixture
def values():
    rng = np.random.default_rng(7)
    return rng.integers(0, 4, 1000).astype(np.float32)  # integer-valued: float sums are exact


@pytest.mark.parametrize("group", [64, 100])
def test_uniform_sums_equal_numpy(group, values):
    m = _module(UNIFORM.replace("GROUP", str(group)), "uniform.slang")
    source = entry_program(m).source
    # one batch of the four float-summed adds (three floats, the half), one of the int add
    assert re.search(rf"__local float \w+\[{4 * group}\];", source)
    assert re.search(rf"__local int \w+\[{group}\];", source)
    for n in COUNTS:
        v = values[:n]
        sums = diffc.Tensor.zeros(3, np.float32)
        hits = diffc.Tensor.zeros(1, np.int32)
        half_sum = diffc.Tensor.zeros(2, np.float16)
        m.accumulate.dispatch(thread_count=n, values=diffc.Tensor.from_numpy(v), halfSum=half_sum, count=n,
                              sums=sums, hits=hits)
        total = float(v.astype(np.float64).sum())
        np.testing.assert_array_equal(sums.to_numpy(), np.array([1, 2, 3], np.float32) * np.float32(total), err_msg=f"n={n}")
        assert hits.to_numpy()[0] == n
        got = half_sum.to_numpy().astype(np.float64)
        assert got[0] == 0.0  # the neighbouring half in the same 32-bit word is untouched
        # each group's float sum is rounded to half once, and each of the groups' atomic adds
        # rounds the running sum once: at most half an ulp of half (2^-11, relative) each
        groups = -(-n // group)
        assert abs(got[1] - total) <= (groups + 1) * 2.0**-11 * max(total, 1.0), f"n={n}: {got[1]} vs {total}"


def test_uniform_sums_equal_those_without_the_pass(values, monkeypatch):
    n = 257
    results = []
    for reduce in (True, False):
        monkeypatch.setitem(device_settings, "reduce_atomics", reduce)
        m = _module(UNIFORM.replace("GROUP", "64"), "uniform.slang")
        assert _reduced(m) == reduce
        sums = diffc.Tensor.zeros(3, np.float32)
        hits = diffc.Tensor.zeros(1, np.int32)
        half_sum = diffc.Tensor.zeros(2, np.float16)
        m.accumulate.dispatch(thread_count=n, values=diffc.Tensor.from_numpy(values[:n]), halfSum=half_sum,
                              count=n, sums=sums, hits=hits)
        results.append((sums.to_numpy(), hits.to_numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_divergent_and_per_item_adds_are_left_alone(values):
    m = _module(DIVERGENT, "divergent.slang")
    assert not _reduced(m)
    for n in (1, 65, 1000):
        v = values[:n]
        sums = diffc.Tensor.zeros(1, np.float32)
        histogram = diffc.Tensor.zeros(4, np.int32)
        m.divergent.dispatch(thread_count=n, values=diffc.Tensor.from_numpy(v), count=n, sums=sums,
                             histogram=histogram)
        assert sums.to_numpy()[0] == v[v > 2].sum()
        np.testing.assert_array_equal(histogram.to_numpy(), np.bincount(v.astype(int), minlength=4))


def test_adds_around_a_loop_of_reductions(values):
    m = _module(AROUND_A_LOOP, "around.slang")
    assert _reduced(m)
    for n in (1, 64, 257):
        v = values[:n]
        sums = diffc.Tensor.zeros(3, np.float32)
        m.around.dispatch(thread_count=n, values=diffc.Tensor.from_numpy(v), count=n, sums=sums)
        total = np.float32(v.sum())
        np.testing.assert_array_equal(sums.to_numpy(), np.array([total, 80 * total, 3 * total], np.float32))


@pytest.mark.parametrize("width,height", [(1, 1), (8, 4), (9, 5), (30, 17)])
def test_two_dimensional_groups(width, height, values):
    m = _module(GRID, "grid.slang")
    assert _reduced(m)
    v = values[: width * height]
    total = diffc.Tensor.zeros(1, np.float32)
    m.grid.dispatch(thread_count=(width, height), values=diffc.Tensor.from_numpy(v), width=width, height=height,
                    total=total)
    assert total.to_numpy()[0] == v.sum()
