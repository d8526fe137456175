"""The partial-derivative rules of diffc's built-in ops, as data (arith_rules.py, math_rules.py,
vector_rules.py, effect_rules.py), and the names plugins and the front end have always imported
from here. The machinery is diffc.ad.partials (one implementation of the derivative interface,
diffc.ad.interface); the registry is diffc.ad's (RULES is its dict).

`arith_ext.RemFOp` is `arith.remf`, which xDSL 0.74 lacks: importing diffc.registry adds it to
xDSL's arith dialect, so every context that loads arith afterwards parses it.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from diffc.ad.interface import RULES
from diffc.ad.partials import (
    CONVERT,
    Convert,
    JvpFn,
    Partial,
    PartialsFn,
    Rule,
    RuleBuilder,
    VjpFn,
    register_nondifferentiable,
    register_rule,
)
from diffc.ad.partials import emit_jvp as _emit_jvp
from diffc.ad.partials import emit_vjp as _emit_vjp

__all__ = [
    "CONVERT", "RULES", "Convert", "JvpFn", "Partial", "PartialsFn", "Rule", "RuleBuilder", "VjpFn",
    "emit_jvp", "emit_vjp", "lookup_rule", "register_nondifferentiable", "register_rule",
]


def lookup_rule(op: Operation | type[Operation]) -> Rule | None:
    """The partials rule for `op` (an op or an op type), or None when no rule is known (the
    passes then report an error); the built-in rules are loaded first."""
    from diffc.ad.registry import lookup_partials

    return lookup_partials(op)


def emit_jvp(b: RuleBuilder, op: Operation, tangents) -> SSAValue | None:
    lookup_rule(op)  # loads the built-in rules
    return _emit_jvp(b, op, tangents)


def emit_vjp(b: RuleBuilder, op: Operation, adjoint: SSAValue) -> list[SSAValue | None]:
    lookup_rule(op)
    return _emit_vjp(b, op, adjoint)
