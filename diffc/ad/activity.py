"""The activity analysis: which values of a function carry a derivative, given which of its
parameters do. One analysis for every client: diff-rev (what to reverse), diff-fwd (which loop
values carry tangents), and, through `active_values`, the front end's checks.

A value is *varied* when it has a differentiable type and depends, through ops whose rule says so
(`DerivativeRule.activity`), on a differentiable parameter. Control flow, calls and the diff
dialect's ops decide in their rule files (diffc/ad/rules/); an op with partial derivatives
varies all its results when an operand varies. A call also varies its differentiable results
when the callee has, or reaches through differentiable callees, a custom derivative of the mode
(`reaches_custom`): such a derivative may read derivatives from state of its own (a Slang
DifferentialPtrPair's memory, a gradient buffer).

With `strict` (the passes), a varied value reaching an op that has no rule, or a function that
is not differentiable, raises a located PassFailedException; without it (`active_values`) the
analysis only answers.
"""

from __future__ import annotations

from collections.abc import Container, Iterable

from xdsl.dialects import func, scf
from xdsl.ir import Block, Operation, SSAValue

from diffc.dialects import diff
from diffc.ad.interface import fail
from diffc.ad.registry import lookup

__all__ = ["Activity", "active_values", "active_ops", "fail", "reaches_custom"]

_TERMINATORS = (scf.YieldOp, scf.ConditionOp, func.ReturnOp)


def reaches_custom(f: func.FuncOp, kind: str, symbols: dict[str, func.FuncOp], seen: set | None = None) -> bool:
    """Whether f has a custom derivative of `kind` (diff.fwd_derivative / diff.bwd_derivative)
    or its differentiated body calls, transitively, a function that has one."""
    if diff.custom_derivative(f, kind) is not None:
        return True
    seen = set() if seen is None else seen
    if f in seen or not diff.is_differentiable_func(f):
        return False
    seen.add(f)
    for op in f.walk():
        if isinstance(op, func.CallOp):
            callee = symbols.get(op.callee.root_reference.data)
            if isinstance(callee, func.FuncOp) and reaches_custom(callee, kind, symbols, seen):
                return True
    return False


class Activity:
    """Which values of `fn` carry a derivative (forward activity); `v in activity`.

    `kind` is the custom-derivative attribute of the mode (diff.BWD_DERIVATIVE for reverse,
    diff.FWD_DERIVATIVE for forward); `args` the differentiable parameters (default: those
    `diff.arg_is_differentiable` says)."""

    def __init__(
        self,
        fn: func.FuncOp,
        symbols: dict[str, func.FuncOp],
        kind: str = diff.BWD_DERIVATIVE,
        args: Iterable[int] | None = None,
        strict: bool = True,
    ):
        self.fn = fn
        self.name = fn.sym_name.data
        self.symbols = symbols
        self.kind = kind
        self.strict = strict
        self.varied: set[SSAValue] = set()
        self._custom: dict[func.FuncOp, bool] = {}
        block = fn.body.block
        chosen = range(len(block.args)) if args is None else args
        for i in chosen:
            if args is not None or diff.arg_is_differentiable(fn, i):
                self.varied.add(block.args[i])
        self._changed = True
        # a few sweeps reach the fixed point of loop-carried activity
        while self._changed:
            self._changed = False
            self.block(block)

    def __contains__(self, v: SSAValue) -> bool:
        return v in self.varied

    # -- what rules call ------------------------------------------------------------------------

    def mark(self, v: SSAValue) -> None:
        if v not in self.varied and diff.is_differentiable_type(v.type):
            self.varied.add(v)
            self._changed = True

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def refuse(self, message: str, op: Operation) -> None:
        """A varied value reached `op`, which cannot take one: an error when strict."""
        if self.strict:
            raise fail(self.name, message, op)

    def callee(self, op: func.CallOp) -> Operation | None:
        return self.symbols.get(op.callee.root_reference.data)

    def reaches_custom(self, f: func.FuncOp) -> bool:
        if f not in self._custom:
            self._custom[f] = reaches_custom(f, self.kind, self.symbols)
        return self._custom[f]

    # -- the walk -------------------------------------------------------------------------------

    def op(self, op: Operation) -> None:
        if isinstance(op, _TERMINATORS):
            return
        rule = lookup(op)
        if rule is not None:
            rule.activity(self, op)
            return
        if not any(o in self.varied for o in op.operands):
            return
        if op.regions or not op.results or any(diff.is_differentiable_type(r.type) for r in op.results):
            self.refuse(f"'{op.name}' has no derivative rule but receives a derivative-carrying value", op)


def active_values(
    fn: func.FuncOp,
    symbols: dict[str, func.FuncOp] | None = None,
    args: Iterable[int] | None = None,
    kind: str = diff.BWD_DERIVATIVE,
) -> set[SSAValue]:
    """The values of `fn` that carry a derivative when the parameters `args` (indices; default:
    the differentiable ones) do. Never raises for values that reach ops without a rule: the
    caller decides what that means (the front end reports it at the source)."""
    if symbols is None:
        module = fn.parent_op()
        symbols = {} if module is None else {
            o.sym_name.data: o for o in module.walk() if isinstance(o, func.FuncOp)
        }
    return set(Activity(fn, symbols, kind=kind, args=args, strict=False).varied)


def active_ops(fn: func.FuncOp, varied: Container[SSAValue]) -> list[Operation]:
    """The ops of `fn` that receive a derivative-carrying value (an operand in `varied`)."""
    return [op for op in fn.walk() if any(o in varied for o in op.operands)]
