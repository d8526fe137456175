"""Reverse mode's driver (the diff-rev pass, passes/diff_rev.py, runs it).

Every `diff.bwd_diff @f(...)` becomes `func.call @f_bwd(...)`, where `@f_bwd` has
`bwd_signature(f)`: the primal parameters, then one derivative per differentiable result; it
returns the gradient of each differentiable parameter. `@f_bwd` is generated once per function
(a function with `diff.bwd_derivative = @h` is never generated: `@h` is called instead,
everywhere, including at call sites inside other differentiated functions).

Body of `@f_bwd`:
  1. forward sweep: the primal computation of `f`, each op through its rule's `primal_op`
     (loops store their carried values per iteration on tapes, diffc/ad/tape.py);
  2. reverse sweep: adjoints in reverse op order, each op through its rule's `vjp_op`
     (partials: diffc.ad.partials; control flow, calls, diff ops: diffc/ad/rules/). Values
     defined at the top level of `f` are used directly; inside a region the reverse code
     recomputes the region's primal ops first (`forward(..., "rec")`).
Which values carry adjoints is the activity analysis's (diffc.ad.activity), run once per function.

Contract with diff-checkpoint (the marks, declared in the diff dialect: dialects/diff.py):
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

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import Rewriter

from diffc.dialects import diff
from diffc.ad.activity import Activity, fail
from diffc.ad.locations import locate_after
from diffc.ad.registry import lookup
from diffc.ad.tape import BWD_OF, PRIMAL_ID, RECOMPUTE, TAPE, Ctx, Emitter, LoopNest, adjoint_type, i64, storable


def symbols_of(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {o.sym_name.data: o for o in module.walk() if isinstance(o, func.FuncOp)}


class BwdGenerator:
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
        FuncReverser(self, fn, new_name).build()
        return new_name


@dataclass
class FuncReverser(LoopNest):
    gen: BwdGenerator
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

    def fail(self, message: str, at: Operation):
        return fail(self.name, message, at)

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
        """Appends the primal copy of `ops` to `em`: the forward sweep (mode "fwd") or, inside the
        reverse sweep, their recomputation ("rec"); each op through its rule's primal_op."""
        for op in ops:
            last = em.block.last_op
            rule = lookup(op)
            new = rule.primal_op(self, op, vmap, em, ctx, mode) if rule is not None else op.clone(value_mapper=vmap)
            em(new)
            if rule is not None:
                rule.after_primal(self, op, new, em, ctx, mode)
            locate_after(em.block, last, op)
            for a, b in zip(op.results, new.results):
                vmap[a] = b
                b.name_hint = a.name_hint
            self.mark(op, new, mode, nested)

    # ---- adjoints ----------------------------------------------------------------------------

    def calls_custom_bwd(self, op: Operation) -> bool:
        """A call whose callee has or reaches a custom backward derivative runs in the reverse
        sweep even when no result carries an adjoint: that derivative may produce gradients of
        its own (from a buffer), also for a call that returns nothing, or inside a branch or loop."""
        for o in op.walk():
            if isinstance(o, func.CallOp):
                callee = self.act.callee(o)
                if isinstance(callee, func.FuncOp) and self.act.reaches_custom(callee):
                    return True
        return False

    def reverse(self, ops: list[Operation], adj: dict, vmap: dict, em: Emitter, ctx: Ctx) -> None:
        """Appends the adjoint code of `ops` (last first) to `em`: each op whose results have an
        adjoint, through its rule's vjp_op."""
        for op in reversed(ops):
            if not any(r in adj for r in op.results) and not self.calls_custom_bwd(op):
                continue
            rule = lookup(op)
            if rule is None:
                raise self.fail(f"'{op.name}' has no derivative rule but receives a derivative-carrying value", op)
            last = em.block.last_op
            rule.vjp_op(self, op, adj, vmap, em, ctx)
            locate_after(em.block, last, op)


def lower_bwd_diffs(module: ModuleOp) -> None:
    """Replaces each diff.bwd_diff of `module` with a call of the generated backward derivative."""
    gen = BwdGenerator(module)
    for bd in [o for o in module.walk() if isinstance(o, diff.BwdDiffOp)]:
        user = bd.parent_op()
        while user is not None and not isinstance(user, func.FuncOp):
            user = user.parent_op()
        user_name = user.sym_name.data if isinstance(user, func.FuncOp) else "<module>"
        callee = gen.symbols.get(bd.callee.root_reference.data)
        if callee is None:
            raise fail(user_name, f"bwd_diff of unknown function {bd.callee}", bd)
        name = gen.bwd_of(callee, user_name, bd)
        Rewriter.replace_op(bd, func.CallOp(name, bd.args, [r.type for r in bd.res]))
