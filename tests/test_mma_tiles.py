"""cooperative-layers' group product (diffc/backend/opencl/mma_tiles.py), asked for with
DIFFC_COOP_MMA=1: PoCL's OpenCL does not build the inline PTX, so it is off by default and the
per-work-item products stay; asked for, PoCL gets the helper's plain float sums (not the PTX),
and the staging of vectors and weights around it must give the float64 model's gradients exactly."""

from __future__ import annotations

import numpy as np
import pytest

from diffc.kernel_settings import for_device, mma_builds
from test_cooperative_layers import (LAYERS, NETWORK, SLOPE, _gradient, _model_gradient, _problem, _report,
                                           coopvec_network)

WARPS = coopvec_network.network_source(LAYERS, SLOPE, group=32, layout="RowMajor", condition="CONDITION")


def _device():
    from diffc.runtime.device import device

    return device().cl_device


def test_pocl_does_not_take_the_tensor_cores(monkeypatch):
    monkeypatch.delenv("DIFFC_COOP_MMA", raising=False)
    dev = _device()
    assert not mma_builds(dev)  # PoCL: no inline PTX
    assert for_device(dev).cooperative_mma is False
    from diffc.backend.opencl.options import atomics_for_device

    assert atomics_for_device(dev) != "ptx"  # so the emitter prints the plain sums when asked


@pytest.mark.parametrize("group", [32, 16])
def test_forced_group_product_gives_the_exact_gradients(group, monkeypatch, tmp_path):
    """70 samples (the last group partly inactive). Groups of 32 take the group product (the
    report says so); groups of 16 are not whole warps and keep the float tiles."""
    monkeypatch.setenv("DIFFC_COOP_MMA", "1")
    source = WARPS if group == 32 else NETWORK
    text = _report(source.replace("CONDITION", ""), tmp_path, monkeypatch)
    products = text.count("the group product diffc_mma_xwt")
    assert products == (9 + 2 if group == 32 else 0), text  # forward, recomputed, transposed
    p, samples = _problem(70)
    got = _gradient(source.replace("CONDITION", ""), p, samples)
    np.testing.assert_array_equal(got, _model_gradient(p, samples))
