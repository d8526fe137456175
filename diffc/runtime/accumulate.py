"""Launching accumulate-gradients' kernels (passes/accumulate_gradients.py) in place of an entry
point's own kernel.

For an entry point @K the pass adds @K__accum (a grid-stride loop over @K's work-items, in
groups of its own size) and @K__accum_finish (deterministic mode's fixed-order sum of per-group
partial sums). A 1-D dispatch of @K runs @K__accum over fewer work-items, with @K's arguments
followed by (diffc_groups = @K's group count, diffc_partials, diffc_deterministic); in
deterministic mode @K__accum_finish follows, one work-group per slot, with @K's arguments and (groups
launched, partials).

How the kernels are built (DIFFC_ACCUMULATE, DIFFC_ACCUM_WORK_GROUP, DIFFC_ACCUM_FINISH_GROUP,
DIFFC_ACCUM_LOCAL_BYTES, DIFFC_ACCUM_LOCAL_SUMS) is part of the kernel settings
(diffc/pipeline.py, diffc/kernel_settings.py: the group sizes each device gets); how they are
launched is here:

    DIFFC_DETERMINISTIC=0    one atomic per group and slot instead of the (default) deterministic
                             partial sums and finish kernel (or dispatch(deterministic=False))
    DIFFC_ACCUM_GROUPS=N     work-groups per compute unit (default 4 on a CPU, 8 on a GPU)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from diffc.runtime.waiting import wait

# The default: per-group partial sums and the finish kernel (deterministic), which measured faster
# than one half-precision atomic per group and slot at every batch on an H100 (0.43 / 1.34 ms at
# 2^18 for the MLP's learnGradient: 148 slots' atomics from hundreds of groups contend).
DETERMINISTIC = os.environ.get("DIFFC_DETERMINISTIC", "1") == "1"


@dataclass
class AccumulatedKernel:
    """An entry point's accumulated kernels (the compiler's AccumulatedPlan: `plan`) and what their
    launches keep."""

    plan: object  # kernel_program.AccumulatedPlan
    kernels: dict = field(default_factory=dict)  # cl.Kernel objects, built on first use
    partials: object = None  # the per-group partial sums' buffer (grown as needed)
    partials_size: int = 0

    @classmethod
    def of(cls, plan) -> AccumulatedKernel:
        return cls(plan)

    def __getattr__(self, name: str):  # the plan's fields: of, c_name, slots, group, proofs, ...
        if name == "plan":
            raise AttributeError(name)
        return getattr(self.plan, name)


def _groups_per_unit(dev) -> int:
    env = os.environ.get("DIFFC_ACCUM_GROUPS")
    if env:
        return max(1, int(env))
    return 4 if dev.kind == "cpu" else 8


def launched_groups(acc: AccumulatedKernel, work_items: int) -> int:
    """How many groups of @K__accum a dispatch of `work_items` of @K launches: enough for the
    device's compute units (_groups_per_unit each), never more than the work-items need."""
    from diffc.runtime.device import device

    dev = device()
    return max(1, min(-(-work_items // acc.group), dev.cl_device.max_compute_units * _groups_per_unit(dev)))


class Events:
    """The two launches of deterministic mode as one event: wait() waits for both, profile
    spans the first's start to the last's end."""

    def __init__(self, first, last):
        self.first, self.last = first, last

    def wait(self) -> None:
        wait(self.last)

    @property
    def profile(self):
        first, last = self.first, self.last

        class _Profile:
            start = first.profile.start
            end = last.profile.end

        return _Profile()


def launches(prog, acc: AccumulatedKernel, args: list, names: list[str], global_size, deterministic: bool | None):
    """(launches, combine, keep) that run the entry point's dispatch through its accumulated
    kernels: (cl.Kernel of their own with the arguments set, global size, local size) in order,
    how to make one event of theirs, and the buffers they point at. `args` are the entry
    point's kernel arguments, `names` their parameters' names: the accumulated kernels take them
    by name, with their own (groups, partial sums, mode, and bounds-check's length of the
    partial sums where it added one)."""
    import pyopencl as cl

    from diffc.runtime.device import device

    dev = device()
    virtual = global_size[0] // acc.entry_group
    groups = launched_groups(acc, global_size[0])
    det = DETERMINISTIC if deterministic is None else bool(deterministic)
    # (in both modes: the kernel's stores of partial sums are then proven in bounds at launch,
    # though only deterministic mode runs them)
    need = groups * acc.slots * 4
    if acc.partials is None or acc.partials_size < need:
        acc.partials = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, max(need, 4))
        acc.partials_size = max(need, 4)
    index = prog.index_dtype.type
    values = dict(zip(names, args))
    values.update({acc.partials_param: acc.partials, acc.mode_param: np.int32(1 if det else 0),
                   acc.partials_length_param: index(acc.partials_size // 4)})
    main_args = [index(virtual) if n == acc.groups_param else values[n] for n in acc.params]
    main = cl.Kernel(prog.program, _variant(acc.c_name, acc.inbounds, acc.proofs, acc.params, main_args,
                                            (groups * acc.group, 1, 1)))
    main.set_args(*main_args)
    out = [(main, (groups * acc.group, 1, 1), (acc.group, 1, 1))]
    if not det:
        return out, None, [acc.partials]
    finish_args = [index(groups) if n == acc.groups_param else values[n] for n in acc.finish_params]
    finish_size = (acc.slots * acc.finish_group, 1, 1)  # one group per slot
    finish = cl.Kernel(prog.program, _variant(acc.finish_c_name, acc.finish_inbounds, acc.finish_proofs,
                                              acc.finish_params, finish_args, finish_size))
    finish.set_args(*finish_args)
    out.append((finish, finish_size, (acc.finish_group, 1, 1)))
    return out, lambda events: Events(events[0], events[-1]), [acc.partials]


def _variant(name: str, inbounds: str | None, proofs: tuple, params: list, args: list, global_size) -> str:
    """The kernel to launch: its __inbounds variant where the arguments prove its accesses in
    bounds (diffc/kernel_support/bounds_proofs.py), else the checked one."""
    from diffc.runtime.bounds import proven

    if not proofs:
        return name
    values = dict(zip(params, args))
    return inbounds if proven(proofs, values.__getitem__, global_size) else name
