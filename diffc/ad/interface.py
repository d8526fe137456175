"""The derivative interface: what one op type contributes to differentiation, and the one
registry of it (keyed by op type, with fallback along the op class's MRO).

A rule is a `DerivativeRule`; each method gets the driver of its mode, which owns the value maps
and offers region translation, the tape and the loop nest (diffc.ad.forward.FuncDiff,
diffc.ad.reverse.FuncReverser):

  activity(act, op)               mark the results that carry a derivative, given which operands
                                  do (`act.varied`, `act.mark`; regions: `act.block(b)`);
  jvp_op(fwd, op, dst)            forward mode: append op's primal copy and tangents to block
                                  `dst`, `fwd.bind(result, primal, tangent)` each result;
  primal_op(rev, op, vmap, em, ctx, mode) -> Operation
                                  reverse mode's forward sweep ("fwd") or recomputation ("rec")
                                  of op: the new op (not yet appended), its regions translated
                                  with `rev.forward`; the default clones op;
  after_primal(rev, op, new, em, ctx, mode)
                                  after the primal op was appended (a while loop stores its
                                  iteration count);
  vjp_op(rev, op, adj, vmap, em, ctx)
                                  reverse mode: the adjoints of op's operands from those of its
                                  results (`rev.accumulate`), built with emitter `em`;
  checkpoint(op, prefer, origin, symbols) -> (store, why)
                                  diff-checkpoint's choice for op's results where the reverse
                                  sweep needs them inside a region: store them on the tape, or
                                  recompute them there (the default: cheap, recomputed).

Elementwise ops give partial derivatives instead (diffc.ad.partials.Rule, through
`register_rule`): today's arith / math / vector rules are that implementation of the interface.
Control flow, calls, the diff dialect's own ops and effects each have one file in
diffc/ad/rules/. Plugins register rules the same way (`register(OpType, MyRule())`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from diffc.diagnostics import pass_error

if TYPE_CHECKING:
    from xdsl.ir import Block


class DerivativeRule:
    """Base of every rule; the defaults suit an op without regions whose results carry no
    derivative (subclasses override what they know)."""

    # False: the op's results have a zero derivative (floor, comparisons, printf).
    differentiable: bool = True
    # False: forward mode calls jvp_op only when an operand carries a tangent (else the driver
    # copies the op, results without tangent); True: always (control flow, calls, detach).
    jvp_when_inactive: bool = False

    def activity(self, act: Any, op: Operation) -> None:
        if self.differentiable and any(o in act.varied for o in op.operands):
            for r in op.results:
                act.mark(r)

    def jvp_op(self, fwd: Any, op: Operation, dst: Block) -> None:
        raise NotImplementedError(f"{op.name}: no forward-mode derivative")

    def primal_op(self, rev: Any, op: Operation, vmap: dict, em: Any, ctx: list, mode: str) -> Operation:
        return op.clone(value_mapper=vmap)

    def after_primal(self, rev: Any, op: Operation, new: Operation, em: Any, ctx: list, mode: str) -> None:
        return None

    def vjp_op(self, rev: Any, op: Operation, adj: dict, vmap: dict, em: Any, ctx: list) -> None:
        raise NotImplementedError(f"{op.name}: no reverse-mode derivative")

    def checkpoint(self, op: Operation, prefer: str | None, origin: str, symbols: dict) -> tuple[bool, str]:
        """Whether diff-checkpoint stores op's results (else the reverse sweep recomputes them),
        and why. `prefer` is the diff.prefer of the differentiated function @origin; `symbols`
        maps names to the module's functions. The default suits cheap arithmetic."""
        if prefer == "checkpoint":
            return True, f"@{origin} prefers checkpoint"
        return False, "cheap arithmetic"


# op type -> its rule. diffc.rules.RULES is this dict.
RULES: dict[type[Operation], DerivativeRule] = {}


def register(op_type: type[Operation], rule: DerivativeRule) -> None:
    """Registers (or replaces) the rule of `op_type` (and of its subclasses without their own)."""
    RULES[op_type] = rule


def lookup(op: Operation | type[Operation]) -> DerivativeRule | None:
    """The rule of `op` (an op or an op type): its type's, else the nearest base class's along
    the MRO; None when none is registered. Callers that need the built-in rules loaded use
    diffc.ad.registry.lookup."""
    op_type = op if isinstance(op, type) else type(op)
    rule = RULES.get(op_type)
    if rule is None:
        for base in op_type.__mro__[1:]:
            if base in RULES:
                return RULES[base]
    return rule


def fail(fn: str, msg: str, at: Operation) -> PassFailedException:
    """The error about op `at` of function @fn, located where `at` was written."""
    return pass_error(at, f"in function @{fn}: {msg}")
