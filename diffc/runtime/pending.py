"""Status reads that do not stall the host after every launch: the one reader of every checked
launch's status (bounds, loop overrun, the sanitizer) that is not read at once.

A `Reader` counts the launches of one kind and, every `every` launches, enqueues a non-blocking
copy of a status source's device buffers into fresh host memory, right behind the kernel:
`source.read_later(*context)` returns the copy's OpenCL event and the check that raises what
the copy holds. Its `Reads` keep those copies in launch order. They are looked at without
waiting (`poll`: the completed ones, oldest first) or by waiting for all (`settle`); the first
error is raised and every other read forgotten (a later read of the same flags would raise the
same violation again). Launches queue in order, so a read is complete once a later one is.

Two readers use it:
  * AT_SYNC (every launch, the default): a dispatch's reads are settled at the next
    synchronizing point, any read of a Tensor's values on the host (`to_numpy`, and the torch
    bridge, which reads through it) and `diffc.synchronize()`. So no value a checked launch wrote
    reaches the host before its error does. Each launch zeroes its status first, so each read
    holds its own launch's flags. A repr shows that an error is pending instead of the values,
    and leaves it pending. Past MAX_PENDING reads, those completed and clean are dropped.
  * deferred checks (runtime/dispatch_plan.py): each entry point's bounds status is read every
    dispatch_plan.READ_EVERY launches into a Reader of its own, polled at its next dispatch and
    settled by `check_pending`; its flags are zeroed only once raised, so a read covers every
    launch since the one before.

DIFFC_LAZY_CHECKS=0 reads after every launch instead (the error comes from the dispatch call).

An error no synchronizing point raised (a launch that wrote past a tensor's end, and then no
read) is not lost: at the interpreter's exit `report_unread` settles AT_SYNC and every deferred
check's reader and prints each error found on stderr as a warning naming its launch. The
`diffc` command calls it when its work is done, and exits with 1 when it found one.
"""

from __future__ import annotations

import atexit
import os
import sys
import weakref
from collections.abc import Callable

LAZY = os.environ.get("DIFFC_LAZY_CHECKS", "1") != "0"
MAX_PENDING = 256  # past this, AT_SYNC's reads that have completed and found nothing are dropped


class Reads:
    """Status reads in launch order: (the copy's OpenCL event, what raises its error, if any)."""

    def __init__(self, limit: int = 0):
        self.items: list[tuple[object, Callable[[], None]]] = []
        self.limit = limit  # 0: no limit

    def add(self, event, check: Callable[[], None]) -> None:
        _report_at_exit_once()
        self.items.append((event, check))
        if self.limit and len(self.items) > self.limit:
            self._drop_completed_clean()

    def poll(self) -> None:
        """Looks at the reads that have completed, oldest first, without waiting: raises the first
        error (forgetting every read) or forgets them clean."""
        while self.items and _complete(self.items[0][0]):
            _, check = self.items.pop(0)
            try:
                check()
            except Exception:
                self.items.clear()
                raise

    def settle(self) -> None:
        """Waits for every read, then raises the error of the first that found one (all are
        forgotten either way)."""
        if not self.items:
            return
        todo = list(self.items)
        self.items.clear()
        for event, _ in todo:
            event.wait()
        for _, check in todo:
            check()

    def first_error(self) -> Exception | None:
        """The error settle() would raise, left pending."""
        for event, _ in self.items:
            event.wait()
        for _, check in self.items:
            try:
                check()
            except Exception as e:
                return e
        return None

    def _drop_completed_clean(self) -> None:
        """Forgets the oldest reads that have completed and report nothing (no waiting)."""
        while self.items and _complete(self.items[0][0]):
            try:
                self.items[0][1]()
            except Exception:
                return  # an error: kept for the next look
            self.items.pop(0)


def _complete(event) -> bool:
    import pyopencl as cl

    return event.command_execution_status == cl.command_execution_status.COMPLETE


class Reader:
    """Reads a status source back every `every` launches, without waiting, into `reads`."""

    __slots__ = ("every", "reads", "unread", "last", "__weakref__")

    def __init__(self, every: int, reads: Reads | None = None):
        self.every = every
        self.reads = reads if reads is not None else Reads()
        self.unread = 0  # launches since the last read was enqueued
        self.last: tuple | None = None  # (source, context) of the latest launch

    def launched(self, source, *context) -> None:
        """After a launch whose status `source` holds (`context`: what its error names)."""
        self.unread += 1
        self.last = (source, context)
        if self.unread >= self.every:
            self.flush()

    def flush(self) -> None:
        """Enqueues a read of what the launches since the last read recorded."""
        if self.unread and self.last is not None:
            source, context = self.last
            self.reads.add(*source.read_later(*context))
        self.unread = 0

    def poll(self) -> None:
        """Raises what a completed read found (no waiting)."""
        try:
            self.reads.poll()
        except Exception:
            self.unread = 0  # raised once: the launches since are covered by the same flags
            raise

    def settle(self) -> None:
        """Reads what no read covered yet, waits for every read and raises what they found."""
        self.flush()
        self.reads.settle()


AT_SYNC = Reader(1, Reads(limit=MAX_PENDING))


def settle() -> None:
    """A synchronizing point: waits for AT_SYNC's reads and raises the first launch's error."""
    AT_SYNC.reads.settle()


def first_error() -> Exception | None:
    """The error settle() would raise, left pending (a repr shows it instead of the values)."""
    return AT_SYNC.reads.first_error()


# the readers of deferred checks (runtime/dispatch_plan.py), settled at exit with AT_SYNC
_deferred: weakref.WeakSet[Reader] = weakref.WeakSet()


def deferred_reader(every: int) -> Reader:
    reader = Reader(every)
    _deferred.add(reader)
    _report_at_exit_once()
    return reader


def unread_errors() -> list[Exception]:
    """Waits for every pending read (AT_SYNC's, the deferred checks') and returns the errors they
    found, raising none; all of them are forgotten."""
    errors: list[Exception] = []
    for reader in (AT_SYNC, *list(_deferred)):
        try:
            reader.settle()
        except Exception as e:  # (the error a later synchronizing point would have raised)
            errors.append(e)
    return errors


def report_unread(stream=None) -> bool:
    """Prints each error of a launch that nothing raised yet as a warning on `stream` (stderr);
    whether there was one."""
    from diffc.diagnostics import render_error

    errors = unread_errors()
    stream = sys.stderr if stream is None else stream
    for e in errors:
        print(f"warning: a launch's error was never raised (no read of the device's results, no "
              f"diffc.synchronize() came after it):\n{render_error(e)}", file=stream)
    return bool(errors)


_at_exit: list = []


def _report_at_exit_once() -> None:
    # (called after a launch, so after pyopencl's import: atexit runs this before its handlers)
    if not _at_exit:
        _at_exit.append(atexit.register(_report_at_exit))


def _report_at_exit() -> None:
    try:
        report_unread()
    except Exception as e:  # the device may be gone already: say so, never a traceback at exit
        print(f"warning: diffc could not read the status of earlier launches at exit ({e})", file=sys.stderr)
