"""bench/bench_float3.py runs (tiny, one run) and what it times is right: it checks the call
against numpy and the bwds gradient by hand, and prints both errors."""

from __future__ import annotations

import re
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import bench_float3  # noqa: E402

sys.path.remove(str(BENCH))


def test_bench_float3_runs_and_checks_its_results(capsys):
    bench_float3.main(["--log2", "8", "--runs", "1"])
    out = capsys.readouterr().out
    errors = re.search(r"max \|call - numpy\| = (\S+); max \|bwds grad - 2.5\| = (\S+)", out)
    assert errors is not None, out
    assert float(errors.group(1)) < 1e-6 and float(errors.group(2)) < 1e-6
    assert "call bandwidth / copy bandwidth" in out
