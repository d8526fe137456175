"""`NativeString` parameters (frontend/features/native_strings.py): string literals passed to a
function and printed with %s, as a custom backward derivative that reports named gradients does.
The printed gradients and the derivatives of the tagged function are checked against their
closed forms and float64 central differences in both modes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from slang_harness import Compiled
from slang_helpers import expect_error

TAGGED = """
float tag(NativeString name, float x) { return x; }
[BackwardDerivativeOf(tag)]
void tagBwd(NativeString name, inout DifferentialPair<float> x, float dOut)
{
    printf("d/d%s = %.3f\\n", name, dOut);
    x = diffPair(x.p, dOut);
}

[Differentiable]
float f(float x, float y)
{
    NativeString second = "y^3";
    return 3.0 * tag("x^2", x * x) + tag(second, y * y * y) * 2.0;
}
"""


def test_tagged_gradients_print_their_names(tmp_path):
    src = tmp_path / "tagged.slang"
    src.write_text(TAGGED + """
void main()
{
    var x = diffPair(1.5, 0.0);
    var y = diffPair(-2.0, 0.0);
    bwd_diff(f)(x, y, 1.0);
    printf("%.3f %.3f\\n", x.d, y.d);
}
""")
    r = subprocess.run([sys.executable, "-m", "diffc.cli", "run", str(src)], capture_output=True, text=True,
                       env={**os.environ, "DIFFC_DEVICE": "cpu"}, timeout=300)
    assert r.returncode == 0, r.stderr
    # d f / d(x^2) = 3, d f / d(y^3) = 2; df/dx = 6x, df/dy = 6y^2
    assert sorted(r.stdout.splitlines()) == sorted(["d/dx^2 = 3.000", "d/dy^3 = 2.000", "9.000 24.000"])


def test_tagged_function_derivatives():
    c = Compiled(TAGGED, "f")
    assert c.primal([1.5, -2.0])[0] == pytest.approx(3 * 2.25 - 16)
    c.check_derivatives([1.5, -2.0])


def test_a_native_string_prints_with_percent_s():
    expect_error('void g(NativeString s) { printf("%d\\n", s); }', "E0003", 1, 41, "printed with %s")
