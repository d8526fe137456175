"""Launching accumulate-gradients' kernels (passes/accumulate_gradients.py) in place of an entry
point's own kernel.

For an entry point @K the pass adds @K__accum (a grid-stride loop over @K's work-items, in
groups of its own size) and @K__accum_finish (deterministic mode's fixed-order sum of per-group
partial sums). A 1-D dispatch of @K runs @K__accum over fewer work-items, with @K's arguments
followed by (diffc_groups = @K's group count, diffc_partials, diffc_deterministic); in
deterministic mode @K__accum_finish follows, one work-group per slot, with @K's arguments and (groups
launched, partials).

    DIFFC_ACCUMULATE=0       build without the pass (reduce-atomics alone)
    DIFFC_DETERMINISTIC=0    one atomic per group and slot instead of the (default) deterministic
                             partial sums and finish kernel (or dispatch(deterministic=False))
    DIFFC_ACCUM_GROUPS=N     work-groups per compute unit (default 4 on a CPU, 8 on a GPU)
    DIFFC_ACCUM_WORK_GROUP=R work-items per group of @K__accum (default: work_group(device))
    DIFFC_ACCUM_FINISH_GROUP=F work-items per group of @K__accum_finish (default: finish_group(device))
    DIFFC_ACCUM_LOCAL_BYTES=B local memory for the transposed reduction (default: the device's less 4 KiB)
    DIFFC_ACCUM_LOCAL_SUMS=1 accumulate in local memory rather than private (the pass's local_sums)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from diffc.runtime.waiting import wait

ENABLED = os.environ.get("DIFFC_ACCUMULATE", "1") != "0"
# The default: per-group partial sums and the finish kernel (deterministic), which measured faster
# than one half-precision atomic per group and slot at every batch on an H100 (0.43 / 1.34 ms at
# 2^18 for the MLP's learnGradient: 148 slots' atomics from hundreds of groups contend).
DETERMINISTIC = os.environ.get("DIFFC_DETERMINISTIC", "1") == "1"


@dataclass
class AccumulatedKernel:
    of: str  # the entry point
    c_name: str
    finish_c_name: str
    slots: int
    group: int  # work-items per group of the accumulated kernel
    entry_group: int = 0  # the entry point's (its dispatch's virtual groups)
    finish_group: int = 0  # work-items of each of the finish kernel's groups (one group per slot)
    params: list = field(default_factory=list)  # the accumulated kernel's parameter names, in order
    finish_params: list = field(default_factory=list)  # the finish kernel's
    kernels: dict = field(default_factory=dict)  # cl.Kernel objects, built on first use
    partials: object = None  # the per-group partial sums' buffer (grown as needed)
    partials_size: int = 0
    proofs: tuple = ()  # bounds.Proof of the accumulated kernel's accesses (bounds-check)
    inbounds: str | None = None  # the C name of its variant without their checks
    finish_proofs: tuple = ()  # the finish kernel's
    finish_inbounds: str | None = None


LOCAL_BYTES = int(os.environ.get("DIFFC_ACCUM_LOCAL_BYTES", "0"))  # 0: local_bytes(device)


def local_bytes(cl_device) -> int:
    """Local memory for one chunk of the transposed reduction: the device's less 4 KiB (the
    accumulated kernel allocates nothing else there), at most 256 KiB."""
    if LOCAL_BYTES:
        return LOCAL_BYTES
    return max(4096, min(int(cl_device.local_mem_size) - 4096, 1 << 18))


def settings() -> tuple:
    """What the built kernels depend on (part of the module cache's key): the chosen group size
    depends on the device, so it is named here too."""
    from diffc.runtime.device import device

    return (ENABLED, work_group(device().cl_device), finish_group(device().cl_device), LOCAL_BYTES, LOCAL_SUMS)


# DIFFC_ACCUM_WORK_GROUP, or 0: work_group(device) chooses.
WORK_GROUP = int(os.environ.get("DIFFC_ACCUM_WORK_GROUP", "0"))
GPU_WORK_GROUP = 64
CPU_WORK_GROUP = 1


def work_group(cl_device) -> int:
    """Work-items per group of the accumulated kernel on this device.

    GPUs: 64, few enough that the transposed reduction of all of a group's slots fits in local
    memory at once (one barrier) and registers allow several groups per compute unit.
    CPUs: 1. PoCL runs a group's work-items in a loop on one core; with a barrier in the
    kernel it splits that loop at the barrier and keeps every work-item's private sums in
    memory across it (for the MLP, 148 sums per work-item, stored and reloaded each sample).
    A group of one has no barrier to split at, so the sums stay in registers. Measured with
    bench/bench_accumulate_sweep.py (`--log2 14 18 --work-group 1 4 16 64 --groups 1 2 4 8`,
    PoCL on this machine's 2 shared cores, load average 3.5 rising to 6.9), the MLP's
    deterministic learnGradient at 4 groups per compute unit: R = 1: 1.21 / 35.1 ms at 2^14 /
    2^18; R = 4: 4.5 / 211; R = 16: 14.6 / 282; R = 64: 19.3 / 321 (16x / 9x slower than R = 1).
    Each work-item then adds more samples in turn (a longer float sum per slot), and the
    non-deterministic mode adds one total per launched group into a half buffer: the tests'
    rounding bounds count both (tests/rounding.py), whatever R is.
    """
    if WORK_GROUP:
        return min(WORK_GROUP, cl_device.max_work_group_size)
    from diffc.backend.opencl.options import is_cpu

    return CPU_WORK_GROUP if is_cpu(cl_device) else min(GPU_WORK_GROUP, cl_device.max_work_group_size)


LOCAL_SUMS = os.environ.get("DIFFC_ACCUM_LOCAL_SUMS", "0") == "1"  # the pass's local_sums


def apply_pass(ctx, low, cl_device) -> None:
    from diffc.passes.accumulate_gradients import AccumulateGradientsPass

    AccumulateGradientsPass(local_bytes=local_bytes(cl_device), work_group=work_group(cl_device),
                            finish_group=finish_group(cl_device),
                            local_sums=LOCAL_SUMS).apply(ctx, low)


# DIFFC_ACCUM_FINISH_GROUP, or 0: finish_group(device) chooses.
FINISH_GROUP = int(os.environ.get("DIFFC_ACCUM_FINISH_GROUP", "0"))
GPU_FINISH_GROUP = 256
CPU_FINISH_GROUP = 1


def finish_group(cl_device) -> int:
    """Work-items of each of the finish kernel's groups (one group per slot; a power of two).

    GPUs: 256, each work-item adding every 256th group's partial sums, then a tree. CPUs: 1,
    the one work-item adding the slot's partial sums in group order: there are few groups
    (compute units x 4), and PoCL runs a group of 256 work-items with a barrier per tree
    level. Measured on PoCL (2 cores, load ~3), the MLP's finish kernel took 0.15 ms with 256
    work-items, 0.03-0.04 with 16, 0.009 with 1, at 2^14 and 2^18 (learnGradient: 1.1 / 34 ms).
    """
    from diffc.backend.opencl.options import is_cpu

    n = FINISH_GROUP or (CPU_FINISH_GROUP if is_cpu(cl_device) else GPU_FINISH_GROUP)
    return _power_of_two_at_most(min(n, cl_device.max_work_group_size))


def _power_of_two_at_most(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def plans(low, names: dict[str, str]) -> dict[str, AccumulatedKernel]:
    """Entry point name -> its accumulated kernels, from the lowered module and the emitter's
    C names."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import IntegerAttr, StringAttr

    from diffc.passes.accumulate_gradients import ACCUMULATE_OF, ACCUMULATE_SLOTS
    from diffc.passes.reduce_atomics import _work_group_size

    from diffc.passes.lower_entry_points import param_names

    from diffc.passes.bounds_proofs import INBOUNDS_SUFFIX
    from diffc.runtime.bounds import bounds_proofs

    funcs = {f.sym_name.data: f for f in low.ops if isinstance(f, func.FuncOp)}
    proofs = bounds_proofs(low)

    def proven_by(kernel: str) -> tuple[tuple, str | None]:
        own = tuple(p for p in proofs if p.kernel == kernel)
        return own, (names[own[0].variant] if own else None)

    out = {}
    for name, f in funcs.items():
        if name.endswith(INBOUNDS_SUFFIX):
            continue  # bounds-check's variant of an accumulated kernel (its attributes cloned)
        of = f.attributes.get(ACCUMULATE_OF)
        slots = f.attributes.get(ACCUMULATE_SLOTS)
        if isinstance(of, StringAttr) and isinstance(slots, IntegerAttr):
            finish = f"{of.data}__accum_finish"
            out[of.data] = AccumulatedKernel(of.data, names[name], names[finish], slots.value.data,
                                             _work_group_size(f)[0], _work_group_size(funcs[of.data])[0],
                                             _work_group_size(funcs[finish])[0], params=param_names(f),
                                             finish_params=param_names(funcs[finish]))
            out[of.data].proofs, out[of.data].inbounds = proven_by(name)
            out[of.data].finish_proofs, out[of.data].finish_inbounds = proven_by(finish)
    return out


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
    from diffc.passes.accumulate_gradients import DETERMINISTIC as MODE, GROUPS, PARTIALS
    from diffc.runtime.bounds import LEN_PREFIX

    index = prog.index_dtype.type
    values = dict(zip(names, args))
    values.update({PARTIALS: acc.partials, MODE: np.int32(1 if det else 0),
                   LEN_PREFIX + PARTIALS: index(acc.partials_size // 4)})
    main_args = [index(virtual) if n == GROUPS else values[n] for n in acc.params]
    main = cl.Kernel(prog.program, _variant(acc.c_name, acc.inbounds, acc.proofs, acc.params, main_args,
                                            (groups * acc.group, 1, 1)))
    main.set_args(*main_args)
    out = [(main, (groups * acc.group, 1, 1), (acc.group, 1, 1))]
    if not det:
        return out, None, [acc.partials]
    finish_args = [index(groups) if n == GROUPS else values[n] for n in acc.finish_params]
    finish_size = (acc.slots * acc.finish_group, 1, 1)  # one group per slot
    finish = cl.Kernel(prog.program, _variant(acc.finish_c_name, acc.finish_inbounds, acc.finish_proofs,
                                              acc.finish_params, finish_args, finish_size))
    finish.set_args(*finish_args)
    out.append((finish, finish_size, (acc.finish_group, 1, 1)))
    return out, lambda events: Events(events[0], events[-1]), [acc.partials]


def _variant(name: str, inbounds: str | None, proofs: tuple, params: list, args: list, global_size) -> str:
    """The kernel to launch: its __inbounds variant where the arguments prove its accesses in
    bounds (passes/bounds_proofs.py), else the checked one."""
    from diffc.runtime.bounds import proven

    if not proofs:
        return name
    values = dict(zip(params, args))
    return inbounds if proven(proofs, values.__getitem__, global_size) else name
