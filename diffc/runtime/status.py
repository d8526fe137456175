"""The host side of status globals (diffc/kernel_support/status_report.py): each launch of a kernel that has
them gets zeroed status buffers, and after it the runtime reads them (a blocking read of a few
bytes: kernels without such checks pay nothing) and raises the error a recorded value means.

    slots = ...                                 # the compiler's (kernel_program.StatusSlot)
    status = StatusBuffers(slots)
    ... kernel args: [..., *status.buffers] (in slot order, which is the globals' order)
    status.reset(); launch; status.check("bwds of @f", sources)

State of the outputs after an error: the launch ran to its end. For a loop overrun, every
gradient that flows out of the overlong loop is NaN (diff-rev selects NaN there), the other
elements of the same launch are right; `bwds` has already accumulated into the `.grad`s.
"""

from __future__ import annotations

import numpy as np

from diffc.runtime.waiting import ZERO, finish
from diffc.diagnostics import SourceLocation, format_diagnostic
from diffc.kernel_program import StatusSlot, grow_max_iters  # noqa: F401 (imported from here)
from diffc.runtime.errors import RuntimeDiffcError

STATUS_PREFIX = "diffc_status_"


class LoopOverrunError(RuntimeDiffcError):
    """A `while` ran more iterations than its [MaxIters] in a backward pass: its gradient would
    be wrong (diffc makes it NaN). `count` is the most iterations a work-item reached."""

    def __init__(self, message: str, slot: StatusSlot, count: int):
        super().__init__(message)
        self.slot = slot
        self.count = count
        self.where = slot.where
        self.max_iters = slot.max_iters


class NonFiniteError(RuntimeDiffcError):
    """The sanitizer mode (nan-check) saw derivative code make a NaN or an infinity out of
    finite operands: `where` is the op's source location, `op` its IR name, `function` the
    derivative function it sits in, `kernel` the launch's kernel, `value` "NaN" or "Inf"."""

    def __init__(self, message: str, kernel: str, function: str, op: str, where: str, value: str):
        super().__init__(message)
        self.kernel, self.function, self.op, self.where, self.value = kernel, function, op, where, value


def _location(where: str) -> SourceLocation | None:
    parts = where.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return SourceLocation(parts[0], int(parts[1]), int(parts[2]))


def overrun_error(slot: StatusSlot, count: int, what: str, sources: dict[str, str] | None) -> LoopOverrunError:
    loc = _location(slot.where)
    if slot.kind == "stopped":  # a while loop: derivative code ends it one iteration past the bound
        ran, at_least = f"did not end within its [MaxIters({slot.max_iters})] (diff.max_iters), so derivative code " \
            f"stopped it after {count} iterations", "Raise [MaxIters]"
    else:
        ran, at_least = f"ran {count} iterations, more than its [MaxIters({slot.max_iters})] (diff.max_iters)", \
            f"Raise [MaxIters] to at least {count}"
    message = (f"{what}: the loop in '{slot.function}' {ran}: its backward pass tapes {slot.max_iters} iterations, "
               f"so the gradients through it are NaN. {at_least}, or set grow_tape (module.grow_tape = True, "
               f"DIFFC_GROW_TAPE=1, diffc run --grow-tape) to rerun with a larger tape")
    source = (sources or {}).get(loc.file) if loc else None
    text = format_diagnostic(loc, message, "E0010", source) if loc else f"error[E0010]: {message}"
    return LoopOverrunError(text, slot, count)


def non_finite_error(slot: StatusSlot, value: int, kernel: str, what: str,
                     sources: dict[str, str] | None) -> NonFiniteError:
    code = I32_MAX - value  # nan-check records I32_MAX - (2 x site + 1 for an infinity)
    site, inf = divmod(code, 2)
    function, op, where = (slot.sites[site].split("|", 2) if 0 <= site < len(slot.sites) else ("?", "?", ""))
    shown = "an infinity" if inf else "a NaN"
    message = (f"{what}: kernel '{kernel}': derivative code made {shown} out of finite operands here "
               f"('{op}' in '{function}'); the launch ran to its end, its outputs hold the non-finite values "
               f"(sanitizer mode: DIFFC_CHECK / check=True)")
    loc = _location(where)
    source = (sources or {}).get(loc.file) if loc else None
    text = format_diagnostic(loc, message, "E0012", source) if loc else f"error[E0012]: {message}"
    return NonFiniteError(text, kernel, function, op, where, "Inf" if inf else "NaN")


I32_MAX = 2**31 - 1


class StatusBuffers:
    """One zeroed 4-byte device buffer per slot."""

    def __init__(self, slots: list[StatusSlot]):
        import pyopencl as cl

        from diffc.runtime.device import device

        self.slots = slots
        self.context = device().context
        self.buffers = [cl.Buffer(self.context, cl.mem_flags.READ_WRITE, 4) for _ in slots]

    # the module cache keeps the slots; loading makes new device buffers
    def __getstate__(self):
        return {"slots": self.slots}

    def __setstate__(self, state):
        self.__init__(state["slots"])

    def reset(self) -> None:
        import pyopencl as cl

        from diffc.runtime.device import device

        q = device().queue
        for b in self.buffers:
            cl.enqueue_fill_buffer(q, b, ZERO, 0, 4)  # (ZEROING: waiting.py)

    def read(self) -> list[int]:
        import pyopencl as cl

        from diffc.runtime.device import device

        out = np.zeros(len(self.buffers), np.int32)
        q = device().queue
        for i, b in enumerate(self.buffers):
            cl.enqueue_copy(q, out[i : i + 1], b, is_blocking=False)
        finish(q)
        return [int(v) for v in out]

    def check(self, what: str, sources: dict[str, str] | None = None, kernel: str = "") -> None:
        """Reads the slots now (blocking); raises the error of the first that recorded something."""
        if self.buffers:
            self._raise_from(self.read(), what, sources, kernel)

    def read_later(self, what: str, sources: dict[str, str] | None = None, kernel: str = ""):
        """Enqueues the reads into fresh host memory, without waiting: (the last read's event,
        what raises the error they find), for a pending.Reader."""
        import pyopencl as cl

        from diffc.runtime.device import device

        out = np.zeros(len(self.buffers), np.int32)
        q = device().queue
        events = [cl.enqueue_copy(q, out[i : i + 1], b, is_blocking=False) for i, b in enumerate(self.buffers)]

        def raise_found():
            events.clear()  # (held until the reader has waited for the last: ZEROING in waiting.py)
            self._raise_from([int(v) for v in out], what, sources, kernel)

        return events[-1], raise_found

    def _raise_from(self, values: list[int], what: str, sources: dict[str, str] | None, kernel: str) -> None:
        for slot, value in zip(self.slots, values):
            if value and slot.kind in ("overrun", "stopped"):
                raise overrun_error(slot, value, what, sources)
            if value and slot.kind == "nan":
                raise non_finite_error(slot, value, kernel, what, sources)


MAX_GROWS = 8  # reruns with a larger tape before the overrun is reported after all


def forget_kernels(module) -> None:
    """Drops every kernel built from `module` (a runtime Module) after its IR changed."""
    module._entry_program = None
    for fn in module._functions.values():
        fn._kernels.clear()
        fn._status.clear()
        fn._last_args.clear()
        fn._plans.clear()


def run_growing_tape(fn, spec, launch, grads: list):
    """`launch(kernel)` for the element-wise kernel `spec` of Function `fn`; where the module
    has `grow_tape` and the kernel reports an overrun, the loop's [MaxIters] grows to
    max(count, 2 x bound), the `grads` (what bwds accumulates into) get their values from before
    the launch back, and it runs again (at most MAX_GROWS times)."""
    if fn._status.get(spec) is None or not fn.module.grow_tape:
        return launch(fn._kernels[spec])
    before = [g.to_numpy().copy() for g in grads]
    for attempt in range(MAX_GROWS + 1):
        try:
            return launch(fn._kernels[spec])
        except LoopOverrunError as e:
            if attempt == MAX_GROWS or not grow_max_iters(fn.module.ir, e.slot, e.count):
                raise
            for g, b in zip(grads, before):
                g.copy_from_numpy(b)
            forget_kernels(fn.module)
            fn._kernels[spec] = fn._compile(spec)
    raise AssertionError("unreachable")
