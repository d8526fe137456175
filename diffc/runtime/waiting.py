"""Waits for the device that Ctrl-C can interrupt.

pyopencl's `Event.wait()`, `Queue.finish()` and blocking copies wait inside the OpenCL library,
where Python never sees a signal: a kernel that runs for minutes could only be killed. These
wait by polling the event's status instead, first without pausing (a short kernel costs one
status query more), then with pauses of up to a millisecond, so a KeyboardInterrupt is raised
between two polls. The kernel itself cannot be stopped: it runs on until it ends or the process
exits (`diffc` then exits at once; see cli.py)."""

from __future__ import annotations

import time

import numpy as np

# ZEROING: a non-blocking copy from host memory returns a pyopencl event that, when dropped
# before the copy ran, waits for it while holding the GIL. Behind a wait on torch's stream (an
# OpenCL user event that a Python thread completes: runtime/cuda_shared.py) that wait never ends,
# since the thread cannot take the GIL. So status buffers are zeroed by a fill (no host memory,
# no such event), and the events of host copies are held until waited for here (GIL released).
ZERO = np.zeros(1, np.int32)  # a fill's pattern

SPIN = 2e-4  # seconds of polling without a pause
PAUSE = 1e-3  # the longest pause between polls


def wait(event) -> None:
    """Returns once `event` (a pyopencl Event) has completed, or raises its error as
    Event.wait does."""
    import pyopencl as cl

    status = cl.command_execution_status
    start = time.perf_counter()
    pause = 0.0
    while event.command_execution_status > status.COMPLETE:
        if time.perf_counter() - start > SPIN:
            time.sleep(pause)
            pause = min(PAUSE, pause * 2 or 5e-5)
    if event.command_execution_status < 0:
        event.wait()  # an error status: OpenCL's own wait raises it


def finish(queue) -> None:
    """Queue.finish(), interruptibly: waits for a marker after everything queued."""
    import pyopencl as cl

    wait(cl.enqueue_marker(queue))


def copy(queue, dst, src, **kwargs) -> None:
    """A blocking enqueue_copy, interruptibly."""
    import pyopencl as cl

    wait(cl.enqueue_copy(queue, dst, src, is_blocking=False, **kwargs))
