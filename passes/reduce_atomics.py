"""reduce-atomics: sum a work-group's atomic adds to one address in local memory, then add once.

When every work-item of a kernel adds into the same few addresses (gradients of shared
parameters), the adds serialise on those addresses. This pass runs on kernels (after
lower-entry-points) and, for each add whose address is the same for every work-item of a
work-group, replaces "every work-item adds" by: each work-item stores its contribution in local
memory, a barrier, a tree reduction in local memory, and work-item 0 adds the group's sum with
the original atomic op.

Which adds: `kernel.atomic_add`, and `kernel.atomic_rmw` addf / addi whose old value is unused,
on global memory, where

* the memref and indices are work-group uniform: computed only from kernel arguments, constants,
  work-group queries (group_id, local_size, num_groups, global_size) and induction variables of
  `scf.for` loops with uniform bounds, through side-effect-free ops;
* every work-item of the group reaches the add the same number of times, so barriers beside it
  are legal: it sits at the kernel's top level, or in `scf.for` loops with uniform bounds there,
  or inside one top-level guard `scf.if %active { ... }` (no results, empty else: the front end's
  `if (tid >= count) return; rest` becomes `if (!(tid >= count)) { rest }`), in the same kinds
  of loops;
* the memref is used by adds alone in the kernel (a read or a plain write of the location would
  see the adds move). Distinct buffer arguments are taken not to alias: a kernel that reads
  locations other work-items add to races with their adds anyway.

Calls at those positions whose callees (transitively) hold such adds are inlined first (callees
of one block); when no add qualifies, the kernel is left as it was.

A guard holding reduced adds becomes a predicate: its body runs in every work-item. Runs of ops
without reduced adds go back under `scf.if %active` (yielding what later ops use; zeros in
inactive work-items); inside the loops that hold reduced adds, each op that has an effect or
may trap (loads, stores, calls, branches, integer division) gets its own `scf.if %active`, pure
arithmetic runs as is, and an inactive work-item contributes 0.

Adds of one block are reduced together, up to `batch` of them (one barrier for their stores,
then each tree step adds all of them): contributions are stored where each add was, and the
reduction and the group's atomic adds follow the batch's last add. Halves are summed in float and
rounded once, when work-item 0 adds the sum. Consecutive adds of a batch into one buffer whose
indices differ only in one constant, by a fixed step (an unrolled loop's), are issued by one add
in a `diffc.unroll` loop over their rows, its index recomputed with that constant as first +
j x step in the constant's own type (the same arithmetic as the add it stands for). Work-groups must have the kernel's
`kernel.reqd_work_group_size` (the runtime launches them so); kernels of one work-item, and
kernels without that attribute, are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    Float16Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnitAttr,
    f32,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from diffc.dialects import kernel
from diffc.kernel_support.atomic_adds import is_global_add, only_added
from diffc.kernel_support.convergence import ConvergedPositions, Guard, Uniformity, linear_local_id
from diffc.kernel_support.unrolling import fold_or_clone

# Local memory for one batch's contributions stays under this many bytes.
_LOCAL_BYTES = 16384


@dataclass(frozen=True)
class ReduceAtomicsPass(ModulePass):
    name = "reduce-atomics"

    batch: int = 16  # adds of one block reduced together, at most (and local memory allows)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        for fn in list(funcs.values()):
            # accumulate-gradients' kernels already sum per group (diffc.accumulated)
            if kernel.is_kernel(fn) and fn.body.blocks and "diffc.accumulated" not in fn.attributes:
                _KernelReducer(fn, funcs, max(1, self.batch)).run()


class _KernelReducer:
    def __init__(self, fn: func.FuncOp, funcs: dict[str, func.FuncOp], batch: int):
        self.fn = fn
        self.funcs = funcs
        self.batch = batch

    def run(self) -> None:
        sizes = kernel.work_group_size(self.fn)
        if sizes is None or sizes[0] * sizes[1] * sizes[2] <= 1:
            return
        self.sizes = sizes
        self.group = sizes[0] * sizes[1] * sizes[2]
        work = self.fn.clone()  # inline and look on a copy: a kernel with nothing to reduce stays as it was
        self.entry = work.body.blocks[0]
        self.converged = ConvergedPositions(self.entry, self.funcs)
        self.converged.inline_calls(is_global_add)
        self.converged.uniform = self.uniform = Uniformity(self.entry)
        adds = self._candidates()
        if not adds:
            return
        predicates: dict[Operation, SSAValue | None] = {}
        for guard, inner in adds.items():
            p = None if guard is None else self.converged.predicate_guard(guard, inner)
            if guard is None or p is not None:
                for a in inner:
                    predicates[a] = p
        if not predicates:
            return
        self._reduce(predicates)
        parent = self.fn.parent_block()
        assert parent is not None
        parent.insert_op_after(work, self.fn)
        Rewriter.erase_op(self.fn)
        self.funcs[work.sym_name.data] = work

    # -- which adds ---------------------------------------------------------------------------

    def _candidates(self) -> dict[Guard | None, list[Operation]]:
        added_only: dict[SSAValue, bool] = {}
        for op in self.entry.walk():
            for v in op.operands:
                if isinstance(v.type, MemRefType) and v not in added_only:
                    added_only[v] = only_added(v, self.funcs)
        found: dict[Guard | None, list[Operation]] = {}
        for block, guard in self.converged.positions():
            for op in block.ops:
                if not is_global_add(op):
                    continue
                target = op.memref  # type: ignore[attr-defined]
                if added_only.get(target) and self.uniform(target) and all(self.uniform(i) for i in op.indices):  # type: ignore[attr-defined]
                    found.setdefault(guard, []).append(op)
        return found

    # -- the reduction ------------------------------------------------------------------------

    def _unroll(self, predicates: dict[Operation, SSAValue | None], per_batch: int) -> None:
        """Unrolls loops of constant bounds whose iterations' adds fit in one batch, so that
        they share one reduction (and its barriers)."""
        changed = True
        while changed:
            changed = False
            for add in list(predicates):
                if add not in predicates:
                    continue
                loop = add.parent_op()
                if not isinstance(loop, scf.ForOp) or loop.iter_args:
                    continue
                bounds = [_constant(v) for v in (loop.lb, loop.ub, loop.step)]
                if None in bounds or bounds[2] <= 0:  # type: ignore[operator]
                    continue
                body = loop.body.blocks[0]
                inside = [a for a in predicates if loop.is_ancestor(a)]
                trips = range(*bounds)  # type: ignore[misc]
                if any(a.parent_block() is not body for a in inside) or len(trips) * len(inside) > per_batch:
                    continue
                iv = body.args[0]
                for t in trips:
                    c = arith.ConstantOp(IntegerAttr(t, iv.type))
                    Rewriter.insert_op(c, InsertPoint.before(loop))
                    mapping: dict[SSAValue, SSAValue] = {iv: c.result}
                    for op in body.ops:
                        if op is body.last_op:
                            break
                        new = fold_or_clone(op, mapping)
                        if new is None:
                            continue
                        Rewriter.insert_op(new, InsertPoint.before(loop))
                        if op in predicates:
                            predicates[new] = predicates[op]
                for a in inside:
                    del predicates[a]
                Rewriter.erase_op(loop)
                changed = True

    def _reduce(self, predicates: dict[Operation, SSAValue | None]) -> None:
        per_batch = max(1, min(self.batch, _LOCAL_BYTES // (4 * self.group)))
        self._unroll(predicates, per_batch)
        blocks: dict[Block, None] = {}
        for a in predicates:
            block = a.parent_block()
            assert block is not None
            blocks[block] = None
        batches: list[list[Operation]] = []
        for block in blocks:
            # a batch's stores wait in local memory until its reduction: no other reduction (in
            # an op between its adds) may run meanwhile, as they share the buffer
            open_: dict[Attribute, list[Operation]] = {}
            for op in block.ops:
                if op in predicates:
                    batch = open_.setdefault(_sum_type(op), [])
                    batch.append(op)
                    if len(batch) == per_batch:
                        batches.append(open_.pop(_sum_type(op)))
                elif op.regions and any(inner in predicates for inner in op.walk()):
                    batches += open_.values()
                    open_.clear()
            batches += open_.values()
        self.lid = linear_local_id(self.sizes, Builder(InsertPoint.at_start(self.entry)))
        self.consts: dict[int, SSAValue] = {}
        self.buffers: dict[Attribute, SSAValue] = {}
        for t in (i32, f32):
            rows = max((len(b) for b in batches if _sum_type(b[0]) == t), default=0)
            if rows:
                alloc = kernel.LocalAllocOp(kernel.local_memref(t, [rows, self.group]))
                alloc.result.name_hint = "group_sums"
                Rewriter.insert_op(alloc, InsertPoint.at_start(self.entry))
                self.buffers[t] = alloc.result
        for b in batches:
            self._reduce_batch(b, predicates)

    def _const(self, n: int) -> SSAValue:
        if n not in self.consts:
            c = arith.ConstantOp(IntegerAttr(n, IndexType()))
            Rewriter.insert_op(c, InsertPoint.after(self.lid.owner))  # type: ignore[arg-type]
            self.consts[n] = c.result
        return self.consts[n]

    def _reduce_batch(self, adds: list[Operation], predicates: dict[Operation, SSAValue | None]) -> None:
        sum_type = _sum_type(adds[0])
        buf = self.buffers[sum_type]
        const = self._const

        # each work-item stores its contribution where it used to add
        for k, add in enumerate(adds):
            ops: list[Operation] = []
            v: SSAValue = add.value  # type: ignore[attr-defined]
            if isinstance(v.type, Float16Type):
                ext = arith.ExtFOp(v, f32)
                ops.append(ext)
                v = ext.result
            p = predicates[add]
            if p is not None:
                zero = arith.ConstantOp(IntegerAttr(0, i32) if sum_type == i32 else FloatAttr(0.0, f32))
                sel = arith.SelectOp(p, v, zero.result)
                ops += [zero, sel]
                v = sel.result
            ops.append(memref.StoreOp.get(v, buf, [const(k), self.lid]))
            Rewriter.insert_op(ops, InsertPoint.before(add))
        # the tree, after the batch's last add: a loop over its levels (step = width/2 >> level)
        # and, in each, over the batch's rows, kept rolled for the device compiler to unroll
        # (unrolled here, the MLP's learnGradient carried about 1,400 lines of it)
        after = adds[-1].next_op
        assert after is not None  # a block ends with its terminator
        ip = InsertPoint.before(after)
        ops = [kernel.BarrierOp()]
        width = 1
        while width < self.group:
            width *= 2
        if width > 1:
            level_body = Block(arg_types=[IndexType()])
            step = arith.ShRUIOp(const(width // 2), level_body.args[0])
            active = arith.CmpiOp(self.lid, step.result, "ult")
            partner = arith.AddiOp(self.lid, step.result)
            level_ops: list[Operation] = [step, active, partner]
            cond = active.result
            if width != self.group:  # a group size that is no power of two: the partner must exist
                inside = arith.CmpiOp(partner.result, const(self.group), "ult")
                both = arith.AndIOp(cond, inside.result)
                level_ops += [inside, both]
                cond = both.result

            def fold_row(row: SSAValue) -> list[Operation]:
                mine = memref.LoadOp.get(buf, [row, self.lid])
                theirs = memref.LoadOp.get(buf, [row, partner.result])
                total = arith.AddiOp(mine, theirs) if sum_type == i32 else arith.AddfOp(mine, theirs)
                return [mine, theirs, total, memref.StoreOp.get(total.result, buf, [row, self.lid])]

            then = Block()
            if len(adds) == 1:
                then.add_ops(fold_row(const(0)))
            else:
                row_body = Block(arg_types=[IndexType()])
                row_body.add_ops([*fold_row(row_body.args[0]), scf.YieldOp()])
                rows = scf.ForOp(const(0), const(len(adds)), const(1), [], Region(row_body))
                rows.attributes[kernel.UNROLL] = UnitAttr()
                then.add_op(rows)
            then.add_op(scf.YieldOp())
            level_body.add_ops([*level_ops, scf.IfOp(cond, [], Region(then)), kernel.BarrierOp(), scf.YieldOp()])
            levels = scf.ForOp(const(0), const(width.bit_length() - 1), const(1), [], Region(level_body))
            levels.attributes[kernel.UNROLL] = UnitAttr()
            ops.append(levels)
        # work-item 0 adds the group's sums with the original atomics; a run of adds at evenly
        # spaced addresses (an unrolled loop's) is one add in a loop the device compiler unrolls
        first = arith.CmpiOp(self.lid, const(0), "eq")
        then = Block()
        k = 0
        while k < len(adds):
            n, leaf, stride = _run(adds, k)
            if n == 1:
                then.add_ops(_issue(adds[k], buf, const(k), const(0)))
                k += 1
                continue
            body = Block(arg_types=[IndexType()])
            row = arith.AddiOp(const(k), body.args[0])
            body.add_op(row)
            add = adds[k]
            index = _index_at(add.indices[0], leaf, stride, body.args[0], body)  # type: ignore[attr-defined]
            dead = [a.indices[0] for a in adds[k:k + n]]  # type: ignore[attr-defined]
            add.operands[2] = index  # (value, memref, index)
            body.add_ops([*_issue(add, buf, row.result, const(0)), scf.YieldOp()])
            for other in adds[k + 1:k + n]:
                Rewriter.erase_op(other)
            loop = scf.ForOp(const(0), const(n), const(1), [], Region(body))
            loop.attributes[kernel.UNROLL] = UnitAttr()
            then.add_op(loop)
            for v in dead:
                _erase_unused(v)
            k += n
        then.add_op(scf.YieldOp())
        ops += [first, scf.IfOp(first.result, [], Region(then))]
        Rewriter.insert_op(ops, ip)


def _issue(add: Operation, buf: SSAValue, row: SSAValue, zero: SSAValue) -> list[Operation]:
    """The group's sum in row `row` added by `add` (moved here), rounded once to its half."""
    total = memref.LoadOp.get(buf, [row, zero])
    ops: list[Operation] = [total]
    value: SSAValue = total.res
    if isinstance(add.value.type, Float16Type):  # type: ignore[attr-defined]
        trunc = arith.TruncFOp(value, add.value.type)  # type: ignore[attr-defined]
        ops.append(trunc)
        value = trunc.result
    add.operands[0] = value
    add.detach()
    return [*ops, add]


_ADDS = (kernel.AtomicAddOp, kernel.AtomicRMWOp)  # operands (value, memref, indices...)
_PURE = (arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp)


def _leaf_difference(a: SSAValue, b: SSAValue, found: list) -> bool:
    """Whether index expressions a and b are the same but for integer constants at one place of
    a's tree (appended to `found` as (a's constant op, b's value)): the same pure ops over the
    same values."""
    if a is b:
        return True
    oa, ob = a.owner, b.owner
    if isinstance(oa, arith.ConstantOp) and isinstance(ob, arith.ConstantOp):
        if not (isinstance(oa.value, IntegerAttr) and isinstance(ob.value, IntegerAttr)) or a.type != b.type:
            return False
        if oa.value.value.data != ob.value.value.data:
            found.append((oa, ob.value.value.data))
        return True
    if not (isinstance(oa, _PURE) and type(oa) is type(ob) and a.type == b.type
            and oa.properties == ob.properties and len(oa.operands) == len(ob.operands)):
        return False
    return all(_leaf_difference(x, y, found) for x, y in zip(oa.operands, ob.operands))


def _run(adds: list[Operation], k: int) -> tuple[int, Operation | None, int]:
    """(n, the constant that varies, its step): adds k .. k + n - 1 of a batch are one kind of
    add into one buffer whose one index differs only in one constant, by a fixed step."""
    first = adds[k]
    if len(first.indices) != 1 or type(first) not in _ADDS:  # type: ignore[attr-defined]
        return 1, None, 0
    leaf, c0, stride, n = None, 0, 0, 1
    while k + n < len(adds):
        other = adds[k + n]
        if (type(other) is not type(first) or other.memref is not first.memref  # type: ignore[attr-defined]
                or other.value.type != first.value.type or other.properties != first.properties  # type: ignore[attr-defined]
                or len(other.indices) != 1):  # type: ignore[attr-defined]
            break
        found: list = []
        if not _leaf_difference(first.indices[0], other.indices[0], found) or len(found) != 1:  # type: ignore[attr-defined]
            break
        op, value = found[0]
        if leaf is None:
            leaf, c0, stride = op, op.value.value.data, value - op.value.value.data
        if op is not leaf or value != c0 + n * stride:
            break
        n += 1
    return n, leaf, stride


def _index_at(v: SSAValue, leaf: Operation, stride: int, j: SSAValue, block: Block) -> SSAValue:
    """`v` with the constant `leaf` replaced by leaf + j x stride, in the leaf's type (what the
    j-th add of the run computed); the ops that depend on the leaf cloned at the end of block."""
    t = leaf.results[0].type
    step = j
    if t != IndexType():
        cast = arith.IndexCastOp(j, t)
        block.add_op(cast)
        step = cast.result
    c_stride = arith.ConstantOp(IntegerAttr(stride, t))
    scaled = arith.MuliOp(step, c_stride.result)
    at = arith.AddiOp(leaf.results[0], scaled.result)
    block.add_ops([c_stride, scaled, at])
    memo: dict[SSAValue, SSAValue] = {leaf.results[0]: at.result}

    def clone(x: SSAValue) -> SSAValue:
        if x in memo:
            return memo[x]
        op = x.owner
        if not isinstance(op, _PURE) or not any(clone(o) is not o for o in op.operands):
            return x
        new = op.clone(value_mapper={o: clone(o) for o in op.operands})
        block.add_op(new)
        memo[x] = new.results[0]
        return new.results[0]

    return clone(v)


def _erase_unused(v: SSAValue) -> None:
    """Erases the pure index ops that computed `v` and nothing else uses any more."""
    op = v.owner
    if isinstance(op, Operation) and isinstance(op, (*_PURE, arith.ConstantOp)) and not any(r.uses for r in op.results):
        operands = list(op.operands)
        Rewriter.erase_op(op)
        for o in operands:
            _erase_unused(o)


def _constant(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _sum_type(add: Operation) -> Attribute:
    """What a group's contributions to `add` are summed in: i32, or f32 (halves too)."""
    return i32 if add.memref.type.element_type == i32 else f32  # type: ignore[attr-defined]
