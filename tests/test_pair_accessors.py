"""`DifferentialPair.getPrimal()` / `getDifferential()` (frontend/features/pair_accessors.py): the
pair's `p` and `d`, in plain code and in differentiated code."""

from __future__ import annotations

import math

import pytest
from slang_helpers import expect_error, run

SRC = """
[Differentiable] float f(float x) { return sin(x) * x; }
float tangent(float x, float dx) { var r = fwd_diff(f)(diffPair(x, dx)); return r.getDifferential() + 0.0 * r.getPrimal(); }
float value(float x) { var r = fwd_diff(f)(diffPair(x, 1.0)); return r.getPrimal(); }
float gradient(float x) { var p = diffPair(x); bwd_diff(f)(p, 1.0); return p.getDifferential(); }
"""


@pytest.mark.parametrize("x", [0.3, -1.2])
def test_accessors_are_the_pairs_parts(x):
    want = math.cos(x) * x + math.sin(x)
    assert run(SRC, "tangent", x, 2.0)[0] == pytest.approx(2.0 * want)
    assert run(SRC, "value", x)[0] == pytest.approx(math.sin(x) * x)
    assert run(SRC, "gradient", x)[0] == pytest.approx(want)


def test_accessor_takes_no_arguments():
    expect_error("float h(float x) { var p = diffPair(x); return p.getPrimal(1); }", "E0005", 1, 48, "getPrimal")
