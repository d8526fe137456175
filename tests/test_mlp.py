"""examples/mlp/mlp.slang (Slang's MLP tutorial): its gradients against a float64 numpy MLP, and
(with OpenCL) a short training run whose loss must fall."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr

from diffc.compiler import apply_pipeline
from diffc.frontend import compile_slang
from diffc.interp import run_function

MLP = Path(__file__).resolve().parent.parent / "examples" / "mlp" / "mlp.slang"
sys.path.insert(0, str(MLP.parent))
from reference import loss_and_grad  # noqa: E402  (examples/mlp's float64 model of the network)
from train import init_params, train  # noqa: E402

sys.path.remove(str(MLP.parent))

# Parameter layout (the one train.py uses): W1 16x4, b1 16, W2 4x16, b2 4, row-major.
W1, B1, W2, B2 = 0, 64, 80, 144
N_PARAMS = 148


@pytest.fixture(scope="module")
def lowered():
    m = compile_slang(MLP.read_text(), str(MLP))
    m.verify()
    apply_pipeline(m, name_failing_pass=True)
    m.verify()
    return m


def network_args(params: ShapedArray, grads: ShapedArray) -> list:
    """MyNetwork* leaves: per layer weights, weightsGrad, biases, biasesGrad, each (memref, offset)."""
    out: list = []
    for w, b in ((W1, B1), (W2, B2)):
        out += [params, w, grads, w, params, b, grads, b]
    return out


def half_array(xs) -> ShapedArray:
    return ShapedArray(TypedPtr.new_float64([float(v) for v in xs]), [len(xs)])


def test_mlp_compiles_to_monomorphized_functions(lowered):
    names = {op.sym_name.data for op in lowered.ops if hasattr(op, "sym_name")}
    for want in ("MLVec_4_fromArray", "FeedForwardLayer_4_16_eval", "FeedForwardLayer_16_4_evalBwd",
                 "matMulAdd_16_4", "matMulTransposed_4_16", "outerProductAccumulate_16_4",
                 "MyNetwork_eval", "Optimizer_step", "learnGradient", "adjustParameters"):
        assert want in names


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bwd_diff_loss_gradients_match_numpy(lowered, seed):
    rng = np.random.default_rng(seed)
    # Half-representable parameters, so both sides start from the same numbers.
    params = rng.normal(0.0, 0.5, N_PARAMS).astype(np.float16).astype(np.float64)
    x, y = (float(v) for v in rng.uniform(-1, 1, 2).astype(np.float16))
    p_mem, g_mem = half_array(params), half_array(np.zeros(N_PARAMS))
    loss_mem = ShapedArray(TypedPtr.new_int32([0]), [1])
    inputs = ShapedArray(TypedPtr.new_float64([x, y]), [2])
    run_function(lowered, "learnGradient", 0, *network_args(p_mem, g_mem), loss_mem, 0, inputs, 0, 1)
    (want_loss,), want_grad = loss_and_grad(params, [[x, y]])
    got_grad = np.array(g_mem.data)
    assert np.abs(want_grad).max() > 0.1  # a sample that exercises the gradient
    np.testing.assert_allclose(got_grad, want_grad, rtol=0.02, atol=2e-3)
    got_loss = struct.unpack("<f", struct.pack("<i", loss_mem.data[0]))[0]
    assert got_loss == pytest.approx(want_loss, rel=0.02, abs=1e-3)


def test_thread_past_count_does_nothing(lowered):
    p_mem, g_mem = half_array(np.full(N_PARAMS, 0.25)), half_array(np.zeros(N_PARAMS))
    loss_mem = ShapedArray(TypedPtr.new_int32([0]), [1])
    inputs = ShapedArray(TypedPtr.new_float64([0.5, 0.5]), [2])
    run_function(lowered, "learnGradient", 1, *network_args(p_mem, g_mem), loss_mem, 0, inputs, 0, 1)
    assert g_mem.data == [0.0] * N_PARAMS and loss_mem.data == [0]


def test_adjust_parameters_steps_and_clears_the_gradient(lowered):
    p_mem, g_mem = half_array([1.0, 2.0, 3.0]), half_array([10.0, -20.0, 30.0])
    for tid in range(4):  # thread 3 is past count
        run_function(lowered, "adjustParameters", tid, p_mem, 0, g_mem, 0, 3)
    np.testing.assert_allclose(p_mem.data, [1.0 - 0.1, 2.0 + 0.2, 3.0 - 0.3], rtol=1e-3)
    assert g_mem.data == [0.0, 0.0, 0.0]


def test_training_on_opencl_reduces_the_loss():
    """A short training run (PoCL here): the largest loss over a fixed evaluation set, and the
    mean loss of the trained parameters against the float64 reference, fall at least 5x."""
    seed = 0
    lines: list[str] = []
    params, history = train(steps=1000, batch=64, every=250, seed=seed, log=lines.append)
    assert len(lines) == 5 and all("max loss" in line for line in lines)
    assert history[-1] < history[0] / 5, history

    test = np.random.default_rng(123).uniform(-1, 1, (300, 2))

    def mean_loss(p: np.ndarray) -> float:
        return float(np.mean(loss_and_grad(p, test)[0]))

    before = mean_loss(init_params(np.random.default_rng(seed)))
    assert mean_loss(params) < before / 5
