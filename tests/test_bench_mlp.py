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
