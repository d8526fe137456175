"""Partial derivatives: the implementation of the derivative interface (diffc.ad.interface)
for ops with one result y = op(x0, x1, ...) whose derivative is "partials times tangents". The
rule data (arith, math, vector, effects) lives in diffc/rules/*.py and registers itself here.

A rule gives, for one op, the partial derivative dy/dxi for each operand, built as IR from the
op's primal operands and result:

    register_rule(math.SinOp, lambda b, op: [b.op(math.CosOp, op.operand)])

Each partial is one of
  * an SSA value of the operand's (= the result's) type,
  * a Python float: a constant; 1.0 and -1.0 cost no multiply,
  * None: no derivative flows through that operand (an index, a condition),
  * CONVERT: the derivative is the identity up to a change of float type (extf / truncf). The
    tangent is converted to the result's type in forward mode, the adjoint to the operand's
    type in reverse mode (with arith.extf / arith.truncf, nothing when the types agree).
From the partials forward mode builds  dy = sum_i dy/dxi * dxi  and reverse mode
adj(xi) += dy/dxi * adj(y).

An op whose derivative is linear but not "partial times tangent" (arith.select: pick a tangent)
may give its own hooks instead of, or besides, partials:

    register_rule(OpType, jvp=lambda b, op, tangents: ..., vjp=lambda b, op, adjoint: [...])

`jvp` returns the result tangent (or None for zero) from the operand tangents (None: zero);
`vjp` returns one adjoint contribution per operand (None: nothing). emit_jvp / emit_vjp call a
hook when given and fall back to the partials otherwise.

`register_nondifferentiable(...)` marks ops whose float results have a zero derivative
(floor, comparisons, integer ops).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, DenseIntOrFPElementsAttr, FloatAttr, VectorType, i1
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from diffc.ad.interface import RULES, DerivativeRule, lookup


class Convert:
    """The partial of a float-to-float cast: identity, converted to the right float type."""

    _instance: Convert | None = None

    def __new__(cls) -> Convert:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "CONVERT"


CONVERT = Convert()

Partial = SSAValue | float | Convert | None


def _float_width(t: Attribute) -> int:
    if isinstance(t, VectorType):
        t = t.element_type
    assert isinstance(t, AnyFloat), f"not a float type: {t}"
    return t.bitwidth


# The ops derivatives are made of, built again and again with the same attributes: the first of
# each kind is built by its own constructor, the rest by `create` with that one's properties and
# attributes (immutable, so shared) and the same result type, skipping the constructor's checks
# and defaults (a third of the time of diff-fwd and diff-rev on a large function).
_PROTOTYPES: dict[tuple, tuple[dict, dict]] = {}
_CONSTANTS: dict[tuple[str, Attribute], Attribute] = {}  # (value.hex(), type) -> its attribute


class RuleBuilder:
    """Builds the IR of partial derivatives at one insertion point."""

    def __init__(self, insertion_point: InsertPoint):
        self.builder = Builder(insertion_point)

    def insert(self, op: Operation) -> Operation:
        return self.builder.insert(op)

    def _like(self, key: tuple, make: Callable[[], Operation], op_type: type[Operation],
              operands: Sequence[SSAValue], result_type: Attribute) -> SSAValue:
        """`make()`'s result: built by `make` the first time `key` is seen, else as its copy."""
        seen = _PROTOTYPES.get(key)
        if seen is None:
            op = make()
            _PROTOTYPES[key] = (dict(op.properties), dict(op.attributes))
        else:
            op = op_type.create(operands=operands, result_types=[result_type], properties=dict(seen[0]),
                                attributes=dict(seen[1]))
        return self.insert(op).results[0]

    def const(self, value: float, like: SSAValue | Attribute) -> SSAValue:
        """A float constant of the type of `like` (splat for vectors)."""
        t = like.type if isinstance(like, SSAValue) else like
        key = (float(value).hex(), t)
        attr = _CONSTANTS.get(key)
        if attr is None:
            if isinstance(t, VectorType):
                attr = DenseIntOrFPElementsAttr.from_list(t, [float(value)] * t.element_count())
            else:
                attr = FloatAttr(float(value), t)
            _CONSTANTS[key] = attr
        return self.insert(arith.ConstantOp.create(result_types=[t], properties={"value": attr})).results[0]

    def value(self, x: SSAValue | float, like: SSAValue) -> SSAValue:
        return self.const(x, like) if isinstance(x, float | int) else x

    def op(self, op_type: type[Operation], *operands: SSAValue, **kwargs) -> SSAValue:
        """Builds `op_type(*operands)` and returns its (single) result."""
        return self.insert(op_type(*operands, **kwargs)).results[0]

    def _bin(self, op_type: type[Operation], a: SSAValue | float, b: SSAValue | float) -> SSAValue:
        like = a if isinstance(a, SSAValue) else b
        assert isinstance(like, SSAValue), "one operand must be an SSA value"
        x, y = self.value(a, like), self.value(b, like)
        return self._like((op_type,), lambda: op_type(x, y), op_type, (x, y), x.type)

    def add(self, a: SSAValue | float, b: SSAValue | float) -> SSAValue:
        return self._bin(arith.AddfOp, a, b)

    def sub(self, a: SSAValue | float, b: SSAValue | float) -> SSAValue:
        return self._bin(arith.SubfOp, a, b)

    def mul(self, a: SSAValue | float, b: SSAValue | float) -> SSAValue:
        return self._bin(arith.MulfOp, a, b)

    def div(self, a: SSAValue | float, b: SSAValue | float) -> SSAValue:
        return self._bin(arith.DivfOp, a, b)

    def neg(self, a: SSAValue) -> SSAValue:
        return self._like((arith.NegfOp,), lambda: arith.NegfOp(a), arith.NegfOp, (a,), a.type)

    def cmpf(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """An i1 (scalars only: xDSL 0.74's arith.cmpf has no vector form)."""
        if a.type != b.type:  # (the constructor's error)
            return self.insert(arith.CmpfOp(a, b, predicate)).results[0]
        return self._like((arith.CmpfOp, predicate), lambda: arith.CmpfOp(a, b, predicate), arith.CmpfOp, (a, b),
                          i1)

    def select(self, cond: SSAValue, a: SSAValue | float, b: SSAValue | float, like: SSAValue) -> SSAValue:
        x, y = self.value(a, like), self.value(b, like)
        return self._like((arith.SelectOp,), lambda: arith.SelectOp(cond, x, y), arith.SelectOp, (cond, x, y),
                          x.type)

    def convert(self, x: SSAValue, to_type: Attribute) -> SSAValue:
        """x converted to another float type (extf / truncf), x itself when the types agree."""
        if x.type == to_type:
            return x
        if _float_width(to_type) > _float_width(x.type):
            return self.insert(arith.ExtFOp(x, to_type)).results[0]
        return self.insert(arith.TruncFOp(x, to_type)).results[0]


PartialsFn = Callable[[RuleBuilder, Operation], Sequence[Partial]]
JvpFn = Callable[[RuleBuilder, Operation, Sequence[SSAValue | None]], SSAValue | None]
VjpFn = Callable[[RuleBuilder, Operation, SSAValue], Sequence[SSAValue | None]]


@dataclass(frozen=True)
class Rule(DerivativeRule):
    """`partials` is None (and no hook is set) for an op whose results have a zero derivative.
    `jvp` / `vjp`, when set, replace the partials in forward / reverse mode. As a
    DerivativeRule its `jvp_op` / `vjp_op` are what the drivers call."""

    partials: PartialsFn | None
    jvp: JvpFn | None = None
    vjp: VjpFn | None = None

    @property
    def differentiable(self) -> bool:  # type: ignore[override]
        return self.partials is not None or self.jvp is not None or self.vjp is not None

    # -- the interface (the drivers call these for an op with a derivative-carrying operand) --

    def jvp_op(self, fwd, op: Operation, dst) -> None:
        new = Builder(InsertPoint.at_end(dst)).insert(op.clone(value_mapper=fwd.primal))
        if not self.differentiable:  # e.g. printf: no result carries a derivative
            for old, r in zip(op.results, new.results):
                fwd.bind(old, r, None)
            return
        if len(op.results) != 1:
            raise fwd.fail(f"'{op.name}': derivative rules handle ops with one result", op)
        tans = [fwd.t(v) for v in op.operands]
        try:
            t = emit_jvp(RuleBuilder(InsertPoint.at_end(dst)), new, tans)
        except NotImplementedError:  # a rule with a reverse-mode hook alone
            raise fwd.fail(f"'{op.name}': its derivative rule has no forward-mode derivative", op) from None
        fwd.bind(op.results[0], new.results[0], t)

    def vjp_op(self, rev, op: Operation, adj: dict, vmap: dict, em, ctx) -> None:
        new_op = vmap[op.results[0]].owner
        before = em.block.last_op
        try:
            contribs = emit_vjp(RuleBuilder(InsertPoint.at_end(em.block)), new_op, adj[op.results[0]])
        except NotImplementedError:  # a rule with a forward-mode hook alone
            raise rev.fail(f"'{op.name}': its derivative rule has no reverse-mode derivative", op) from None
        keep = {c for x, c in zip(op.operands, contribs) if c is not None and x in rev.act}
        _drop_unused_after(em.block, before, keep)
        for x, c in zip(op.operands, contribs):
            if c is not None and c in keep:
                rev.accumulate(adj, x, c, em)


def _drop_unused_after(block, start: Operation | None, keep: set[SSAValue]) -> None:
    """Erases the ops a rule emitted after `start` that compute partials nobody needs (those
    of operands that carry no derivative)."""
    added = []
    op = block.first_op if start is None else start.next_op
    while op is not None:
        added.append(op)
        op = op.next_op
    for op in reversed(added):
        if not any(r in keep or r.uses for r in op.results):
            Rewriter.erase_op(op)


def register_rule(
    op_type: type[Operation],
    partials: PartialsFn | None = None,
    *,
    jvp: JvpFn | None = None,
    vjp: VjpFn | None = None,
) -> None:
    """Registers (or replaces) the rule of `op_type`. Give `partials`, or hooks, or both."""
    if partials is None and jvp is None and vjp is None:
        raise ValueError(f"rule for {op_type.__name__}: give partials or jvp/vjp hooks")
    RULES[op_type] = Rule(partials, jvp, vjp)


def register_nondifferentiable(*op_types: type[Operation]) -> None:
    for t in op_types:
        RULES[t] = Rule(None)


def partials_rule_of(op: Operation | type[Operation]) -> Rule | None:
    """The partials rule of `op` (an op or an op type), or None (no rule, or a rule of another
    kind: control flow, calls). Built-in rules are loaded by diffc.ad.registry."""
    rule = lookup(op)
    return rule if isinstance(rule, Rule) else None


def _scale(b: RuleBuilder, partial: SSAValue | float | Convert, x: SSAValue, to_type: Attribute) -> SSAValue:
    """partial * x, of type `to_type`, with the multiplications by +-1 left out."""
    if isinstance(partial, Convert):
        return b.convert(x, to_type)
    if isinstance(partial, float | int):
        if partial == 1.0:
            return x
        if partial == -1.0:
            return b.neg(x)
        return b.mul(b.const(float(partial), x), x)
    return b.mul(partial, x)


def _rule_of(op: Operation) -> Rule:
    rule = partials_rule_of(op)
    if rule is None:
        raise KeyError(op.name)
    return rule


def emit_jvp(b: RuleBuilder, op: Operation, tangents: Sequence[SSAValue | None]) -> SSAValue | None:
    """The tangent of op's result, given the tangent of each operand (None: zero tangent).
    Returns None when the tangent is zero."""
    rule = _rule_of(op)
    if not rule.differentiable or all(t is None for t in tangents):
        return None
    if rule.jvp is not None:
        return rule.jvp(b, op, tangents)
    if rule.partials is None:
        raise NotImplementedError(f"{op.name}: the rule has no forward-mode derivative")
    partials = rule.partials(b, op)
    total: SSAValue | None = None
    for p, t in zip(partials, tangents, strict=True):
        if p is None or t is None:
            continue
        term = _scale(b, p, t, op.results[0].type)
        total = term if total is None else b.add(total, term)
    return total


def emit_vjp(b: RuleBuilder, op: Operation, adjoint: SSAValue) -> list[SSAValue | None]:
    """The contribution of op's result adjoint to each operand's adjoint (None: nothing)."""
    rule = _rule_of(op)
    if not rule.differentiable:
        return [None] * len(op.operands)
    if rule.vjp is not None:
        return list(rule.vjp(b, op, adjoint))
    if rule.partials is None:
        raise NotImplementedError(f"{op.name}: the rule has no reverse-mode derivative")
    partials = rule.partials(b, op)
    return [
        None if p is None else _scale(b, p, adjoint, x.type)
        for p, x in zip(partials, op.operands, strict=True)
    ]
