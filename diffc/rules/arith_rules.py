"""Derivative rules of the arith dialect (data for the registry in diffc.rules)."""

from xdsl.dialects import arith

from diffc.rules import register_nondifferentiable, register_rule

register_rule(arith.AddfOp, lambda b, op: [1.0, 1.0])
register_rule(arith.SubfOp, lambda b, op: [1.0, -1.0])
register_rule(arith.MulfOp, lambda b, op: [op.rhs, op.lhs])
# d(x/y) = dx / y - dy * (x/y) / y
register_rule(arith.DivfOp, lambda b, op: [b.div(1.0, op.rhs), b.neg(b.div(op.result, op.rhs))])
register_rule(arith.NegfOp, lambda b, op: [-1.0])

register_nondifferentiable(arith.CmpfOp, arith.CmpiOp, arith.ConstantOp)
