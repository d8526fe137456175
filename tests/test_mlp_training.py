"""examples/mlp/train.py's optimizers, progress bar and loss-curve PNG, against its float64 numpy
replica (examples/mlp/replica.py: the same initialization, data and optimizer), on OpenCL."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

MLP = Path(__file__).resolve().parent.parent / "examples" / "mlp"
sys.path.insert(0, str(MLP))
from model import Adam  # noqa: E402
from png_plot import COLORS, line_plot  # noqa: E402
from progress import ProgressBar  # noqa: E402
import reference  # noqa: E402
from reference import LEARNING_RATE, loss_and_grad, sample_grads  # noqa: E402
from replica import adam_update, replay  # noqa: E402
from train import init_params, train  # noqa: E402

sys.path.remove(str(MLP))

U = 2.0**-11  # half precision's unit roundoff


def read_png(path) -> np.ndarray:
    """Decodes an 8-bit RGB PNG with filter type 0 on every row (what png_plot writes), checking
    the signature and every chunk's CRC."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks = 8, {}
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        assert struct.unpack(">I", data[at + 8 + n:at + 12 + n])[0] == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks[kind] = chunks.get(kind, b"") + body
        at += 12 + n
    w, h, depth, color, *_ = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    assert (depth, color) == (8, 2) and b"IEND" in chunks
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + 3 * w)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, 3)


def test_png_plot_draws_each_series_in_its_color_on_a_log_scale(tmp_path):
    path = tmp_path / "plot.png"
    # y spans 1 .. 100: two decades, so 10 lies halfway up the plotting area.
    line_plot(path, [([0, 10], [10, 10], "orange"), ([0, 5, 10], [100, 1, 1], "blue")], width=200, height=120, margin=10)
    img = read_png(path)
    assert img.shape == (120, 200, 3)
    orange = np.all(img == COLORS["orange"], axis=2)
    blue = np.all(img == COLORS["blue"], axis=2)
    rows = np.nonzero(orange.any(axis=1))[0]
    middle = (10 + (120 - 1 - 10)) / 2
    assert abs(rows.mean() - middle) <= 1
    assert orange[:, 20:180].any(axis=0).mean() > 0.9  # across the plot, but where blue crosses it
    ys, xs = np.nonzero(blue)
    assert ys.min() <= 11 and ys.max() >= 120 - 12  # from 100 (the top) down to 1 (the bottom)
    with pytest.raises(ValueError, match="nothing to plot"):
        line_plot(path, [([0], [0.0], "blue")])


def test_progress_bar_redraws_one_line():
    out = io.StringIO()
    bar = ProgressBar(4, stream=out, width=8, interval=0.0)
    bar.update(2, "loss 1.5")
    assert "[####....] 2/4" in out.getvalue()
    assert "loss 1.5" in out.getvalue() and "\n" not in out.getvalue()
    bar.update(4)
    bar.close()
    assert out.getvalue().endswith("\n") and "[########] 4/4" in out.getvalue()


def _near_a_kink(p: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """The samples with a pre-activation within half precision's rounding of 0 (16u of the sum
    of its terms' sizes), where the half forward pass may take the other slope of the leaky ReLU
    than float64's."""
    w1, b1, w2, b2 = reference.unpack(p)
    x, y = xy[:, 0], xy[:, 1]
    inp = np.stack([x, y, x * x, y * y], axis=1)
    z1 = inp @ w1.T + b1
    h = np.where(z1 < 0, reference.LEAK * z1, z1)
    z2 = h @ w2.T + b2
    near1 = np.abs(z1) <= 16 * U * (np.abs(inp) @ np.abs(w1).T + np.abs(b1))
    near2 = np.abs(z2) <= 16 * U * (np.abs(h) @ np.abs(w2).T + np.abs(b2))
    return near1.any(axis=1) | near2.any(axis=1)


def _gradient_error(p: np.ndarray, xy: np.ndarray, monkeypatch) -> np.ndarray:
    """Per parameter, how far the half-precision batch gradient may be from float64's: the n
    additions of the accumulation round by about sqrt(n) u S as a random walk (S: the sum of the
    samples' |gradient|), of which 3x is allowed (bench/bench_mlp.py's step_tolerance), and each
    sample's own gradient, computed in half through two layers, by a few u of its size (8u). A
    sample near a kink (_near_a_kink) may count with either slope: its gradient with every
    slope 1 (the network made linear) is added whole, as is its own."""
    per_sample = np.abs(sample_grads(p, xy))
    err = (3 * np.sqrt(len(xy)) + 8) * U * per_sample.sum(axis=0)
    near = _near_a_kink(p, xy)
    if near.any():
        with monkeypatch.context() as m:
            m.setattr(reference, "LEAK", 1.0)
            linear = np.abs(sample_grads(p, xy[near]))
        err += linear.sum(axis=0) + per_sample[near].sum(axis=0)
    return err


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_every_step_is_the_float64_step_within_half_precision(optimizer, monkeypatch):
    """Each step of the half-precision run, from its own parameters (and moments), against the
    replica's float64 step from the same numbers on the same (half-rounded) inputs: within the
    step's change under a gradient off by the half-precision error, plus an ulp of the stored
    parameter. This bounds what the curves' agreement is made of, step by step."""
    seed, batch, steps, adam = 0, 64, 40, Adam()
    records = []
    train(steps, batch, steps, seed, log=lambda line: None, optimizer=optimizer, adam=adam,
          on_step=lambda t, xy, p, moments: records.append((xy, p, moments)))
    p = init_params(np.random.default_rng(seed)).astype(np.float64)
    first = second = np.zeros_like(p)
    worst = 0.0
    for t, (xy, p_new, moments) in enumerate(records, start=1):
        xy = xy.astype(np.float16).astype(np.float64)  # what the kernel reads
        g = loss_and_grad(p, xy)[1]
        dg = _gradient_error(p, xy, monkeypatch)

        def step(grad):
            if optimizer == "sgd":
                return p - LEARNING_RATE * grad
            return adam_update(p, first, second, grad, t, adam)[0]

        want = step(g)
        spread = np.maximum(np.abs(step(g + dg) - want), np.abs(step(g - dg) - want))
        tolerance = 2 * spread + np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
        err = np.abs(p_new.astype(np.float64) - want)
        assert (err <= tolerance).all(), (t, int(np.argmax(err - tolerance)), float((err / tolerance).max()))
        worst = max(worst, float((err / tolerance).max()))
        p = p_new.astype(np.float64)
        if optimizer == "adam":
            first, second = (m.astype(np.float64) for m in moments)
    assert worst > 0.05  # the tolerance is not so loose that nothing comes near it


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_loss_curve_tracks_the_float64_replica(optimizer):
    """The largest evaluation loss every 20 steps of a 200-step run against the replica's. Half
    precision starts it at the same value to 0.01%; the steps' roundings (bounded step by step
    above) then move the parameters apart slowly, and the curves stay within 2% over this run.
    Over longer runs they can separate for a while at a plateau, which one run leaves a few steps
    earlier than the other (SGD, seed 2: 23% apart at step 20, 1% again at step 60): the training
    amplifies small differences there, whatever their source."""
    seed, batch, steps, every = 0, 64, 200, 20
    _, got = train(steps, batch, every, seed, log=lambda line: None, optimizer=optimizer)
    _, want = replay(steps, batch, every, seed, optimizer)
    got, want = np.array(got), np.array(want)
    assert abs(got[0] - want[0]) <= 1e-4 * want[0]
    assert want[-1] < want[0] / 2  # the run trains
    np.testing.assert_allclose(got, want, rtol=0.02)


def test_train_cli_writes_the_plot_with_adam(tmp_path):
    out = tmp_path / "loss.png"
    run = subprocess.run([sys.executable, str(MLP / "train.py"), "--steps", "20", "--every", "5", "--optimizer", "adam",
                          "--plot", str(out), "--no-progress"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert f"wrote {out}" in run.stdout and "float64 numpy replica" in run.stdout
    img = read_png(out)
    for color in ("blue", "orange"):
        assert np.all(img == COLORS[color], axis=2).any()
    assert "\r" not in run.stderr  # no progress bar when asked for none
