"""`diffc-opt -t opencl` (options: `-t 'opencl{atomics=ptx index_type=int unroll=32 reassociate=true}'`) and
`diffc-opt -t cuda` (CUDA C for NVRTC; options index_type, unroll)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

from .module import emit_opencl
from .options import EmitOptions


@dataclass(frozen=True)
class OpenCLTarget(Target):
    name = "opencl"

    atomics: str = "cmpxchg"
    index_type: str = "long"
    unroll: int = 0
    reassociate: bool = False

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_opencl(module, EmitOptions(atomics=self.atomics, index_type=self.index_type, unroll=self.unroll,
                                                     reassociate=self.reassociate)))


@dataclass(frozen=True)
class CudaTarget(Target):
    name = "cuda"

    index_type: str = "long"
    unroll: int = 0

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_opencl(module, EmitOptions(atomics="ptx", index_type=self.index_type, unroll=self.unroll,
                                                     target="cuda")))
