"""IR -> OpenCL C (`diffc-opt -t opencl`, `emit_opencl`)."""

from .module import emit_cuda, emit_opencl
from .options import (
    EmitOptions,
    OpenCLEmitError,
    atomics_for_device,
    build_options,
    options_for_device,
)

__all__ = [
    "EmitOptions",
    "OpenCLEmitError",
    "atomics_for_device",
    "build_options",
    "emit_cuda",
    "emit_opencl",
    "options_for_device",
]
