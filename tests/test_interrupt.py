"""Ctrl-C interrupts `diffc run` while it waits for a kernel that does not end: a clean message,
the shell's exit status for SIGINT, no traceback (runtime/waiting.py polls instead of blocking
inside OpenCL, where Python never sees the signal)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SPIN = """//TEST_INPUT: ubuffer(data=[0 0], stride=4):out,name=O
RWStructuredBuffer<float> O;
[numthreads(1, 1, 1)]
void computeMain(uint3 t : SV_DispatchThreadID) {
    float x = 1.0;
    uint i = 0;
    while (x > 0.0) { x = x * 1.0000001 + 1e-9; i++; if (i == 0xFFFFFFFF) { O[1] = x; } }
    O[0] = x;
}
"""


def test_ctrl_c_while_a_kernel_runs(tmp_path):
    path = tmp_path / "spin.slang"
    path.write_text(SPIN)
    p = subprocess.Popen([sys.executable, "-m", "diffc.cli", "run", str(path)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(15)  # (building takes seconds; an interrupt before the launch must end it as cleanly)
    assert p.poll() is None, p.communicate()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted (Ctrl-C)" in err and "Traceback" not in err
