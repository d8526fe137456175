"""Where every work-item of a group arrives (so a barrier beside an op is legal), shared by
reduce-atomics and cooperative-layers.

* `Uniformity`: which values are the same in every work-item of a group (kernel arguments,
  constants, group queries, induction variables of loops of uniform bounds, and what
  side-effect-free ops compute from them).
* `guard`: a kernel's early return, `scf.if %active { rest }` (the front end's `if (tid >= count)
  return; rest`).
* `ConvergedPositions`: the blocks every work-item runs equally often (the kernel's top level, a
  guard's body, loops of uniform bounds in them), inlining of the calls there that reach given
  ops, and the predication that turns a guard whose body holds such ops into a predicate: the
  chosen ops (`targets`) then run in every work-item, what surrounds them under `scf.if %active`
  (zeros in inactive work-items).
* `linear_local_id`: the work-item's index in its group, which both passes number their rows by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free, is_speculatable

from diffc.dialects import kernel
from diffc.kernel_support.inlining import inline_call

# Work-group queries whose value is the same in every work-item of a group.
UNIFORM_QUERIES = (kernel.GroupIdOp, kernel.LocalSizeOp, kernel.NumGroupsOp, kernel.GlobalSizeOp)


def safe(op: Operation) -> bool:
    """Whether an inactive work-item may run `op` on arbitrary operands: no effect, no trap."""
    return not op.regions and is_side_effect_free(op) and is_speculatable(op)


@dataclass(eq=False)
class Guard:
    """A top-level `scf.if` whose results are unused and one of whose branches is empty: a
    work-item's early return. `body` runs where `cond` is `active` (True: then, False: else)."""

    op: scf.IfOp
    body: Block
    active: bool


def guard(op: Operation) -> Guard | None:
    if not isinstance(op, scf.IfOp) or any(r.uses for r in op.results):
        return None
    then = op.true_region.blocks[0]
    other = op.false_region.blocks[0] if op.false_region.blocks else None
    if other is None or len(other.ops) == 1:
        return Guard(op, then, True)
    if len(then.ops) == 1:
        return Guard(op, other, False)
    return None


@dataclass
class Uniformity:
    """Which values are the same in every work-item of a work-group."""

    entry: Block
    memo: dict[SSAValue, bool] = field(default_factory=dict)

    def __call__(self, v: SSAValue) -> bool:
        known = self.memo.get(v)
        if known is None:
            self.memo[v] = False  # cycles (none in SSA outside graph regions) stay non-uniform
            known = self.memo[v] = self._compute(v)
        return known

    def _compute(self, v: SSAValue) -> bool:
        if isinstance(v, BlockArgument):
            if v.block is self.entry:
                return True
            parent = v.block.parent_op()
            if not isinstance(parent, scf.ForOp) or not self.loop_is_uniform(parent):
                return False
            if v.index == 0:
                return True
            # a carried value the loop passes on unchanged (the front end carries pointers)
            yielded = v.block.last_op
            k = v.index - 1
            return (
                isinstance(yielded, scf.YieldOp) and yielded.operands[k] is v and self(parent.iter_args[k])
            )
        op = v.owner
        assert isinstance(op, Operation)
        if isinstance(op, UNIFORM_QUERIES):
            return True
        if isinstance(op, kernel.GlobalIdOp | kernel.LocalIdOp):
            return False
        # (an integer division of uniform values is uniform, though it is not free of effects)
        pure = is_side_effect_free(op) or op.dialect_name() == "arith"
        return not op.regions and pure and all(self(o) for o in op.operands)

    def loop_is_uniform(self, loop: scf.ForOp) -> bool:
        return self(loop.lb) and self(loop.ub) and self(loop.step)


class ConvergedPositions:
    """The converged blocks of one kernel body `entry` (see the module docstring)."""

    def __init__(self, entry: Block, funcs: dict[str, func.FuncOp]):
        self.entry = entry
        self.funcs = funcs
        self.uniform = Uniformity(entry)
        # (callee, holds) -> reaches(callee, holds) since the last inlining, which only changes
        # the entry's body: a kernel calling a large derivative function from several places
        # walked it once per call and round
        self._reaching: dict[tuple[str, Callable[[Operation], bool]], bool] = {}

    def positions(self) -> Iterator[tuple[Block, Guard | None]]:
        """Blocks every work-item runs equally often (a guard's body: every active one), with
        the guard they are under."""
        def loops(block: Block, g: Guard | None) -> Iterator[tuple[Block, Guard | None]]:
            yield block, g
            for op in block.ops:
                if isinstance(op, scf.ForOp) and self.uniform.loop_is_uniform(op):
                    yield from loops(op.body.blocks[0], g)

        for op in list(self.entry.ops):
            g = guard(op)
            if g is not None:
                yield from loops(g.body, g)
        yield from loops(self.entry, None)

    # -- inlining -----------------------------------------------------------------------------

    def inline_calls(self, holds: Callable[[Operation], bool]) -> None:
        """Inlines the calls at converged positions whose callees (transitively) hold an op
        for which `holds` is true (callees of one block and one return)."""
        changed = True
        while changed:
            changed = False
            self.uniform = Uniformity(self.entry)
            for block, _ in list(self.positions()):
                for op in list(block.ops):
                    if isinstance(op, func.CallOp) and self._inline(op, holds):
                        changed = True

    def reaches(self, name: str, holds: Callable[[Operation], bool], seen: set[str]) -> bool:
        if name in seen or name not in self.funcs:
            return False
        seen.add(name)
        for op in self.funcs[name].walk():
            if holds(op):
                return True
            if isinstance(op, func.CallOp) and self.reaches(op.callee.root_reference.data, holds, seen):
                return True
        return False

    def _inline(self, call: func.CallOp, holds: Callable[[Operation], bool]) -> bool:
        callee = self.funcs.get(call.callee.root_reference.data)
        if callee is None or len(callee.body.blocks) != 1 or kernel.is_kernel(callee):
            return False
        key = (callee.sym_name.data, holds)
        reaching = self._reaching.get(key)
        if reaching is None:
            reaching = self._reaching[key] = self.reaches(callee.sym_name.data, holds, set())
        if not reaching:
            return False
        inlined = inline_call(call, callee)
        if inlined:
            self._reaching.clear()
        return inlined

    # -- a guard becomes a predicate -----------------------------------------------------------

    def everywhere(self, op: Operation) -> bool:
        """Whether an inactive work-item may run `op` as is: it has no effect and either cannot
        trap or computes what every work-item of the group computes."""
        return safe(op) or (not op.regions and is_side_effect_free(op) and all(self.uniform(o) for o in op.operands))

    def unguarded(self, op: Operation) -> bool:
        """Ops of a guard's body that flush moves out as they are: private allocations and
        side-effect-free ops of uniform operands (what they compute, every work-item computes)."""
        return isinstance(op, memref.AllocaOp) or (
            not op.regions and is_side_effect_free(op) and all(self.uniform(o) for o in op.operands)
        )

    def predicate_guard(self, g: Guard, targets: list[Operation]) -> SSAValue | None:
        """Runs the guard's body in every work-item, the `targets` (ops of the body, or in
        uniform loops there) as they are and the rest predicated; returns the predicate (true in
        active work-items), or None (and nothing changed) where that cannot be done."""
        op_, body = g.op, g.body
        chosen = set(targets)
        reducing: set[Operation] = set()  # ops of the body that hold a target
        for a in targets:
            op = a
            while op.parent_op() is not op_:
                op = op.parent_op()
                assert op is not None
            reducing.add(op)
        for op in body.ops:
            if op in reducing and not self._can_hoist(op, chosen):
                return None
        for op in op_.walk():
            if isinstance(op, kernel.BarrierOp):
                return None
        # every value predicated code passes on must have a zero for inactive work-items
        for op in body.ops:
            if op in reducing or self.unguarded(op):
                continue
            if any(zero_type(r.type) is None and any(u.operation is not body.last_op for u in r.uses)
                   for r in op.results):
                return None
        assert body.last_op is not None
        body.last_op.operands = ()  # the guard's results are unused
        p = op_.cond
        if not g.active:
            true = arith.ConstantOp(IntegerAttr(1, IntegerType(1)))
            negate = arith.XOrIOp(p, true.result)
            negate.result.name_hint = "active"
            Rewriter.insert_op([true, negate], InsertPoint.before(op_))
            p = negate.result
        run: list[Operation] = []
        for op in list(body.ops):
            if op is body.last_op:  # the yield of results nothing uses
                break
            if op in reducing:
                self._flush(run, op_, p)
                op.detach()
                Rewriter.insert_op(op, InsertPoint.before(op_))
                self._predicate_loop(op, p, chosen)
            else:
                run.append(op)
        self._flush(run, op_, p)
        Rewriter.erase_op(op_)
        return p

    def _can_hoist(self, op: Operation, targets: set[Operation]) -> bool:
        """A target, or a uniform loop whose body's ops can each be predicated."""
        if op in targets:
            return True
        if not isinstance(op, scf.ForOp) or not self.uniform.loop_is_uniform(op):
            return False
        for inner in op.body.blocks[0].ops:
            if inner.regions and any(a in targets for a in inner.walk()):
                if not self._can_hoist(inner, targets):
                    return False
            elif not (self.everywhere(inner) or inner in targets or isinstance(inner, (scf.YieldOp, memref.AllocaOp))):
                if any(zero_type(r.type) is None for r in inner.results):
                    return False
        return True

    def _flush(self, run: list[Operation], at: scf.IfOp, p: SSAValue) -> None:
        """Moves a run of the guard's ops before it: uniform side-effect-free ops and private
        allocations as they are, the rest under `scf.if %p` yielding what later ops use."""
        if not run:
            return
        guarded: list[Operation] = []
        for op in run:
            if self.unguarded(op):
                op.detach()
                Rewriter.insert_op(op, InsertPoint.before(at))
            else:
                guarded.append(op)
        run.clear()
        if guarded:
            wrap(guarded, p, InsertPoint.before(at))

    def _predicate_loop(self, op: Operation, p: SSAValue, targets: set[Operation]) -> None:
        if op in targets:
            return
        assert isinstance(op, scf.ForOp)
        for inner in list(op.body.blocks[0].ops):
            if inner in targets or isinstance(inner, (scf.YieldOp, memref.AllocaOp)) or self.everywhere(inner):
                continue
            if isinstance(inner, scf.ForOp) and any(a in targets for a in inner.walk()):
                self._predicate_loop(inner, p, targets)
            else:  # (before the op after it: wrap moves `inner` itself)
                assert inner.next_op is not None
                wrap([inner], p, InsertPoint.before(inner.next_op))


def zero_type(t: Attribute) -> Attribute | None:
    """`t` when an inactive work-item can stand in 0 for a value of type t, else None."""
    scalars = IntegerType | IndexType | Float16Type | Float32Type | Float64Type
    if isinstance(t, scalars) or (isinstance(t, VectorType) and isinstance(t.element_type, scalars)):
        return t
    return None


def zero(t: Attribute) -> Operation:
    if isinstance(t, VectorType):
        el = t.element_type
        value = 0.0 if not isinstance(el, IntegerType | IndexType) else 0
        return arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [value] * t.element_count()))
    if isinstance(t, IntegerType | IndexType):
        return arith.ConstantOp(IntegerAttr(0, t))
    from xdsl.dialects.builtin import FloatAttr

    return arith.ConstantOp(FloatAttr(0.0, t))  # type: ignore[arg-type]


def wrap(ops: list[Operation], p: SSAValue, ip: InsertPoint) -> None:
    """Moves `ops` (consecutive, in order) under `scf.if %p`, which yields their results used
    after them (zeros in inactive work-items)."""
    inside = set(ops)

    def later_use(r: SSAValue) -> bool:
        return any(not any(o.is_ancestor(u.operation) for o in inside) for u in r.uses)

    escaping = [r for op in ops for r in op.results if later_use(r)]
    then = Block()
    for op in ops:
        op.detach()
        then.add_op(op)
    then.add_op(scf.YieldOp(*escaping))
    other = Block()
    zeros = [zero(r.type) for r in escaping]
    other.add_ops([*zeros, scf.YieldOp(*(z.results[0] for z in zeros))])
    branch = scf.IfOp(p, [r.type for r in escaping], Region(then), Region(other))
    Rewriter.insert_op(branch, ip)
    for old, new in zip(escaping, branch.results):
        new.name_hint = old.name_hint
        old.replace_uses_with_if(new, lambda use: not branch.is_ancestor(use.operation))


def linear_local_id(sizes: tuple[int, int, int], b: Builder) -> SSAValue:
    """local_id(0) + local_id(1) * X + local_id(2) * X * Y."""
    ids = [kernel.LocalIdOp(d) for d in range(3)]
    b.insert(ids[0])
    lid: SSAValue = ids[0].result
    if sizes[1] > 1 or sizes[2] > 1:
        for op in ids[1:]:
            b.insert(op)
        cx = b.insert(arith.ConstantOp(IntegerAttr(sizes[0], IndexType()))).result
        cxy = b.insert(arith.ConstantOp(IntegerAttr(sizes[0] * sizes[1], IndexType()))).result
        y = b.insert(arith.MuliOp(ids[1].result, cx)).result
        z = b.insert(arith.MuliOp(ids[2].result, cxy)).result
        lid = b.insert(arith.AddiOp(b.insert(arith.AddiOp(lid, y)).result, z)).result
    lid.name_hint = "local_linear_id"
    return lid
