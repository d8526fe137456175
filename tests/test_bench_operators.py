"""bench/bench_operators.py runs (tiny, one run) and what it times is right: both kernels' values
and gradients against the hand-derived ones."""

from __future__ import annotations

import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import bench_operators  # noqa: E402

sys.path.remove(str(BENCH))


def test_bench_operators_runs_and_checks_its_results(capsys):
    bench_operators.main(["--log2", "8", "--runs", "1"])
    out = capsys.readouterr().out
    errors = re.search(r"max relative error \(values and gradients\): plain (\S+), operators (\S+)", out)
    assert errors is not None, out
    assert float(errors.group(1)) < 1e-5 and float(errors.group(2)) < 1e-5
    assert "operators / plain device time: call" in out and "front end, 60 functions" in out
