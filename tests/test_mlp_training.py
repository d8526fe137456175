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
from png_plot import COLORS, LINE, TEXT, draw_text, line_plot, text_width  # noqa: E402
from progress import ProgressBar  # noqa: E402
import mlp_rounding  # noqa: E402
from mlp_rounding import kernel_sample_gradients  # noqa: E402
from reference import LEARNING_RATE, loss_and_grad  # noqa: E402
from replica import adam_update, replay  # noqa: E402
from rounding import Rounded, accumulated_half_adds, half_accumulation_error  # noqa: E402
from train import init_params, start, train  # noqa: E402

sys.path.remove(str(MLP))


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
    left, top, right, bottom = line_plot(path, [([0, 10], [10, 10], "orange"), ([0, 5, 10], [100, 1, 1], "blue")],
                                         width=300, height=180, margin=10)
    img = read_png(path)
    assert img.shape == (180, 300, 3)
    assert 10 < left < right < 300 - 10 and 10 < top < bottom < 180 - 10
    orange = np.all(img == COLORS["orange"], axis=2)
    blue = np.all(img == COLORS["blue"], axis=2)
    rows = np.nonzero(orange.any(axis=1))[0]
    assert abs(rows.mean() - (top + bottom) / 2) <= 1
    assert orange[:, left + 10:right - 10].any(axis=0).mean() > 0.9  # across the plot, but where blue crosses it
    ys, xs = np.nonzero(blue)
    assert ys.min() <= top + 1 and ys.max() >= bottom - 2  # from 100 (the top) down to 1 (the bottom)
    assert xs.min() <= left + 2 and xs.max() >= right - 2
    with pytest.raises(ValueError, match="nothing to plot"):
        line_plot(path, [([0], [0.0], "blue")])


def test_png_plot_labels_its_axes_and_its_series(tmp_path):
    path = tmp_path / "plot.png"
    series = [([0, 50, 100], [30, 3, 0.5], "orange", "float64 replica"), ([0, 50, 100], [31, 3.1, 0.52], "blue", "diffc")]
    left, top, right, bottom = line_plot(path, series, xlabel="training steps", ylabel="largest loss")
    img = read_png(path)
    text = np.all(img == TEXT, axis=2)
    assert text[:, :left - 1].any()  # the decades' labels, left of the frame
    assert text[bottom + 2:, left:right].sum() > text[bottom + 2:bottom + 2 + 16, left:right].sum() > 0  # ticks, label
    assert text[:top - 1, :].any()  # the y axis's label above the plot
    # the legend, top right: a sample line of each color, each beside its label
    box = img[top:top + 60, (left + right) // 2:right]
    for color in ("orange", "blue"):
        ys, xs = np.nonzero(np.all(box == COLORS[color], axis=2))
        row = np.median(ys)
        assert np.all(box[int(row) - 3:int(row) + 4, xs.max() + 1:] == TEXT, axis=2).any()
    plain = tmp_path / "plain.png"
    l2, t2, r2, b2 = line_plot(plain, [(xs_, ys_, c) for xs_, ys_, c, _ in series])
    inside = np.all(read_png(plain)[t2 + 1:b2, l2 + 1:r2] == TEXT, axis=2)
    assert not inside.any()  # no labels given: no legend


def test_draw_text_stays_in_its_box_and_tells_letters_apart():
    def drawn(s):
        img = np.zeros((40, 200, 3), np.uint8)
        draw_text(img, 3, 4, s, color=(255, 255, 255))
        return img[:, :, 0] > 0

    for s in ("steps", "1e-3", "loss (log)", "gypq"):
        ys, xs = np.nonzero(drawn(s))
        assert xs.min() >= 3 and xs.max() < 3 + text_width(s) and ys.min() >= 4 and ys.max() < 4 + LINE
    assert len({drawn(c).tobytes() for c in "0123456789abcdefghijklmnopqrstuvwxyz"}) == 36
    assert not drawn("\u00e9").any()  # a sign the font lacks: a space


def test_progress_bar_redraws_one_line():
    out = io.StringIO()
    bar = ProgressBar(4, stream=out, width=8, interval=0.0)
    bar.update(2, "loss 1.5")
    assert "[####....] 2/4" in out.getvalue()
    assert "loss 1.5" in out.getvalue() and "\n" not in out.getvalue()
    bar.update(4)
    bar.close()
    assert out.getvalue().endswith("\n") and "[########] 4/4" in out.getvalue()


def _gradient_error(p: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Per parameter, how far the batch gradient train() stores (half) may be from the float64
    model's: each sample's gradient as the kernel computes it in half, bounded op by op
    (mlp_rounding: samples near a leaky ReLU's kink count with either slope), then the
    accumulation of those per-sample values (rounding.half_accumulation_error, with as many
    half adds as the non-deterministic accumulated kernel makes, train()'s default)."""
    import diffc

    g = mlp_rounding.sample_gradients(p, xy)
    try:
        adds = accumulated_half_adds(diffc.load_module(MLP / "mlp.slang"), "learnGradient", len(xy), False)
    except LookupError:
        pytest.skip("accumulate-gradients is off here: the bound counts its adds")
    return g.e.sum(axis=0) + half_accumulation_error(np.abs(g.v) + g.e, adds)


def _sgd_step_error(p: np.ndarray, g: np.ndarray, dg: np.ndarray) -> np.ndarray:
    """adjustParameters in half, p - grad * 0.01h, with grad within dg of g, against the model's
    p - 0.01 g: the product's and the difference's roundings and the constant's difference
    (plus a half subnormal's spacing, where the 2^-11 relative rounding does not hold)."""
    step = Rounded(p) - Rounded(g, dg) * Rounded.constant(float(np.float16(LEARNING_RATE)), LEARNING_RATE)
    return step.e + 2.0**-24


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_every_step_is_the_float64_step_within_half_precision(optimizer):
    """Each step of the half-precision run, from its own parameters (and moments), against the
    replica's float64 step from the same numbers on the same (half-rounded) inputs: within the
    step's change under a gradient off by the half-precision error, plus an ulp of the stored
    parameter. The gradient's bound is derived op by op (_gradient_error), so the steps do
    not compound: each starts from the run's own parameters."""
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
        dg = _gradient_error(p, xy)
        if optimizer == "sgd":
            want = p - LEARNING_RATE * g
            tolerance = _sgd_step_error(p, g, dg)
        else:
            # adam.slang's float32 update from a gradient within dg: the spread of the float64
            # update over that range, twice for its float32 arithmetic, and the parameter's
            # rounding to half
            def step(grad):
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


@pytest.mark.parametrize("deterministic", [False, True])
def test_each_step_adds_the_kernels_own_sample_gradients(deterministic):
    """Each SGD step of a short run against p - 0.01 * (the sum of the kernel's own per-sample
    half gradients at the run's parameters, mlp_rounding.kernel_sample_gradients): only the
    accumulation and the update round, so the bound is tight (2^-11 of the samples' gradient
    sizes per half add, float32 sums below that), where the float64 comparison above must
    allow for half precision's per-sample error (a few percent): a gradient off by 1% (one
    parameter's or all of them) fails here."""
    import diffc

    seed, batch, steps = 0, 64, 8
    records = []
    train(steps, batch, steps, seed, log=lambda line: None, deterministic=deterministic,
          on_step=lambda t, xy, p, moments: records.append((xy, p)))
    try:
        adds = accumulated_half_adds(diffc.load_module(MLP / "mlp.slang"), "learnGradient", batch, deterministic)
    except LookupError:
        pytest.skip("accumulate-gradients is off here: the bound counts its adds")
    p = init_params(np.random.default_rng(seed)).astype(np.float64)
    for t, (xy, p_new) in enumerate(records, start=1):
        samples = kernel_sample_gradients(p, xy)
        g = samples.sum(axis=0)
        want = p - LEARNING_RATE * g
        tolerance = _sgd_step_error(p, g, half_accumulation_error(samples, adds))
        err = np.abs(p_new.astype(np.float64) - want)
        assert (err <= tolerance).all(), (t, int(np.argmax(err - tolerance)), float((err / tolerance).max()))
        p = p_new.astype(np.float64)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_loss_curve_tracks_the_float64_replica(optimizer):
    """The largest evaluation loss every 20 steps of a 200-step run: each point against the
    float64 model's loss of the same parameters (the run's own at that step), within the bound
    of the half forward pass (mlp_rounding.forward: the largest of the samples' bounds bounds
    the difference of the largest losses). The replica's own curve (float64 from the start)
    is not compared point by point: the runs' parameters drift apart through the training's
    own dynamics (at a plateau one run leaves a few steps earlier: SGD, seed 2, 23% apart at
    step 20, 1% again at step 60), which no rounding argument bounds; each step's drift is
    bounded by test_every_step_is_the_float64_step_within_half_precision. Both runs train."""
    seed, batch, steps, every = 0, 64, 200, 20
    at_eval = {0: init_params(np.random.default_rng(seed))}
    _, got = train(steps, batch, every, seed, log=lambda line: None, optimizer=optimizer,
                   on_step=lambda t, xy, p, moments: at_eval.__setitem__(t, p) if t % every == 0 else None)
    _, want = replay(steps, batch, every, seed, optimizer)
    eval_xy = start(seed)[1].astype(np.float32).astype(np.float16).astype(np.float64)  # what the kernel reads
    for k, loss in enumerate(got):
        model = mlp_rounding.forward(at_eval[k * every].astype(np.float64), eval_xy)[0]
        assert np.allclose(model.v, loss_and_grad(at_eval[k * every], eval_xy)[0], rtol=1e-12)
        assert abs(loss - model.v.max()) <= model.e.max(), (k, loss, model.v.max(), model.e.max())
    assert abs(got[0] - want[0]) <= mlp_rounding.forward(at_eval[0].astype(np.float64), eval_xy)[0].e.max()
    assert want[-1] < want[0] / 2 and got[-1] < got[0] / 2  # both runs train


def test_train_cli_writes_the_plot_with_adam(tmp_path):
    out = tmp_path / "loss.png"
    run = subprocess.run([sys.executable, str(MLP / "train.py"), "--steps", "20", "--every", "5", "--optimizer", "adam",
                          "--plot", str(out), "--no-progress"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert f"wrote {out}" in run.stdout and "float64 numpy replica" in run.stdout
    img = read_png(out)
    for color in ("blue", "orange"):
        assert np.all(img == COLORS[color], axis=2).any()
    assert np.all(img == TEXT, axis=2).sum() > 500  # the axes' labels and the legend
    assert "\r" not in run.stderr  # no progress bar when asked for none
