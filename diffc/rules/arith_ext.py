"""Ops of MLIR's arith dialect that xDSL 0.74 lacks, defined here so rules and the interpreter
can cover them. `extend_arith_dialect()` adds them to xDSL's `arith` dialect (diffc.registry
calls it on import, which is how both diffc-opt and stock xdsl-opt, through the universe entry
point, come to parse them); `load_into(ctx)` loads them into one context.

* `arith.remf`: floating-point remainder, C's fmod (the result has the sign of the dividend).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.builtin import AnyFloat, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

_floatlike = base(AnyFloat) | base(VectorType)


@irdl_op_definition
class RemFOp(IRDLOperation):
    name = "arith.remf"

    T: ClassVar = VarConstraint("T", _floatlike)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    fastmath = prop_def(FastMathFlagsAttr, default_value=FastMathFlagsAttr("none"))

    traits = traits_def(Pure())

    assembly_format = "$lhs `,` $rhs (`fastmath` `` $fastmath^)? attr-dict `:` type($result)"

    def __init__(self, lhs: Operation | SSAValue, rhs: Operation | SSAValue):
        lhs = SSAValue.get(lhs)
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])


EXTRA_OPS: tuple[type[Operation], ...] = (RemFOp,)


def extend_arith_dialect() -> None:
    """Adds the extra ops to xDSL's `Arith` dialect object, so that any context that loads
    `arith` afterwards knows them. A universe can only add whole dialects, not ops to one that
    xDSL already registers, hence this. An op xDSL itself defines (a later version) is kept."""
    from xdsl.dialects.arith import Arith

    from diffc.xdsl_adapter import add_ops_to_dialect

    add_ops_to_dialect(Arith, EXTRA_OPS)


def load_into(ctx: Context) -> None:
    """Makes the extra ops parseable in `ctx` (a no-op for ops already loaded)."""
    for op in EXTRA_OPS:
        if ctx.get_optional_op(op.name) is None:
            ctx.load_op(op)
