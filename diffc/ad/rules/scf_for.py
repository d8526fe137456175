"""scf.for: a counted loop.

Activity: an iter_arg varies when its init or the value yielded for it varies (a fixed point);
a result varies when its iter_arg does.
Forward: one scf.for whose iter_args are the primal ones, then one tangent per iter_arg that
carries one (found as a fixed point: an iter_arg whose yielded value gets a tangent carries one).
Reverse: the forward sweep's copy stores the carried values per iteration on the tape
(`memref<N1 x ... x Nk x T>`, N: the constant trip count or diff.max_iters); the adjoint is an
scf.for over the iterations backwards that reloads the carried values, recomputes the body and
propagates the adjoints (carried in its iter_args), with the adjoints of the outside values the
body uses carried too. A loop bounded by diff.max_iters that runs longer is treated as an
overlong scf.while is: its slots are clamped, its gradients NaN, and the host told.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from diffc.ad.interface import register
from diffc.ad.tape import LOOP, TRIP, Ctx, Emitter, LoopRule, adjoint_type, free_varied, i64, nan_if, trip_count
from diffc.kernel_support.status_report import report_overrun


class ForRule(LoopRule):
    def activity(self, act, op: scf.ForOp) -> None:
        body = op.body.block
        for init, arg in zip(op.iter_args, body.args[1:]):
            if init in act.varied:
                act.mark(arg)
        act.block(body)
        y = body.last_op
        assert y is not None
        for i, (res, arg) in enumerate(zip(op.results, body.args[1:])):
            if y.operands[i] in act.varied:
                act.mark(arg)
            if arg in act.varied:
                act.mark(res)

    def jvp_op(self, fwd, op: scf.ForOp, dst: Block) -> None:
        b = Builder(InsertPoint.at_end(dst))
        body = op.body.block
        iv, carried = body.args[0], list(body.args[1:])
        inits = list(op.iter_args)
        active = sorted(i for i, v in enumerate(inits) if fwd.t(v) is not None or carried[i] in fwd.act)
        while True:
            blk = fwd.loop_block(carried, active, [iv])
            term = fwd.translate(body, blk)
            grown = sorted(set(active) | {i for i, v in enumerate(term.operands) if fwd.t(v) is not None})
            if grown == active:
                break
            fwd.discard(blk)
            active = grown
        yb = Builder(InsertPoint.at_end(blk))
        yb.insert(scf.YieldOp(*fwd.yield_values(yb, list(term.operands), active)))
        new_inits = fwd.yield_values(b, inits, active)
        new = scf.ForOp(fwd.p(op.lb), fwd.p(op.ub), fwd.p(op.step), new_inits, blk)
        new.attributes.update(op.attributes)
        b.insert(new)
        n = len(op.results)
        for i, r in enumerate(op.results):
            t = new.results[n + active.index(i)] if i in active else None
            fwd.bind(r, new.results[i], t)

    def primal_op(self, rev, op: scf.ForOp, vmap: dict, em: Emitter, ctx: Ctx, mode: str) -> Operation:
        n = rev.loop_bound(op)
        lid = rev.loop_id(op)
        body = op.body.block
        lb, ub, st = vmap[op.lb], vmap[op.ub], vmap[op.step]
        blk = Block(arg_types=[a.type for a in body.args])
        for a, b in zip(body.args, blk.args):
            b.name_hint = a.name_hint
        e2 = Emitter(blk)
        k = rev.iter_number(e2, blk.args[0], lb, st, lid, None if trip_count(op) is not None else n)
        ctx2 = ctx + [(k, n)]
        if mode == "fwd":
            rev.store_carried(op, blk.args[1:], e2, ctx2)
        v2 = dict(vmap)
        v2.update(zip(body.args, blk.args))
        ops = list(body.ops)
        rev.forward(ops[:-1], v2, e2, ctx2, mode, nested=True)
        e2(scf.YieldOp(*[v2[x] for x in ops[-1].operands]))
        new = scf.ForOp(lb, ub, st, [vmap[x] for x in op.iter_args], blk)
        new.attributes.update(op.attributes)
        new.attributes[LOOP] = i64(lid)
        new.attributes[TRIP] = i64(n)
        return new

    def vjp_op(self, rev, op: scf.ForOp, adj: dict, vmap: dict, em: Emitter, ctx: Ctx) -> None:
        n = rev.loop_bound(op)
        lid = rev.loop_id(op)
        body = op.body.block
        ops = list(body.ops)
        y = ops[-1]
        carried = body.args[1:]
        J = [j for j, a in enumerate(carried) if a in rev.act]
        free = free_varied([op.body], rev.act)
        if not J and not free and not rev.calls_custom_bwd(op):
            # a custom backward derivative in the body may act on state of its own: it still runs
            return
        lb, ub, st = vmap[op.lb], vmap[op.ub], vmap[op.step]
        tc = trip_count(op)
        overran = None
        if tc is not None:
            count = em.index(tc)
        else:
            def idx(v):
                return v if isinstance(v.type, IndexType) else em.v(arith.IndexCastOp(v, IndexType()))
            lbi, ubi, sti = idx(lb), idx(ub), idx(st)
            span = em.v(arith.SubiOp(em.v(arith.AddiOp(em.v(arith.SubiOp(ubi, lbi)), sti)), em.index(1)))
            count = em.v(arith.DivSIOp(span, sti))
            # More iterations than diff.max_iters: the tape kept n slots (the forward sweep wrote
            # the later iterations into the last). As for scf.while: reverse the taped ones, make
            # every gradient out of the loop NaN, and tell the host (diffc/kernel_support/status_report.py).
            overran = em.v(arith.CmpiOp(count, em.index(n), "sgt"))
            report_overrun(op, count, overran, n, em.block)
            count = em.v(arith.MinSIOp(count, em.index(n)))
        inits = [adj[op.results[j]] if op.results[j] in adj else em.zero(adjoint_type(carried[j].type)) for j in J]
        inits += [em.zero(adjoint_type(v.type)) for v in free]
        blk, k, e2 = rev.reverse_loop(count, lid, inits, em)
        ctx2 = ctx + [(k, n)]
        kk = k if isinstance(body.args[0].type, IndexType) else e2.v(arith.IndexCastOp(k, body.args[0].type))
        iv = e2.v(arith.AddiOp(lb, e2.v(arith.MuliOp(kk, st))))
        v2 = dict(vmap)
        v2[body.args[0]] = iv
        rev.load_carried(op, carried, v2, e2, ctx2)
        rev.forward(ops[:-1], v2, e2, ctx2, "rec", nested=True)
        adj2: dict[SSAValue, SSAValue] = dict(zip(free, blk.args[1 + len(J) :]))
        for pos, j in enumerate(J):
            rev.accumulate(adj2, y.operands[j], blk.args[1 + pos], e2)
        rev.reverse(ops[:-1], adj2, v2, e2, ctx2)
        rev.close_reverse_loop(
            blk, e2, em, (count, lid, n, inits), [carried[j] for j in J], [op.iter_args[j] for j in J], free, adj, adj2
        )
        if overran is not None:
            for v in dict.fromkeys([*[op.iter_args[j] for j in J], *free]):
                if v in adj:
                    adj[v] = nan_if(overran, adj[v], em)


register(scf.ForOp, ForRule())
