"""diff-rev: reverse-mode differentiation.

Every `diff.bwd_diff @f(...)` becomes `func.call @f_bwd(...)`, where `@f_bwd` has
`bwd_signature(f)`: the primal parameters, then one derivative per differentiable result; it
returns the gradient of each differentiable parameter. `@f_bwd` is generated once per function
(a function with `diff.bwd_derivative = @h` is never generated: `@h` is called instead,
everywhere, including at call sites inside other differentiated functions).

Body of `@f_bwd`:
  1. forward sweep: the primal computation of `f`. Loops store their carried values per
     iteration into `memref.alloca` tapes (`memref<N1 x ... x Nk x T>`, one dimension per
     enclosing loop, sized by the constant trip count or `diff.max_iters`; an `scf.while` also
     counts its iterations in an extra carried index and stores the count).
  2. reverse sweep: adjoints in reverse op order, built from the derivative rules
     (`diffc.rules.emit_vjp`: one rule per op serves both modes). Values defined at the top
     level of `f` are used directly (they are "stored" as SSA values). Inside a region, the
     reverse code *recomputes* the region's primal ops first:
       - `scf.if`: an `scf.if` on the same condition recomputes the branch, then propagates the
         adjoints of the if's results into the branch and yields the adjoint contributions of the
         outside values the branch uses;
       - `scf.for`: a loop over the iterations backwards reloads the carried values from the
         tape, recomputes the body and propagates the adjoints (carried in iter_args);
       - `scf.while`: the same over the stored iteration count (the final evaluation of the
         condition region is reversed first).
     Calls to differentiable functions call their own `@g_bwd` (primal arguments, adjoints of
     the results); `diff.detach` stops adjoints; `!diff.pair` ops (higher order: `@g_fwd`
     calls from diff-fwd) are linear: the adjoint of a pair is a pair of adjoints.

Contract with diff-checkpoint (the marks, defined in passes/rev_support.py):
  * `diff.primal_id = K` on each forward-sweep op inside a region (branch or loop body), and
    `diff.recompute = K` on every reverse-sweep op that recomputes it. diff-checkpoint may
    replace a recomputation by a load of a value stored right after the forward op.
  * `diff.loop = L`, `diff.trip = N` on every clone of loop L (forward, recomputing and
    reverse); in each block of such a clone the op marked `diff.iter = L` computes the
    forward iteration number (0..N-1), so the forward store and the reverse load of a value
    index the same slot.
  * `diff.tape = "loop-carried value of scf.for" | ... | "iteration count of scf.while"` on
    the allocas diff-rev makes itself (the reason, for the report).
  * `diff.bwd_of = @f` (and `diff.prefer`, copied from f) on each generated `@f_bwd`.
Without diff-checkpoint the marks are harmless; diff-checkpoint removes them.

Errors (PassFailedException, `in function @f: ...`): bwd_diff of a function that is not
`diff.differentiable`, a derivative-carrying value passed to a non-differentiable function or to
an op without a rule, a loop without a bound (no constant trip count, no `diff.max_iters`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from diffc.dialects import diff
from diffc.passes.rev_support import (
    BWD_OF,
    ITER,
    LOOP,
    PRIMAL_ID,
    RECOMPUTE,
    TAPE,
    TRIP,
    Activity,
    Emitter,
    adjoint_type,
    fail,
    free_varied,
    i64,
    storable,
    symbols_of,
    where,
)
from diffc.rules import RuleBuilder, emit_vjp

Ctx = list[tuple[SSAValue, int]]  # (forward iteration number, bound) per enclosing loop


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


class _Generator:
    """Generates the backward functions of one module."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.symbols = symbols_of(module)
        self.done: dict[str, str] = {}
        self.next_id = 0

    def fresh_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def unique(self, base: str) -> str:
        name, k = base, 0
        while name in self.symbols:
            k += 1
            name = f"{base}_{k}"
        return name

    def bwd_of(self, fn: func.FuncOp, user: str, at: Operation) -> str:
        custom = diff.custom_derivative(fn, diff.BWD_DERIVATIVE)
        if custom is not None:
            return custom
        name = fn.sym_name.data
        if not diff.is_differentiable_func(fn):
            raise fail(user, f"{where(at)}: bwd_diff of @{name}, which is not marked diff.differentiable")
        if name in self.done:
            return self.done[name]
        new_name = self.unique(f"{name}_bwd")
        self.done[name] = new_name
        _FuncReverser(self, fn, new_name).build()
        return new_name


@dataclass
class _FuncReverser:
    gen: _Generator
    fn: func.FuncOp
    new_name: str
    allocas: list[Operation] = field(default_factory=list)
    tapes: dict[tuple[Operation, int], SSAValue] = field(default_factory=dict)
    ids: dict[Operation, int] = field(default_factory=dict)
    loop_ids: dict[Operation, int] = field(default_factory=dict)

    def __post_init__(self):
        self.name = self.fn.sym_name.data
        if len(self.fn.body.blocks) != 1:
            raise fail(self.name, "reverse mode needs a function body of one block (structured control flow)")
        self.act = Activity(self.fn, self.gen.symbols)

    # ---- the function ------------------------------------------------------------------------

    def build(self) -> None:
        fn = self.fn
        sig = diff.bwd_signature(fn)
        new = func.FuncOp(self.new_name, sig, visibility=fn.sym_visibility)
        new.attributes[BWD_OF] = SymbolRefAttr(self.name)
        if diff.PREFER in fn.attributes:
            new.attributes[diff.PREFER] = fn.attributes[diff.PREFER]
        self.gen.module.body.block.insert_op_after(new, fn)
        self.gen.symbols[self.new_name] = new
        entry = new.body.block
        for a, o in zip(entry.args, fn.body.block.args):
            a.name_hint = o.name_hint
        for a in entry.args[len(fn.body.block.args) :]:
            a.name_hint = "d_out"
        em = Emitter(entry)
        vmap: dict[SSAValue, SSAValue] = dict(zip(fn.body.block.args, entry.args))
        ops = list(fn.body.block.ops)
        ret = ops[-1]
        assert isinstance(ret, func.ReturnOp)
        self.forward(ops[:-1], vmap, em, [], "fwd", nested=False)
        adj: dict[SSAValue, SSAValue] = {}
        k = len(fn.function_type.inputs.data)
        for i, r in enumerate(ret.operands):
            if diff.result_is_differentiable(fn, i):
                self.accumulate(adj, r, entry.args[k], em)
                k += 1
        self.reverse(ops[:-1], adj, vmap, em, [])
        grads = [
            adj[a] if a in adj else em.zero(adjoint_type(a.type))
            for i, a in enumerate(fn.body.block.args)
            if diff.arg_is_differentiable(fn, i)
        ]
        em(func.ReturnOp(*grads))
        if self.allocas:
            entry.insert_ops_before(self.allocas, entry.first_op)  # type: ignore[arg-type]

    # ---- helpers -----------------------------------------------------------------------------

    def accumulate(self, adj: dict[SSAValue, SSAValue], v: SSAValue, contrib: SSAValue, em: Emitter) -> None:
        if v not in self.act:
            return
        adj[v] = em.add(adj[v], contrib) if v in adj else contrib

    def tape(self, key: tuple[Operation, int], t: Attribute, dims: list[int], why: str) -> SSAValue:
        if key not in self.tapes:
            if not storable(t):
                raise fail(self.name, f"{where(key[0])}: cannot store a loop-carried value of type {t}")
            a = memref.AllocaOp.get(t, shape=dims or [1])
            a.attributes[TAPE] = StringAttr(why)
            self.allocas.append(a)
            self.tapes[key] = a.results[0]
        return self.tapes[key]

    @staticmethod
    def indices(ctx: Ctx, em: Emitter) -> list[SSAValue]:
        return [k for k, _ in ctx] if ctx else [em.index(0)]

    def loop_bound(self, op: Operation) -> int:
        n = trip_count(op) if isinstance(op, scf.ForOp) else None
        if n is None:
            n = diff.max_iters(op)
        if n is None:
            what = "scf.for without constant bounds" if isinstance(op, scf.ForOp) else "scf.while"
            raise fail(
                self.name,
                f"{where(op)}: unbounded loop ({what} and no diff.max_iters) cannot be reversed; "
                f"give it diff.max_iters = N",
            )
        return max(n, 1)

    def loop_id(self, op: Operation) -> int:
        if op not in self.loop_ids:
            self.loop_ids[op] = self.gen.fresh_id()
        return self.loop_ids[op]

    def mark(self, orig: Operation, new: Operation, mode: str, nested: bool) -> None:
        if not nested:
            return
        if mode == "fwd":
            self.ids[orig] = self.gen.fresh_id()
            new.attributes[PRIMAL_ID] = i64(self.ids[orig])
        elif orig in self.ids:
            new.attributes[RECOMPUTE] = i64(self.ids[orig])

    # ---- primal code (forward sweep, and recomputation in the reverse sweep) -----------------

    def forward(self, ops: list[Operation], vmap: dict, em: Emitter, ctx: Ctx, mode: str, nested: bool) -> None:
        for op in ops:
            if isinstance(op, scf.IfOp):
                new = self.fwd_if(op, vmap, ctx, mode)
            elif isinstance(op, scf.ForOp):
                new = self.fwd_for(op, vmap, em, ctx, mode)
            elif isinstance(op, scf.WhileOp):
                new = self.fwd_while(op, vmap, em, ctx, mode)
            else:
                new = op.clone(value_mapper=vmap)
            em(new)
            if isinstance(op, scf.WhileOp) and mode == "fwd":
                self.store_count(op, new, em, ctx)
            for a, b in zip(op.results, new.results):
                vmap[a] = b
                b.name_hint = a.name_hint
            self.mark(op, new, mode, nested)

    def fwd_if(self, op: scf.IfOp, vmap: dict, ctx: Ctx, mode: str) -> Operation:
        blocks = []
        for region in op.regions:
            blk = Block()
            if region.blocks:
                ops = list(region.block.ops)
                v2 = dict(vmap)
                self.forward(ops[:-1], v2, Emitter(blk), ctx, mode, nested=True)
                blk.add_op(scf.YieldOp(*[v2[x] for x in ops[-1].operands]))
            else:
                blk.add_op(scf.YieldOp())
            blocks.append(blk)
        new = scf.IfOp(vmap[op.cond], [r.type for r in op.results], [blocks[0]], [blocks[1]])
        new.attributes.update(op.attributes)
        return new

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
            for j, a in enumerate(blk.args[1:]):
                t = self.tape((op, j), a.type, [b for _, b in ctx2], "loop-carried value of " + op.name)
                e2(memref.StoreOp.get(a, t, self.indices(ctx2, e2)))
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
        k = self.counter(eb, bb.args[-1], lid)
        ctx2 = ctx + [(k, n)]
        if mode == "fwd":
            for j, a in enumerate(bb.args[:-1]):
                t = self.tape((op, j), a.type, [b for _, b in ctx2], "loop-carried value of " + op.name)
                eb(memref.StoreOp.get(a, t, self.indices(ctx2, eb)))
        v2 = dict(vmap)
        v2.update(zip(before.args, bb.args))
        ops = list(before.ops)
        self.forward(ops[:-1], v2, eb, ctx2, mode, nested=True)
        cond = ops[-1]
        assert isinstance(cond, scf.ConditionOp)
        eb(scf.ConditionOp(v2[cond.condition], *[v2[a] for a in cond.args], bb.args[-1]))
        ab = Block(arg_types=[a.type for a in after.args] + [idx])
        ea = Emitter(ab)
        ka = self.counter(ea, ab.args[-1], lid)
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
        return new

    def store_count(self, op: scf.WhileOp, new: Operation, em: Emitter, ctx: Ctx) -> None:
        t = self.tape((op, -1), IndexType(), [b for _, b in ctx], "iteration count of scf.while")
        em(memref.StoreOp.get(new.results[-1], t, self.indices(ctx, em)))

    @staticmethod
    def counter(em: Emitter, cnt: SSAValue, loop: int) -> SSAValue:
        k_op = arith.AddiOp(cnt, em.index(0))
        k_op.attributes[ITER] = i64(loop)
        return em.v(k_op)

    # ---- adjoints ----------------------------------------------------------------------------

    def reverse(self, ops: list[Operation], adj: dict, vmap: dict, em: Emitter, ctx: Ctx) -> None:
        for op in reversed(ops):
            if not any(r in adj for r in op.results):
                continue
            if isinstance(op, diff.DetachOp):
                continue
            if isinstance(op, scf.IfOp):
                self.rev_if(op, adj, vmap, em, ctx)
            elif isinstance(op, scf.ForOp):
                self.rev_for(op, adj, vmap, em, ctx)
            elif isinstance(op, scf.WhileOp):
                self.rev_while(op, adj, vmap, em, ctx)
            elif isinstance(op, func.CallOp):
                self.rev_call(op, adj, vmap, em)
            elif isinstance(op, diff.MakePairOp):
                a = adj[op.result]
                self.accumulate(adj, op.primal, em.v(diff.PrimalOp(a)), em)
                self.accumulate(adj, op.differential, em.v(diff.DifferentialOp(a)), em)
            elif isinstance(op, diff.PrimalOp | diff.DifferentialOp):
                a = adj[op.result]
                pt = adjoint_type(op.pair.type)
                assert isinstance(pt, diff.PairType)
                z = em.zero(pt.element_type)
                parts = (a, z) if isinstance(op, diff.PrimalOp) else (z, a)
                self.accumulate(adj, op.pair, em.v(diff.MakePairOp(*parts)), em)
            elif isinstance(op, diff.AddOp):
                self.accumulate(adj, op.lhs, adj[op.result], em)
                self.accumulate(adj, op.rhs, adj[op.result], em)
            else:
                new_op = vmap[op.results[0]].owner
                before = em.block.last_op
                contribs = emit_vjp(RuleBuilder(InsertPoint.at_end(em.block)), new_op, adj[op.results[0]])
                keep = {c for x, c in zip(op.operands, contribs) if c is not None and x in self.act}
                _drop_unused_after(em.block, before, keep)
                for x, c in zip(op.operands, contribs):
                    if c is not None and c in keep:
                        self.accumulate(adj, x, c, em)

    def rev_call(self, op: func.CallOp, adj: dict, vmap: dict, em: Emitter) -> None:
        callee = self.gen.symbols[op.callee.root_reference.data]
        name = self.gen.bwd_of(callee, self.name, op)
        args = [vmap[a] for a in op.arguments]
        for i, r in enumerate(op.results):
            if diff.result_is_differentiable(callee, i):
                args.append(adj[r] if r in adj else em.zero(adjoint_type(r.type)))
        sig = diff.bwd_signature(callee)
        call = em(func.CallOp(name, args, sig.outputs.data))
        grads = iter(call.results)
        for i, a in enumerate(op.arguments):
            if diff.arg_is_differentiable(callee, i):
                self.accumulate(adj, a, next(grads), em)

    def rev_if(self, op: scf.IfOp, adj: dict, vmap: dict, em: Emitter, ctx: Ctx) -> None:
        free = free_varied(list(op.regions), self.act)
        if not free:
            return
        blocks = []
        for region in op.regions:
            blk = Block()
            e2 = Emitter(blk)
            adj2: dict[SSAValue, SSAValue] = {}
            if region.blocks:
                ops = list(region.block.ops)
                v2 = dict(vmap)
                self.forward(ops[:-1], v2, e2, ctx, "rec", nested=True)
                for r, y in zip(op.results, ops[-1].operands):
                    if r in adj:
                        self.accumulate(adj2, y, adj[r], e2)
                self.reverse(ops[:-1], adj2, v2, e2, ctx)
            e2(scf.YieldOp(*[adj2[v] if v in adj2 else e2.zero(adjoint_type(v.type)) for v in free]))
            blocks.append(blk)
        new = em(scf.IfOp(vmap[op.cond], [adjoint_type(v.type) for v in free], [blocks[0]], [blocks[1]]))
        for v, r in zip(free, new.results):
            self.accumulate(adj, v, r, em)

    def reverse_loop(self, count: SSAValue, n: int, lid: int, inits: list[SSAValue], em: Emitter):
        """An empty reverse loop over `count` iterations; returns (block, forward iteration
        number, emitter of the body)."""
        blk = Block(arg_types=[IndexType()] + [v.type for v in inits])
        e2 = Emitter(blk)
        last = e2.v(arith.SubiOp(count, e2.index(1)))
        k_op = e2(arith.SubiOp(last, blk.args[0]))
        k_op.attributes[ITER] = i64(lid)
        return blk, k_op.results[0], e2

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
        blk, k, e2 = self.reverse_loop(count, n, lid, inits, em)
        ctx2 = ctx + [(k, n)]
        kk = k if isinstance(body.args[0].type, IndexType) else e2.v(arith.IndexCastOp(k, body.args[0].type))
        iv = e2.v(arith.AddiOp(lb, e2.v(arith.MuliOp(kk, st))))
        v2 = dict(vmap)
        v2[body.args[0]] = iv
        for j, a in enumerate(carried):
            v2[a] = e2.v(memref.LoadOp.get(self.tapes[(op, j)], self.indices(ctx2, e2)))
        self.forward(ops[:-1], v2, e2, ctx2, "rec", nested=True)
        adj2: dict[SSAValue, SSAValue] = dict(zip(free, blk.args[1 + len(J) :]))
        for pos, j in enumerate(J):
            self.accumulate(adj2, y.operands[j], blk.args[1 + pos], e2)
        self.reverse(ops[:-1], adj2, v2, e2, ctx2)
        outs = [adj2[carried[j]] if carried[j] in adj2 else e2.zero(adjoint_type(carried[j].type)) for j in J]
        e2(scf.YieldOp(*outs, *[adj2[v] for v in free]))
        rfor = em(scf.ForOp(em.index(0), count, em.index(1), inits, blk))
        rfor.attributes[LOOP] = i64(lid)
        rfor.attributes[TRIP] = i64(n)
        for pos, j in enumerate(J):
            self.accumulate(adj, op.iter_args[j], rfor.results[pos], em)
        for v, r in zip(free, rfor.results[len(J) :]):
            self.accumulate(adj, v, r, em)

    def rev_while(self, op: scf.WhileOp, adj: dict, vmap: dict, em: Emitter, ctx: Ctx) -> None:
        n = self.loop_bound(op) + 1
        lid = self.loop_id(op)
        before, after = op.before_region.block, op.after_region.block
        bops, aops = list(before.ops), list(after.ops)
        cond, ay = bops[-1], aops[-1]
        assert isinstance(cond, scf.ConditionOp)
        X = [j for j, a in enumerate(before.args) if a in self.act]
        free = free_varied([op.before_region, op.after_region], self.act)
        count = em.v(memref.LoadOp.get(self.tapes[(op, -1)], self.indices(ctx, em)))
        # 1. the last evaluation of the condition region, which produced the results
        ctx_last = ctx + [(count, n)]
        v1 = dict(vmap)
        for j, a in enumerate(before.args):
            v1[a] = em.v(memref.LoadOp.get(self.tapes[(op, j)], self.indices(ctx_last, em)))
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
        blk, k, e2 = self.reverse_loop(count, n, lid, inits, em)
        ctx2 = ctx + [(k, n)]
        v2 = dict(vmap)
        for j, a in enumerate(before.args):
            v2[a] = e2.v(memref.LoadOp.get(self.tapes[(op, j)], self.indices(ctx2, e2)))
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
        outs = [adj2[before.args[j]] if before.args[j] in adj2 else e2.zero(adjoint_type(before.args[j].type)) for j in X]
        e2(scf.YieldOp(*outs, *[adj2[v] for v in free]))
        rfor = em(scf.ForOp(em.index(0), count, em.index(1), inits, blk))
        rfor.attributes[LOOP] = i64(lid)
        rfor.attributes[TRIP] = i64(n)
        for pos, j in enumerate(X):
            self.accumulate(adj, op.arguments[j], rfor.results[pos], em)
        for v, r in zip(free, rfor.results[len(X) :]):
            self.accumulate(adj, v, r, em)


def _drop_unused_after(block: Block, start: Operation | None, keep: set[SSAValue]) -> None:
    """Erases the ops a rule emitted after `start` that compute partials nobody needs (those
    of operands that carry no derivative)."""
    added = []
    op = block.first_op if start is None else start.next_op
    while op is not None:
        added.append(op)
        op = op.next_op
    for op in reversed(added):
        if not any(r in keep or r.uses for r in op.results):
            Rewriter.erase_op(op)


@dataclass(frozen=True)
class DiffRevPass(ModulePass):
    """Replaces each diff.bwd_diff with a call to a generated backward derivative."""

    name = "diff-rev"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        gen = _Generator(op)
        for bd in [o for o in op.walk() if isinstance(o, diff.BwdDiffOp)]:
            user = bd.parent_op()
            while user is not None and not isinstance(user, func.FuncOp):
                user = user.parent_op()
            user_name = user.sym_name.data if isinstance(user, func.FuncOp) else "<module>"
            callee = gen.symbols.get(bd.callee.root_reference.data)
            if callee is None:
                raise fail(user_name, f"{where(bd)}: bwd_diff of unknown function {bd.callee}")
            name = gen.bwd_of(callee, user_name, bd)
            Rewriter.replace_op(bd, func.CallOp(name, bd.args, [r.type for r in bd.res]))
