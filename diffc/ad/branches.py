"""What the rules of branching ops (scf.if, scf.index_switch) share: each op runs one of its
regions and yields the op's results from it. A rule gives its regions (an scf.if without an
else has one block fewer) and how to build an op like it with other blocks (`make`); the
activity, forward, primal-copy and reverse translations are the same for every such op.

Activity: a result varies when the value any region yields for it varies.
Forward: one op whose results are the primal results, then one tangent per result that has one
in some region (a zero in the regions that have none).
Reverse: the forward sweep copies the op (regions translated, marked for diff-checkpoint); the
adjoint is an op of the same kind on the same selector: each region recomputes its branch,
propagates the adjoints of the op's results into it and yields the adjoint contributions of the
outside values the branch uses (zero for those it does not).
Checkpointing: the op's results are recomputed (diff-checkpoint decides about the values inside
its regions one by one), unless the function prefers checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.builder import Builder
from xdsl.dialects import scf
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from diffc.ad.interface import DerivativeRule
from diffc.ad.tape import Emitter, adjoint_type, free_varied
from diffc.dialects.diff import differential_type

# builds the op again from blocks, one per region that has one, with these result types
Make = Callable[[list[Block], list[Attribute]], Operation]


class BranchRule(DerivativeRule):
    """The base of a branching op's rule: forward mode translates it even when no operand
    carries a tangent (its regions may use outside values that do); diff-checkpoint's choice."""

    jvp_when_inactive = True

    def checkpoint(self, op: Operation, prefer: str | None, origin: str, symbols: dict) -> tuple[bool, str]:
        if prefer == "checkpoint":
            return True, f"@{origin} prefers checkpoint"
        return False, "branch results (contents decided one by one)"


def _bodies(regions: list[Region]) -> list[Block]:
    return [r.block for r in regions if r.blocks]


def activity(act, op: Operation, regions: list[Region]) -> None:
    for block in _bodies(regions):
        act.block(block)
    for i, res in enumerate(op.results):
        if any(b.last_op is not None and b.last_op.operands[i] in act.varied for b in _bodies(regions)):
            act.mark(res)


def jvp(fwd, op: Operation, regions: list[Region], dst: Block, make: Make) -> None:
    blocks = [Block() for _ in _bodies(regions)]
    terms = [fwd.translate(body, blk) for body, blk in zip(_bodies(regions), blocks)]
    n = len(op.results)
    active = [i for i in range(n) if any(fwd.t(term.operands[i]) is not None for term in terms)]
    for blk, term in zip(blocks, terms):
        yb = Builder(InsertPoint.at_end(blk))
        yb.insert(scf.YieldOp(*fwd.yield_values(yb, list(term.operands), active)))
    types = [r.type for r in op.results] + [differential_type(op.results[i].type) for i in active]
    new = Builder(InsertPoint.at_end(dst)).insert(make(blocks, types))
    new.attributes.update(op.attributes)
    for i, r in enumerate(op.results):
        fwd.bind(r, new.results[i], new.results[n + active.index(i)] if i in active else None)


def primal(rev, op: Operation, regions: list[Region], vmap: dict, ctx, mode: str, make: Make) -> Operation:
    blocks = []
    for region in regions:
        blk = Block()
        if region.blocks:
            ops = list(region.block.ops)
            v2 = dict(vmap)
            rev.forward(ops[:-1], v2, Emitter(blk), ctx, mode, nested=True)
            blk.add_op(scf.YieldOp(*[v2[x] for x in ops[-1].operands]))
        else:
            blk.add_op(scf.YieldOp())
        blocks.append(blk)
    new = make(blocks, [r.type for r in op.results])
    new.attributes.update(op.attributes)
    return new


def vjp(rev, op: Operation, regions: list[Region], adj: dict, vmap: dict, em, ctx, make: Make) -> None:
    free = free_varied(regions, rev.act)
    if not free and not any(r in adj for r in op.results) and not rev.calls_custom_bwd(op):
        # nothing to reverse: no derivative flows through the branch, and no custom backward
        # derivative inside it acts on state of its own (a buffer's gradient, say)
        return
    blocks = []
    for region in regions:
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
    new = em(make(blocks, [adjoint_type(v.type) for v in free]))
    for v, r in zip(free, new.results):
        rev.accumulate(adj, v, r, em)
