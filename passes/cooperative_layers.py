"""cooperative-layers: a layer's weight-gradient outer products and bias sums, added by every
work-item of a group, summed over the group's samples in local memory first (a matrix product
with the samples as K), then added once per element and group; with `matvec`, coopVecMatMul's
products as tiles of the group's product too (diffc/kernel_support/cooperative.py says which
loop nests and how).

Kernels accumulate-gradients rewrote (a @K__accum exists) are left to it: it sums few
parameters privately, faster. `report=true` prints one line per loop nest of each kernel:
where the cooperative lowering applied, or why the nest stays per work-item
(`diffc compile --report`)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from diffc.dialects import kernel
from diffc.kernel_support.cooperative import cooperate

ACCUMULATE_OF = "diffc.accumulate_of"  # what accumulate-gradients marks its kernels with


@dataclass(frozen=True)
class CooperativeLayersPass(ModulePass):
    name = "cooperative-layers"

    local_bytes: int = 16384  # local memory for one chunk of the group's rows
    matvec: bool = False  # coopVecMatMul's row loops too
    mma: bool = False  # ... as the group product on the tensor cores (a device whose build takes mma.sync)
    mma_local_bytes: int = 40960  # local memory for its vectors, weights and products
    report: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        accumulated = {f.attributes[ACCUMULATE_OF].data for f in funcs.values()
                       if isinstance(f.attributes.get(ACCUMULATE_OF), StringAttr)}
        for fn in list(funcs.values()):
            if not kernel.is_kernel(fn) or not fn.body.blocks or "diffc.accumulated" in fn.attributes:
                continue
            name = fn.sym_name.data
            if name in accumulated:
                if self.report:
                    print(f"// cooperative-layers @{name}: left to accumulate-gradients")
                continue
            for line in cooperate(fn, funcs, self.local_bytes, self.matvec, self.mma, self.mma_local_bytes):
                if self.report:
                    print(f"// cooperative-layers @{name}: {line}")
