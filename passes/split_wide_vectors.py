"""split-wide-vectors: every `vector<N x T>` whose N OpenCL C has no vector type for (a wide
`CoopVec<T, N>`) becomes pieces it has (diffc/kernel_support/wide_vectors.py says how). Runs last
before the OpenCL emitter, which also runs it itself on a copy of a module that has wide vectors."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from diffc.kernel_support.wide_vectors import split_wide_vectors


@dataclass(frozen=True)
class SplitWideVectorsPass(ModulePass):
    name = "split-wide-vectors"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        split_wide_vectors(op)
