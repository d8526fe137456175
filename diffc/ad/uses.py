"""What the uses of a value ask of it: whether a derivative of it could be needed at all."""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects import func
from xdsl.ir import SSAValue
from xdsl.traits import SymbolTable, is_side_effect_free

from diffc.dialects import diff


def feeds_a_derivative(values: Iterable[SSAValue], _seen: set | None = None) -> bool:
    """Whether a derivative of `values` could be needed: False only when every use ends, through
    pure ops without regions, in ops whose results have no differentiable type (an int
    conversion, a comparison). Slang's rule for a call of a non-differentiable function: its
    derivative is dropped, and that is an error only where a derivative of its result is used."""
    seen = set() if _seen is None else _seen
    for v in values:
        if v in seen or not diff.is_differentiable_type(v.type):
            continue
        seen.add(v)
        for use in v.uses:
            op = use.operation
            if isinstance(op, func.CallOp) and _plain_callee(op):
                if feeds_a_derivative(op.results, seen):  # (it drops the derivative: its results decide)
                    return True
                continue
            if op.regions or not op.results or not is_side_effect_free(op) or isinstance(op, func.CallOp):
                return True
            if feeds_a_derivative(op.results, seen):
                return True
    return False


def _plain_callee(op: func.CallOp) -> bool:
    """Whether the call is of a function with no derivative at all (not differentiable, no custom
    derivative): a derivative-carrying argument is dropped there, so only what its results feed
    can need one."""
    callee = SymbolTable.lookup_symbol(op, op.callee)
    return isinstance(callee, func.FuncOp) and not diff.is_differentiable_func(callee) and \
        diff.custom_derivative(callee, diff.BWD_DERIVATIVE) is None and \
        diff.custom_derivative(callee, diff.FWD_DERIVATIVE) is None
