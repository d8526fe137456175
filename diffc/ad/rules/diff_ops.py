"""The diff dialect's own ops inside a function being differentiated.

  diff.detach        value of x, no derivative: forward keeps the detach (so that
                     differentiating the derivative again still drops it); reverse stops adjoints.
  diff.zero          a zero derivative: no derivative of its own.
  diff.add           linear: tangents add; the adjoint goes to both operands.
  diff.make_pair, diff.primal, diff.differential
                     linear (higher order: pair values in code that itself ran forward mode):
                     the tangent of a pair is a pair, taken component-wise; the adjoint of a
                     pair is a pair of adjoints.
  diff.fwd_diff      lowered before its function is differentiated; one left is an error.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.ir import Block, Operation
from xdsl.rewriter import InsertPoint

from diffc.ad.interface import DerivativeRule, register
from diffc.ad.tape import adjoint_type
from diffc.dialects.diff import AddOp, DetachOp, DifferentialOp, FwdDiffOp, MakePairOp, PairType, PrimalOp, ZeroOp


def _tangents(fwd, op: Operation) -> list:
    return [fwd.t(v) for v in op.operands]


class DetachRule(DerivativeRule):
    jvp_when_inactive = True

    def activity(self, act, op: DetachOp) -> None:
        return None

    def jvp_op(self, fwd, op: DetachOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        fwd.bind(op.result, b.insert(DetachOp(fwd.p(op.input))).result, None)

    def vjp_op(self, rev, op, adj, vmap, em, ctx) -> None:
        return None


class ZeroRule(DerivativeRule):
    jvp_when_inactive = True

    def jvp_op(self, fwd, op: ZeroOp, dst: Block) -> None:
        fwd.copy_without_tangents(op, dst)


class AddRule(DerivativeRule):
    def jvp_op(self, fwd, op: AddOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        new = b.insert(op.clone(value_mapper=fwd.primal))
        ta, tb = _tangents(fwd, op)
        t = ta if tb is None else tb if ta is None else b.insert(AddOp(ta, tb)).result
        fwd.bind(op.result, new.results[0], t)

    def vjp_op(self, rev, op: AddOp, adj, vmap, em, ctx) -> None:
        rev.accumulate(adj, op.lhs, adj[op.result], em)
        rev.accumulate(adj, op.rhs, adj[op.result], em)


class MakePairRule(DerivativeRule):
    def jvp_op(self, fwd, op: MakePairOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        new = b.insert(op.clone(value_mapper=fwd.primal))
        tans = _tangents(fwd, op)
        tp = fwd.tan_or_zero(b, tans[0], op.primal.type)
        td = fwd.tan_or_zero(b, tans[1], op.differential.type)
        fwd.bind(op.result, new.results[0], b.insert(MakePairOp(tp, td)).result)

    def vjp_op(self, rev, op: MakePairOp, adj, vmap, em, ctx) -> None:
        a = adj[op.result]
        rev.accumulate(adj, op.primal, em.v(PrimalOp(a)), em)
        rev.accumulate(adj, op.differential, em.v(DifferentialOp(a)), em)


class ProjectionRule(DerivativeRule):
    """diff.primal / diff.differential."""

    def jvp_op(self, fwd, op: PrimalOp | DifferentialOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        new = b.insert(op.clone(value_mapper=fwd.primal))
        t = b.insert(type(op)(_tangents(fwd, op)[0])).result
        fwd.bind(op.result, new.results[0], t)

    def vjp_op(self, rev, op: PrimalOp | DifferentialOp, adj, vmap, em, ctx) -> None:
        a = adj[op.result]
        pt = adjoint_type(op.pair.type)
        assert isinstance(pt, PairType)
        z = em.zero(pt.element_type)
        parts = (a, z) if isinstance(op, PrimalOp) else (z, a)
        rev.accumulate(adj, op.pair, em.v(MakePairOp(*parts)), em)


class FwdDiffRule(DerivativeRule):
    jvp_when_inactive = True

    def activity(self, act, op: FwdDiffOp) -> None:
        if any(o in act.varied for o in op.operands):
            act.refuse(f"'{op.name}' has no derivative rule but receives a derivative-carrying value", op)

    def jvp_op(self, fwd, op: FwdDiffOp, dst: Block) -> None:  # lowered before; kept for safety
        raise fwd.fail("'diff.fwd_diff' left inside a function being differentiated", op)


register(DetachOp, DetachRule())
register(ZeroOp, ZeroRule())
register(AddOp, AddRule())
register(MakePairOp, MakePairRule())
register(PrimalOp, ProjectionRule())
register(DifferentialOp, ProjectionRule())
register(FwdDiffOp, FwdDiffRule())
