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
     counts its iterations in an extra carried index and stores the count). A carried
     `!diff.pair` is stored as its two halves, in a tape each.
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
an op without a rule, a loop without a bound (no constant trip count, no `diff.max_iters`), a
function body of several blocks (cf branches: reverse mode needs structured control flow).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from diffc.dialects import diff
from diffc.passes.rev_loops import Ctx, LoopReverser
from diffc.passes.rev_support import (
    BWD_OF,
    PRIMAL_ID,
    RECOMPUTE,
    TAPE,
    Activity,
    Emitter,
    adjoint_type,
    fail,
    free_varied,
    i64,
    storable,
    symbols_of,
)
from diffc.rules import RuleBuilder, emit_vjp


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

    def bwd_of(self, fn: func.FuncOp, user: str, at: Operation) -> str:
        custom = diff.custom_derivative(fn, diff.BWD_DERIVATIVE)
        if custom is not None:
            return custom
        name = fn.sym_name.data
        if not diff.is_differentiable_func(fn):
            raise fail(user, f"bwd_diff of @{name}, which is not marked diff.differentiable", at)
        if name in self.done:
            return self.done[name]
        new_name = diff.fresh_symbol(f"{name}_bwd", self.symbols)
        self.done[name] = new_name
        _FuncReverser(self, fn, new_name).build()
        return new_name


@dataclass
class _FuncReverser(LoopReverser):
    gen: _Generator
    fn: func.FuncOp
    new_name: str
    allocas: list[Operation] = field(default_factory=list)
    # (loop, carried index or -1 for a while's count, then "primal"/"differential" per pair level)
    tapes: dict[tuple, SSAValue] = field(default_factory=dict)
    ids: dict[Operation, int] = field(default_factory=dict)
    loop_ids: dict[Operation, int] = field(default_factory=dict)

    def __post_init__(self):
        self.name = self.fn.sym_name.data
        if len(self.fn.body.blocks) != 1:
            raise fail(
                self.name,
                f"reverse mode needs a function body of one block; this one has "
                f"{len(self.fn.body.blocks)} (unstructured cf branches): write the control flow with "
                f"scf.if / scf.for / scf.while",
                self.fn,
            )
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

    def tape(self, key: tuple, t: Attribute, dims: list[int], why: str) -> SSAValue:
        if key not in self.tapes:
            if not storable(t):
                raise fail(self.name, f"cannot store a loop-carried value of type {t}", key[0])
            a = memref.AllocaOp.get(t, shape=dims or [1])
            a.attributes[TAPE] = StringAttr(why)
            self.allocas.append(a)
            self.tapes[key] = a.results[0]
        return self.tapes[key]

    @staticmethod
    def indices(ctx: Ctx, em: Emitter) -> list[SSAValue]:
        return [k for k, _ in ctx] if ctx else [em.index(0)]

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

    # ---- adjoints ----------------------------------------------------------------------------

    def reverse(self, ops: list[Operation], adj: dict, vmap: dict, em: Emitter, ctx: Ctx) -> None:
        for op in reversed(ops):
            if not any(r in adj for r in op.results) and not self.calls_custom_bwd(op):
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
                try:
                    contribs = emit_vjp(RuleBuilder(InsertPoint.at_end(em.block)), new_op, adj[op.results[0]])
                except NotImplementedError:  # a rule with a forward-mode hook alone
                    raise fail(self.name, f"'{op.name}': its derivative rule has no reverse-mode derivative", op) from None
                keep = {c for x, c in zip(op.operands, contribs) if c is not None and x in self.act}
                _drop_unused_after(em.block, before, keep)
                for x, c in zip(op.operands, contribs):
                    if c is not None and c in keep:
                        self.accumulate(adj, x, c, em)

    def calls_custom_bwd(self, op: Operation) -> bool:
        """A call whose callee has or reaches a custom backward derivative runs in the reverse
        sweep even when no result carries an adjoint: that derivative may produce gradients of
        its own (from a buffer), also for a call that returns nothing."""
        for o in op.walk():  # also such a call inside a branch or loop
            if isinstance(o, func.CallOp):
                callee = self.gen.symbols.get(o.callee.root_reference.data)
                if isinstance(callee, func.FuncOp) and self.act.reaches_custom_bwd(callee):
                    return True
        return False

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
                raise fail(user_name, f"bwd_diff of unknown function {bd.callee}", bd)
            name = gen.bwd_of(callee, user_name, bd)
            Rewriter.replace_op(bd, func.CallOp(name, bd.args, [r.type for r in bd.res]))
