"""Derivative rules of the vector ops the front end emits (data for the registry in diffc.rules).

These ops move lanes around, so their derivatives are the same moves applied to tangents
(forward) and their transposes applied to adjoints (reverse); no partial is a product:

  broadcast  jvp: broadcast the tangent      vjp: sum the adjoint's lanes that each source
                                                  lane was copied to
  extract    jvp: extract from the tangent   vjp: the adjoint inserted into a zero vector
  insert     jvp: insert tangent into tangent vjp: source gets the lane, dest the rest (lane
                                                  zeroed)

Dynamic positions (index operands) carry no derivative. Only sums, extracts and inserts are
emitted, which the interpreter and the OpenCL backend both run.
"""

from __future__ import annotations

import itertools

from xdsl.dialects import vector
from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue

from diffc.ad.partials import RuleBuilder, register_rule


def _shape(t) -> tuple[int, ...]:
    return tuple(t.get_shape()) if isinstance(t, VectorType) else ()


def _lane(b: RuleBuilder, v: SSAValue, pos: tuple[int, ...]) -> SSAValue:
    if not pos:
        return v
    assert isinstance(v.type, VectorType)
    return b.insert(vector.ExtractOp(v, list(pos), v.type.element_type)).results[0]


def _zero_or(b: RuleBuilder, t: SSAValue | None, like: SSAValue) -> SSAValue:
    return t if t is not None else b.const(0.0, like)


# -- broadcast --------------------------------------------------------------------------------


def _broadcast_jvp(b: RuleBuilder, op: vector.BroadcastOp, tangents):
    (t,) = tangents
    return b.insert(vector.BroadcastOp(t, op.vector.type)).results[0]


def _broadcast_vjp(b: RuleBuilder, op: vector.BroadcastOp, adjoint: SSAValue):
    src_shape = _shape(op.source.type)
    dst_shape = _shape(op.vector.type)
    lead = len(dst_shape) - len(src_shape)
    # Result lane `pos` copies source lane `pos[lead:]`, where a source dimension of 1 stretches.
    sums: dict[tuple[int, ...], SSAValue] = {}
    for pos in itertools.product(*(range(n) for n in dst_shape)):
        src_pos = tuple(0 if n == 1 else p for p, n in zip(pos[lead:], src_shape))
        lane = _lane(b, adjoint, pos)
        sums[src_pos] = lane if src_pos not in sums else b.add(sums[src_pos], lane)
    if not src_shape:
        return [sums[()]]
    acc = b.const(0.0, op.source)
    for src_pos, s in sums.items():
        acc = b.insert(vector.InsertOp(s, acc, list(src_pos))).results[0]
    return [acc]


register_rule(vector.BroadcastOp, jvp=_broadcast_jvp, vjp=_broadcast_vjp)


# -- extract ------------------------------------------------------------------------------------


def _extract_jvp(b: RuleBuilder, op: vector.ExtractOp, tangents):
    t = tangents[0]
    if t is None:
        return None
    return b.insert(vector.ExtractOp(t, op.get_mixed_position(), op.result.type)).results[0]


def _extract_vjp(b: RuleBuilder, op: vector.ExtractOp, adjoint: SSAValue):
    zeros = b.const(0.0, op.vector)
    into = b.insert(vector.InsertOp(adjoint, zeros, op.get_mixed_position(), op.vector.type)).results[0]
    return [into] + [None] * len(op.dynamic_position)


register_rule(vector.ExtractOp, jvp=_extract_jvp, vjp=_extract_vjp)


# -- insert -------------------------------------------------------------------------------------


def _insert_jvp(b: RuleBuilder, op: vector.InsertOp, tangents):
    ts, td = tangents[0], tangents[1]
    if ts is None and td is None:
        return None
    src = _zero_or(b, ts, op.source)
    dest = _zero_or(b, td, op.dest)
    return b.insert(vector.InsertOp(src, dest, op.get_mixed_position(), op.result.type)).results[0]


def _insert_vjp(b: RuleBuilder, op: vector.InsertOp, adjoint: SSAValue):
    pos = op.get_mixed_position()
    to_src = b.insert(vector.ExtractOp(adjoint, pos, op.source.type)).results[0]
    to_dest = b.insert(vector.InsertOp(b.const(0.0, op.source), adjoint, pos, op.dest.type)).results[0]
    return [to_src, to_dest] + [None] * len(op.dynamic_position)


register_rule(vector.InsertOp, jvp=_insert_jvp, vjp=_insert_vjp)
