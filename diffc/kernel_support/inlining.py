"""One call replaced by a copy of its callee's body, for a callee of one block that ends in its
only return: how merge-calls, accumulate-gradients and the converged positions of
reduce-atomics and cooperative-layers reach the ops inside a callee."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter


def inline_call(call: func.CallOp, callee: func.FuncOp) -> bool:
    """Inlines `call` of `callee` in place; False, and nothing changed, when the callee is not one
    block ending in its only return."""
    if len(callee.body.blocks) != 1:
        return False
    body = callee.body.blocks[0]
    ret = body.last_op
    if not isinstance(ret, func.ReturnOp) or any(isinstance(o, func.ReturnOp) and o is not ret for o in callee.walk()):
        return False
    mapping: dict[SSAValue, SSAValue] = dict(zip(body.args, call.arguments))
    for op in body.ops:
        if op is ret:
            break
        Rewriter.insert_op(op.clone(mapping), InsertPoint.before(call))
    Rewriter.replace_op(call, [], [mapping.get(v, v) for v in ret.operands])
    return True
