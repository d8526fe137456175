"""The sanitizer mode (check=True) reports a call over tensors that reads a gradient nobody
initialized; without it, and once the gradient is written, calls run as before."""

from __future__ import annotations

import numpy as np
import pytest

import diffc
from diffc.runtime.errors import UninitializedReadError

SRC = """
[Differentiable]
float sq(float x) { return x * x; }
"""


def _module(tmp_path, check: bool):
    path = tmp_path / "sq.slang"
    path.write_text(SRC)
    return diffc.load_module(str(path), check=check)


def test_bwds_into_a_gradient_made_with_zero_false_is_reported(tmp_path):
    m = _module(tmp_path, check=True)
    x = diffc.Tensor.from_numpy(np.array([1.0, 2.0, 3.0], np.float32)).with_grads(zero=False)
    y = m.sq(x=x).with_grads()
    y.grad.fill(1.0)
    with pytest.raises(UninitializedReadError, match=r"error\[E0013\]: sq.bwds adds into the .grad of 'x', which "
                       r"was never initialized"):
        m.sq.bwds(x=x, _result=y)
    x.grad.fill(0.0)  # initialized: the same call runs and gives 2x
    m.sq.bwds(x=x, _result=y)
    np.testing.assert_array_equal(x.grad.to_numpy(), [2.0, 4.0, 6.0])


def test_an_output_derivative_and_a_tangent_nobody_wrote_are_reported(tmp_path):
    m = _module(tmp_path, check=True)
    x = diffc.Tensor.from_numpy(np.array([1.0, 2.0], np.float32)).with_grads()
    y = m.sq(x=x).with_grads(zero=False)
    with pytest.raises(UninitializedReadError, match="reads the .grad of '_result'"):
        m.sq.bwds(x=x, _result=y)
    t = diffc.Tensor.from_numpy(np.array([1.0, 2.0], np.float32))
    t.grad = diffc.Tensor.empty(2)
    with pytest.raises(UninitializedReadError, match="sq.fwds reads the .grad of 'x'"):
        m.sq.fwds(x=t)
    t.grad.copy_from_numpy(np.ones(2, np.float32))
    out = m.sq.fwds(x=t)  # tangent 1: d(x^2) = 2x
    np.testing.assert_array_equal(out.grad.to_numpy(), [2.0, 4.0])
    m.sq.bwds(x=x, _result=out)  # fwds wrote out.grad ([2, 4]): it is initialized now
    np.testing.assert_array_equal(x.grad.to_numpy(), [2 * 1.0 * 2.0, 2 * 2.0 * 4.0])


def test_without_the_sanitizer_nothing_is_checked(tmp_path):
    m = _module(tmp_path, check=False)
    x = diffc.Tensor.from_numpy(np.array([1.0, 2.0], np.float32)).with_grads(zero=False)
    x.grad.fill(5.0)
    y = m.sq(x=x).with_grads()
    y.grad.fill(1.0)
    m.sq.bwds(x=x, _result=y)
    np.testing.assert_array_equal(x.grad.to_numpy(), [7.0, 9.0])


def test_calls_with_vector_parameters_are_checked_too(tmp_path):
    path = tmp_path / "len3.slang"
    path.write_text("[Differentiable] float len2(float3 p) { return dot(p, p); }\n")
    m = diffc.load_module(str(path), check=True)
    p = diffc.Tensor.from_numpy(np.ones((2, 3), np.float32)).with_grads(zero=False)
    y = m.len2(p=p).with_grads()
    y.grad.fill(1.0)
    with pytest.raises(UninitializedReadError, match="len2.bwds adds into the .grad of 'p'"):
        m.len2.bwds(p=p, _result=y)
    p.grad.fill(0.0)
    m.len2.bwds(p=p, _result=y)
    np.testing.assert_array_equal(p.grad.to_numpy(), np.full((2, 3), 2.0))
