"""Derivative rules of the vector ops the front end builds vectors with: extract, insert and
broadcast. All three only move components, so tangents and adjoints move the same way."""

from __future__ import annotations

from xdsl.dialects import vector

from diffc.rules import RuleBuilder, register_rule


def _extract(b: RuleBuilder, v, op, result_type):
    return b.insert(vector.ExtractOp(v, op.get_mixed_position(), result_type)).results[0]


def _insert(b: RuleBuilder, x, v, op):
    return b.insert(vector.InsertOp(x, v, op.get_mixed_position())).results[0]


def _no_positions(op) -> list[None]:
    return [None] * len(op.dynamic_position)


# y = v[k]: dy = dv[k]; adj(v) = a at k, zero elsewhere.
register_rule(
    vector.ExtractOp,
    jvp=lambda b, op, t: None if t[0] is None else _extract(b, t[0], op, op.result.type),
    vjp=lambda b, op, a: [_insert(b, a, b.value(0.0, op.vector), op)] + _no_positions(op),
)


# y = dest with y[k] = source.
def _insert_jvp(b: RuleBuilder, op, t):
    ds, dd = t[0], t[1]
    if ds is None and dd is None:
        return None
    ds = ds if ds is not None else b.value(0.0, op.source)
    dd = dd if dd is not None else b.value(0.0, op.dest)
    return _insert(b, ds, dd, op)


register_rule(
    vector.InsertOp,
    jvp=_insert_jvp,
    vjp=lambda b, op, a: [_extract(b, a, op, op.source.type), _insert(b, b.value(0.0, op.source), a, op)]
    + _no_positions(op),
)


# y = (x, x, ..., x): dy broadcasts dx; adj(x) = sum of the components of a.
def _broadcast_vjp(b: RuleBuilder, op, a):
    if op.source.type == op.vector.type:
        return [a]
    el = op.source.type
    n = op.vector.type.get_shape()[0]
    acc = b.insert(vector.ExtractOp(a, [0], el)).results[0]
    for i in range(1, n):
        acc = b.add(acc, b.insert(vector.ExtractOp(a, [i], el)).results[0])
    return [acc]


register_rule(
    vector.BroadcastOp,
    jvp=lambda b, op, t: None if t[0] is None else b.insert(vector.BroadcastOp(t[0], op.vector.type)).results[0],
    vjp=_broadcast_vjp,
)
