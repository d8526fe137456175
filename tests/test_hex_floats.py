"""Hexadecimal float literals (frontend/features/hex_floats.py): `0x1p-24`, `0x1.8p+3f`; their
values are the binary fractions they name, they differentiate like any constant, and a
malformed one is a located error."""

from __future__ import annotations

import pytest
from slang_helpers import central_difference, expect_error, run

SRC = """
float tiny() { return 0x1p-24; }
float twelve() { return 0x1.8p+3f; }
float three_quarters() { return 0X.Cp0; }
double big() { return 0x1.fffffep+127l; }
half quarter() { return 0x1p-2h; }
float mixed(float x) { return x * 0x1.8p1 + 0x10 + 0x1p4; }

[Differentiable] float f(float x) { return 0x1.4p1 * x * x - 0xAp-1 * x; }
float fwd_f(float x, float dx) { return fwd_diff(f)(diffPair(x, dx)).d; }
float bwd_f(float x, float dout)
{
    var dx = diffPair(x, 0.0);
    bwd_diff(f)(dx, dout);
    return dx.d;
}
"""


def f(x: float) -> float:
    return 2.5 * x * x - 5.0 * x


def test_hex_floats_are_the_binary_fractions_they_name():
    assert run(SRC, "tiny")[0] == 2.0**-24
    assert run(SRC, "twelve")[0] == 12.0
    assert run(SRC, "three_quarters")[0] == 0.75
    assert run(SRC, "big")[0] == float.fromhex("0x1.fffffep+127")
    assert run(SRC, "quarter")[0] == 0.25


def test_a_hex_int_stays_an_int_beside_hex_floats():
    assert run(SRC, "mixed", 2.0)[0] == pytest.approx(2.0 * 3.0 + 16 + 16.0)


@pytest.mark.parametrize("x", [0.4, -1.3, 2.0])
def test_derivatives_through_hex_float_constants_match_central_differences(x):
    fd = central_difference(f, [x], 0)
    assert run(SRC, "fwd_f", x, 1.0)[0] == pytest.approx(fd, rel=1e-6)
    assert run(SRC, "bwd_f", x, 1.0)[0] == pytest.approx(fd, rel=1e-6)
    assert run(SRC, "fwd_f", x, 0.6)[0] * -0.8 == pytest.approx(run(SRC, "bwd_f", x, -0.8)[0] * 0.6, rel=1e-9)


@pytest.mark.parametrize("src,col,words", [
    ("float g() { return 0x.p3; }", 20, "no hex digits"),
    ("float g() { return 0x1p3q; }", 20, "malformed number '0x1p3q'"),
    ("float g() { return 0x1p3u; }", 20, "malformed number '0x1p3u'"),
    ("float g() { return 0x1p3hf; }", 25, "unknown literal suffix 'hf'"),
])
def test_malformed_hex_floats_are_located(src, col, words):
    expect_error(src, "E0001", 1, col, words)
