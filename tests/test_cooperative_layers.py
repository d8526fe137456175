"""cooperative-layers on PoCL: weight and bias gradients summed over each work-group's samples
(passes/cooperative_layers.py), against float64 models, and the per-work-item code it keeps
where control flow may diverge giving the same numbers.

The CoopVec network's values are small integers and binary fractions (weights in {-1, 0, 1},
leaky slope 1/2, 3/4 on a tie), so every float32 operation of either lowering is exact (the
test checks that the magnitudes stay below 2^24 at a resolution of 1/64): the derived rounding
bound is 0 and the gradients must equal the float64 model's. The tutorial's half-precision loop form is held to mlp_rounding's bound."""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import numpy as np
import pytest

import diffc
from diffc.runtime.module import load_module_from_string

ROOT = Path(__file__).resolve().parents[1]
LAYERS = [(4, 8), (8, 8), (8, 4)]

BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))
import coopvec_network  # noqa: E402  (the network bench_coopvec.py times)

sys.path.remove(str(BENCH))

SLOPE = 0.5
# the weights in RowMajor (packed, stride 0) for the product and the outer product
NETWORK = coopvec_network.network_source(LAYERS, SLOPE, group=16, layout="RowMajor", condition="CONDITION")


def _layout():
    return coopvec_network.offsets(LAYERS)


def _model_gradient(p: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """The summed loss's gradient in float64 (exact here: integers and halves)."""
    return coopvec_network.loss_gradient(p, LAYERS, samples[:, :4].T, samples[:, 4:].T, SLOPE)


def _problem(n: int, seed: int = 3):
    rng = np.random.default_rng(seed)
    _, total = _layout()
    p = rng.choice([-1.0, 0.0, 0.0, 1.0], total)
    samples = rng.integers(-1, 2, (n, 8)).astype(np.float64)
    return p, samples


def _gradient(source: str, p: np.ndarray, samples: np.ndarray) -> np.ndarray:
    m = load_module_from_string(source, "coop_network.slang")
    offsets, _ = _layout()
    params = diffc.Tensor.from_numpy(p.astype(np.float32))
    grads = diffc.Tensor.from_numpy(np.zeros(len(p), np.float32))
    net = {f"l{k}": dict(w=params.at(w), dw=grads.at(w), b=params.at(b), db=grads.at(b))
           for k, (w, b) in enumerate(offsets)}
    data = diffc.Tensor.from_numpy(samples.astype(np.float32).ravel())
    m.learnGradient.dispatch(thread_count=len(samples), net=net, samples=data, count=len(samples))
    return grads.to_numpy().astype(np.float64)


def _report(source: str, tmp_path: Path, monkeypatch) -> str:
    from diffc.cli import lowered

    path = tmp_path / "coop_network.slang"
    path.write_text(source)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        lowered(str(path), "learnGradient", report=True)
    return out.getvalue()


@pytest.mark.parametrize("cooperative,matvec", [("1", "0"), ("1", "1"), ("0", "0")])
def test_coopvec_gradients_equal_the_float64_model(cooperative, matvec, monkeypatch):
    """40 samples in groups of 16 (the last group partly inactive): the weight and bias
    gradients of all three layers equal the exact model's, cooperative (with and without the
    matrix-vector products as group tiles) and per work-item."""
    monkeypatch.setenv("DIFFC_COOPERATIVE", cooperative)
    monkeypatch.setenv("DIFFC_COOP_MATVEC", matvec)
    p, samples = _problem(40)
    want = _model_gradient(p, samples)
    assert 100 < np.abs(want).max() < 2.0**18  # (not trivial, and exact in float32)
    got = _gradient(NETWORK.replace("CONDITION", ""), p, samples)
    np.testing.assert_array_equal(got, want)


def test_report_names_where_the_lowering_applied(tmp_path, monkeypatch):
    text = _report(NETWORK.replace("CONDITION", ""), tmp_path, monkeypatch)
    lines = [x for x in text.splitlines() if "cooperative-layers @learnGradient" in x]
    assert len([x for x in lines if ": cooperative at " in x and "outer product of" in x]) == 3, text
    assert len([x for x in lines if ": cooperative at " in x and "sum of" in x]) == 3, text
    assert all("coop_network.slang:" in x for x in lines)
    assert "outer product of 8 x 8 summed over the group's 16 samples" in text
    assert "matrix-vector product" not in text  # (off by default)
    monkeypatch.setenv("DIFFC_COOP_MATVEC", "1")
    text = _report(NETWORK.replace("CONDITION", ""), tmp_path, monkeypatch)
    # three forward products, recomputed in the backward sweep, and two transposed ones
    assert text.count(": cooperative at") == 6 + 9 + 2, text


def test_diverging_control_flow_keeps_per_work_item_code(tmp_path, monkeypatch):
    """Only even work-items run the backward pass: the outer products are not reached by every
    work-item, so they stay per work-item (the report says why), and the gradient is the even
    samples' exactly."""
    source = NETWORK.replace("CONDITION", "if (tid.x % 2 == 0)")
    text = _report(source, tmp_path, monkeypatch)
    assert "per work-item at" in text and "not every work-item of the group may take" in text, text
    assert ": cooperative at" not in text
    p, samples = _problem(40, seed=5)
    got = _gradient(source, p, samples)
    np.testing.assert_array_equal(got, _model_gradient(p, samples[::2]))


def test_tutorial_loop_form_is_lowered_cooperatively_within_half_precision(tmp_path, monkeypatch):
    """examples/mlp/mlp.slang with accumulate-gradients off: its `matrix[i * N + j] += a[i] *
    b[j]` loops and bias loops become cooperative (the report says so), and the half gradient of
    300 samples (groups of 256, the second partly inactive) is the float64 model's within
    mlp_rounding's per-sample bound and the accumulation of two half adds per element (one per
    group)."""
    monkeypatch.setenv("DIFFC_ACCUMULATE", "0")
    sys.path.insert(0, str(ROOT / "examples" / "mlp"))
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import mlp_rounding
        from reference import loss_and_grad
        from rounding import half_accumulation_error
        from train import layout, max_loss, network_of
        from diffc.cli import lowered

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            lowered(str(ROOT / "examples" / "mlp" / "mlp.slang"), "learnGradient", report=True)
        text = out.getvalue()
        assert text.count(": cooperative at") == 4, text  # two outer products, two bias loops
        rng = np.random.default_rng(11)
        _, total = layout()
        p = (rng.normal(0, 0.5, total)).astype(np.float16)
        xy = rng.uniform(-1, 1, (300, 2)).astype(np.float16).astype(np.float64)
        m = diffc.load_module(ROOT / "examples" / "mlp" / "mlp.slang")
        params, grads = diffc.Tensor.from_numpy(p), diffc.Tensor.zeros(total, np.float16)
        max_loss(m, network_of(params, grads), xy)
        got = grads.to_numpy().astype(np.float64)
        want = loss_and_grad(p.astype(np.float64), xy)[1]
        g = mlp_rounding.sample_gradients(p.astype(np.float64), xy)
        bound = g.e.sum(axis=0) + half_accumulation_error(np.abs(g.v) + g.e, adds=2)
        err = np.abs(got - want)
        assert (err <= bound).all(), f"worst {np.max(err - bound):.3g} over the bound"
        assert np.abs(want).max() > 1
    finally:
        sys.path.remove(str(ROOT / "examples" / "mlp"))
        sys.path.remove(str(ROOT / "tests"))
