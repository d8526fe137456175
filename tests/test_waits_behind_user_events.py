"""A dispatch enqueued behind an OpenCL user event that another Python thread completes (how
runtime/cuda_shared.py orders diffc's queue after torch's stream) must not wait for the queue
while holding the GIL: the thread could then never complete the event. Each case runs in a
subprocess under a timeout, since the failure is a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent('''
    import threading, time
    import numpy as np
    import pyopencl as cl
    import os
    import diffc
    checked = os.environ["DIFFC_CHECK"] == "1"
    from diffc.runtime.device import device
    from diffc.runtime.module import load_module_from_string

    m = load_module_from_string("""
    [shader("compute")]
    [numthreads(64, 1, 1)]
    void twice(uint3 tid : SV_DispatchThreadID, RWStructuredBuffer<float> a, int n)
    {
        for (int i = 0; i < n; i++)
            a[tid.x * n + i] = a[tid.x * n + i] * 2.0;
    }
    """, "twice.slang")
    a = diffc.Tensor.from_numpy(np.arange(256, dtype=np.float32))
    m.twice.dispatch(thread_count=64, a=a, n=4)  # builds (nothing pending yet)
    diffc.synchronize()
    dev = device()
    gate = cl.UserEvent(dev.context)
    cl.enqueue_barrier(dev.queue, wait_for=[gate])
    opened = []

    def open_gate():  # the part of cuda_shared's waiter thread: needs the GIL to complete the event
        time.sleep(0.3)
        opened.append(time.perf_counter())
        gate.set_status(cl.command_execution_status.COMPLETE)

    threading.Thread(target=open_gate, daemon=True).start()
    m.twice.dispatch(thread_count=64, a=a, n=4)  # queued behind the gate: must return at once
    queued = time.perf_counter()
    diffc.synchronize()
    if not checked:  # (the sanitizer reads each launch's status at once: it waits, releasing the GIL)
        assert not opened or queued < opened[0], "the dispatch waited for the gate"
    assert np.array_equal(a.numpy(), 4 * np.arange(256, dtype=np.float32)), a.numpy()[:8]
    print("OK")
''')


@pytest.mark.parametrize("check", ["0", "1"], ids=["default", "sanitizer"])
def test_dispatch_behind_a_user_event_returns(tmp_path, check):
    env = dict(os.environ, DIFFC_CHECK=check, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               DIFFC_CACHE_DIR=str(tmp_path))
    try:
        run = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired:
        pytest.fail("the dispatch behind a user event hung (a wait holding the GIL)")
    assert run.returncode == 0 and run.stdout.strip().endswith("OK"), run.stdout + run.stderr
