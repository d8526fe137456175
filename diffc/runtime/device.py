"""Which OpenCL device diffc runs on, chosen once per process.

`DIFFC_DEVICE=gpu|cpu|auto` (auto, the default, takes a GPU device from any platform and falls
back to a CPU device: PoCL's where one compiles, else the Intel CPU runtime that pip installs
beside diffc, registered with the ICD loader by runtime/cpu_runtime.py). `DIFFC_DEVICE_INDEX=n`
starts at the n-th of those devices (modulo their number), so that one process per GPU
(diffc.distributed, under torchrun) takes its own. The context and the in-order, profiling
queue are created once and shared by every Tensor and call.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from dataclasses import dataclass, field

from diffc.runtime.waiting import finish
from diffc.runtime.errors import DeviceError

_CHOICES = ("auto", "gpu", "cpu")


@dataclass(frozen=True)
class DeviceInfo:
    """What `diffc.device()` says: the chosen platform and device, with what they support."""

    platform: str
    name: str
    kind: str  # "gpu" | "cpu" | "other"
    vendor: str
    version: str
    driver_version: str
    extensions: frozenset[str]
    max_work_group_size: int
    compute_units: int
    global_mem_bytes: int
    cl_device: object = field(repr=False, compare=False)
    context: object = field(repr=False, compare=False)
    queue: object = field(repr=False, compare=False)

    @property
    def has_fp64(self) -> bool:
        return "cl_khr_fp64" in self.extensions

    @property
    def has_float_atomics(self) -> bool:
        return "cl_ext_float_atomics" in self.extensions

    @property
    def is_nvidia(self) -> bool:
        return "NVIDIA" in self.platform.upper() or "NVIDIA" in self.vendor.upper()

    @property
    def is_pocl(self) -> bool:
        return "Portable Computing Language" in self.platform or "pocl" in self.version.lower()

    @property
    def atomics(self) -> str:
        """How float atomic adds are done on this device: "float_ext", "ptx" or "cmpxchg"."""
        if self.has_float_atomics:
            return "float_ext"
        if self.is_nvidia:
            return "ptx"
        return "cmpxchg"

    def __repr__(self) -> str:
        fp64 = "fp64" if self.has_fp64 else "no fp64"
        return (
            f"<diffc device {self.kind}: {self.name!r} on {self.platform!r} "
            f"({self.version}, driver {self.driver_version}; {fp64}, atomics={self.atomics}, "
            f"{self.compute_units} compute units, {self.global_mem_bytes / 2**30:.1f} GiB)>"
        )


_lock = threading.Lock()
_current: DeviceInfo | None = None


def _kind_of(dev) -> str:
    import pyopencl as cl

    if dev.type & cl.device_type.GPU:
        return "gpu"
    if dev.type & cl.device_type.CPU:
        return "cpu"
    return "other"


_PROBE = "__kernel void diffc_probe(__global float *a) { a[get_global_id(0)] += 1.0f; }"


def _candidates(wanted: str) -> list:
    """The devices that fit `wanted`, best first: GPUs, then CPUs (PoCL's first)."""
    import pyopencl as cl

    from diffc.runtime import cpu_runtime

    cpu_runtime.register()  # before the loader's first read of its vendor folder
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:  # no ICD at all
        raise DeviceError(f"error: no OpenCL platform found ({e})") from None
    found = [(p, d) for p in platforms for d in p.get_devices()]
    if not found:
        raise DeviceError("error: no OpenCL device found on any platform")
    gpus = [(p, d) for p, d in found if _kind_of(d) == "gpu"]
    cpus = [(p, d) for p, d in found if _kind_of(d) == "cpu"]
    cpus.sort(key=lambda pd: "Portable Computing Language" not in pd[0].name)
    others = [(p, d) for p, d in found if (p, d) not in gpus and (p, d) not in cpus]
    chosen = {"gpu": gpus, "cpu": cpus, "auto": gpus + cpus + others}[wanted]
    if not chosen:
        names = ", ".join(f"{d.name.strip()} ({p.name.strip()})" for p, d in found)
        raise DeviceError(f"error: DIFFC_DEVICE={wanted} but no such device is available; found: {names}")
    return chosen


def _probe(platform, dev):
    """A context and queue on `dev` if it can build and run a kernel, else the reason why not.
    (A PoCL whose LLVM does not know the host CPU lists a device that cannot compile.)"""
    import numpy as np
    import pyopencl as cl

    try:
        ctx = cl.Context([dev])
        queue = cl.CommandQueue(ctx, dev, properties=cl.command_queue_properties.PROFILING_ENABLE)
        with warnings.catch_warnings():  # a build log that says "done" (Intel's) is no news
            warnings.simplefilter("ignore", cl.CompilerWarning)
            prg = cl.Program(ctx, _PROBE).build(cache_dir=False)
        a = np.zeros(4, np.float32)
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
        prg.diffc_probe(queue, (4,), None, buf)
        cl.enqueue_copy(queue, a, buf)
        if not (a == 1).all():
            return None, "the probe kernel computed wrong values"
        return (ctx, queue), ""
    except Exception as e:  # any failure means: not this device
        reason = " ".join(str(e).split())
        return None, reason[-200:]


def _rotated(candidates: list) -> list:
    """The candidates from the DIFFC_DEVICE_INDEX-th on, then the earlier ones (a fallback if
    that device cannot build)."""
    raw = os.environ.get("DIFFC_DEVICE_INDEX", "0").strip() or "0"
    try:
        index = int(raw)
    except ValueError:
        raise DeviceError(f"error: DIFFC_DEVICE_INDEX must be a whole number; got '{raw}'") from None
    if index < 0:
        raise DeviceError(f"error: DIFFC_DEVICE_INDEX cannot be negative; got {index}")
    k = index % len(candidates)
    return candidates[k:] + candidates[:k]


def device() -> DeviceInfo:
    """The device diffc uses in this process (chosen on first use)."""
    global _current
    if _current is not None:
        return _current
    with _lock:
        if _current is None:
            wanted = os.environ.get("DIFFC_DEVICE", "auto").strip().lower() or "auto"
            if wanted not in _CHOICES:
                raise DeviceError(f"error: DIFFC_DEVICE must be one of gpu, cpu, auto; got '{wanted}'")

            failures = []
            for platform, dev in _rotated(_candidates(wanted)):
                ok, why = _probe(platform, dev)
                if ok is not None:
                    ctx, queue = ok
                    break
                failures.append(f"  {dev.name.strip()} ({platform.name.strip()}, {platform.version.strip()}): {why}")
            else:
                raise DeviceError(
                    f"error: no OpenCL device for DIFFC_DEVICE={wanted} can build a kernel:\n"
                    + "\n".join(failures)
                    + "\n(diffc's own dependency intel-opencl-rt gives a CPU device on x86-64 Linux: "
                    "`pip install intel-opencl-rt intel-cmplr-lib-rt` if it is missing)"
                )
            _current = DeviceInfo(
                platform=platform.name.strip(),
                name=dev.name.strip(),
                kind=_kind_of(dev),
                vendor=dev.vendor.strip(),
                version=dev.version.strip(),
                driver_version=dev.driver_version.strip(),
                extensions=frozenset(dev.extensions.split()),
                max_work_group_size=int(dev.max_work_group_size),
                compute_units=int(dev.max_compute_units),
                global_mem_bytes=int(dev.global_mem_size),
                cl_device=dev,
                context=ctx,
                queue=queue,
            )
    return _current


def synchronize() -> None:
    """Waits until every command queued on the device has finished; raises the error a checked
    launch left for this moment (runtime/pending.py)."""
    from diffc.runtime import pending

    finish(device().queue)
    pending.settle()


# Changes to the kernel settings this process builds with, over the device's and the DIFFC_*
# variables' (a KernelSettings field -> its value): benches and tests compare builds with them.
SETTINGS: dict = {}


def kernel_settings(sanitize: bool):
    """The KernelSettings (diffc/pipeline.py) that kernels for this device are built with;
    `sanitize`: the module's sanitizer mode (its `check`)."""
    from diffc.kernel_settings import for_device

    return for_device(device().cl_device, **{"sanitize": sanitize, **SETTINGS})


@contextlib.contextmanager
def settings_changed(**changes):
    """Kernels built inside are built with these KernelSettings fields changed (SETTINGS)."""
    saved = dict(SETTINGS)
    SETTINGS.update(changes)
    try:
        yield
    finally:
        SETTINGS.clear()
        SETTINGS.update(saved)
