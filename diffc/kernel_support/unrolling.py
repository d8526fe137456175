"""Copying a loop body for one iteration of an unrolled loop, folding what the constant
induction variable decides.

A body that indexes a private array by the loop counter reads it through a chain of selects
(`i == 1 ? a1 : a0`, `i == 2 ? a2 : ...`); copied for `i = 5`, each compare is a constant and
the chain is one value. Folding while copying keeps an unrolled loop of N iterations at N bodies,
not N bodies and N select chains of the array's length (what the device compiler would fold
anyway, after reading them: the MLP's accumulated kernels carried about 1,500 such compares).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, i1
from xdsl.ir import Operation, SSAValue

_COMPARE = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
}
_ARITH = {arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b, arith.MuliOp: lambda a, b: a * b}


def _int(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr) and isinstance(
            op.value.type, IntegerType | IndexType):
        return op.value.value.data
    return None


def _fits(value: int, t) -> bool:
    if isinstance(t, IndexType):
        return -(2**63) <= value < 2**63
    if t == i1:
        return value in (0, 1)
    width = t.width.data
    return -(2 ** (width - 1)) <= value < 2 ** (width - 1)


def fold_or_clone(op: Operation, mapping: dict[SSAValue, SSAValue]) -> Operation | None:
    """`op` copied with `mapping` (which it extends, as `Operation.clone` does); None when the
    copy folds away: an integer compare, add, subtract, multiply or index cast of constants (a
    new constant is returned then), or a select on a constant condition (its result is mapped to the
    chosen operand and nothing is returned)."""
    operands = [mapping.get(v, v) for v in op.operands]
    if isinstance(op, arith.SelectOp):
        cond = _int(operands[0])
        if cond is not None:
            mapping[op.result] = operands[1] if cond else operands[2]
            return None
    elif isinstance(op, arith.CmpiOp) and op.predicate.value.data < len(_PREDICATES):
        a, b = _int(operands[0]), _int(operands[1])
        name = _PREDICATES[op.predicate.value.data]
        if a is not None and b is not None and name in _COMPARE:
            folded = arith.ConstantOp(IntegerAttr(int(_COMPARE[name](a, b)), i1))
            mapping[op.result] = folded.result
            return folded
    elif isinstance(op, arith.IndexCastOp):
        a = _int(operands[0])
        t = op.result.type
        if a is not None and isinstance(t, IntegerType | IndexType) and _fits(a, t):
            folded = arith.ConstantOp(IntegerAttr(a, t))
            mapping[op.result] = folded.result
            return folded
    elif type(op) in _ARITH:
        a, b = _int(operands[0]), _int(operands[1])
        if a is not None and b is not None:
            value = _ARITH[type(op)](a, b)
            t = op.results[0].type
            if _fits(value, t):
                folded = arith.ConstantOp(IntegerAttr(value, t))
                mapping[op.results[0]] = folded.result
                return folded
    return op.clone(mapping)


# arith.cmpi's predicate numbers (MLIR's order)
_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
