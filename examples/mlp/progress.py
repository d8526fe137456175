"""A one-line text progress bar (no tqdm dependency), redrawn in place on a terminal."""

from __future__ import annotations

import sys
import time


class ProgressBar:
    """`update(step, note)` redraws `[#####.....]  step/total  steps/s  note` at most every
    `interval` seconds (and at the last step); `clear()` wipes it so a log line can be printed."""

    def __init__(self, total: int, stream=None, width: int = 30, interval: float = 0.1):
        self.total, self.stream, self.width, self.interval = total, stream or sys.stderr, width, interval
        self.start = self.last = time.perf_counter()
        self.shown = ""

    def line(self, step: int, note: str = "") -> str:
        done = round(self.width * step / max(self.total, 1))
        rate = step / max(time.perf_counter() - self.start, 1e-9)
        return f"[{'#' * done}{'.' * (self.width - done)}] {step}/{self.total}  {rate:.1f} steps/s  {note}".rstrip()

    def update(self, step: int, note: str = "") -> None:
        now = time.perf_counter()
        if now - self.last < self.interval and step != self.total:
            return
        self.last = now
        self.shown = self.line(step, note)
        self.stream.write("\r\033[K" + self.shown)
        self.stream.flush()

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()
            self.shown = ""
