"""CPU devices' settings for CoopVec's matrix-vector products: dot products the device compiler
may reassociate (vectorized by PoCL) and interchange-matvec's transposed products; the gradients
of a CoopVec network with random (not exactly representable) data still match a float64 model
within float32 rounding, and are the same with the interchange on and off up to that rounding."""

from __future__ import annotations

import numpy as np
import pytest

from diffc.kernel_settings import for_device
from test_cooperative_layers import LAYERS, NETWORK, _gradient, _layout, _model_gradient


def _device():
    from diffc.runtime.device import device

    return device().cl_device


def test_cpu_devices_reassociate_and_interchange(monkeypatch):
    monkeypatch.delenv("DIFFC_INTERCHANGE_MATVEC", raising=False)
    cpu = for_device(_device())
    assert cpu.reassociate and cpu.interchange_matvec
    assert not for_device(None).reassociate and not for_device(None).interchange_matvec
    monkeypatch.setenv("DIFFC_INTERCHANGE_MATVEC", "0")
    assert for_device(_device()).interchange_matvec is False


@pytest.mark.parametrize("interchange", ["1", "0"])
def test_random_gradients_match_float64(interchange, monkeypatch):
    monkeypatch.setenv("DIFFC_INTERCHANGE_MATVEC", interchange)
    rng = np.random.default_rng(11)
    _, total = _layout()
    p = rng.normal(0, 0.5, total).astype(np.float32).astype(np.float64)
    samples = rng.uniform(-1, 1, (40, 8)).astype(np.float32).astype(np.float64)
    got = _gradient(NETWORK.replace("CONDITION", ""), p, samples)
    want = _model_gradient(p, samples)
    # float32 sums of a few hundred terms of size ~1: a few ulps of the largest gradient
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max())
