"""scf.if: a branch; translated as every branching op is (diffc/ad/branches.py): the adjoint is
an scf.if on the same condition."""

from __future__ import annotations

from xdsl.dialects import scf

from diffc.ad import branches
from diffc.ad.interface import register


def _make(cond):
    """An scf.if on `cond` from one block (then) or two (then, else)."""
    return lambda blocks, types: scf.IfOp(cond, types, [blocks[0]], [blocks[1]] if len(blocks) > 1 else None)


class IfRule(branches.BranchRule):
    def activity(self, act, op: scf.IfOp) -> None:
        branches.activity(act, op, list(op.regions))

    def jvp_op(self, fwd, op: scf.IfOp, dst) -> None:
        branches.jvp(fwd, op, list(op.regions), dst, _make(fwd.p(op.cond)))

    def primal_op(self, rev, op: scf.IfOp, vmap: dict, em, ctx, mode: str) -> scf.IfOp:
        return branches.primal(rev, op, list(op.regions), vmap, ctx, mode, _make(vmap[op.cond]))  # type: ignore[return-value]

    def vjp_op(self, rev, op: scf.IfOp, adj: dict, vmap: dict, em, ctx) -> None:
        branches.vjp(rev, op, list(op.regions), adj, vmap, em, ctx, _make(vmap[op.cond]))


register(scf.IfOp, IfRule())
