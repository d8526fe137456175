"""Derivative rules of the arith dialect (data for the registry in diffc.rules).

Conventions where the derivative is not defined: min/max split the derivative half and half
between equal operands (as Slang's stdlib does, and as central differences see it); the `num`
variants give it to the operand that is not NaN. xDSL 0.74's cmpf is scalar only, so on vectors
the partials are built lane by lane.
"""

from xdsl.dialects import arith
from xdsl.dialects.math import TruncOp

from diffc.ad.partials import CONVERT, RuleBuilder, register_nondifferentiable, register_rule
from diffc.rules.arith_ext import RemFOp
from diffc.rules.lanes import lanewise

register_rule(arith.AddfOp, lambda b, op: [1.0, 1.0])
register_rule(arith.SubfOp, lambda b, op: [1.0, -1.0])
register_rule(arith.MulfOp, lambda b, op: [op.rhs, op.lhs])
# d(x/y) = dx / y - dy * (x/y) / y
register_rule(arith.DivfOp, lambda b, op: [b.div(1.0, op.rhs), b.neg(b.div(op.result, op.rhs))])
register_rule(arith.NegfOp, lambda b, op: [-1.0])
# remf(x, y) = x - trunc(x / y) * y  (C fmod)
register_rule(RemFOp, lambda b, op: [1.0, b.neg(b.op(TruncOp, b.div(op.lhs, op.rhs)))])


def _pick_scalar(b: RuleBuilder, x, y, lhs_pred: str, num: bool):
    """The lhs partial of min/max of scalars: 1 where lhs is chosen, 0.5 on a tie."""
    wins = b.cmpf(lhs_pred, x, y)
    if num:  # minnum(x, NaN) = x
        wins = b.op(arith.OrIOp, wins, b.cmpf("uno", y, y))
    tie = b.cmpf("oeq", x, y)
    return b.select(wins, 1.0, b.select(tie, 0.5, 0.0, x), x)


def _pick(b: RuleBuilder, op, lhs_pred: str, num: bool):
    """Partials [lhs chosen, rhs chosen] of a min/max op."""
    p = lanewise(b, lambda x, y: _pick_scalar(b, x, y, lhs_pred, num), op.lhs, op.rhs)
    return [p, b.sub(1.0, p)]


register_rule(arith.MinimumfOp, lambda b, op: _pick(b, op, "olt", False))
register_rule(arith.MaximumfOp, lambda b, op: _pick(b, op, "ogt", False))
register_rule(arith.MinnumfOp, lambda b, op: _pick(b, op, "olt", True))
register_rule(arith.MaxnumfOp, lambda b, op: _pick(b, op, "ogt", True))


# select(c, t, f): the tangent / adjoint goes to the chosen value. The hooks avoid multiplying
# by a 0/1 partial; the partials say the same thing for code that reads them.
def _select_jvp(b: RuleBuilder, op, tangents):
    _, dt, df = tangents
    if dt is None and df is None:
        return None
    return b.select(op.cond, dt if dt is not None else 0.0, df if df is not None else 0.0, op.result)


def _select_vjp(b: RuleBuilder, op, adjoint):
    return [None, b.select(op.cond, adjoint, 0.0, adjoint), b.select(op.cond, 0.0, adjoint, adjoint)]


register_rule(
    arith.SelectOp,
    lambda b, op: [None, b.select(op.cond, 1.0, 0.0, op.result), b.select(op.cond, 0.0, 1.0, op.result)],
    jvp=_select_jvp,
    vjp=_select_vjp,
)

# Float-to-float casts: derivative 1, converted between the two types.
register_rule(arith.ExtFOp, lambda b, op: [CONVERT])
register_rule(arith.TruncFOp, lambda b, op: [CONVERT])

register_nondifferentiable(
    arith.ConstantOp,
    arith.CmpfOp,
    arith.CmpiOp,
    # float <-> integer casts, bit casts
    arith.SIToFPOp,
    arith.UIToFPOp,
    arith.FPToSIOp,
    arith.FPToUIOp,
    arith.BitcastOp,
    arith.IndexCastOp,
    arith.ExtSIOp,
    arith.ExtUIOp,
    arith.TruncIOp,
    # integer arithmetic
    arith.AddiOp,
    arith.SubiOp,
    arith.MuliOp,
    arith.DivSIOp,
    arith.DivUIOp,
    arith.CeilDivSIOp,
    arith.CeilDivUIOp,
    arith.FloorDivSIOp,
    arith.RemSIOp,
    arith.RemUIOp,
    arith.MinSIOp,
    arith.MaxSIOp,
    arith.MinUIOp,
    arith.MaxUIOp,
    arith.AndIOp,
    arith.OrIOp,
    arith.XOrIOp,
    arith.ShLIOp,
    arith.ShRSIOp,
    arith.ShRUIOp,
    arith.AddUIExtendedOp,
    arith.MulSIExtendedOp,
    arith.MulUIExtendedOp,
)
