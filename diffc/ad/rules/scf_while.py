"""scf.while: a loop with a condition region ("before") and a body ("after").

Activity: the before-region's arguments vary with the inits and the values the body yields; the
after-region's arguments and the results with the values scf.condition forwards.
Forward: one scf.while carrying, next to the primal values, a tangent for each argument (and each
forwarded value) that has one (a fixed point, as for scf.for).
Reverse: `diff.max_iters = N` bounds the tape (N + 1 slots: the condition runs once more than the
body). The forward sweep's copy counts its iterations in an extra carried index, stores the
carried values per iteration (slot `min(iteration, N)`) and, after the loop, the count; it stops
after N + 1 iterations, so a loop past its bound cannot hang derivative code. The
adjoint first reverses the last evaluation of the condition region, then runs an scf.for over
the `min(count, N)` taped iterations backwards; when the count exceeded N every adjoint that flows
out of the loop is NaN (a wrong bound gives a NaN gradient, never a silently wrong one).
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from diffc.ad.interface import register
from diffc.ad.tape import LOOP, TRIP, Ctx, Emitter, LoopRule, adjoint_type, free_varied, i64, nan_if
from diffc.dialects.diff import differential_type
from diffc.kernel_support.status_report import report_overrun


class WhileRule(LoopRule):
    def activity(self, act, op: scf.WhileOp) -> None:
        before, after = op.before_region.block, op.after_region.block
        for init, arg in zip(op.arguments, before.args):
            if init in act.varied:
                act.mark(arg)
        act.block(before)
        cond = before.last_op
        assert isinstance(cond, scf.ConditionOp)
        for v, a, r in zip(cond.args, after.args, op.results):
            if v in act.varied:
                act.mark(a)
                act.mark(r)
        act.block(after)
        y = after.last_op
        assert y is not None
        for v, a in zip(y.operands, before.args):
            if v in act.varied:
                act.mark(a)

    def jvp_op(self, fwd, op: scf.WhileOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        before, after = op.before_region.block, op.after_region.block
        inits = list(op.arguments)
        active = sorted(i for i, v in enumerate(inits) if fwd.t(v) is not None or before.args[i] in fwd.act)
        while True:
            bblk = fwd.loop_block(list(before.args), active)
            cond = fwd.translate(before, bblk)
            assert isinstance(cond, scf.ConditionOp)
            fwd_active = [i for i, v in enumerate(cond.args) if fwd.t(v) is not None]
            # scf.condition passes its values on; bind them before the after region reads them
            ablk = fwd.loop_block(list(after.args), fwd_active)
            term = fwd.translate(after, ablk)
            grown = sorted(set(active) | {i for i, v in enumerate(term.operands) if fwd.t(v) is not None})
            if grown == active:
                break
            fwd.discard(bblk)
            fwd.discard(ablk)
            active = grown
        cb = Builder(InsertPoint.at_end(bblk))
        cb.insert(scf.ConditionOp(fwd.p(cond.condition), *fwd.yield_values(cb, list(cond.args), fwd_active)))
        yb = Builder(InsertPoint.at_end(ablk))
        yb.insert(scf.YieldOp(*fwd.yield_values(yb, list(term.operands), active)))
        new_inits = fwd.yield_values(b, inits, active)
        types = [r.type for r in op.results] + [differential_type(op.results[i].type) for i in fwd_active]
        new = scf.WhileOp(new_inits, types, Region(bblk), Region(ablk))
        new.attributes.update(op.attributes)
        b.insert(new)
        n = len(op.results)
        for i, r in enumerate(op.results):
            t = new.results[n + fwd_active.index(i)] if i in fwd_active else None
            fwd.bind(r, new.results[i], t)
    def primal_op(self, rev, op: scf.WhileOp, vmap: dict, em: Emitter, ctx: Ctx, mode: str) -> Operation:
        n = rev.loop_bound(op) + 1  # the condition region runs once more than the body
        lid = rev.loop_id(op)
        before, after = op.before_region.block, op.after_region.block
        idx = IndexType()
        bb = Block(arg_types=[a.type for a in before.args] + [idx])
        eb = Emitter(bb)
        k = rev.counter(eb, bb.args[-1], lid, n)
        ctx2 = ctx + [(k, n)]
        if mode == "fwd":
            rev.store_carried(op, bb.args[:-1], eb, ctx2)
        v2 = dict(vmap)
        v2.update(zip(before.args, bb.args))
        ops = list(before.ops)
        rev.forward(ops[:-1], v2, eb, ctx2, mode, nested=True)
        cond = ops[-1]
        assert isinstance(cond, scf.ConditionOp)
        # Derivative code never runs past the bound: one iteration more than N shows the overrun
        # (count > N: NaN gradients, and the host's LoopOverrunError), and a loop that would never
        # end stops there instead of hanging the device.
        within = eb.v(arith.CmpiOp(bb.args[-1], eb.index(n - 1), "ule"))
        go = eb.v(arith.AndIOp(v2[cond.condition], within))
        eb(scf.ConditionOp(go, *[v2[a] for a in cond.args], bb.args[-1]))
        ab = Block(arg_types=[a.type for a in after.args] + [idx])
        ea = Emitter(ab)
        ka = rev.counter(ea, ab.args[-1], lid, n)
        v3 = dict(vmap)
        v3.update(zip(after.args, ab.args))
        ops = list(after.ops)
        rev.forward(ops[:-1], v3, ea, ctx + [(ka, n)], mode, nested=True)
        one = ea.index(1)
        ea(scf.YieldOp(*[v3[x] for x in ops[-1].operands], ea.v(arith.AddiOp(ab.args[-1], one))))
        zero = em.index(0)
        new = scf.WhileOp(
            [vmap[x] for x in op.arguments] + [zero], [r.type for r in op.results] + [idx], [bb], [ab]
        )
        new.attributes.update(op.attributes)
        new.attributes[LOOP] = i64(lid)
        new.attributes[TRIP] = i64(n)
        new.location = op.location  # errors about its diff.max_iters point at the user's loop
        return new

    def after_primal(self, rev, op: scf.WhileOp, new: Operation, em: Emitter, ctx: Ctx, mode: str) -> None:
        if mode == "fwd":
            rev.store_count(op, new, em, ctx)

    def vjp_op(self, rev, op: scf.WhileOp, adj: dict, vmap: dict, em: Emitter, ctx: Ctx) -> None:
        n = rev.loop_bound(op) + 1
        lid = rev.loop_id(op)
        before, after = op.before_region.block, op.after_region.block
        bops, aops = list(before.ops), list(after.ops)
        cond, ay = bops[-1], aops[-1]
        assert isinstance(cond, scf.ConditionOp)
        X = [j for j, a in enumerate(before.args) if a in rev.act]
        free = free_varied([op.before_region, op.after_region], rev.act)
        # More iterations than diff.max_iters: the tape kept the first n - 1 only. The reverse
        # sweep then runs over those (in bounds) and its gradients are NaN, not silently wrong;
        # a status global tells the host, which raises (diffc/kernel_support/status_report.py).
        taped = rev.load_taped((op, -1), IndexType(), em, ctx)
        last_slot = em.index(n - 1)
        overran = em.v(arith.CmpiOp(taped, last_slot, "ugt"))
        report_overrun(op, taped, overran, n - 1, em.block, stopped=True)  # the host raises LoopOverrunError
        count = em.v(arith.MinUIOp(taped, last_slot))
        # 1. the last evaluation of the condition region, which produced the results
        ctx_last = ctx + [(count, n)]
        v1 = dict(vmap)
        rev.load_carried(op, before.args, v1, em, ctx_last)
        rev.forward(bops[:-1], v1, em, ctx_last, "rec", nested=True)
        adj1: dict[SSAValue, SSAValue] = {}
        for r, c in zip(op.results, cond.args):
            if r in adj:
                rev.accumulate(adj1, c, adj[r], em)
        rev.reverse(bops[:-1], adj1, v1, em, ctx_last)
        for v in free:
            if v in adj1:
                rev.accumulate(adj, v, adj1[v], em)
        # 2. the completed iterations, last first
        inits = [adj1[before.args[j]] if before.args[j] in adj1 else em.zero(adjoint_type(before.args[j].type)) for j in X]
        inits += [em.zero(adjoint_type(v.type)) for v in free]
        blk, k, e2 = rev.reverse_loop(count, lid, inits, em)
        ctx2 = ctx + [(k, n)]
        v2 = dict(vmap)
        rev.load_carried(op, before.args, v2, e2, ctx2)
        rev.forward(bops[:-1], v2, e2, ctx2, "rec", nested=True)
        for a, c in zip(after.args, cond.args):
            v2[a] = v2[c]
        rev.forward(aops[:-1], v2, e2, ctx2, "rec", nested=True)
        adj2: dict[SSAValue, SSAValue] = dict(zip(free, blk.args[1 + len(X) :]))
        for pos, j in enumerate(X):
            rev.accumulate(adj2, ay.operands[j], blk.args[1 + pos], e2)
        rev.reverse(aops[:-1], adj2, v2, e2, ctx2)
        for a, c in zip(after.args, cond.args):
            if a in adj2:
                rev.accumulate(adj2, c, adj2[a], e2)
        rev.reverse(bops[:-1], adj2, v2, e2, ctx2)
        rev.close_reverse_loop(
            blk, e2, em, (count, lid, n, inits), [before.args[j] for j in X], [op.arguments[j] for j in X], free, adj, adj2
        )
        for v in dict.fromkeys([*[op.arguments[j] for j in X], *free]):
            if v in adj:
                adj[v] = nan_if(overran, adj[v], em)


register(scf.WhileOp, WhileRule())
