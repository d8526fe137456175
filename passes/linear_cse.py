"""linear-cse: xDSL's `cse` (the same ops replaced, the same dead ops erased, the same IR out),
in time linear in the module: diffc/kernel_support/cse.py. The differentiation pipeline ends with
it; xDSL's pass took 3.6 s of the 10,000-op function's pipelines (bench/bench_compile.py)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from diffc.kernel_support.cse import cse


@dataclass(frozen=True)
class LinearCsePass(ModulePass):
    """xDSL's common subexpression elimination, linear in the module."""

    name = "linear-cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cse(op)
