"""Derivative rules: one registry keyed by op type, used by both forward and reverse mode.

A rule gives, for one op with one result y = op(x0, x1, ...), the partial derivative dy/dxi for
each operand, built as IR from the op's primal operands and result:

    register_rule(math.SinOp, lambda b, op: [b.op(math.CosOp, op.operand)])

Each partial is an SSA value, a Python float (a constant: 1.0 and -1.0 cost no multiply), or None
when no derivative flows through that operand (an index, a condition). From the partials
forward mode builds  dy = sum_i dy/dxi * dxi  and reverse mode  adj(xi) += dy/dxi * adj(y).

`register_nondifferentiable(...)` marks ops whose float results have a zero derivative
(floor, comparisons). Ops with regions (scf.if/for/while, calls) are handled by the passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, VectorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint

Partial = SSAValue | float | None


class RuleBuilder:
    """Builds the IR of partial derivatives at one insertion point."""

    def __init__(self, insertion_point: InsertPoint):
        self.builder = Builder(insertion_point)

    def insert(self, op: Operation) -> Operation:
        return self.builder.insert(op)

    def const(self, value: float, like: SSAValue | Attribute) -> SSAValue:
        """A float constant of the type of `like` (splat for vectors)."""
        t = like.type if isinstance(like, SSAValue) else like
        if isinstance(t, VectorType):
            attr = DenseIntOrFPElementsAttr.from_list(t, [value] * t.element_count())
            return self.insert(arith.ConstantOp(attr, t)).results[0]
        return self.insert(arith.ConstantOp(FloatAttr(value, t))).results[0]

    def value(self, x: SSAValue | float, like: SSAValue) -> SSAValue:
        return self.const(x, like) if isinstance(x, float | int) else x

    def op(self, op_type: type[Operation], *operands: SSAValue, **kwargs) -> SSAValue:
        """Builds `op_type(*operands)` and returns its (single) result."""
        return self.insert(op_type(*operands, **kwargs)).results[0]

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(arith.AddfOp, a, b)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.op(arith.SubfOp, a, b)

    def mul(self, a: SSAValue | float, b: SSAValue | float) -> SSAValue:
        like = a if isinstance(a, SSAValue) else b
        assert isinstance(like, SSAValue)
        return self.op(arith.MulfOp, self.value(a, like), self.value(b, like))

    def div(self, a: SSAValue | float, b: SSAValue | float) -> SSAValue:
        like = a if isinstance(a, SSAValue) else b
        assert isinstance(like, SSAValue)
        return self.op(arith.DivfOp, self.value(a, like), self.value(b, like))

    def neg(self, a: SSAValue) -> SSAValue:
        return self.op(arith.NegfOp, a)

    def select(self, cond: SSAValue, a: SSAValue | float, b: SSAValue | float, like: SSAValue) -> SSAValue:
        return self.insert(arith.SelectOp(cond, self.value(a, like), self.value(b, like))).results[0]


PartialsFn = Callable[[RuleBuilder, Operation], Sequence[Partial]]


@dataclass(frozen=True)
class Rule:
    """`partials` is None for an op whose results have a zero derivative."""

    partials: PartialsFn | None


RULES: dict[type[Operation], Rule] = {}


def register_rule(op_type: type[Operation], partials: PartialsFn) -> None:
    RULES[op_type] = Rule(partials)


def register_nondifferentiable(*op_types: type[Operation]) -> None:
    for t in op_types:
        RULES[t] = Rule(None)


_builtin_rules_loaded = False


def lookup_rule(op: Operation) -> Rule | None:
    """The rule for `op`, or None when no rule is known (the passes then report an error)."""
    global _builtin_rules_loaded
    if not _builtin_rules_loaded:
        _builtin_rules_loaded = True
        from diffc.rules import arith_rules, math_rules  # noqa: F401  (they register themselves)
    rule = RULES.get(type(op))
    if rule is None:
        for base in type(op).__mro__[1:]:
            if base in RULES:
                return RULES[base]
    return rule


def _scale(b: RuleBuilder, partial: SSAValue | float, x: SSAValue) -> SSAValue:
    """partial * x, with the multiplications by +-1 left out."""
    if isinstance(partial, float | int):
        if partial == 1.0:
            return x
        if partial == -1.0:
            return b.neg(x)
        return b.mul(b.const(float(partial), x), x)
    return b.mul(partial, x)


def emit_jvp(b: RuleBuilder, op: Operation, tangents: Sequence[SSAValue | None]) -> SSAValue | None:
    """The tangent of op's result, given the tangent of each operand (None: zero tangent).
    Returns None when the tangent is zero."""
    rule = lookup_rule(op)
    if rule is None:
        raise KeyError(op.name)
    if rule.partials is None or all(t is None for t in tangents):
        return None
    partials = rule.partials(b, op)
    total: SSAValue | None = None
    for p, t in zip(partials, tangents, strict=True):
        if p is None or t is None:
            continue
        term = _scale(b, p, t)
        total = term if total is None else b.add(total, term)
    return total


def emit_vjp(b: RuleBuilder, op: Operation, adjoint: SSAValue) -> list[SSAValue | None]:
    """The contribution of op's result adjoint to each operand's adjoint (None: nothing)."""
    rule = lookup_rule(op)
    if rule is None:
        raise KeyError(op.name)
    if rule.partials is None:
        return [None] * len(op.operands)
    partials = rule.partials(b, op)
    return [None if p is None else _scale(b, p, adjoint) for p in partials]
