"""The host side of bounds-check (passes/bounds_check.py): entry-point kernels take each
buffer's length and a status buffer of 3 ints per access site; after a launch the runtime
reads it (a blocking read) and raises BoundsError naming the kernel, the buffer, the index,
the length and the Slang source line of the first site (in program order) that was violated.

State of the buffers after a BoundsError: the launch ran to its end; every access in bounds
happened, every load outside a buffer read 0 and every store or atomic outside it was dropped,
so nothing outside the buffers changed, and the outputs hold what the in-bounds work wrote.
DIFFC_BOUNDS_CHECK=0 builds entry points without the checks, DIFFC_BOUNDS_PROOFS=0 without the
unchecked variants (kernel settings, diffc/pipeline.py).
"""

from __future__ import annotations

import numpy as np

from diffc.runtime.waiting import ZERO, copy
from diffc.diagnostics import format_diagnostic
from diffc.kernel_program import Proof, Site  # noqa: F401 (imported from here)
from diffc.runtime.errors import RuntimeDiffcError
from diffc.runtime.status import _location

LEN_PREFIX = "diffc_len_"  # bounds-check's length parameter of a buffer: this before its name


class BoundsError(RuntimeDiffcError):
    def __init__(self, message: str, kernel: str, site: Site, index: int, length: int):
        super().__init__(message)
        self.kernel, self.site, self.index, self.length = kernel, site, index, length
        self.buffer = site.buffer


I32_MAX = 2**31 - 1


def proven(proofs, value, global_size) -> bool:
    """Whether every proof holds for a launch of `global_size` work-items; `value(name)` gives
    the int a kernel parameter is set to (the lengths diffc_len_<buffer>, offsets, counts)."""
    for p in proofs:
        if p.limit:
            n = p.limit_factor * int(value(p.limit))
        else:
            n = int(global_size[p.dim]) if p.dim < len(global_size) else 1
            if p.group:
                n = -(-n // p.group)  # the number of groups
        count = int(value(p.count)) if p.count else -1
        if count >= 0:  # work-items at or past count skip them (a negative one: no such promise)
            n = min(n, count)
        if n == 0:
            continue
        top = p.scale * (n - 1) + p.extra  # the largest index past the offset
        offset = int(value(p.offset)) if p.offset else 0
        if top > I32_MAX or offset < 0 or offset + top >= int(value(LEN_PREFIX + p.buffer)):
            return False
    return bool(proofs)


class BoundsBuffer:
    def __init__(self, sites: list[Site]):
        import pyopencl as cl

        from diffc.runtime.device import device

        self.sites = sites
        self.host = np.zeros(max(1, 3 * len(sites)), np.int32)
        self.buffer = cl.Buffer(device().context, cl.mem_flags.READ_WRITE, self.host.nbytes)
        self.zeroed = False  # no flag set since the last reset (deferred checks zero only then)
        self.deferred = None  # the pending.Reader of deferred checks (runtime/dispatch_plan.py)

    # the module cache keeps the sites; loading makes a new device buffer
    def __getstate__(self):
        return {"sites": self.sites}

    def __setstate__(self, state):
        self.__init__(state["sites"])

    def reset(self) -> None:
        import pyopencl as cl

        from diffc.runtime.device import device

        # a fill, not a copy from host memory: see ZEROING in runtime/waiting.py
        cl.enqueue_fill_buffer(device().queue, self.buffer, ZERO, 0, self.host.nbytes)
        self.zeroed = True

    def check(self, kernel: str, what: str, sources: dict[str, str] | None = None) -> None:
        """Reads the status now (blocking) and raises the first violated site's error."""
        import pyopencl as cl

        from diffc.runtime.device import device

        copy(device().queue, self.host, self.buffer)
        self._raise_from(self.host, kernel, what, sources)

    def read_later(self, kernel: str, what: str, sources: dict[str, str] | None = None):
        """Enqueues a read of the status into fresh host memory, without waiting: (its event,
        what raises the error it finds), for a pending.Reader."""
        import pyopencl as cl

        from diffc.runtime.device import device

        host = np.empty_like(self.host)
        event = cl.enqueue_copy(device().queue, host, self.buffer, is_blocking=False)
        return event, lambda: self._raise_from(host, kernel, what, sources)

    def _raise_from(self, host: np.ndarray, kernel: str, what: str, sources: dict[str, str] | None) -> None:
        hits = np.flatnonzero(host[0 : 3 * len(self.sites) : 3])  # (a loop over the sites cost 1.5 ms)
        if not len(hits):
            return
        self.zeroed = False
        for k in hits[:1]:
            site = self.sites[k]
            flag, index, length = (int(v) for v in host[3 * k : 3 * k + 3])
            if flag:
                shown = "a negative index" if flag == 2 else f"index {index}"
                inside = f" (in function '{site.function}')" if site.function != kernel else ""
                place = f"groupshared '{site.groupshared}'" if site.groupshared else f"buffer '{site.buffer}'"
                message = (f"{what}: kernel '{kernel}' would {site.what} {'from' if site.what == 'load' else 'to'} "
                           f"{place}{inside} at {shown}, outside its {length} elements; the access "
                           f"was skipped (loads read 0), every access in bounds ran")
                loc = _location(site.where)
                source = (sources or {}).get(loc.file) if loc else None
                text = format_diagnostic(loc, message, "E0011", source) if loc else f"error[E0011]: {message}"
                raise BoundsError(text, kernel, site, -1 if flag == 2 else index, length)
