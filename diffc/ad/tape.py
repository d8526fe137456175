"""Reverse mode's shared machinery: the marks diff-rev leaves for diff-checkpoint, a small IR
emitter (zeros, adjoint accumulation, index constants), the tapes (memref.alloca per stored value,
one dimension per enclosing loop) and the loop nest (iteration numbers, reverse loops), used by
the reverse driver (diffc.ad.reverse) and the loop rules (diffc/ad/rules/scf_*.py).

A carried `!diff.pair` (primal code that itself runs forward mode inside a loop, differentiated
again in reverse) is taped as its halves, one tape each, and rebuilt with diff.make_pair."""

from __future__ import annotations

from collections.abc import Container, Sequence

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from diffc.ad.interface import DerivativeRule, fail
from diffc.dialects import diff
from diffc.dialects.diff import BWD_OF, ITER, LOOP, PRIMAL_ID, RECOMPUTE, TAPE, TRIP

__all__ = ["BWD_OF", "ITER", "LOOP", "PRIMAL_ID", "RECOMPUTE", "TAPE", "TRIP", "fail"]


def i64(v: int) -> IntegerAttr:
    return IntegerAttr(v, 64)


# ---- small builders ---------------------------------------------------------------------------


class Emitter:
    """Appends ops at the end of one block."""

    def __init__(self, block: Block):
        self.block = block

    def __call__(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def v(self, op: Operation) -> SSAValue:
        return self(op).results[0]

    def index(self, n: int) -> SSAValue:
        return self.v(arith.ConstantOp(IntegerAttr(n, IndexType())))

    def zero(self, t: Attribute) -> SSAValue:
        if isinstance(t, VectorType):
            attr = DenseIntOrFPElementsAttr.from_list(t, [0.0] * t.element_count())
            return self.v(arith.ConstantOp(attr, t))
        if diff.is_float_type(t):
            return self.v(arith.ConstantOp(FloatAttr(0.0, t)))
        return self.v(diff.ZeroOp(t))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if diff.is_float_type(a.type) or isinstance(a.type, VectorType):
            return self.v(arith.AddfOp(a, b))
        return self.v(diff.AddOp(a, b))


def adjoint_type(t: Attribute) -> Attribute:
    return diff.differential_type(t)


def storable(t: Attribute) -> bool:
    return diff.is_float_type(t) or isinstance(t, IntegerType | IndexType | VectorType)


def byte_size(t: Attribute) -> int:
    if isinstance(t, IndexType):
        return 8
    if isinstance(t, IntegerType):
        return max(1, t.width.data // 8)
    if diff.is_float_type(t):
        return t.bitwidth // 8  # type: ignore[attr-defined]
    if isinstance(t, VectorType):
        return t.element_count() * byte_size(t.element_type)
    return 8



def free_varied(regions: list[Region], act: Container[SSAValue]) -> list[SSAValue]:
    """Varied values used inside `regions` but defined outside them, in first-use order."""
    inside: set[Operation] = set()
    blocks: set[Block] = set()
    for r in regions:
        for o in r.walk():
            inside.add(o)
        for b in r.blocks:
            blocks.add(b)
        for o in r.walk():
            for rr in o.regions:
                blocks.update(rr.blocks)
    seen: list[SSAValue] = []
    for r in regions:
        for o in r.walk():
            for v in o.operands:
                if v not in act or v in seen:
                    continue
                owner = v.owner
                if (isinstance(owner, Block) and owner in blocks) or (isinstance(owner, Operation) and owner in inside):
                    continue
                seen.append(v)
    return seen



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


class LoopRule(DerivativeRule):
    """The base of a loop's rule (scf.for, scf.while): forward mode translates it even when no
    operand carries a tangent (its body may use outside values that do), and diff-checkpoint
    stores its results where the reverse sweep needs them inside an outer region (recomputing
    them would run the whole loop again), unless the function prefers recompute."""

    jvp_when_inactive = True

    def checkpoint(self, op: Operation, prefer: str | None, origin: str, symbols: dict) -> tuple[bool, str]:
        if prefer == "recompute":
            return False, f"loop results: @{origin} prefers recompute"
        return True, "results of a loop (loop-carried values)"


def marked_loops(op: Operation) -> list[tuple[int, int, SSAValue]] | None:
    """How diff-checkpoint finds the tape slot of `op`: (loop id, bound, iteration number) of
    each loop clone around `op` that the loop rules marked (diff.loop, diff.trip, and the op
    marked diff.iter in each of its blocks: iter_number, counter, reverse_loop), outermost first;
    None when a marked loop has no iteration number in the block that holds `op`."""
    chain = []
    cur: Operation = op
    while True:
        block = cur.parent_block()
        parent = cur.parent_op()
        if parent is None or isinstance(parent, func.FuncOp) or block is None:
            break
        lid = _int_mark(parent, LOOP)
        if lid is not None:
            k = next((o for o in block.ops if _int_mark(o, ITER) == lid), None)
            if k is None:
                return None
            chain.append((lid, _int_mark(parent, TRIP) or 1, k.results[0]))
        cur = parent
    chain.reverse()
    return chain


def _int_mark(op: Operation, key: str) -> int | None:
    a = op.attributes.get(key)
    return a.value.data if isinstance(a, IntegerAttr) else None


def tape_bound(op: Operation) -> int | None:
    """How many iterations reverse mode tapes for loop `op`: an scf.for's constant trip count,
    else the loop's diff.max_iters; None when neither is known (the loop cannot be reversed:
    the front end reports that at the Slang loop, frontend/derivative_checks.py)."""
    n = trip_count(op) if isinstance(op, scf.ForOp) else None
    return n if n is not None else diff.max_iters(op)


class LoopNest:
    """The tape and the loop nest, for the reverse driver (FuncReverser, which provides `name`,
    `gen`, `loop_ids`, `tapes`, `tape()`, `indices()`, `accumulate()`) and the loop rules."""

    def loop_bound(self, op: Operation) -> int:
        n = tape_bound(op)
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

    def iter_number(self, em: Emitter, iv: SSAValue, lb: SSAValue, st: SSAValue, loop: int,
                    slots: int | None = None) -> SSAValue:
        """The tape slot of an scf.for's iteration at `iv`: its iteration number, and with
        `slots` (a bound from diff.max_iters, not the constant trip count) at most the last of
        them, so that a run past the bound never writes past the tape (see ForRule.vjp_op)."""
        k_op = arith.DivSIOp(em.v(arith.SubiOp(iv, lb)), st)
        em(k_op)
        if not isinstance(iv.type, IndexType):
            k_op = em(arith.IndexCastOp(k_op.results[0], IndexType()))
        if slots is not None:
            k_op = em(arith.MinUIOp(k_op.results[0], em.index(slots - 1)))
        k_op.attributes[ITER] = i64(loop)
        return k_op.results[0]

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

