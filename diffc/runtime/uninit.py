"""The host side of uninit-check (passes/uninit_check.py), the sanitizer mode's check of
dispatches of entry points: a kernel that reads an element of a buffer nobody wrote raises
UninitializedReadError (E0013) naming the argument, the element and the Slang source line.

The host knows which tensors were never written (`Tensor.uninitialized`: Tensor.empty,
with_grads(zero=False), and nothing wrote them since). For each buffer argument bound to such a
tensor, the dispatch passes the tensor's shadow (one int per element, zero at first) and a
nonzero track number; every other argument is passed untracked (a one-int dummy shadow, track
0: nothing is checked or marked). After the launch the host reads the status (the first site in
program order that found an unwritten element) and the shadows: a tensor whose every element
was written is initialized from then on; one partly written keeps its shadow for the next
dispatch (what it wrote stays known). Dispatches of a sanitizer-mode module are not replayed
(runtime/dispatch_plan.py): each binds its shadows anew and waits for its status.
"""

from __future__ import annotations

import weakref

import numpy as np

from diffc.runtime.waiting import ZERO, copy
from diffc.diagnostics import format_diagnostic
from diffc.kernel_program import Site  # noqa: F401 (UninitStatus's sites)
from diffc.runtime.errors import UninitializedReadError
from diffc.runtime.status import _location

# Tensor -> the device buffer of its written flags, while it is partly written
_shadows: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _shadow_of(tensor):
    import pyopencl as cl

    from diffc.runtime.device import device

    shadow = _shadows.get(tensor)
    if shadow is None:
        shadow = cl.Buffer(device().context, cl.mem_flags.READ_WRITE, max(tensor.size, 1) * 4)
        cl.enqueue_fill_buffer(device().queue, shadow, np.zeros(1, np.int32), 0, max(tensor.size, 1) * 4)
        _shadows[tensor] = shadow
    return shadow


class UninitStatus:
    """One entry kernel's uninit-check state: its sites' status buffer and, while a dispatch
    binds, the arguments it tracks."""

    def __init__(self, sites: list[Site]):
        import pyopencl as cl

        from diffc.runtime.device import device

        self.sites = sites
        self.host = np.zeros(max(1, 3 * len(sites)), np.int32)
        self.buffer = cl.Buffer(device().context, cl.mem_flags.READ_WRITE, self.host.nbytes)
        self.dummy = cl.Buffer(device().context, cl.mem_flags.READ_WRITE, 4)
        self.tracked: list[tuple[str, object, int]] = []  # (argument path, Tensor, offset) by track number - 1

    # the module cache keeps the sites; loading makes new device buffers
    def __getstate__(self):
        return {"sites": self.sites}

    def __setstate__(self, state):
        self.__init__(state["sites"])

    def start(self) -> None:
        """Before binding a dispatch: nothing tracked yet, the status zeroed."""
        import pyopencl as cl

        from diffc.runtime.device import device

        self.tracked = []
        cl.enqueue_fill_buffer(device().queue, self.buffer, ZERO, 0, self.host.nbytes)  # (ZEROING: waiting.py)

    def argument(self, role: str, of: str, bound: dict[str, tuple[object, str, int]]):
        """The value of the shadow or track parameter (its ABI role) of buffer parameter `of`;
        `bound`: buffer parameter -> (its Tensor, the argument's path as written, the pointer's
        offset into the tensor)."""
        tensor, path, offset = bound.get(of, (None, "", 0))
        unwritten = tensor is not None and getattr(tensor, "uninitialized", False)
        if role == "shadow":
            return _shadow_of(tensor) if unwritten else self.dummy
        if not unwritten:
            return np.int32(0)
        self.tracked.append((path, tensor, offset))
        return np.int32(len(self.tracked))

    def finish(self, kernel: str, what: str, sources: dict[str, str] | None = None) -> None:
        """After the launch (waits for it): records what the tracked tensors now hold, then
        raises the first site's UninitializedReadError, if any."""
        import pyopencl as cl

        from diffc.runtime.device import device

        queue = device().queue
        for _, tensor, _ in self.tracked:
            shadow = _shadows.get(tensor)
            if shadow is None or not tensor.uninitialized:
                continue
            flags = np.empty(max(tensor.size, 1), np.int32)
            copy(queue, flags, shadow)
            if flags[: tensor.size].all():
                tensor.uninitialized = False  # every element written: nothing left to track
                del _shadows[tensor]
        copy(queue, self.host, self.buffer)
        tracked, self.tracked = self.tracked, []
        hits = np.flatnonzero(self.host[0 : 3 * len(self.sites) : 3])
        if not len(hits):
            return
        k = int(hits[0])
        site = self.sites[k]
        index, number = int(self.host[3 * k + 1]), int(self.host[3 * k + 2])
        path, _, offset = tracked[number - 1] if 0 < number <= len(tracked) else (site.buffer, None, 0)
        element = f"element {index - offset} of '{path}'" + (f" (element {index} of its tensor)" if offset else "")
        inside = f" (through '{site.buffer}' in function '{site.function}')" if site.function != kernel else ""
        verb = "reads" if site.what == "load" else "adds into (reads)"
        message = (f"{what}: kernel '{kernel}' {verb} {element}{inside}, which was never written "
                   "(Tensor.empty or with_grads(zero=False), and nothing wrote that element since): write it "
                   "first, or start from Tensor.zeros")
        loc = _location(site.where)
        source = (sources or {}).get(loc.file) if loc else None
        text = format_diagnostic(loc, message, "E0013", source) if loc else f"error[E0013]: {message}"
        raise UninitializedReadError(text, path)
