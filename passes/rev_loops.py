"""The loops of diff-rev: the forward clones of scf.for / scf.while that store their carried
values per iteration (and count the iterations of a while), and the reverse loops that run the
iterations backwards. A mixin of diff-rev's function reverser (passes/diff_rev.py), which
provides forward(), reverse(), accumulate(), tape(), indices() and the activity `act`.

A carried `!diff.pair` (primal code that itself runs forward mode inside a loop, differentiated
again in reverse) is taped as its halves, one tape each, and rebuilt with diff.make_pair."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IndexType, IntegerAttr, VectorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from diffc.dialects import diff
from diffc.passes.status_report import report_overrun
from diffc.passes.rev_support import ITER, LOOP, TRIP, Emitter, adjoint_type, fail, free_varied, i64

Ctx = list[tuple[SSAValue, int]]  # (forward iteration number, bound) per enclosing loop


def nan_if(flag: SSAValue, v: SSAValue, em: Emitter) -> SSAValue:
    """`v`, or NaN in every float of it where `flag` (an i1) holds."""
    t = v.type
    if isinstance(t, diff.PairType):
        p = nan_if(flag, em.v(diff.PrimalOp(v)), em)
        return em.v(diff.MakePairOp(p, nan_if(flag, em.v(diff.DifferentialOp(v)), em)))
    if isinstance(t, VectorType) and diff.is_float_type(t.element_type):
        nan = DenseIntOrFPElementsAttr.from_list(t, [float("nan")] * t.element_count())
        return em.v(arith.SelectOp(flag, em.v(arith.ConstantOp(nan, t)), v))
    if diff.is_float_type(t):
        return em.v(arith.SelectOp(flag, em.v(arith.ConstantOp(FloatAttr(float("nan"), t))), v))
    return v  # integers carry no derivative


def const_index(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def trip_count(op: scf.ForOp) -> int | None:
    lb, ub, st = const_index(op.lb), const_index(op.ub), const_index(op.step)
    if lb is None or ub is None or st is None or st <= 0:
        return None
    return max(0, -(-(ub - lb) // st))


class LoopReverser:
    """Loop handling of _FuncReverser (see the module docstring)."""

    def loop_bound(self, op: Operation) -> int:
        n = trip_count(op) if isinstance(op, scf.ForOp) else None
        if n is None:
            n = diff.max_iters(op)
        if n is None:
            what = "scf.for without constant bounds" if isinstance(op, scf.ForOp) else "scf.while"
            raise fail(
                self.name,
                f"unbounded loop ({what} and no diff.max_iters) cannot be reversed; "
                f"give it diff.max_iters = N",
                op,
            )
        return max(n, 1)

    def loop_id(self, op: Operation) -> int:
        if op not in self.loop_ids:
            self.loop_ids[op] = self.gen.fresh_id()
        return self.loop_ids[op]

    def iter_number(self, em: Emitter, iv: SSAValue, lb: SSAValue, st: SSAValue, loop: int) -> SSAValue:
        k_op = arith.DivSIOp(em.v(arith.SubiOp(iv, lb)), st)
        em(k_op)
        if not isinstance(iv.type, IndexType):
            k_op = em(arith.IndexCastOp(k_op.results[0], IndexType()))
        k_op.attributes[ITER] = i64(loop)
        return k_op.results[0]

    def fwd_for(self, op: scf.ForOp, vmap: dict, em: Emitter, ctx: Ctx, mode: str) -> Operation:
        n = self.loop_bound(op)
        lid = self.loop_id(op)
        body = op.body.block
        lb, ub, st = vmap[op.lb], vmap[op.ub], vmap[op.step]
        blk = Block(arg_types=[a.type for a in body.args])
        for a, b in zip(body.args, blk.args):
            b.name_hint = a.name_hint
        e2 = Emitter(blk)
        k = self.iter_number(e2, blk.args[0], lb, st, lid)
        ctx2 = ctx + [(k, n)]
        if mode == "fwd":
            self.store_carried(op, blk.args[1:], e2, ctx2)
        v2 = dict(vmap)
        v2.update(zip(body.args, blk.args))
        ops = list(body.ops)
        self.forward(ops[:-1], v2, e2, ctx2, mode, nested=True)
        e2(scf.YieldOp(*[v2[x] for x in ops[-1].operands]))
        new = scf.ForOp(lb, ub, st, [vmap[x] for x in op.iter_args], blk)
        new.attributes.update(op.attributes)
        new.attributes[LOOP] = i64(lid)
        new.attributes[TRIP] = i64(n)
        return new

    def fwd_while(self, op: scf.WhileOp, vmap: dict, em: Emitter, ctx: Ctx, mode: str) -> Operation:
        n = self.loop_bound(op) + 1  # the condition region runs once more than the body
        lid = self.loop_id(op)
        before, after = op.before_region.block, op.after_region.block
        idx = IndexType()
        bb = Block(arg_types=[a.type for a in before.args] + [idx])
        eb = Emitter(bb)
        k = self.counter(eb, bb.args[-1], lid, n)
        ctx2 = ctx + [(k, n)]
        if mode == "fwd":
            self.store_carried(op, bb.args[:-1], eb, ctx2)
        v2 = dict(vmap)
        v2.update(zip(before.args, bb.args))
        ops = list(before.ops)
        self.forward(ops[:-1], v2, eb, ctx2, mode, nested=True)
        cond = ops[-1]
        assert isinstance(cond, scf.ConditionOp)
        eb(scf.ConditionOp(v2[cond.condition], *[v2[a] for a in cond.args], bb.args[-1]))
        ab = Block(arg_types=[a.type for a in after.args] + [idx])
        ea = Emitter(ab)
        ka = self.counter(ea, ab.args[-1], lid, n)
        v3 = dict(vmap)
        v3.update(zip(after.args, ab.args))
        ops = list(after.ops)
        self.forward(ops[:-1], v3, ea, ctx + [(ka, n)], mode, nested=True)
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

    def store_count(self, op: scf.WhileOp, new: Operation, em: Emitter, ctx: Ctx) -> None:
        self.store_taped((op, -1), new.results[-1], em, ctx, "iteration count of scf.while")

    # ---- tapes: the forward sweep stores, the reverse sweep loads the same slot ------------------

    def store_carried(self, op: Operation, values: Sequence[SSAValue], em: Emitter, ctx: Ctx) -> None:
        for j, v in enumerate(values):
            self.store_taped((op, j), v, em, ctx, "loop-carried value of " + op.name)

    def load_carried(self, op: Operation, args: Sequence[SSAValue], vmap: dict, em: Emitter, ctx: Ctx) -> None:
        """Maps each carried block argument of `op` to its value reloaded from the tape."""
        for j, a in enumerate(args):
            vmap[a] = self.load_taped((op, j), a.type, em, ctx)

    def store_taped(self, key: tuple, v: SSAValue, em: Emitter, ctx: Ctx, why: str) -> None:
        if isinstance(v.type, diff.PairType):
            self.store_taped(key + ("primal",), em.v(diff.PrimalOp(v)), em, ctx, why + " (primal half)")
            self.store_taped(key + ("differential",), em.v(diff.DifferentialOp(v)), em, ctx, why + " (derivative half)")
            return
        t = self.tape(key, v.type, [b for _, b in ctx], why)
        em(memref.StoreOp.get(v, t, self.indices(ctx, em)))

    def load_taped(self, key: tuple, t: Attribute, em: Emitter, ctx: Ctx) -> SSAValue:
        if isinstance(t, diff.PairType):
            p = self.load_taped(key + ("primal",), t.element_type, em, ctx)
            d = self.load_taped(key + ("differential",), diff.differential_type(t.element_type), em, ctx)
            return em.v(diff.MakePairOp(p, d))
        return em.v(memref.LoadOp.get(self.tapes[key], self.indices(ctx, em)))

    @staticmethod
    def counter(em: Emitter, cnt: SSAValue, loop: int, n: int) -> SSAValue:
        """The tape slot of a while loop's iteration `cnt`: past the `n` slots of its
        diff.max_iters bound every further iteration reuses the last one, so the forward sweep
        never writes out of bounds (the reverse sweep flags such a run, see rev_while)."""
        k_op = arith.MinUIOp(cnt, em.index(n - 1))
        k_op.attributes[ITER] = i64(loop)
        return em.v(k_op)

    def reverse_loop(self, count: SSAValue, lid: int, inits: list[SSAValue], em: Emitter):
        """An empty reverse loop over `count` iterations; returns (block, forward iteration
        number, emitter of the body)."""
        blk = Block(arg_types=[IndexType()] + [v.type for v in inits])
        e2 = Emitter(blk)
        last = e2.v(arith.SubiOp(count, e2.index(1)))
        k_op = e2(arith.SubiOp(last, blk.args[0]))
        k_op.attributes[ITER] = i64(lid)
        return blk, k_op.results[0], e2

    def close_reverse_loop(
        self,
        blk: Block,
        e2: Emitter,
        em: Emitter,
        loop: tuple[SSAValue, int, int, list[SSAValue]],
        carried: list[SSAValue],
        inputs: list[SSAValue],
        free: list[SSAValue],
        adj: dict,
        adj2: dict,
    ) -> None:
        """Ends the reverse loop's body (yields the adjoints of the `carried` block arguments and
        of the `free` values), emits the loop (`loop`: count, id, bound, inits) and accumulates its
        results into the adjoints of the forward loop's `inputs` and of `free`."""
        count, lid, n, inits = loop
        outs = [adj2[a] if a in adj2 else e2.zero(adjoint_type(a.type)) for a in carried]
        e2(scf.YieldOp(*outs, *[adj2[v] for v in free]))
        rfor = em(scf.ForOp(em.index(0), count, em.index(1), inits, blk))
        rfor.attributes[LOOP] = i64(lid)
        rfor.attributes[TRIP] = i64(n)
        for x, r in zip([*inputs, *free], rfor.results, strict=True):
            self.accumulate(adj, x, r, em)

    def rev_for(self, op: scf.ForOp, adj: dict, vmap: dict, em: Emitter, ctx: Ctx) -> None:
        n = self.loop_bound(op)
        lid = self.loop_id(op)
        body = op.body.block
        ops = list(body.ops)
        y = ops[-1]
        carried = body.args[1:]
        J = [j for j, a in enumerate(carried) if a in self.act]
        free = free_varied([op.body], self.act)
        if not J and not free:
            return
        lb, ub, st = vmap[op.lb], vmap[op.ub], vmap[op.step]
        tc = trip_count(op)
        if tc is not None:
            count = em.index(tc)
        else:
            def idx(v):
                return v if isinstance(v.type, IndexType) else em.v(arith.IndexCastOp(v, IndexType()))
            lbi, ubi, sti = idx(lb), idx(ub), idx(st)
            span = em.v(arith.SubiOp(em.v(arith.AddiOp(em.v(arith.SubiOp(ubi, lbi)), sti)), em.index(1)))
            count = em.v(arith.DivSIOp(span, sti))
        inits = [adj[op.results[j]] if op.results[j] in adj else em.zero(adjoint_type(carried[j].type)) for j in J]
        inits += [em.zero(adjoint_type(v.type)) for v in free]
        blk, k, e2 = self.reverse_loop(count, lid, inits, em)
        ctx2 = ctx + [(k, n)]
        kk = k if isinstance(body.args[0].type, IndexType) else e2.v(arith.IndexCastOp(k, body.args[0].type))
        iv = e2.v(arith.AddiOp(lb, e2.v(arith.MuliOp(kk, st))))
        v2 = dict(vmap)
        v2[body.args[0]] = iv
        self.load_carried(op, carried, v2, e2, ctx2)
        self.forward(ops[:-1], v2, e2, ctx2, "rec", nested=True)
        adj2: dict[SSAValue, SSAValue] = dict(zip(free, blk.args[1 + len(J) :]))
        for pos, j in enumerate(J):
            self.accumulate(adj2, y.operands[j], blk.args[1 + pos], e2)
        self.reverse(ops[:-1], adj2, v2, e2, ctx2)
        self.close_reverse_loop(
            blk, e2, em, (count, lid, n, inits), [carried[j] for j in J], [op.iter_args[j] for j in J], free, adj, adj2
        )

    def rev_while(self, op: scf.WhileOp, adj: dict, vmap: dict, em: Emitter, ctx: Ctx) -> None:
        n = self.loop_bound(op) + 1
        lid = self.loop_id(op)
        before, after = op.before_region.block, op.after_region.block
        bops, aops = list(before.ops), list(after.ops)
        cond, ay = bops[-1], aops[-1]
        assert isinstance(cond, scf.ConditionOp)
        X = [j for j, a in enumerate(before.args) if a in self.act]
        free = free_varied([op.before_region, op.after_region], self.act)
        # More iterations than diff.max_iters: the tape kept the first n - 1 only. The reverse
        # sweep then runs over those (in bounds) and its gradients are NaN, not silently wrong;
        # a status global tells the host, which raises (passes/status_report.py).
        taped = self.load_taped((op, -1), IndexType(), em, ctx)
        last_slot = em.index(n - 1)
        overran = em.v(arith.CmpiOp(taped, last_slot, "ugt"))
        report_overrun(op, taped, overran, n - 1, em.block)  # the host raises LoopOverrunError
        count = em.v(arith.MinUIOp(taped, last_slot))
        # 1. the last evaluation of the condition region, which produced the results
        ctx_last = ctx + [(count, n)]
        v1 = dict(vmap)
        self.load_carried(op, before.args, v1, em, ctx_last)
        self.forward(bops[:-1], v1, em, ctx_last, "rec", nested=True)
        adj1: dict[SSAValue, SSAValue] = {}
        for r, c in zip(op.results, cond.args):
            if r in adj:
                self.accumulate(adj1, c, adj[r], em)
        self.reverse(bops[:-1], adj1, v1, em, ctx_last)
        for v in free:
            if v in adj1:
                self.accumulate(adj, v, adj1[v], em)
        # 2. the completed iterations, last first
        inits = [adj1[before.args[j]] if before.args[j] in adj1 else em.zero(adjoint_type(before.args[j].type)) for j in X]
        inits += [em.zero(adjoint_type(v.type)) for v in free]
        blk, k, e2 = self.reverse_loop(count, lid, inits, em)
        ctx2 = ctx + [(k, n)]
        v2 = dict(vmap)
        self.load_carried(op, before.args, v2, e2, ctx2)
        self.forward(bops[:-1], v2, e2, ctx2, "rec", nested=True)
        for a, c in zip(after.args, cond.args):
            v2[a] = v2[c]
        self.forward(aops[:-1], v2, e2, ctx2, "rec", nested=True)
        adj2: dict[SSAValue, SSAValue] = dict(zip(free, blk.args[1 + len(X) :]))
        for pos, j in enumerate(X):
            self.accumulate(adj2, ay.operands[j], blk.args[1 + pos], e2)
        self.reverse(aops[:-1], adj2, v2, e2, ctx2)
        for a, c in zip(after.args, cond.args):
            if a in adj2:
                self.accumulate(adj2, c, adj2[a], e2)
        self.reverse(bops[:-1], adj2, v2, e2, ctx2)
        self.close_reverse_loop(
            blk, e2, em, (count, lid, n, inits), [before.args[j] for j in X], [op.arguments[j] for j in X], free, adj, adj2
        )
        for v in dict.fromkeys([*[op.arguments[j] for j in X], *free]):
            if v in adj:
                adj[v] = nan_if(overran, adj[v], em)
