"""bench/bench_mlp.py's premise: diffc's training step of examples/mlp/mlp.slang (on OpenCL:
PoCL here) and PyTorch's do the same math. One step from identical half parameters lands within
half-precision tolerance of a float64 numpy SGD step (examples/mlp/reference.py), and of torch's
step where torch is installed."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import bench_mlp  # noqa: E402

sys.path.remove(str(BENCH))

BATCH = 64


@pytest.fixture(scope="module", params=[0, 1, 2])
def step(request):
    """One step of diffc, and of torch where installed; its tolerance."""
    c = bench_mlp.check_step(BATCH, seed=request.param, with_torch=True)
    return c, bench_mlp.step_tolerance(c["p0"], c["xy"])


def test_diffc_step_matches_float64_sgd_step(step):
    c, tol = step
    assert np.all(np.abs(c["diffc"] - c["reference"]) <= tol)
    # the step moved the parameters far beyond the tolerance, so the comparison says something
    assert np.median(np.abs(c["reference"] - c["p0"]) / tol) > 10
    assert np.all(c["diffc_grads"] == 0)  # adjustParameters cleared the gradients


def test_tolerance_sees_one_sample_missing(step):
    """The tolerance is tight enough that a step over the batch less one sample falls outside."""
    c, tol = step
    short = bench_mlp.sgd_step(c["p0"], c["xy"][1:])
    assert np.any(np.abs(c["diffc"] - short) > tol)


def test_diffc_step_matches_torch_step(step):
    c, tol = step
    if c["torch"] is None:
        pytest.skip("torch is not installed (the float64 reference test covers diffc's step)")
    # torch's own result is rounded to its parameters' type: up to one ulp of float16 more
    torch_ulp = np.spacing(np.abs(c["torch"]).astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(c["torch"] - c["reference"]) <= tol)
    assert np.all(np.abs(c["diffc"] - c["torch"]) <= tol + torch_ulp)


@pytest.fixture(scope="module")
def lowered_learn_gradient():
    """mlp.slang's learnGradient lowered once (the emitter does not change the module): each
    atomics mode only emits it."""
    from diffc.cli import lowered

    return lowered(str(bench_mlp.MLP_DIR / "mlp.slang"), "learnGradient")[0]


@pytest.mark.parametrize("atomics", ["cmpxchg", "ptx"])
def test_racy_source_replaces_the_half_add_of_either_atomics_mode(atomics, lowered_learn_gradient):
    from diffc.backend.opencl import EmitOptions, emit_opencl

    source = emit_opencl(lowered_learn_gradient, EmitOptions(atomics=atomics))
    racy = bench_mlp.racy_source(source)
    assert "atomic_cmpxchg" in source or "red.global.add.noftz.f16" in source
    assert "atomic_cmpxchg" not in racy and "red.global" not in racy
    # only the helper's body changed: the kernels and their calls of it are as they were
    tail = source.index("__kernel")
    assert racy.endswith(source[tail:])


def test_racy_learn_gradient_of_one_sample_equals_the_atomic_one():
    """With one work-item nothing races: the racy kernel's gradients are the atomic kernel's."""
    import diffc

    rng = np.random.default_rng(5)
    p0 = bench_mlp.init_params(rng)
    xy = bench_mlp.half_inputs(1, rng)
    m = diffc.load_module(bench_mlp.MLP_DIR / "mlp.slang")
    step = bench_mlp.DiffcStep(m, p0, xy)
    step.reset()
    m.learnGradient.dispatch(thread_count=1, network=step.network, lossBuffer=step.loss, inputs=step.inputs, count=1)
    atomic = step.grads.to_numpy().astype(np.float64)
    racy = bench_mlp.RacyLearnGradient(m, step)
    racy.reset()
    racy.run()[0].wait()
    assert np.count_nonzero(atomic) > 100  # most of the 148 parameters get a gradient
    np.testing.assert_array_equal(step.grads.to_numpy().astype(np.float64), atomic)


@pytest.mark.parametrize("deterministic", [False, True, None, "reduce-atomics only"])
def test_mlp_gradients_of_each_mode_match_float64(deterministic):
    """learnGradient's gradients over a batch of many work-groups (accumulate-gradients' persistent
    groups), in the default and the deterministic mode, against the float64 reference: within the
    bound derived for half precision (each sample's gradient op by op, tests/mlp_rounding.py, then
    float32 sums and one pair of half roundings per add into the gradient buffer: one per
    launched group, per slot in deterministic mode, per 256-sample group with reduce-atomics,
    whose groups sum in float too); deterministic mode gives the same bits run after run."""
    import mlp_rounding
    from reference import loss_and_grad
    from rounding import accumulated_half_adds, half_accumulation_error

    rng = np.random.default_rng(11)
    p0 = bench_mlp.init_params(rng)
    xy = bench_mlp.half_inputs(5000, rng)
    accumulated = deterministic != "reduce-atomics only"
    m = bench_mlp.load_variant(accumulated)
    if not accumulated:
        deterministic = False
    step = bench_mlp.DiffcStep(m, p0, xy, deterministic=deterministic)
    runs = []
    for _ in range(2 if deterministic is not False else 1):
        step.reset()
        m.learnGradient.dispatch(thread_count=len(xy), network=step.network, lossBuffer=step.loss,
                                 inputs=step.inputs, count=len(xy), deterministic=deterministic)
        runs.append(step.grads.to_numpy())
    want = loss_and_grad(p0.astype(np.float64), xy)[1]
    samples = mlp_rounding.sample_gradients(p0.astype(np.float64), xy)
    from diffc.runtime import accumulate

    mode = accumulate.DETERMINISTIC if deterministic is None else deterministic  # None: the default
    adds = accumulated_half_adds(m, "learnGradient", len(xy), mode) if accumulated else -(-len(xy) // 256)
    tol = samples.e.sum(axis=0) + half_accumulation_error(np.abs(samples.v) + samples.e, adds)
    got = runs[0].astype(np.float64)
    assert np.all(np.abs(got - want) <= tol), np.max(np.abs(got - want) / tol)
    assert np.median(np.abs(want) / tol) > 3  # the gradients are far above the tolerance
    if deterministic is not False:  # the default (deterministic) mode too
        assert runs[0].tobytes() == runs[1].tobytes()
    # the batch's largest loss (an atomic max per sample, one slot of the accumulated kernel)
    largest = float(step.loss.to_numpy().view(np.float32)[0])
    losses = mlp_rounding.forward(p0.astype(np.float64), xy)[0]
    assert abs(largest - losses.v.max()) <= losses.e.max(), (largest, losses.v.max(), losses.e.max())
