"""The kernel settings (diffc/pipeline.py's KernelSettings) for a device: its atomics, its
loop unrolling and the group sizes accumulate-gradients fits it, with the DIFFC_* variables
applied. Dispatch, `diffc run` and `diffc compile --device` take their settings from here.

    settings = for_device(cl_device)                       # what a dispatch on it builds
    settings = for_device(None)                            # no device: portable atomics, a GPU's sizes
    settings = for_device(cl_device, bounds_check=False)   # changed fields
"""

from __future__ import annotations

from typing import Any

from diffc.pipeline import KernelSettings, environment_settings

GPU_WORK_GROUP = 64
CPU_WORK_GROUP = 1
GPU_FINISH_GROUP = 256
CPU_FINISH_GROUP = 1


def for_device(cl_device, **changes: Any) -> KernelSettings:
    """The settings kernels are built with for `cl_device` (a pyopencl device, or None: none in
    particular), the environment's DIFFC_* variables, then `changes` (field -> value)."""
    from diffc.backend.opencl.options import options_for_device

    env = environment_settings()
    fields: dict[str, Any] = dict(env)
    if cl_device is not None:
        emit = options_for_device(cl_device)
        if "interchange_matvec" not in env:
            fields["interchange_matvec"] = emit.reassociate  # (CPUs: see passes/interchange_matvec.py)
        fields.update(atomics=emit.atomics, index_type=emit.index_type, unroll=emit.unroll, reassociate=emit.reassociate,
                      accumulate_work_group=work_group(cl_device, env.get("accumulate_work_group", 0)),
                      accumulate_finish_group=finish_group(cl_device, env.get("accumulate_finish_group", 0)),
                      accumulate_local_bytes=env.get("accumulate_local_bytes") or local_bytes(cl_device))
        if env.get("cooperative_mma") and emit.atomics == "ptx" and not mma_builds(cl_device):
            fields["cooperative_mma"] = False  # asked for, but this NVIDIA OpenCL does not build mma.sync
    return KernelSettings(**fields).changed(**changes)


def local_bytes(cl_device) -> int:
    """Local memory for one chunk of accumulate-gradients' transposed reduction: the device's less
    4 KiB (the accumulated kernel allocates nothing else there), at most 256 KiB."""
    return max(4096, min(int(cl_device.local_mem_size) - 4096, 1 << 18))


def work_group(cl_device, asked: int = 0) -> int:
    """Work-items per group of the accumulated kernel on this device (`asked`: a size wanted,
    DIFFC_ACCUM_WORK_GROUP; 0: the device's kind chooses).

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
    if asked:
        return min(asked, cl_device.max_work_group_size)
    from diffc.backend.opencl.options import is_cpu

    return CPU_WORK_GROUP if is_cpu(cl_device) else min(GPU_WORK_GROUP, cl_device.max_work_group_size)


def finish_group(cl_device, asked: int = 0) -> int:
    """Work-items of each of the finish kernel's groups (one group per slot; a power of two;
    `asked`: DIFFC_ACCUM_FINISH_GROUP, 0: the device's kind chooses).

    GPUs: 256, each work-item adding every 256th group's partial sums, then a tree. CPUs: 1,
    the one work-item adding the slot's partial sums in group order: there are few groups
    (compute units x 4), and PoCL runs a group of 256 work-items with a barrier per tree
    level. Measured on PoCL (2 cores, load ~3), the MLP's finish kernel took 0.15 ms with 256
    work-items, 0.03-0.04 with 16, 0.009 with 1, at 2^14 and 2^18 (learnGradient: 1.1 / 34 ms).
    """
    from diffc.backend.opencl.options import is_cpu

    n = asked or (CPU_FINISH_GROUP if is_cpu(cl_device) else GPU_FINISH_GROUP)
    return _power_of_two_at_most(min(n, cl_device.max_work_group_size))


def _power_of_two_at_most(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


_MMA_BUILDS: dict[Any, bool] = {}


def mma_builds(cl_device) -> bool:
    """Whether the device's OpenCL builds and runs the tensor-core group product (inline PTX
    mma.sync; diffc/backend/opencl/mma_tiles.py): one 16 x 8 x 16 product of ones must give 16s.
    Asked once per device; any failure (no PTX, no sm_80, too little local memory) says no."""
    key = getattr(cl_device, "int_ptr", id(cl_device))
    if key not in _MMA_BUILDS:
        _MMA_BUILDS[key] = _try_mma(cl_device)
    return _MMA_BUILDS[key]


def _try_mma(cl_device) -> bool:
    try:
        import numpy as np
        import pyopencl as cl

        from diffc.backend.opencl.mma_tiles import PROBE

        if int(cl_device.local_mem_size) < 40960 + 4096:
            return False
        ctx = cl.Context([cl_device])
        queue = cl.CommandQueue(ctx)
        program = cl.Program(ctx, PROBE).build()
        out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 32 * 4)
        program.diffc_mma_probe_kernel(queue, (32,), (32,), out)
        got = np.zeros(32, np.float32)
        cl.enqueue_copy(queue, got, out)
        queue.finish()
        return bool(np.all(got == 16.0))
    except Exception:
        return False
