"""Which stage a long compile is in, on a terminal.

    with stages.stage("differentiating"):
        ...

Stages nest; the outermost one starts the clock. Once a compile has run for a second, one line
on stderr says which stage it is in (`diffc: building the OpenCL program (3 s)`), rewritten in
place as stages change and erased when the outermost stage ends, so a finished compile leaves
nothing behind. Only when stderr is a terminal, and not with DIFFC_PROGRESS=0: output to a file
or a pipe is never touched. A short compile prints nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator

AFTER_S = 1.0  # a compile shorter than this shows nothing

_lock = threading.Lock()
_names: list[str] = []  # the open stages, outermost first
_start = 0.0
_shown = False
_timer: threading.Timer | None = None


def _enabled() -> bool:
    if os.environ.get("DIFFC_PROGRESS", "").strip() == "0":
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _show() -> None:
    """Writes the current stage over the line (with the lock held)."""
    global _shown
    if not _names:
        return
    text = f"diffc: {_names[-1]} ({time.monotonic() - _start:.0f} s)"
    try:
        sys.stderr.write("\r\x1b[K" + text)
        sys.stderr.flush()
        _shown = True
    except (OSError, ValueError):
        pass


def _tick() -> None:
    global _timer
    with _lock:
        if not _names:
            return
        _show()
        _timer = threading.Timer(1.0, _tick)
        _timer.daemon = True
        _timer.start()


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """Runs the body as stage `name` of the current compile (see the module's docstring)."""
    global _start, _shown, _timer
    if not _enabled() or threading.current_thread() is not threading.main_thread():
        yield
        return
    with _lock:
        outermost = not _names
        if outermost:
            _start, _shown = time.monotonic(), False
            _timer = threading.Timer(AFTER_S, _tick)
            _timer.daemon = True
            _timer.start()
        _names.append(name)
        if _shown:
            _show()
    try:
        yield
    finally:
        with _lock:
            _names.pop()
            if outermost:
                if _timer is not None:
                    _timer.cancel()
                    _timer = None
                if _shown:
                    try:
                        sys.stderr.write("\r\x1b[K")
                        sys.stderr.flush()
                    except (OSError, ValueError):
                        pass
                _shown = False
            elif _shown:
                _show()
