"""Host arrays copied to the device for one call that reads its result back before it returns
(`_result="numpy"`, torch tensors).

`Tensor.from_numpy` waits for its copy, so that the caller may change the array at once; a call
that waits for its result anyway need not: its copies are enqueued without waiting, so is the
read of the result, and one wait (a queue finish: Function._finish_host) covers them all. That
is one round trip to the device's queue per call instead of one per argument, which is most of
a tiny call's time. (The copies call pyopencl's entry points directly: `write_later`.)

pyopencl's event of a non-blocking copy keeps the host array alive, and waits for the copy when
it is dropped; so the events live in a list the caller drops only after its wait (an exception
on the way drops them too, which waits: the array is never freed under a copy).

`Staging` goes one step further: each argument of a Function keeps its device tensor from
call to call (while its shape and dtype stay, and it is small), so that a repeated call passes
the same tensors and replays its launch (launch_plan.py) instead of binding and checking it
anew. A kept tensor is refilled by the next call; an autograd graph that holds one for its
backward checks its `generation` first. Like launch plans, kept tensors assume one thread calls
a Function at a time.
"""

from __future__ import annotations

import numpy as np

from diffc.runtime.device import device
from diffc.runtime.tensor import Tensor

# Arrays up to this size keep their device tensor between calls (`Staging`): a call's overhead
# matters only for small ones, and the memory kept is bounded by it per argument.
KEEP_BYTES = 1 << 20


def _direct_copies():
    """pyopencl's buffer<->host copies without `cl.enqueue_copy`'s dispatch on the argument kinds
    (~4 us of Python a copy, as much as the copy's own enqueue and more): its private
    entry points where this pyopencl has them, else the public one."""
    import pyopencl as cl

    _cl = getattr(cl, "_cl", None)
    write = getattr(_cl, "_enqueue_write_buffer", None)
    read = getattr(_cl, "_enqueue_read_buffer", None)
    if write is None or read is None:
        return (lambda q, buf, a: cl.enqueue_copy(q, buf, a, is_blocking=False),
                lambda q, a, buf: cl.enqueue_copy(q, a, buf, is_blocking=False))
    return (lambda q, buf, a: write(q, buf, a, is_blocking=False),
            lambda q, a, buf: read(q, buf, a, is_blocking=False))


_WRITE = _READ = None


def write_later(buffer, a: np.ndarray):
    """Enqueues a copy of contiguous host array `a` into device `buffer` without waiting;
    returns its event (which keeps `a` alive, and waits for the copy when dropped)."""
    global _WRITE, _READ
    if _WRITE is None:
        _WRITE, _READ = _direct_copies()
    return _WRITE(device().queue, buffer, a)


def read_later(a: np.ndarray, buffer):
    """Enqueues a copy of device `buffer` into contiguous host array `a` without waiting;
    returns its event."""
    global _WRITE, _READ
    if _READ is None:
        _WRITE, _READ = _direct_copies()
    return _READ(device().queue, a, buffer)


def upload(a: np.ndarray, dtype: np.dtype, events: list) -> Tensor:
    """A new Tensor holding `a` (converted to `dtype`); its copy's event is appended to `events`."""
    a = np.ascontiguousarray(a, dtype=dtype)
    t = Tensor(a.shape, dtype)
    if t.size:
        events.append(write_later(t.buffer, a))
    return t


class Slot:
    """One argument's kept device tensor; `generation` counts the copies into it, so that a
    holder of an older copy (an autograd graph) can tell it was overwritten."""

    __slots__ = ("tensor", "generation")

    def __init__(self, tensor: Tensor):
        self.tensor = tensor
        self.generation = 0


class Staging:
    """The kept device tensors of one Function's arguments, by argument index."""

    def __init__(self):
        self.slots: dict[int, Slot] = {}
        self.kept_result: Tensor | None = None  # a bwds launch's result, with its .grad

    def result(self, shape: tuple, dtype: np.dtype, grad: np.ndarray, events: list) -> Tensor:
        """A result Tensor of `shape` for a bwds launch, whose `.grad` holds `grad` once `events`
        complete: the kept one where shape and dtype match, else a new one (kept when small).
        (Its values are not read: a bwds reads the result's gradient only.)"""
        r = self.kept_result
        if r is None or r.shape != shape or r.dtype != dtype:
            r = Tensor(shape, dtype)
            r.grad = upload(grad, dtype, events)
            self.kept_result = r if r.nbytes <= KEEP_BYTES else None
            return r
        if r.size:
            a = np.ascontiguousarray(grad, dtype=dtype)
            events.append(write_later(r.grad.buffer, a))
        r.grad.uninitialized = False
        return r

    def fill(self, i: int, a: np.ndarray, dtype: np.dtype, events: list) -> tuple[Tensor, Slot | None, int]:
        """The device tensor of argument `i`, holding `a` once `events` complete: the kept one
        where its shape and dtype match, else a new one (kept when small). Returns the tensor,
        its Slot (None when not kept) and the generation of this copy."""
        slot = self.slots.get(i)
        if slot is None or slot.tensor.shape != a.shape or slot.tensor.dtype != dtype:
            t = upload(a, dtype, events)
            if t.nbytes > KEEP_BYTES:
                self.slots.pop(i, None)
                return t, None, 0
            slot = self.slots[i] = Slot(t)
            return t, slot, 0
        t = slot.tensor
        if t.size:
            a = np.ascontiguousarray(a, dtype=dtype)
            events.append(write_later(t.buffer, a))
        t.uninitialized = False
        slot.generation += 1
        return t, slot, slot.generation


def stage(dtypes: list, staging: Staging, host: list, events: list) -> dict[int, tuple]:
    """Device copies of a call's arrays, enqueued without waiting into the Function's kept
    tensors: {argument index: (Tensor, Slot or None, generation)}. Only arrays the call takes
    as they are or converts to a float parameter (`dtypes[i]`); the others (0-d arrays, which
    are numbers, and those the call refuses or converts otherwise) stay arrays for
    `Function._classify` to judge."""
    staged = {}
    for i, a in enumerate(host):
        if type(a) is np.ndarray and a.ndim:
            want = dtypes[i]
            if want is not None and (a.dtype == want or (want.kind == "f" and a.dtype.kind in "biuf")):
                staged[i] = staging.fill(i, a, want, events)
    return staged


def kept(staged: dict[int, tuple]) -> dict[int, tuple]:
    """The kept ones among staged tensors: what an autograd graph holds for its backward (a large
    array's copy is made again by the backward, so that graphs do not hold device memory the
    size of their inputs; its copying time is the data's, not overhead)."""
    for e in staged.values():
        if e[1] is None:
            return {i: e for i, e in staged.items() if e[1] is not None}
    return staged  # (all kept, the common case: no new dict)


def current(staged: dict[int, tuple]) -> dict[int, Tensor]:
    """The staged tensors that still hold what was copied into them (no later call refilled them)."""
    return {i: t for i, (t, slot, gen) in staged.items() if slot is None or slot.generation == gen}
