"""Replaying an entry point's last dispatch (a training loop dispatches the same kernels with the
same tensors every step), so that a repeated dispatch costs an enqueue, not a binding.

dispatch() binds the keyword arguments (flattening struct dicts, checking every tensor's dtype
and size, packing scalars): about 0.2 ms of Python for the MLP's learnGradient. A DispatchPlan
keeps what that produced, on cl.Kernel objects of its own whose arguments stay set, and a
snapshot of the arguments: the same dict objects holding the same keys, the same Tensor objects
with the same device buffers and sizes, tensor.at(offset) of the same tensor and offset, numbers
of the same type and value. A dispatch whose arguments match the snapshot replays the plan;
anything else takes the full path (which checks everything) and makes the next plan. The
snapshot holds tensors through weak references (a plan keeps no tensor alive; a dead one is a
miss) and the device buffers the kernels were given.

Checks (both through runtime/pending.py's one reader): by default a launch's bounds and status
flags are read back without waiting and raised at the next synchronizing point (reading a
tensor, diffc.synchronize()). Deferred checks (`dispatch(..., deferred_checks=True)` or
DIFFC_DEFERRED_CHECKS=1) go further for training loops: the bounds status is read back only
every READ_EVERY launches, and what a launch recorded is raised by a later dispatch of the same
entry point (or `check_pending(module)`). Flags stay set until they are raised, so none is lost.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping

from diffc.runtime import pending
from diffc.runtime.tensor import Tensor, TensorPointer

DEFERRED_CHECKS = os.environ.get("DIFFC_DEFERRED_CHECKS", "0") == "1"
MISS = object()
_NUMBERS = (int, float, bool)


def dispatch_options(kernel) -> frozenset:
    """The dispatch options (deterministic, deferred_checks) that are not also parameters of
    the entry point's kernel (where they are, they are its arguments)."""
    known = getattr(kernel, "_dispatch_options", None)
    if known is None:
        names = {p.name for p in kernel.params}
        known = kernel._dispatch_options = frozenset({"deterministic", "deferred_checks"} - names)
    return known


def snapshot(value):
    """What `same` compares a later argument with, or None where it cannot be replayed."""
    if isinstance(value, Tensor):
        return ("t", weakref.ref(value), value.buffer)
    if isinstance(value, TensorPointer):
        return ("p", weakref.ref(value.tensor), value.tensor.buffer, value.offset)
    if type(value) in _NUMBERS:
        return ("n", type(value), value)
    if isinstance(value, Mapping):
        items = []
        for k, v in value.items():
            s = snapshot(v)
            if s is None:
                return None
            items.append((k, s))
        return ("d", tuple(items))
    if isinstance(value, (list, tuple)):
        items = [snapshot(v) for v in value]
        return None if any(s is None for s in items) else ("l", type(value), tuple(items))
    return None


def same(value, snap) -> bool:
    kind = snap[0]
    if kind == "t":
        return value is snap[1]() and value.buffer is snap[2]  # (a Tensor's size never changes)
    if kind == "d":
        items = snap[1]
        if not isinstance(value, Mapping) or len(value) != len(items):
            return False
        get = value.get
        for k, s in items:
            v = get(k, _ABSENT)
            if s[0] == "t":  # (inlined: most leaves are tensors)
                if v is not s[1]() or v.buffer is not s[2]:
                    return False
            elif not same(v, s):
                return False
        return True
    if kind == "n":
        return type(value) is snap[1] and value == snap[2]
    if kind == "p":
        return (type(value) is TensorPointer and value.tensor is snap[1]() and value.tensor.buffer is snap[2]
                and value.offset == snap[3])
    return (type(value) is snap[1] and len(value) == len(snap[2])
            and all(same(v, s) for v, s in zip(value, snap[2])))


_ABSENT = object()


class DispatchPlan:
    """One entry point's last dispatch: `launches` are (cl.Kernel with its arguments set,
    global size, local size) enqueued in order; `combine` makes one event of their events."""

    __slots__ = ("thread_count", "snap", "deterministic", "deferred", "launches", "queue", "combine", "kernel",
                 "fn", "keep")

    def replay(self, thread_count, kwargs: dict, deterministic, deferred: bool):
        if (type(thread_count) is not type(self.thread_count) or thread_count != self.thread_count or deterministic != self.deterministic or deferred != self.deferred
                or len(kwargs) != len(self.snap)):
            return MISS
        for k, s in self.snap.items():
            if k not in kwargs or not same(kwargs[k], s):
                return MISS
        return self.run()

    def run(self):
        import pyopencl as cl

        kernel = self.kernel
        if kernel.status is not None:
            kernel.status.reset()
        bounds = kernel.bounds
        if bounds is not None:
            prepare(bounds, self.deferred)
        events = [cl.enqueue_nd_range_kernel(self.queue, k, g, l) for k, g, l in self.launches]
        event = self.combine(events) if self.combine else events[-1]
        fn = self.fn
        where = f"{fn.name}.dispatch"
        if bounds is not None:
            check(bounds, fn.name, where, fn.module.sources, self.deferred)
        if kernel.status is not None:  # a loop past its [MaxIters] in a backward pass, a NaN (sanitizer)
            if pending.LAZY:
                pending.AT_SYNC.launched(kernel.status, where, fn.module.sources, fn.name)
            else:
                kernel.status.check(where, fn.module.sources, fn.name)
        return event


def make(fn, kernel, thread_count, kwargs: dict, deterministic, deferred: bool, launches, queue, combine, keep):
    """The plan of the dispatch about to be made (its `snap` None where an argument cannot be
    replayed: run once, never replayed).
    `keep`: objects the kernels' arguments point at (buffers the plan must keep alive)."""
    snap: dict | None = {}
    for k, v in kwargs.items():
        s = snapshot(v)
        if s is None:
            snap = None  # run once, not kept
            break
        snap[k] = s
    plan = DispatchPlan()
    plan.thread_count, plan.snap, plan.deterministic, plan.deferred = thread_count, snap, deterministic, deferred
    plan.launches, plan.queue, plan.combine, plan.kernel, plan.fn, plan.keep = launches, queue, combine, kernel, fn, keep
    return plan


# -- bounds checks, now or deferred ----------------------------------------------------------


def prepare(bounds, deferred: bool) -> None:
    """Before a launch: zero the status buffer (deferred: only once its flags were raised, so
    that a read covers every launch since the one before)."""
    if not deferred or not bounds.zeroed:
        bounds.reset()


# A deferred check reads the status back after at most this many launches (each read is an
# enqueue: about 20 us of a step on the H100's host).
READ_EVERY = 8


def check(bounds, kernel: str, what: str, sources, deferred: bool) -> None:
    """After a launch: its status read at the next synchronizing point (or now, without lazy
    reads); deferred: raise what an earlier read found as far as the device got, and read
    every READ_EVERY launches (runtime/pending.py)."""
    if not deferred:
        if pending.LAZY:
            pending.AT_SYNC.launched(bounds, kernel, what, sources)
        else:
            bounds.check(kernel, what, sources)
        return
    reader = bounds.deferred
    if reader is None:
        reader = bounds.deferred = pending.deferred_reader(READ_EVERY)
    reader.poll()
    reader.launched(bounds, kernel, what, sources)


def check_pending(module) -> None:
    """Waits for the deferred bounds reads of the module's entry points (reading what no read
    covered yet) and raises what they found (end of a training loop)."""
    for reader in module.__dict__.get("_cuda_bounds", {}).values():  # (dispatches with torch CUDA tensors)
        reader.poll(wait=True)
    program = module._entry_program  # (dispatch.entry_program's; None: nothing was dispatched)
    for kernel in program.kernels.values() if program is not None else ():
        if kernel.bounds is not None and kernel.bounds.deferred is not None:
            kernel.bounds.deferred.settle()
