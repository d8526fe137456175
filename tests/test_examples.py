"""The seeds' examples (examples/) end to end through `diffc run` on PoCL (DIFFC_DEVICE=cpu), and
examples/poly.py as a script."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"


def _env() -> dict:
    return {**os.environ, "DIFFC_DEVICE": "cpu"}


@pytest.fixture
def run(diffc_cli):
    """`diffc run EXAMPLE --device cpu ...` (conftest: in this process); what it printed, the
    device's printf included."""

    def run_example(name: str, *extra: str) -> str:
        r = diffc_cli("run", str(EX / name), "--device", "cpu", *extra)
        assert r.returncode == 0, r.stderr
        return r.stdout

    return run_example


def numbers(line: str) -> list[float]:
    return [float(t.strip(",")) for t in line.replace(":", " ").split() if _is_number(t.strip(","))]


def _is_number(t: str) -> bool:
    try:
        float(t)
        return True
    except ValueError:
        return False


def test_square_forward(run):
    out = run("square_fwd.slang").splitlines()
    assert out == ["Result: 25.000000", "dResult: 6.000000"]


def test_square_backward(run):
    assert run("square_bwd.slang").splitlines() == ["dL/dx: 6.000000, dL/dy: 8.000000"]


def test_square_backward_in_sanitizer_mode(run):
    # the sanitizer's status buffer is a parameter of main(), which has none of its own
    assert run("square_bwd.slang", "--check").splitlines() == ["dL/dx: 6.000000, dL/dy: 8.000000"]


def test_myfunc_exp_forward(run):
    lines = run("myfunc_exp.slang").splitlines()
    assert lines[0].startswith("dF wrt x: ") and lines[1].startswith("dF wrt x and y: ")
    dx, dxy = numbers(lines[0])[-1], numbers(lines[1])[-1]
    assert dx == pytest.approx(6 * math.exp(19), rel=1e-5)
    assert dxy == pytest.approx(8 * math.exp(19), rel=1e-5)
    assert dx == pytest.approx(1.0709e9, rel=1e-4) and dxy == pytest.approx(1.4279e9, rel=1e-4)


def test_myfunc_backward(run):
    assert run("myfunc_bwd.slang").splitlines() == [
        "dF wrt x computed using backward differentiation: 24.000000",
        "dF wrt y computed using backward differentiation: 10.000000",
    ]


def test_point_struct(run):
    assert run("point.slang").splitlines() == ["square: 25.000000, d/dx: 6.000000", "grad: 6.000000 8.000000"]


def test_custom_derivatives(run):
    assert run("custom_derivatives.slang").splitlines() == ["fwd: 25.000000 6.000000", "bwd: 6.000000 8.000000"]


@pytest.mark.parametrize("groups", ["1", "3,1,1"])
def test_grad_buffer_atomics(run, groups):
    out = run("grad_buffer.slang", "--groups", groups).splitlines()
    assert out[0] == "gradBuffer: float"
    got = np.array([float(v) for v in out[1:]])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    threads = 16 * int(groups.split(",")[0])
    hits = np.bincount(np.arange(threads) % 4, minlength=4)
    np.testing.assert_allclose(got, 2 * w * hits)


def test_poly_python_api():
    p = subprocess.run([sys.executable, str(EX / "poly.py")], capture_output=True, text=True, env=_env(), timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines == [
        "result: 9 23 41 63",
        "x.grad: 12 16 20 24",
        "x.grad after a second bwds: 24 32 40 48",
    ]
