"""Derivative rules of the math dialect (data for the registry in diffc.rules).

Conventions where the derivative is not defined: absf'(0) = copysign(1, x) (+-1, not 0);
sqrt'(x) = 0.5 / sqrt(max(x, 1e-7)) (Slang's: finite at 0); d copysign(x, y)/dx is 0 at x == 0 or y == 0;
a partial of powf(x, y) that is not finite (x = 0, y < 1: an infinite slope) is 0, as Slang's;
floor/ceil/round/roundeven/trunc have a zero derivative.
"""

import math as pymath

from xdsl.dialects import arith, math

from diffc.ad.partials import RuleBuilder, register_nondifferentiable, register_rule
from diffc.rules.lanes import lanewise

LN2 = pymath.log(2.0)
LN10 = pymath.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / pymath.sqrt(pymath.pi)
_SQRT_FLOOR = pymath.sqrt(1.0e-7)  # Slang clamps sqrt's argument to 1e-7 in its derivative
_LOG_FLOOR = -1.0e4  # below log(smallest denormal) = -745 in f64, and representable in f16


def _sq(b: RuleBuilder, x):
    return b.mul(x, x)


def _sign(b: RuleBuilder, x):
    return b.op(math.CopySignOp, b.const(1.0, x), x)


register_rule(math.ExpOp, lambda b, op: [op.result])
register_rule(math.Exp2Op, lambda b, op: [b.mul(op.result, LN2)])
register_rule(math.ExpM1Op, lambda b, op: [b.add(op.result, 1.0)])
register_rule(math.LogOp, lambda b, op: [b.div(1.0, op.operand)])
register_rule(math.Log2Op, lambda b, op: [b.div(1.0, b.mul(op.operand, LN2))])
register_rule(math.Log10Op, lambda b, op: [b.div(1.0, b.mul(op.operand, LN10))])
register_rule(math.Log1pOp, lambda b, op: [b.div(1.0, b.add(op.operand, 1.0))])
# 0.5 / sqrt(max(x, 1e-7)), as Slang's stdlib: finite at 0 (where the true derivative is infinite)
register_rule(math.SqrtOp, lambda b, op: [b.div(0.5, b.op(arith.MaximumfOp, op.result, b.const(_SQRT_FLOOR, op.result)))])
# x^(-1/2)' = -1/2 x^(-3/2) = -0.5 * r / x
register_rule(math.RsqrtOp, lambda b, op: [b.div(b.mul(op.result, -0.5), op.operand)])
# cbrt' = 1 / (3 r^2)
register_rule(math.CbrtOp, lambda b, op: [b.div(1.0, b.mul(_sq(b, op.result), 3.0))])


def _powf(b: RuleBuilder, op):
    """y x^(y-1) and x^y log(x) where they are finite; 0 where they are not (x = 0 with y < 1,
    where the slope is infinite: a ReLU's 0 times it made the chain rule's product NaN; Slang's
    is 0 there too). Finite values stand where Slang gives 0 (x < 1e-6: finite differences
    decide, docs/frontend.md)."""
    x, y, r = op.lhs, op.rhs, op.result

    def finite(value):
        return b.select(b.cmpf("olt", b.op(math.AbsFOp, value), b.const(pymath.inf, value)), value, 0.0, value)

    dx = lanewise(b, lambda xs, ys: finite(b.mul(ys, b.op(math.PowFOp, xs, b.sub(ys, 1.0)))), x, y)
    # log(0) = -inf is clamped so that r = 0 gives 0 (x < 0: NaN, then 0)
    dy = lanewise(b, lambda xs, rs: finite(
        b.mul(rs, b.op(arith.MaximumfOp, b.op(math.LogOp, xs), b.const(_LOG_FLOOR, xs)))), x, r)
    return [dx, dy]


register_rule(math.PowFOp, _powf)

register_rule(math.SinOp, lambda b, op: [b.op(math.CosOp, op.operand)])
register_rule(math.CosOp, lambda b, op: [b.neg(b.op(math.SinOp, op.operand))])
register_rule(math.TanOp, lambda b, op: [b.add(_sq(b, op.result), 1.0)])
register_rule(math.AsinOp, lambda b, op: [b.op(math.RsqrtOp, b.sub(1.0, _sq(b, op.operand)))])
register_rule(math.AcosOp, lambda b, op: [b.neg(b.op(math.RsqrtOp, b.sub(1.0, _sq(b, op.operand))))])
register_rule(math.AtanOp, lambda b, op: [b.div(1.0, b.add(_sq(b, op.operand), 1.0))])


def _atan2(b: RuleBuilder, op):
    # atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
    y, x = op.lhs, op.rhs
    r2 = b.add(_sq(b, x), _sq(b, y))
    return [b.div(x, r2), b.neg(b.div(y, r2))]


register_rule(math.Atan2Op, _atan2)
register_rule(math.SinhOp, lambda b, op: [b.op(math.CoshOp, op.operand)])
register_rule(math.CoshOp, lambda b, op: [b.op(math.SinhOp, op.operand)])
register_rule(math.TanhOp, lambda b, op: [b.sub(1.0, _sq(b, op.result))])
register_rule(math.AsinhOp, lambda b, op: [b.op(math.RsqrtOp, b.add(_sq(b, op.operand), 1.0))])
register_rule(math.AcoshOp, lambda b, op: [b.op(math.RsqrtOp, b.sub(_sq(b, op.operand), 1.0))])
register_rule(math.AtanhOp, lambda b, op: [b.div(1.0, b.sub(1.0, _sq(b, op.operand)))])

register_rule(math.AbsFOp, lambda b, op: [_sign(b, op.operand)])
# erf' = 2/sqrt(pi) exp(-x^2)
register_rule(
    math.ErfOp,
    lambda b, op: [b.mul(b.op(math.ExpOp, b.neg(_sq(b, op.operand))), TWO_OVER_SQRT_PI)],
)


def _copysign_dx(b: RuleBuilder, x, y):
    # copysign(x, y) = |x| sign(y): d/dx = sign(x) sign(y) = copysign(1, x*y); 0 at x == 0 (|x| is
    # even there: central differences and Slang's stdlib both give 0) and at y == 0, where
    # copysign jumps from -|x| to |x| and so has no derivative (Slang's 0)
    zero = b.const(0.0, x)
    at_zero = b.op(arith.OrIOp, b.cmpf("oeq", x, zero), b.cmpf("oeq", y, zero))
    return b.select(at_zero, 0.0, _sign(b, b.mul(x, y)), x)


register_rule(math.CopySignOp, lambda b, op: [lanewise(b, lambda x, y: _copysign_dx(b, x, y), op.lhs, op.rhs), None])
register_rule(math.FmaOp, lambda b, op: [op.b, op.a, 1.0])

register_nondifferentiable(
    math.FloorOp,
    math.CeilOp,
    math.RoundOp,
    math.RoundEvenOp,
    math.TruncOp,
    # integer math
    math.AbsIOp,
    math.IPowIOp,
    math.CountLeadingZerosOp,
    math.CountTrailingZerosOp,
    math.CtPopOp,
)
