"""Partials that need a comparison: xDSL 0.74's arith.cmpf and select are scalar only, so on
vectors such a partial is built lane by lane (extract, the scalar rule, insert)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import vector
from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue

from diffc.ad.partials import RuleBuilder


def lanewise(b: RuleBuilder, scalar_fn: Callable[..., SSAValue], *xs: SSAValue) -> SSAValue:
    """scalar_fn applied to the operands' lanes (to the operands themselves when scalar); the
    result has the type of xs[0]."""
    t = xs[0].type
    if not isinstance(t, VectorType):
        return scalar_fn(*xs)
    el = t.element_type
    acc = b.const(0.0, xs[0])
    for i in range(t.get_shape()[0]):
        lanes = [b.insert(vector.ExtractOp(x, [i], el)).results[0] for x in xs]
        acc = b.insert(vector.InsertOp(scalar_fn(*lanes), acc, [i])).results[0]
    return acc
