"""Status reads that do not stall the host after every launch.

A dispatch with checks (bounds, loop overrun, the sanitizer) enqueues a non-blocking read of its
status buffers right behind the kernel, into host memory of its own, and leaves it here. The
reads are looked at, and the first error raised, at the next synchronizing point: any read of a
Tensor's values on the host (`to_numpy`, and the torch bridge, which reads through it) and
`diffc.synchronize()`. So no value a checked launch wrote reaches the host before its error
does. A repr shows that an error is pending instead of the values, and leaves it pending.
Launches queue in order, so a read is complete once a later read is.

DIFFC_LAZY_CHECKS=0 reads after every launch instead (the error comes from the dispatch call).
"""

from __future__ import annotations

import os
from collections.abc import Callable

LAZY = os.environ.get("DIFFC_LAZY_CHECKS", "1") != "0"

# (the read's OpenCL event, what raises the launch's error from the host copy, if any)
_pending: list[tuple[object, Callable[[], None]]] = []
MAX_PENDING = 256  # past this, reads that have completed and found nothing are dropped


def defer(event, check: Callable[[], None]) -> None:
    """Leaves a launch's status read (`event`) and its `check` for the next synchronizing point."""
    _pending.append((event, check))
    if len(_pending) > MAX_PENDING:
        _drop_completed_clean()


def settle() -> None:
    """Waits for every pending status read, then raises the error of the first launch that
    recorded one (all are forgotten either way)."""
    if not _pending:
        return
    todo = list(_pending)
    _pending.clear()
    for event, _ in todo:
        event.wait()
    for _, check in todo:
        check()


def first_error() -> Exception | None:
    """The error settle() would raise, left pending (a repr shows it instead of the values)."""
    for event, _ in _pending:
        event.wait()
    for _, check in _pending:
        try:
            check()
        except Exception as e:
            return e
    return None


def _drop_completed_clean() -> None:
    """Forgets the oldest reads that have completed and report nothing (no waiting)."""
    import pyopencl as cl

    while _pending:
        event, check = _pending[0]
        if event.command_execution_status != cl.command_execution_status.COMPLETE:
            return
        try:
            check()
        except Exception:
            return  # an error: kept for the next synchronizing point
        _pending.pop(0)
