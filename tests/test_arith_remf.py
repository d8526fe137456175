"""arith.remf (C's fmod), which diffc defines because xDSL 0.74 lacks it: the emitted OpenCL
kernel on the device (PoCL here) against numpy's fmod, and its derivatives from both modes
against float64 central finite differences of fmod."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.runtime.module import load_module_from_string

REMF = """
func.func @rem32(%x: f32, %y: f32) -> f32 attributes {diff.differentiable} {
  %r = arith.remf %x, %y : f32
  func.return %r : f32
}
func.func @rem64(%x: f64, %y: f64) -> f64 attributes {diff.differentiable} {
  %r = arith.remf %x, %y : f64
  func.return %r : f64
}
"""

# Signs of both operands mixed; x / y kept away from integers, where fmod jumps.
XS = np.array([5.3, -5.3, 7.9, -7.9, 0.4, 13.25, -2.6, 9.1])
YS = np.array([2.1, 2.1, -3.4, -3.4, 1.7, 0.55, 0.7, -4.3])
H = 1e-7


@pytest.fixture(scope="module")
def m():
    return load_module_from_string(REMF, "remf.mlir")


def test_f32_kernel_matches_numpy_fmod(m):
    x, y = XS.astype(np.float32), YS.astype(np.float32)
    got = m.rem32(diffc.Tensor.from_numpy(x), diffc.Tensor.from_numpy(y), _result="numpy")
    # fmod is exact in IEEE arithmetic: the device and numpy agree bit for bit.
    np.testing.assert_array_equal(got, np.fmod(x, y))
    assert np.any(got < 0) and np.any(got > 0)  # the sign of the dividend is kept


def _finite_differences() -> tuple[np.ndarray, np.ndarray]:
    dx = (np.fmod(XS + H, YS) - np.fmod(XS - H, YS)) / (2 * H)
    dy = (np.fmod(XS, YS + H) - np.fmod(XS, YS - H)) / (2 * H)
    return dx, dy


def test_f64_derivatives_match_finite_differences(m):
    if not diffc.device().has_fp64:
        pytest.skip("device without fp64")
    want_dx, want_dy = _finite_differences()
    # reverse mode: one output derivative per point, gradients of both operands
    x = diffc.Tensor.from_numpy(XS.copy()).with_grads(zero=True)
    y = diffc.Tensor.from_numpy(YS.copy()).with_grads(zero=True)
    r = m.rem64(x, y).with_grads()
    np.testing.assert_array_equal(r.to_numpy(), np.fmod(XS, YS))
    r.grad.copy_from_numpy(np.ones_like(XS))
    m.rem64.bwds(x, y, _result=r)
    np.testing.assert_allclose(x.grad.to_numpy(), want_dx, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y.grad.to_numpy(), want_dy, rtol=1e-6, atol=1e-6)
    # forward mode along (1, 0) and (0, 1)
    for tx, ty, want in ((1.0, 0.0, want_dx), (0.0, 1.0, want_dy)):
        xt = diffc.Tensor.from_numpy(XS.copy()).with_grads()
        yt = diffc.Tensor.from_numpy(YS.copy()).with_grads()
        xt.grad.copy_from_numpy(np.full_like(XS, tx))
        yt.grad.copy_from_numpy(np.full_like(YS, ty))
        t = m.rem64.fwds(xt, yt)
        np.testing.assert_allclose(t.grad.to_numpy(), want, rtol=1e-6, atol=1e-6)
    # d/dy = -trunc(x / y) is not constant over these points: the test could tell a wrong rule
    assert len(set(np.round(want_dy))) > 3
