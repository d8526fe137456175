"""Command encoders (diffc/slangpy/commands.py): calls appended with `append_to` run only when
the finished buffer is submitted, in the order they were recorded."""

from __future__ import annotations

import numpy as np
import pytest

import diffc.slangpy as spy

SRC = """
void axpy(inout float y, float a, float x) { y = a * x + y; }
void square(inout float y) { y = y * y; }
"""


def test_recorded_calls_run_in_order_at_submit():
    device = spy.create_device()
    with pytest.raises(ValueError, match="no submission"):
        device.wait_for_submit(1)
    m = spy.Module.load_from_source(device, "commands", SRC)
    y = spy.Tensor.from_numpy(device, np.array([1.0, 2.0, 3.0], np.float32))
    x = np.array([0.5, -1.0, 2.0], np.float32)
    enc = device.create_command_encoder()
    m.axpy.append_to(enc, y, 2.0, x)
    m.square.append_to(enc, y)
    m.axpy.append_to(enc, y, -1.0, x)
    assert list(y.to_numpy()) == [1.0, 2.0, 3.0]  # nothing ran yet
    buffer = enc.finish()
    with pytest.raises(RuntimeError, match="finished"):
        m.square.append_to(enc, y)
    done = device.submit_command_buffer(buffer)
    device.wait_for_submit(done)
    want = (2.0 * x + np.array([1.0, 2.0, 3.0], np.float32)) ** 2 - x
    assert y.to_numpy() == pytest.approx(want)
    with pytest.raises(ValueError, match="no submission"):
        device.wait_for_submit(done + 1)
