"""scf.if: a branch.

Activity: a result varies when the value either branch yields for it varies.
Forward: one scf.if; results are the primal results, then one tangent per result that has one on
some branch (a zero where the other branch has none).
Reverse: the forward sweep copies the if (its branches translated, marked for diff-checkpoint);
the adjoint is an scf.if on the same condition that recomputes the branch, propagates the
adjoints of the if's results into it and yields the adjoint contributions of the outside values
the branch uses.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import scf
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint

from diffc.ad.interface import DerivativeRule, register
from diffc.ad.tape import Emitter, adjoint_type, free_varied
from diffc.dialects.diff import differential_type


class IfRule(DerivativeRule):
    jvp_when_inactive = True

    def activity(self, act, op: scf.IfOp) -> None:
        for r in op.regions:
            act.block(r.block) if r.blocks else None
        for i, res in enumerate(op.results):
            for r in op.regions:
                if r.blocks and r.block.last_op is not None and r.block.last_op.operands[i] in act.varied:
                    act.mark(res)

    def jvp_op(self, fwd, op: scf.IfOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        blocks, terms = [], []
        for region in (op.true_region, op.false_region):
            if not region.blocks:
                continue
            blk = Block()
            terms.append(fwd.translate(region.block, blk))
            blocks.append(blk)
        n = len(op.results)
        active = [i for i in range(n) if any(fwd.t(term.operands[i]) is not None for term in terms)]
        for blk, term in zip(blocks, terms):
            yb = Builder(InsertPoint.at_end(blk))
            yb.insert(scf.YieldOp(*fwd.yield_values(yb, list(term.operands), active)))
        types = [r.type for r in op.results] + [differential_type(op.results[i].type) for i in active]
        new = scf.IfOp(fwd.p(op.cond), types, [blocks[0]], [blocks[1]] if len(blocks) > 1 else None)
        new.attributes.update(op.attributes)
        b.insert(new)
        for i, r in enumerate(op.results):
            t = new.results[n + active.index(i)] if i in active else None
            fwd.bind(r, new.results[i], t)

    def primal_op(self, rev, op: scf.IfOp, vmap: dict, em, ctx, mode: str) -> scf.IfOp:
        blocks = []
        for region in op.regions:
            blk = Block()
            if region.blocks:
                ops = list(region.block.ops)
                v2 = dict(vmap)
                rev.forward(ops[:-1], v2, Emitter(blk), ctx, mode, nested=True)
                blk.add_op(scf.YieldOp(*[v2[x] for x in ops[-1].operands]))
            else:
                blk.add_op(scf.YieldOp())
            blocks.append(blk)
        new = scf.IfOp(vmap[op.cond], [r.type for r in op.results], [blocks[0]], [blocks[1]])
        new.attributes.update(op.attributes)
        return new

    def vjp_op(self, rev, op: scf.IfOp, adj: dict, vmap: dict, em, ctx) -> None:
        free = free_varied(list(op.regions), rev.act)
        if not free and not any(r in adj for r in op.results):
            # nothing to reverse; but with a cotangent coming in, a branch may still call a
            # custom derivative that acts on state of its own (activity: reaches_custom)
            return
        blocks = []
        for region in op.regions:
            blk = Block()
            e2 = Emitter(blk)
            adj2: dict[SSAValue, SSAValue] = {}
            if region.blocks:
                ops = list(region.block.ops)
                v2 = dict(vmap)
                rev.forward(ops[:-1], v2, e2, ctx, "rec", nested=True)
                for r, y in zip(op.results, ops[-1].operands):
                    if r in adj:
                        rev.accumulate(adj2, y, adj[r], e2)
                rev.reverse(ops[:-1], adj2, v2, e2, ctx)
            e2(scf.YieldOp(*[adj2[v] if v in adj2 else e2.zero(adjoint_type(v.type)) for v in free]))
            blocks.append(blk)
        new = em(scf.IfOp(vmap[op.cond], [adjoint_type(v.type) for v in free], [blocks[0]], [blocks[1]]))
        for v, r in zip(free, new.results):
            rev.accumulate(adj, v, r, em)


register(scf.IfOp, IfRule())
