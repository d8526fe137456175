"""Emitter options, the emitter's error, and choosing options for a pyopencl device."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.ir import Operation

from diffc.diagnostics import DiffcError, SourceLocation, format_diagnostic, op_location

ATOMICS = ("cmpxchg", "ext", "ptx")
INDEX_TYPES = ("long", "int")
TARGETS = ("opencl", "cuda")


@dataclass(frozen=True)
class EmitOptions:
    """How the OpenCL C is printed.

    atomics     float atomic add: "cmpxchg" (an atomic_cmpxchg loop on the int bits: works
                everywhere), "ext" (cl_ext_float_atomics' atomic_fetch_add_explicit; build with
                -cl-std=CL3.0 or CL2.0), "ptx" (NVIDIA inline PTX, sm_70+: a global add whose
                old value is unused is warp-aggregated, then one red.global.add.{f32,noftz.f16,s32}
                per address and warp; local memory and fetch-adds fall back to cmpxchg).
    index_type  the C type of `index` values: "long" (64 bit, the default) or "int".
    unroll      loops whose trip count is a constant of at most this many iterations get
                `#pragma unroll` (0: none). For CPU devices: PoCL's LLVM leaves them rolled, and
                an index into a value array inside one stays a chain of selects (the MLP's
                learnGradient ran 7x faster unrolled on PoCL); NVIDIA's compiler chooses well
                without it (unrolled, the same kernel with its bounds checks spilled registers and ran 4x
                slower on an H100). A loop that holds a barrier is left rolled here (PoCL builds a
                work-item loop per barrier of each copy).
    reassociate loops marked kernel.REASSOCIATE (coopVecMatMul's dot products) open with
                `#pragma clang fp reassociate(on)`, so that a clang-based compiler may reorder
                their sums. For CPU devices: PoCL's LLVM then vectorizes each dot product (a
                float sum kept in order cannot be); the CoopVec network's learnGradient
                (bench/bench_coopvec.py) ran 5.4x faster on PoCL. Off elsewhere: NVIDIA's
                compiler takes no such pragma, and a work-item's sum in order is not its bottleneck.
    target      "opencl" (OpenCL C) or "cuda" (CUDA C for NVRTC: the same statements over a prelude
                of device functions that give OpenCL's builtins their CUDA meaning (cuda_prelude.py);
                `extern "C" __global__` kernels, `__shared__` local arrays, vectors built by
                make_/splat functions and read by .x/.y/.z/.w; atomics are always "ptx").
    """

    atomics: str = "cmpxchg"
    index_type: str = "long"
    unroll: int = 0
    reassociate: bool = False
    target: str = "opencl"

    def __post_init__(self) -> None:
        if self.atomics not in ATOMICS:
            raise DiffcError(f"error: unknown atomics strategy '{self.atomics}' (choose from {', '.join(ATOMICS)})")
        if self.index_type not in INDEX_TYPES:
            raise DiffcError(f"error: unknown index type '{self.index_type}' (choose from {', '.join(INDEX_TYPES)})")
        if self.target not in TARGETS:
            raise DiffcError(f"error: unknown target '{self.target}' (choose from {', '.join(TARGETS)})")
        if self.target == "cuda" and self.atomics != "ptx":
            object.__setattr__(self, "atomics", "ptx")  # CUDA is NVIDIA's: its inline PTX always builds

    @property
    def cuda(self) -> bool:
        return self.target == "cuda"


class OpenCLEmitError(DiffcError):
    """An op or type the OpenCL emitter cannot print; the message names the op and where it is."""

    location: SourceLocation | None = None
    detail: str | None = None  # the message without location: tools add the source line to it

    @classmethod
    def at(cls, op: Operation, message: str) -> "OpenCLEmitError":
        where = op_location(op, enclosing=True)
        detail = f"'{op.name}' {message}"
        error = cls(format_diagnostic(where, detail))
        error.location, error.detail = where, detail
        return error


def atomics_for_device(device: Any) -> str:
    """The float atomic add strategy for a pyopencl device: "ext" when the device reports
    cl_ext_float_atomics, "ptx" on NVIDIA's OpenCL, else "cmpxchg"."""
    extensions = str(getattr(device, "extensions", "") or "").split()
    if "cl_ext_float_atomics" in extensions and _has_fp32_global_add(device):
        return "ext"
    vendor = str(getattr(device, "vendor", "") or "")
    try:
        platform = str(device.platform.name)
    except Exception:
        platform = ""
    if "NVIDIA" in vendor.upper() or "NVIDIA" in platform.upper():
        return "ptx"
    return "cmpxchg"


_CL_DEVICE_SINGLE_FP_ATOMIC_CAPABILITIES_EXT = 0x4231
_CL_DEVICE_GLOBAL_FP_ATOMIC_ADD_EXT = 1 << 1


def _has_fp32_global_add(device: Any) -> bool:
    """cl_ext_float_atomics may lack fp32 add: ask the capability bits when pyopencl can."""
    try:
        caps = device.get_info(_CL_DEVICE_SINGLE_FP_ATOMIC_CAPABILITIES_EXT)
    except Exception:
        return True  # the extension string is all we know
    try:
        return bool(int(caps) & _CL_DEVICE_GLOBAL_FP_ATOMIC_ADD_EXT)
    except (TypeError, ValueError):
        return True


# Constant-trip loops unrolled on CPU devices, up to this many iterations.
CPU_UNROLL = 32


def options_for_device(device: Any, index_type: str = "long") -> EmitOptions:
    cpu = is_cpu(device)
    return EmitOptions(atomics=atomics_for_device(device), index_type=index_type, unroll=CPU_UNROLL if cpu else 0,
                       reassociate=cpu)


def is_cpu(device: Any) -> bool:
    try:
        import pyopencl as cl

        return bool(int(device.type) & cl.device_type.CPU)
    except Exception:
        return False


def build_options(options: EmitOptions) -> list[str]:
    """Options the program must be built with for what `options` prints."""
    if options.atomics == "ext":
        return ["-cl-std=CL3.0"]
    return []
