"""Derivative rules of the math dialect (data for the registry in diffc.rules)."""

from xdsl.dialects import math

from diffc.rules import register_nondifferentiable, register_rule

register_rule(math.ExpOp, lambda b, op: [op.result])
register_rule(math.SinOp, lambda b, op: [b.op(math.CosOp, op.operand)])
register_rule(math.CosOp, lambda b, op: [b.neg(b.op(math.SinOp, op.operand))])

register_nondifferentiable(math.FloorOp, math.CeilOp, math.RoundOp, math.RoundEvenOp, math.TruncOp)
