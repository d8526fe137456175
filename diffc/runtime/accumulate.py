"""Launching accumulate-gradients' kernels (passes/accumulate_gradients.py) in place of an entry
point's own kernel.

For an entry point @K the pass adds @K__accum (persistent work-groups looping over @K's groups)
and @K__accum_finish (deterministic mode's fixed-order sum of per-group partial sums). A 1-D
dispatch of @K runs @K__accum over fewer groups, with @K's arguments followed by
(diffc_groups = @K's group count, diffc_partials, diffc_deterministic); in deterministic mode
@K__accum_finish follows, one work-group, with @K's arguments and (groups launched, partials).

    DIFFC_ACCUMULATE=0       build without the pass (reduce-atomics alone)
    DIFFC_DETERMINISTIC=1    deterministic mode for every dispatch (or dispatch(deterministic=True))
    DIFFC_ACCUM_GROUPS=N     persistent work-groups per compute unit (default 4 on a CPU, 8 on a GPU)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

ENABLED = os.environ.get("DIFFC_ACCUMULATE", "1") != "0"
DETERMINISTIC = os.environ.get("DIFFC_DETERMINISTIC", "0") == "1"


@dataclass
class AccumulatedKernel:
    of: str  # the entry point
    c_name: str
    finish_c_name: str
    slots: int
    group: int  # work-items per group
    kernels: dict = field(default_factory=dict)  # cl.Kernel objects, built on first use
    partials: object = None  # the per-group partial sums' buffer (grown as needed)
    partials_size: int = 0


def local_bytes(cl_device) -> int:
    """Local memory for one chunk of the transposed reduction: half the device's, at most 256 KiB."""
    return max(4096, min(int(cl_device.local_mem_size) // 2, 1 << 18))


def apply_pass(ctx, low, cl_device) -> None:
    from diffc.passes.accumulate_gradients import AccumulateGradientsPass

    AccumulateGradientsPass(local_bytes=local_bytes(cl_device)).apply(ctx, low)


def plans(low, names: dict[str, str]) -> dict[str, AccumulatedKernel]:
    """Entry point name -> its accumulated kernels, from the lowered module and the emitter's
    C names."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import IntegerAttr, StringAttr

    from diffc.passes.accumulate_gradients import ACCUMULATE_OF, ACCUMULATE_SLOTS
    from diffc.passes.reduce_atomics import _work_group_size

    out = {}
    for f in low.ops:
        if not isinstance(f, func.FuncOp):
            continue
        of = f.attributes.get(ACCUMULATE_OF)
        slots = f.attributes.get(ACCUMULATE_SLOTS)
        if isinstance(of, StringAttr) and isinstance(slots, IntegerAttr):
            name = f.sym_name.data
            out[of.data] = AccumulatedKernel(of.data, names[name], names[f"{of.data}__accum_finish"],
                                             slots.value.data, _work_group_size(f)[0])
    return out


def _groups_per_unit(dev) -> int:
    env = os.environ.get("DIFFC_ACCUM_GROUPS")
    if env:
        return max(1, int(env))
    return 4 if dev.kind == "cpu" else 8


class Events:
    """The two launches of deterministic mode as one event: wait() waits for both, profile
    spans the first's start to the last's end."""

    def __init__(self, first, last):
        self.first, self.last = first, last

    def wait(self) -> None:
        self.last.wait()

    @property
    def profile(self):
        first, last = self.first, self.last

        class _Profile:
            start = first.profile.start
            end = last.profile.end

        return _Profile()


def launch(prog, acc: AccumulatedKernel, args: list, global_size, deterministic: bool | None):
    """Runs the entry point's dispatch through its accumulated kernels; returns the event."""
    import pyopencl as cl

    from diffc.runtime.device import device

    dev = device()
    virtual = global_size[0] // acc.group
    groups = max(1, min(virtual, dev.cl_device.max_compute_units * _groups_per_unit(dev)))
    det = DETERMINISTIC if deterministic is None else bool(deterministic)
    need = groups * acc.slots * 4 if det else 4
    if acc.partials is None or acc.partials_size < need:
        acc.partials = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, max(need, 4))
        acc.partials_size = max(need, 4)
    if not acc.kernels:
        acc.kernels["main"] = cl.Kernel(prog.program, acc.c_name)
        acc.kernels["finish"] = cl.Kernel(prog.program, acc.finish_c_name)
    index = prog.index_dtype.type
    main = acc.kernels["main"]
    main.set_args(*args, index(virtual), acc.partials, np.int32(1 if det else 0))
    first = cl.enqueue_nd_range_kernel(dev.queue, main, (groups * acc.group, 1, 1), (acc.group, 1, 1))
    if not det:
        return first
    finish = acc.kernels["finish"]
    finish.set_args(*args, index(groups), acc.partials)
    last = cl.enqueue_nd_range_kernel(dev.queue, finish, (acc.group, 1, 1), (acc.group, 1, 1))
    return Events(first, last)
