"""The one reader of launch status that does not wait (runtime/pending.py), on stand-in sources
and events: a read every `every` launches, completed reads looked at oldest first without
waiting, the first error raised once and every other read forgotten, and a settle that reads
what no read covered yet. (Its two users, lazy and deferred bounds checks, are tested on the
device in test_bounds_check.py and test_dispatch_plan.py.)"""

from __future__ import annotations

import pyopencl as cl
import pytest

from diffc.runtime.pending import Reader, Reads


class Event:
    def __init__(self):
        self.done = False
        self.waited = False

    @property
    def command_execution_status(self):
        return cl.command_execution_status.COMPLETE if self.done else cl.command_execution_status.RUNNING

    def wait(self):
        self.waited = self.done = True


class Source:
    """A status buffer: `flag` is what a read taken now would find."""

    def __init__(self):
        self.flag = None
        self.reads: list[tuple[Event, str]] = []

    def read_later(self, what):
        event, seen = Event(), self.flag
        self.reads.append((event, what))

        def check():
            if seen is not None:
                raise RuntimeError(f"{what}: {seen}")

        return event, check


def test_a_read_every_few_launches_and_settle_reads_the_rest():
    src, reader = Source(), Reader(3)
    for k in range(7):
        reader.launched(src, f"launch {k}")
    assert [what for _, what in src.reads] == ["launch 2", "launch 5"]
    assert reader.unread == 1
    reader.settle()  # the 7th launch read too, every read waited for
    assert [what for _, what in src.reads] == ["launch 2", "launch 5", "launch 6"]
    assert all(e.waited for e, _ in src.reads) and not reader.reads.items


def test_poll_raises_completed_reads_only_and_once():
    src, reader = Source(), Reader(1)
    reader.launched(src, "a")
    src.flag = "out of bounds"
    reader.launched(src, "b")
    reader.launched(src, "c")
    reader.poll()  # nothing completed: nothing looked at, nothing waited for
    assert len(reader.reads.items) == 3 and not any(e.waited for e, _ in src.reads)
    src.reads[0][0].done = True
    reader.poll()  # the clean one is forgotten
    assert len(reader.reads.items) == 2
    src.reads[1][0].done = src.reads[2][0].done = True
    with pytest.raises(RuntimeError, match="b: out of bounds"):
        reader.poll()
    reader.settle()  # c saw the same flag: forgotten with the error, not raised twice
    assert not reader.reads.items


def test_settle_raises_the_first_launchs_error_and_forgets_all():
    src, reads = Source(), Reads()
    reader = Reader(1, reads)
    src.flag = "first"
    reader.launched(src, "a")
    src.flag = "second"
    reader.launched(src, "b")
    assert str(reads.first_error()) == "a: first" and len(reads.items) == 2  # left pending
    with pytest.raises(RuntimeError, match="a: first"):
        reads.settle()
    reads.settle()
    assert not reads.items


def test_a_bounded_queue_drops_completed_clean_reads_only():
    src, reads = Source(), Reads(limit=4)
    reader = Reader(1, reads)

    def launch(what):
        reader.launched(src, what)
        src.reads[-1][0].done = True

    for k in range(6):
        launch(f"ok {k}")
    assert len(reads.items) <= 4  # past the limit, completed clean reads were dropped
    src.flag = "bad"
    launch("bad")
    src.flag = None
    for k in range(6):
        launch(f"later {k}")
    bad = next(k for k, (e, what) in enumerate(src.reads) if what == "bad")
    assert reads.items[0][0] is src.reads[bad][0]  # the error stops the dropping: kept
    with pytest.raises(RuntimeError, match="bad: bad"):
        reads.settle()
