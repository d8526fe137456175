"""scf.index_switch: a multi-way branch on an index (Slang's `switch` without fall-through).

This file is all diffc needs for the op: the registry loads every file of diffc/ad/rules/.

Activity: a result varies when the value any case (or the default) yields for it varies.
Forward: one index_switch whose results are the primal results, then one tangent per result
that has one in some case (a zero in the cases that have none).
Reverse: the forward sweep copies the switch (cases translated, marked for diff-checkpoint);
the adjoint is an index_switch on the same index with the same cases: each recomputes its
case, propagates the adjoints of the switch's results into it and yields the adjoint
contributions of the outside values the case uses (zero for those it does not).
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import scf
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from diffc.ad.interface import DerivativeRule, register
from diffc.ad.tape import Emitter, adjoint_type, free_varied
from diffc.dialects.diff import differential_type


def _regions(op: scf.IndexSwitchOp) -> list[Region]:
    return [op.default_region, *op.case_regions]


def _switch(op: scf.IndexSwitchOp, arg: SSAValue, blocks: list[Block], types) -> scf.IndexSwitchOp:
    """A switch like `op` (same case values) on `arg` with `blocks` (default first)."""
    new = scf.IndexSwitchOp(arg, op.cases, Region(blocks[0]), [Region(b) for b in blocks[1:]], types)
    new.attributes.update(op.attributes)
    return new


class IndexSwitchRule(DerivativeRule):
    jvp_when_inactive = True

    def activity(self, act, op: scf.IndexSwitchOp) -> None:
        for r in _regions(op):
            act.block(r.block)
        for i, res in enumerate(op.results):
            if any(r.block.last_op.operands[i] in act.varied for r in _regions(op)):
                act.mark(res)

    def jvp_op(self, fwd, op: scf.IndexSwitchOp, dst: Block) -> None:
        blocks = [Block() for _ in _regions(op)]
        terms = [fwd.translate(r.block, blk) for r, blk in zip(_regions(op), blocks)]
        n = len(op.results)
        active = [i for i in range(n) if any(fwd.t(term.operands[i]) is not None for term in terms)]
        for blk, term in zip(blocks, terms):
            yb = Builder(InsertPoint.at_end(blk))
            yb.insert(scf.YieldOp(*fwd.yield_values(yb, list(term.operands), active)))
        types = [r.type for r in op.results] + [differential_type(op.results[i].type) for i in active]
        new = Builder(InsertPoint.at_end(dst)).insert(_switch(op, fwd.p(op.arg), blocks, types))
        for i, r in enumerate(op.results):
            fwd.bind(r, new.results[i], new.results[n + active.index(i)] if i in active else None)

    def primal_op(self, rev, op: scf.IndexSwitchOp, vmap: dict, em, ctx, mode: str) -> scf.IndexSwitchOp:
        blocks = []
        for region in _regions(op):
            blk = Block()
            ops = list(region.block.ops)
            v2 = dict(vmap)
            rev.forward(ops[:-1], v2, Emitter(blk), ctx, mode, nested=True)
            blk.add_op(scf.YieldOp(*[v2[x] for x in ops[-1].operands]))
            blocks.append(blk)
        return _switch(op, vmap[op.arg], blocks, [r.type for r in op.results])

    def vjp_op(self, rev, op: scf.IndexSwitchOp, adj: dict, vmap: dict, em, ctx) -> None:
        free = free_varied(_regions(op), rev.act)
        if not free and not any(r in adj for r in op.results):
            # nothing to reverse; but with a cotangent coming in, a branch may still call a
            # custom derivative that acts on state of its own (activity: reaches_custom)
            return
        blocks = []
        for region in _regions(op):
            blk = Block()
            e2 = Emitter(blk)
            adj2: dict[SSAValue, SSAValue] = {}
            ops = list(region.block.ops)
            v2 = dict(vmap)
            rev.forward(ops[:-1], v2, e2, ctx, "rec", nested=True)
            for r, y in zip(op.results, ops[-1].operands):
                if r in adj:
                    rev.accumulate(adj2, y, adj[r], e2)
            rev.reverse(ops[:-1], adj2, v2, e2, ctx)
            e2(scf.YieldOp(*[adj2[v] if v in adj2 else e2.zero(adjoint_type(v.type)) for v in free]))
            blocks.append(blk)
        new = em(_switch(op, vmap[op.arg], blocks, [adjoint_type(v.type) for v in free]))
        for v, r in zip(free, new.results):
            rev.accumulate(adj, v, r, em)


register(scf.IndexSwitchOp, IndexSwitchRule())
