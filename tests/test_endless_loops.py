"""No input makes derivative code hang: a loop that can never end is refused where Slang refuses
it (the function never returns), and a `[MaxIters(N)]` loop that runs on at run time is stopped by
derivative code after N + 1 iterations and reported (E0010), its gradients NaN."""

from __future__ import annotations

import os
import subprocess
import sys

from slang_helpers import expect_error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_constant_condition_without_an_exit_is_refused():
    expect_error("[Differentiable] float f(float y) { float t = y; [MaxIters(3)] do { t = t * 0.5; } while (1); "
                 "return t; }", "E0007", 1, 50, "never ends")
    expect_error("[Differentiable] float f(float y) { [MaxIters(3)] for (;;) { y = y * 0.5; } return y; }",
                 "E0007", 1, 37, "never ends")


def test_constant_condition_with_a_break_is_fine():
    from diffc.frontend import compile_slang

    compile_slang("[Differentiable] float f(float y) { [MaxIters(3)] while (true) { y = y * 0.5; if (y < 0.1) "
                  "break; } return y; }", "ok.slang")


RUNS_ON = """//TEST_INPUT: ubuffer(data=[0 0], stride=4):out,name=O
RWStructuredBuffer<float> O;
[Differentiable] float f(float y) { float t = y; [MaxIters(3)] while (t > -1.0) { t = t * 0.5; } return t; }
[numthreads(1, 1, 1)]
void computeMain(uint3 i : SV_DispatchThreadID) { var p = diffPair(2.0); bwd_diff(f)(p, 1.0); O[0] = p.d; }
"""


def test_loop_that_runs_on_is_stopped_in_derivative_code(tmp_path):
    path = tmp_path / "runs_on.slang"
    path.write_text(RUNS_ON)
    p = subprocess.run([sys.executable, "-m", "diffc.cli", "run", str(path)], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "runs_on.slang:3:50: error[E0010]" in p.stderr
    assert "did not end within its [MaxIters(3)]" in p.stderr and "stopped it after 4 iterations" in p.stderr
