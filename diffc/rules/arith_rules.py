"""Derivative rules of the arith dialect (data for the registry in diffc.rules).

Conventions where the derivative is not defined: min/max give the whole derivative to the lhs on
a tie; the `num` variants give it to the operand that is not NaN. xDSL 0.74's cmpf and select are
scalar only, so on vectors min/max pick with the sign of (rhs - lhs) instead of a comparison:
0.5 + 0.5 * copysign(1, rhs - lhs) is exactly 1 or 0 (NaN inputs then give no useful pick).
"""

from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType
from xdsl.dialects.math import CopySignOp, TruncOp

from diffc.ad.partials import CONVERT, RuleBuilder, register_nondifferentiable, register_rule
from diffc.rules.arith_ext import RemFOp

register_rule(arith.AddfOp, lambda b, op: [1.0, 1.0])
register_rule(arith.SubfOp, lambda b, op: [1.0, -1.0])
register_rule(arith.MulfOp, lambda b, op: [op.rhs, op.lhs])
# d(x/y) = dx / y - dy * (x/y) / y
register_rule(arith.DivfOp, lambda b, op: [b.div(1.0, op.rhs), b.neg(b.div(op.result, op.rhs))])
register_rule(arith.NegfOp, lambda b, op: [-1.0])
# remf(x, y) = x - trunc(x / y) * y  (C fmod)
register_rule(RemFOp, lambda b, op: [1.0, b.neg(b.op(TruncOp, b.div(op.lhs, op.rhs)))])


def _pick(b: RuleBuilder, op, lhs_pred: str, num: bool):
    """Partials [lhs chosen, rhs chosen] of a min/max op."""
    x, y = op.lhs, op.rhs
    if isinstance(x.type, VectorType):
        # min: lhs chosen iff y - x >= 0; max: iff x - y >= 0.
        diff = b.sub(y, x) if lhs_pred == "ole" else b.sub(x, y)
        p = b.add(0.5, b.mul(0.5, b.op(CopySignOp, b.const(1.0, x), diff)))
        return [p, b.sub(1.0, p)]
    cond = b.cmpf(lhs_pred, x, y)
    if num:  # minnum(x, NaN) = x
        cond = b.op(arith.OrIOp, cond, b.cmpf("uno", y, y))
    return [b.select(cond, 1.0, 0.0, x), b.select(cond, 0.0, 1.0, x)]


register_rule(arith.MinimumfOp, lambda b, op: _pick(b, op, "ole", False))
register_rule(arith.MaximumfOp, lambda b, op: _pick(b, op, "oge", False))
register_rule(arith.MinnumfOp, lambda b, op: _pick(b, op, "ole", True))
register_rule(arith.MaxnumfOp, lambda b, op: _pick(b, op, "oge", True))


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
