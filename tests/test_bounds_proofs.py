"""Launch-time bounds proofs through calls and over accumulate-gradients' grid-stride loop, on
PoCL (diffc/kernel_support/bounds_proofs.py): a dispatch whose arguments keep every access in
bounds runs the accumulated kernel's __inbounds variant, with the right sums; one an argument makes out of
bounds runs the checked kernel and reports the located E0011 error."""

from __future__ import annotations

import os

import numpy as np
import pytest

import diffc
from diffc.runtime.bounds import BoundsError
from diffc.runtime.dispatch import entry_program
from diffc.runtime.module import load_module_from_string

os.environ.setdefault("DIFFC_DEVICE", "cpu")

# A row of weights read through a pointer parameter in a loop of constant bound (as the MLP's
# layers do), and a half sum added through a pointer, behind `if (tid >= count) return;`.
LEARN = """
float dotRow(float* w, int row, float x)
{
    float s = 0.0;
    for (int i = 0; i < 4; i++)
        s += w[row * 4 + i] * x;
    return s;
}

void addHalf(half* p, half v)
{
    half original;
    InterlockedAddF16Emulated(p, v, original);
}

[shader("compute")]
[numthreads(64, 1, 1)]
void learn(uint32_t tid : SV_DispatchThreadID, uniform float* weights, uniform float* values,
           uniform half* halfSum, uniform uint32_t count)
{
    if (tid >= count) return;
    float v = values[tid];
    addHalf(halfSum + 1, half(dotRow(weights, 2, v)));
}
"""


@pytest.fixture(scope="module")
def learn():
    return load_module_from_string(LEARN, "proofs.slang")


def _t(a, dtype=np.float32):
    return diffc.Tensor.from_numpy(np.asarray(a, dtype))


def _launched(m) -> list[str]:
    return [k.function_name for k, _, _ in entry_program(m).plans["learn"][0].launches]


def test_the_accumulated_kernel_has_proofs_for_its_loop_and_its_callees(learn):
    acc = entry_program(learn).accumulated["learn"]
    rows = {(p.buffer, p.offset, p.limit, p.count, p.scale, p.extra) for p in acc.proofs}
    # values[tid] in the grid-stride loop over diffc_groups x 64 virtual work-items, below count;
    # weights[8 .. 11] in the callee; halfSum[off + 1] in the other callee
    assert ("values", "values_off", "diffc_groups", "count", 1, 0) in rows
    assert ("weights", "weights_off", "", "", 0, 11) in rows
    assert ("halfSum", "halfSum_off", "", "", 0, 1) in rows
    # deterministic mode's per-group partial sums: group id x slots + local id, under local id < slots
    assert any(p.buffer == "diffc_partials" and p.group == acc.group and p.scale == acc.slots for p in acc.proofs)
    assert acc.inbounds and acc.inbounds != acc.c_name


@pytest.mark.parametrize("deterministic", [False, True])
def test_a_proven_dispatch_runs_the_variant_and_sums_right(learn, deterministic):
    acc = entry_program(learn).accumulated["learn"]
    rng = np.random.default_rng(1)
    n = 1000
    values = rng.uniform(0, 1, n).astype(np.float32)
    weights = rng.uniform(0, 1, 12).astype(np.float32)
    half_sum = diffc.Tensor.zeros(2, np.float16)
    learn.learn.dispatch(thread_count=n, weights=_t(weights), values=_t(values), halfSum=half_sum, count=n,
                         deterministic=deterministic)
    assert _launched(learn)[0] == acc.inbounds
    want = (values.astype(np.float64) * weights[8:12].astype(np.float64).sum())
    got = half_sum.to_numpy()
    assert got[0] == 0
    # each sample rounded to half, the sum to half: a few half ulps of the total
    assert abs(float(got[1]) - want.sum()) <= 2.0**-9 * want.sum(), (got, want.sum())


def test_a_short_buffer_in_a_callee_runs_the_checked_kernel_and_is_reported(learn):
    acc = entry_program(learn).accumulated["learn"]
    n = 100
    half_sum = diffc.Tensor.zeros(2, np.float16)
    with pytest.raises(BoundsError) as e:  # weights[11] is one past 11 elements
        learn.learn.dispatch(thread_count=n, weights=_t(np.ones(11)), values=_t(np.ones(n)), halfSum=half_sum, count=n)
        diffc.synchronize()
    assert _launched(learn)[0] == acc.c_name
    assert e.value.buffer == "w" and e.value.index == 11 and e.value.length == 11
    assert "proofs.slang:6:14: error[E0011]" in str(e.value) and "in function 'dotRow'" in str(e.value)


def test_a_count_past_the_buffer_runs_the_checked_kernel_and_is_reported(learn):
    acc = entry_program(learn).accumulated["learn"]
    half_sum = diffc.Tensor.zeros(2, np.float16)
    with pytest.raises(BoundsError, match="index 64") as e:  # 65 samples counted, 64 values given
        learn.learn.dispatch(thread_count=65, weights=_t(np.ones(12)), values=_t(np.ones(64)), halfSum=half_sum,
                             count=65)
        diffc.synchronize()
    assert _launched(learn)[0] == acc.c_name
    assert e.value.buffer == "values" and "proofs.slang:22:15: error[E0011]" in str(e.value)
    # an offset pointer whose element 1 is past the end: the checked kernel too
    with pytest.raises(BoundsError, match="halfSum"):
        learn.learn.dispatch(thread_count=64, weights=_t(np.ones(12)), values=_t(np.ones(64)),
                             halfSum=half_sum.at(1), count=64)
        diffc.synchronize()
    assert _launched(learn)[0] == acc.c_name


def test_the_mlp_step_runs_unchecked_variants_and_a_short_parameter_tensor_is_caught():
    """examples/mlp: learnGradient's accumulated kernels (the layers read their weights through
    pointers in constant loops) and adjustParameters are proven at launch; a parameter tensor one
    half short leaves the last bias read unproven, so the checked kernels run and report it."""
    from pathlib import Path

    m = diffc.load_module(Path(__file__).resolve().parents[1] / "examples" / "mlp" / "mlp.slang")
    prog = entry_program(m)
    acc = prog.accumulated["learnGradient"]
    n_params = 4 * 16 + 16 + 16 * 4 + 4

    def step(params: diffc.Tensor) -> list[str]:
        grads = diffc.Tensor.zeros(params.size, np.float16)
        at = {"layer1": (0, 64), "layer2": (80, 144)}
        network = {k: {"weights": params.at(w), "weightsGrad": grads.at(w), "biases": params.at(b),
                       "biasesGrad": grads.at(b)} for k, (w, b) in at.items()}
        xy = np.random.default_rng(0).uniform(-1, 1, (300, 2)).astype(np.float32).ravel()
        m.learnGradient.dispatch(thread_count=300, network=network, lossBuffer=diffc.Tensor.zeros(1, np.uint32),
                                 inputs=diffc.Tensor.from_numpy(xy), count=300)
        m.adjustParameters.dispatch(thread_count=params.size, params=params, gradients=grads, count=params.size)
        diffc.synchronize()
        return [k.function_name for e in ("learnGradient", "adjustParameters") for k, _, _ in prog.plans[e][0].launches]

    p = diffc.Tensor.from_numpy(np.random.default_rng(1).uniform(-0.5, 0.5, n_params).astype(np.float16))
    assert step(p) == [acc.inbounds, acc.finish_inbounds, prog.kernels["adjustParameters"].inbounds]
    short = diffc.Tensor.from_numpy(np.zeros(n_params - 1, np.float16))  # layer2's biases[3] is past the end
    with pytest.raises(BoundsError) as e:
        step(short)
    assert e.value.index == n_params - 1 and e.value.length == n_params - 1
    assert "mlp.slang:" in str(e.value) and "error[E0011]" in str(e.value)
    assert prog.plans["learnGradient"][0].launches[0][0].function_name == acc.c_name
