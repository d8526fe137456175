"""accumulate-gradients: gradient accumulation for throughput (a grid-stride loop, private sums,
one transposed work-group reduction, one atomic per group and parameter or per-group partial sums).

Every work-item of a training kernel adds its sample's gradient into the same few hundred
global parameters. reduce-atomics sums each group's adds with one local-memory tree per
parameter; this pass goes further, for kernels it can prove it safe for. Next to kernel @K (L
work-items per group) it adds a kernel @K__accum that computes what @K computes, launched with
fewer work-items, in groups of its own size R (`work_group`; 0: L):

* grid stride: @K__accum takes the number of work-groups @K was launched with, `diffc_groups`
  (V); its work-item group * R + local_id runs @K's body for @K's work-items g = that, + R *
  num_groups, ... < V * L, seeing global_id(0) = g, local_id(0) = g % L, group_id(0) = g / L,
  local_size(0) = L, num_groups(0) = V, global_size(0) = V * L (dimensions 1 and 2: ids 0,
  sizes 1; the runtime launches it only for 1-D dispatches). @K has no barrier or local memory,
  so its work-items are independent and any such schedule is one of its legal ones;
* private accumulation: each atomic add into global memory (gradient accumulation) becomes an
  add into a private float accumulator, one slot per add (loops of constant trip count around
  the adds are unrolled first, so each slot has one address);
* one transposed reduction: after the loop each work-item writes its S slots to local memory
  once (rows of R + 1 floats: work-items reading rows hit different banks), one barrier, then
  work-item t sums rows t, t + R, ... over the group, in order (chunks of rows when local memory
  is short, `local_bytes`), and issues the original atomic add, once per group and slot;
* deterministic mode (`diffc_deterministic` != 0): instead of the atomic, the group's sums go
  to `diffc_partials[group * S + slot]` (coalesced), and a second kernel @K__accum_finish (S
  work-groups of `finish_group` work-items F, group k for slot k: each work-item adds every
  F-th group's partial sums in group order, a tree of fixed shape adds the F parts, and
  work-item 0 issues the slot's add): the same bits every run, whatever order the groups ran
  in.

Which kernels (else @K is left as it is, for reduce-atomics, and `report=true` says why): 1-D
`kernel.reqd_work_group_size` of more than one work-item; one block; no barrier, local memory
or nested return; every atomic add on global memory is an f16/f32 addf whose old value is
unused (`kernel.atomic_add` f32, `kernel.atomic_rmw addf`), into memory the kernel only adds to
(diffc/kernel_support/atomic_adds.py, as for reduce-atomics), at an address computed from kernel
arguments, constants and induction variables of constant-trip loops, each of which is unrolled
(at most `max_slots` adds after unrolling). Calls holding adds are inlined first. Other atomics
(max, integer adds into counters) stay per-work-item atomics in the loop.

@K__accum carries `diffc.accumulate_of = "K"`, `diffc.accumulate_slots = S` and its own
`kernel.reqd_work_group_size` [R, 1, 1]; the finish kernel `diffc.accumulate_finish_of = "K"` and
[F, 1, 1] (launched as S groups); both `diffc.accumulated`, which reduce-atomics skips.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    Float16Type,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    f32,
    i32,
)
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from diffc.dialects import kernel
from diffc.kernel_support.atomic_adds import only_added
from diffc.kernel_support.inlining import inline_call
from diffc.kernel_support.kernel_params import append_params
from diffc.kernel_support.unrolling import fold_or_clone

ACCUMULATED = "diffc.accumulated"
ACCUMULATE_OF = "diffc.accumulate_of"
ACCUMULATE_SLOTS = "diffc.accumulate_slots"
FINISH_OF = "diffc.accumulate_finish_of"
# Parameters @K__accum (and the finish kernel) take after @K's.
GROUPS, PARTIALS, DETERMINISTIC = "diffc_groups", "diffc_partials", "diffc_deterministic"


# Integer atomics accumulated privately, with their identity (i32 bits).
EXACT_IDENTITY = {"addi": 0, "maxu": 0, "maxs": -(2**31), "minu": -1, "mins": 2**31 - 1}
_EXACT_OP = {"addi": arith.AddiOp, "maxu": arith.MaxUIOp, "maxs": arith.MaxSIOp, "minu": arith.MinUIOp,
             "mins": arith.MinSIOp}


def _exact_kind(op: Operation) -> str | None:
    """The kind of an i32 atomic on global memory whose old value is unused, if it is one."""
    if isinstance(op, kernel.AtomicAddOp):
        kind = "addi"
    elif isinstance(op, kernel.AtomicRMWOp) and op.kind.data in EXACT_IDENTITY and not op.result.uses:
        kind = op.kind.data
    else:
        return None
    if op.memref.type.element_type != i32 or kernel.memory_space(op.memref.type) is not None:
        return None
    return kind


class _Refused(Exception):
    """Why a kernel is left as it is."""


def _is_atomic_add(op: Operation) -> bool:
    return isinstance(op, kernel.AtomicAddOp) or (
        isinstance(op, kernel.AtomicRMWOp) and op.kind.data in ("addf", "addi")
    )


def _constant(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _index(n: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(n, IndexType()))


@dataclass(frozen=True)
class AccumulateGradientsPass(ModulePass):
    name = "accumulate-gradients"

    local_bytes: int = 16384  # local memory for one chunk of the transposed reduction
    work_group: int = 0  # work-items per group of @K__accum (0: @K's)
    finish_group: int = 256  # work-items of each of @K__accum_finish's groups (one per slot; a power of two)
    local_sums: bool = False  # accumulate in local memory where every slot has its row
    max_slots: int = 1024  # adds after unrolling, at most
    report: bool = False  # print one line per kernel: rewritten, or why not

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        for fn in list(funcs.values()):
            if not kernel.is_kernel(fn) or not fn.body.blocks or ACCUMULATED in fn.attributes:
                continue
            try:
                slots, exact = _Accumulator(fn, funcs, self).run()
                more = f" and {len(exact)} integer ({', '.join(exact)})" if exact else ""
                line = f"rewritten: {slots} gradient slots{more}, a grid-stride loop, one transposed reduction per work-group"
            except _Refused as why:
                line = f"left to reduce-atomics: {why}"
            if self.report:
                print(f"// accumulate-gradients @{fn.sym_name.data}: {line}")


class _Accumulator:
    def __init__(self, fn: func.FuncOp, funcs: dict[str, func.FuncOp], opts: AccumulateGradientsPass):
        self.fn, self.funcs, self.opts = fn, funcs, opts

    def run(self) -> tuple[int, list[str]]:
        sizes = kernel.work_group_size(self.fn)
        if sizes is None or sizes[1] != 1 or sizes[2] != 1 or sizes[0] <= 1:
            raise _Refused("needs a 1-D kernel.reqd_work_group_size of more than one work-item")
        F = self.opts.finish_group
        if F < 1 or F & (F - 1):  # the finish kernel's tree halves it
            raise _Refused(f"finish_group {F} is not a power of two")
        self.L = sizes[0]
        self.R = self.opts.work_group or self.L
        if len(self.fn.body.blocks) != 1:
            raise _Refused("the kernel has more than one block")
        work = self.fn.clone()
        self.work, self.entry = work, work.body.blocks[0]
        self._inline()
        for op in work.walk():
            if isinstance(op, kernel.BarrierOp | kernel.LocalAllocOp):
                raise _Refused(f"it uses {op.name} (virtual groups would share local memory)")
            if isinstance(op, func.ReturnOp) and op is not self.entry.last_op:
                raise _Refused("a return inside a region")
        adds = [op for op in work.walk() if _is_atomic_add(op) and kernel.memory_space(op.memref.type) is None
                and isinstance(op.memref.type.element_type, Float16Type | Float32Type)]
        if not adds:
            raise _Refused("no floating-point atomic adds into global memory")
        for a in adds:
            if isinstance(a, kernel.AtomicRMWOp) and a.result.uses:
                raise _Refused(f"an atomic add whose old value is used ({a.name})")
            if not only_added(a.memref, self.funcs):
                raise _Refused("a buffer that is added to is also read or written")
        adds = self._unroll(adds)
        self.memo: dict[SSAValue, bool] = {}
        for a in adds:
            for v in (a.memref, *a.indices):
                if not self._invariant(v):
                    raise _Refused("an add whose address depends on the work-item or on a loop of unknown trip count")
        exact = self._exact_slots()
        self._rewrite(adds, exact)
        self.exact_kinds = [_exact_kind(op) for op in exact]
        finish = self._finish_kernel(adds)
        parent = self.fn.parent_block()
        assert parent is not None
        parent.insert_op_after(finish, self.fn)
        parent.insert_op_after(work, self.fn)
        return len(adds), self.exact_kinds

    def _exact_slots(self) -> list[Operation]:
        """Integer atomics (addi, max, min on i32) at one address for every work-item, into
        memory only they touch (a batch's largest loss, a counter): exact in any order, so each
        becomes a private slot too, combined once per group and issued as one atomic per group
        in both modes. Others stay per work-item in the loop."""
        out = []
        for op in self.work.walk():
            kind = _exact_kind(op)
            if kind is None or not all(self._invariant(v) for v in (op.memref, *op.indices)):
                continue
            if only_added(op.memref, self.funcs, lambda u, kind=kind: _exact_kind(u) == kind):
                out.append(op)
        return sorted(out, key=lambda op: list(EXACT_IDENTITY).index(_exact_kind(op)))

    # -- preparing ----------------------------------------------------------------------------

    def _holds_adds(self, name: str, seen: set[str]) -> bool:
        if name in seen or name not in self.funcs:
            return False
        seen.add(name)
        return any(
            _is_atomic_add(op) or (isinstance(op, func.CallOp) and self._holds_adds(op.callee.root_reference.data, seen))
            for op in self.funcs[name].walk()
        )

    def _inline(self) -> None:
        """Inlines every call whose callee (transitively) holds an atomic add."""
        changed = True
        while changed:
            changed = False
            for call in [op for op in self.work.walk() if isinstance(op, func.CallOp)]:
                name = call.callee.root_reference.data
                if not self._holds_adds(name, set()):
                    continue
                if not inline_call(call, self.funcs[name]):
                    raise _Refused(f"@{name} holds adds and cannot be inlined (several blocks or returns)")
                changed = True

    def _unroll(self, adds: list[Operation]) -> list[Operation]:
        """Unrolls every scf.for around an add (innermost first); each needs constant bounds."""
        live = set(adds)
        while True:
            loop = next((p for a in live for p in [a.parent_op()] if isinstance(p, scf.ForOp)), None)
            if loop is None:
                for a in live:  # an add under ifs inside a loop: unroll the loop around them
                    p = a.parent_op()
                    while p is not None and p is not self.work and not isinstance(p, scf.ForOp):
                        p = p.parent_op()
                    if isinstance(p, scf.ForOp):
                        loop = p
                        break
            if loop is None:
                return [op for op in self.work.walk() if op in live]
            bounds = [_constant(v) for v in (loop.lb, loop.ub, loop.step)]
            if None in bounds or bounds[2] <= 0:  # type: ignore[operator]
                raise _Refused("an add inside a loop whose trip count is not a constant")
            trips = range(*bounds)  # type: ignore[misc]
            inside = [a for a in live if loop.is_ancestor(a)]
            if len(live) - len(inside) + len(inside) * len(trips) > self.opts.max_slots:
                raise _Refused(f"more than {self.opts.max_slots} adds after unrolling")
            body = loop.body.blocks[0]
            carried = list(loop.iter_args)
            for t in trips:
                c = arith.ConstantOp(IntegerAttr(t, body.args[0].type))
                Rewriter.insert_op(c, InsertPoint.before(loop))
                mapping: dict[SSAValue, SSAValue] = {body.args[0]: c.result, **dict(zip(body.args[1:], carried))}
                for op in body.ops:
                    if op is body.last_op:
                        carried = [mapping.get(v, v) for v in op.operands]
                        break
                    new = fold_or_clone(op, mapping)
                    if new is None:
                        continue
                    Rewriter.insert_op(new, InsertPoint.before(loop))
                    if new.name != op.name:  # folded into a constant
                        continue
                    for old, cloned in zip(op.walk(), new.walk()):
                        if old in live:
                            live.add(cloned)
            for a in inside:
                live.discard(a)
            Rewriter.replace_op(loop, [], carried)

    def _invariant(self, v: SSAValue) -> bool:
        """Same in every work-item and every virtual group: kernel arguments, constants, the
        local size, and side-effect-free ops of those."""
        known = self.memo.get(v)
        if known is None:
            known = self.memo[v] = self._compute_invariant(v)
        return known

    def _compute_invariant(self, v: SSAValue) -> bool:
        if isinstance(v, BlockArgument):
            return v.block is self.entry
        op = v.owner
        if isinstance(op, kernel.LocalSizeOp):
            return True
        if isinstance(op, kernel.GlobalIdOp | kernel.LocalIdOp | kernel.GroupIdOp | kernel.NumGroupsOp | kernel.GlobalSizeOp):
            return False
        return isinstance(op, Operation) and not op.regions and is_side_effect_free(op) and all(
            self._invariant(o) for o in op.operands
        )

    # -- the rewrite ---------------------------------------------------------------------------

    def _rewrite(self, adds: list[Operation], exact: list[Operation]) -> None:
        """Slots 0 .. S-1: the float adds (private f32 sums); S .. S+E-1: the exact integer
        atomics (private i32 values of their kind)."""
        work, entry, L, S, E = self.work, self.entry, self.L, len(adds), len(exact)
        R = self.R  # the accumulated kernel's own work-group size
        kinds = ["addf"] * S + [_exact_kind(op) for op in exact]
        n_params = len(entry.args)
        groups, partials, det = append_params(work, [(IndexType(), GROUPS), (MemRefType(f32, [DYNAMIC_INDEX]), PARTIALS),
                                                     (i32, DETERMINISTIC)])
        self.n_params = n_params

        body_ops = list(entry.ops)[:-1]
        top = InsertPoint.at_start(entry)
        lid, group, nreal = kernel.LocalIdOp(0), kernel.GroupIdOp(0), kernel.NumGroupsOp(0)
        acc = memref.AllocaOp.get(f32, shape=[S])
        acc.memref.name_hint = "grad_acc"
        iacc = memref.AllocaOp.get(i32, shape=[max(E, 1)])
        iacc.memref.name_hint = "exact_acc"
        zero = arith.ConstantOp(FloatAttr(0.0, f32))
        consts = {k: _index(k) for k in range(max(S + E, R) + 1)}
        identity = {k: arith.ConstantOp(IntegerAttr(EXACT_IDENTITY[k], i32)) for k in dict.fromkeys(kinds[S:])}
        Rewriter.insert_op([lid, group, nreal, acc, *([iacc] if E else []), zero, *consts.values(),
                            *identity.values()], top)
        end = InsertPoint.before(entry.last_op)

        # local memory for the transposed reduction: rows of R + 1 values per slot, so that the
        # work-items reading rows hit different banks (integers in a second array); with
        # local_sums, where every slot of a kind has its row, each work-item accumulates in its
        # own column of them directly instead of in private memory (148 private floats took
        # 255 registers on an H100, yet summing in local memory measured slower there: 1.53
        # against 1.35 ms at 2^20)
        rows = self.opts.local_bytes // (4 * (R + 1))
        Ce = max(1, min(E, rows // 2))
        Cf = max(1, min(S, rows - (Ce if E else 0)))
        local = kernel.LocalAllocOp(kernel.local_memref(f32, [Cf, R + 1]))
        local.result.name_hint = "group_slots"
        Rewriter.insert_op(local, InsertPoint.at_start(entry))
        local_i = None
        if E:
            local_i = kernel.LocalAllocOp(kernel.local_memref(i32, [Ce, R + 1]))
            local_i.result.name_hint = "group_exact_slots"
            Rewriter.insert_op(local_i, InsertPoint.at_start(entry))
        in_local = {"addf": self.opts.local_sums and Cf >= S, "exact": self.opts.local_sums and 0 < E <= Ce}
        if in_local["addf"]:
            Rewriter.erase_op(acc)
        if in_local["exact"]:
            Rewriter.erase_op(iacc)

        def slot_ref(k: int) -> tuple[SSAValue, list[SSAValue]]:  # where slot k is accumulated
            if k < S:
                return (local.result, [consts[k], lid.result]) if in_local["addf"] else (acc.memref, [consts[k]])
            return (local_i.result, [consts[k - S], lid.result]) if in_local["exact"] else (iacc.memref, [consts[k - S]])

        def slot_at(k: SSAValue, floats: bool) -> tuple[SSAValue, list[SSAValue]]:  # slot k (a value)
            if floats:
                return (local.result, [k, lid.result]) if in_local["addf"] else (acc.memref, [k])
            return (local_i.result, [k, lid.result]) if in_local["exact"] else (iacc.memref, [k])

        # the float sums start at 0 in a loop the device unrolls (the slots stay registers)
        Rewriter.insert_op(_unrolled_loop(consts[0], consts[S], consts[1], lambda k: [
            memref.StoreOp.get(zero.result, *slot_at(k, True))]), end)
        for k in range(S, S + E):
            mem, at = slot_ref(k)
            Rewriter.insert_op(memref.StoreOp.get(identity[kinds[k]].result, mem, at), end)
        # the grid-stride loop over @K's work-items: this work-item runs virtual work-items
        # group * R + lid, + num_groups * R, ... < diffc_groups * L
        c_L, c_R = _index(L), _index(R)
        first = arith.MuliOp(group.result, c_R.result)
        mine0 = arith.AddiOp(first.result, lid.result)
        stride = arith.MuliOp(nreal.result, c_R.result)
        total = arith.MuliOp(groups, c_L.result)
        Rewriter.insert_op([c_L, c_R, first, mine0, stride, total], end)
        loop_body = Block(arg_types=[IndexType()])
        vid = loop_body.args[0]
        vid.name_hint = "virtual_id"
        loop = scf.ForOp(mine0.result, total.result, stride.result, [], Region(loop_body))
        for op in body_ops:
            op.detach()
            loop_body.add_op(op)
        loop_body.add_op(scf.YieldOp())
        Rewriter.insert_op(loop, end)
        self._virtual_ids(loop_body, vid, groups)
        slots: list[Operation] = [*adds, *exact]
        # the slices computing each slot's address (ids replaced), captured before the atomics go
        self.targets = [
            (type(a), getattr(a, "kind", None), a.value.type, a.memref, list(a.indices)) for a in slots
        ]
        self.target_locations = [a.location for a in slots]  # (the sanitizer's reports name the Slang add)
        self.runs = _runs(self.targets, self.target_locations)
        # atomics -> private sums (maxima, ...)
        for k, a in enumerate(slots):
            v: SSAValue = a.value
            ops: list[Operation] = []
            if isinstance(v.type, Float16Type):
                ext = arith.ExtFOp(v, f32)
                ops.append(ext)
                v = ext.result
            mem, at = slot_ref(k)
            old = memref.LoadOp.get(mem, at)
            new = arith.AddfOp(old.res, v) if k < S else _EXACT_OP[kinds[k]](old.res, v)
            ops += [old, new, memref.StoreOp.get(new.result, mem, at)]
            Rewriter.insert_op(ops, InsertPoint.before(a))
        c_S = _index(S)
        zero_i = arith.ConstantOp(IntegerAttr(0, i32))
        is_det = arith.CmpiOp(det, zero_i.result, "ne")
        base = arith.MuliOp(group.result, c_S.result)
        Rewriter.insert_op([c_S, zero_i, is_det, base], end)
        chunks = []  # (first slot, slots, kind)
        k = 0
        while k < S + E:
            n, C = 1, Cf if kinds[k] == "addf" else Ce
            while n < C and k + n < S + E and kinds[k + n] == kinds[k]:
                n += 1
            chunks.append((k, n, kinds[k]))
            k += n
        for start, n, kind in chunks:
            rows_of = local.result if kind == "addf" else local_i.result
            copy = not in_local["addf" if kind == "addf" else "exact"]  # else the rows are there
            ops: list[Operation] = [kernel.BarrierOp()] if start and copy else []  # the last chunk's readers are done
            if copy:  # rows j = slot start + j, in a loop the device unrolls
                floats = kind == "addf"
                first_slot = start if floats else start - S

                def copy_row(j: SSAValue) -> list[Operation]:
                    k = [arith.AddiOp(j, consts[first_slot])] if first_slot else []
                    val = memref.LoadOp.get(*slot_at(k[0].result if k else j, floats))
                    return [*k, val, memref.StoreOp.get(val.res, rows_of, [j, lid.result])]

                ops.append(_unrolled_loop(consts[0], consts[n], consts[1], copy_row))
            if copy or not start:
                ops.append(kernel.BarrierOp())
            Rewriter.insert_op(ops, end)
            # work-item t combines rows t, t + R, ... (every work-item runs the same loops; a
            # loop over the passes when there are several: 148 on a CPU, where R is 1), then
            # issues the original atomics of its rows, once per group and slot (for float
            # sums: unless deterministic, where the group's partial sums are stored, coalesced):
            # per run of slots at evenly spaced addresses, one guarded add at its slot's address
            passes = -(-n // R)
            body = Block(arg_types=[IndexType()]) if passes > 1 else None
            ops = []
            if body is None:
                row: SSAValue = lid.result
            else:
                pass_row = arith.MuliOp(body.args[0], c_R.result)
                first_of = arith.AddiOp(lid.result, pass_row.result)
                ops += [pass_row, first_of]
                row = first_of.result
            # accumulated in place, the chunk's rows start at its first slot's row
            first_row = 0 if copy else start - (0 if kind == "addf" else S)
            at_row = arith.AddiOp(row, consts[first_row]) if first_row else None
            t = f32 if kind == "addf" else i32
            init = zero.result if kind == "addf" else identity[kind].result
            sum_body = Block(arg_types=[IndexType(), t])
            x = memref.LoadOp.get(rows_of, [at_row.result if at_row else row, sum_body.args[0]])
            combine = arith.AddfOp if kind == "addf" else _EXACT_OP[kind]
            more = [x, combine(sum_body.args[1], x.res)]
            sum_body.add_ops([*more, scf.YieldOp(more[-1].results[0])])
            c0, c1 = _index(0), _index(1)
            over = scf.ForOp(c0.result, c_R.result, c1.result, [init], Region(sum_body))
            mine = Block()  # the row's total and what it issues
            mine.add_ops([*([at_row] if at_row else []), c0, c1, over])
            sum_ = over.results[0]
            adds = Block()
            for run in self.runs:
                lo, hi = max(run.first, start), min(run.first + run.count, start + n)
                if lo < hi:
                    self._emit_run_add(adds, run, row, start, lo, hi, sum_, {})
            if kind != "addf":  # exact: the same in both modes
                moved = list(adds.ops)
                for op in moved:
                    op.detach()
                mine.add_ops(moved)
            else:
                adds.add_op(scf.YieldOp())
                det = Block()
                slot = _minus(row, -start, det)
                at = arith.AddiOp(base.result, slot)
                det.add_ops([at, memref.StoreOp.get(sum_, partials, [at.result]), scf.YieldOp()])
                mine.add_op(scf.IfOp(is_det.result, [], Region(det), Region(adds)))
            if passes * R > n:  # a work-item without a row in the last pass
                has = arith.CmpiOp(row, consts[n], "ult")
                mine.add_op(scf.YieldOp())
                ops += [has, scf.IfOp(has.result, [], Region(mine))]
            else:
                ops += list(mine.ops)
                for op in ops:
                    if op.parent is not None:
                        op.detach()
            if body is None:
                Rewriter.insert_op(ops, end)
            else:
                body.add_ops([*ops, scf.YieldOp()])
                c_p = _index(passes)
                Rewriter.insert_op([c_p, scf.ForOp(consts[0], c_p.result, consts[1], [], Region(body))], end)
        for a in slots:
            Rewriter.erase_op(a)
        work.sym_name = StringAttr(f"{self.fn.sym_name.data}__accum")
        work.attributes[ACCUMULATED] = UnitAttr()
        work.attributes[ACCUMULATE_OF] = StringAttr(self.fn.sym_name.data)
        work.attributes[ACCUMULATE_SLOTS] = IntegerAttr(S, 64)
        work.attributes[kernel.REQD_WORK_GROUP_SIZE] = ArrayAttr([IntegerAttr(n, 64) for n in (R, 1, 1)])
        for attr in ("diffc.shader", "diffc.numthreads"):
            work.attributes.pop(attr, None)

    def _virtual_ids(self, body: Block, vid: SSAValue, groups: SSAValue) -> None:
        """Work-item queries inside the loop see virtual work-item `vid` of @K's launch: group
        vid / L, local id vid % L, L work-items per group, `groups` groups."""
        c_L = _index(self.L)
        vgroup = arith.DivUIOp(vid, c_L.result)
        vlocal = arith.RemUIOp(vid, c_L.result)
        gsize = arith.MuliOp(groups, c_L.result)
        c0, c1 = _index(0), _index(1)
        Rewriter.insert_op([c_L, vgroup, vlocal, gsize, c0, c1], InsertPoint.at_start(body))
        dim0 = {kernel.GlobalIdOp: vid, kernel.LocalIdOp: vlocal.result, kernel.GroupIdOp: vgroup.result,
                kernel.NumGroupsOp: groups, kernel.GlobalSizeOp: gsize.result, kernel.LocalSizeOp: c_L.result}
        for op in list(body.walk()):
            if type(op) not in dim0:
                continue
            if op.dim.value.data:
                new = c1.result if isinstance(op, kernel.NumGroupsOp | kernel.GlobalSizeOp | kernel.LocalSizeOp) else c0.result
            else:
                new = dim0[type(op)]
            op.result.replace_all_uses_with(new)
            Rewriter.erase_op(op)

    def _clone_slice(self, v: SSAValue, mapping: dict[SSAValue, SSAValue], block: Block) -> SSAValue:
        """`v` recomputed at the end of `block` from the kernel's arguments (mapped)."""
        if v in mapping:
            return mapping[v]
        if isinstance(v, BlockArgument):
            return v
        op = v.owner
        assert isinstance(op, Operation)
        for o in op.operands:
            self._clone_slice(o, mapping, block)
        new = op.clone(mapping)
        block.add_op(new)
        for old, r in zip(op.results, new.results):
            mapping[old] = r
        return mapping[v]

    def _emit_run_add(self, block: Block, run: _Run, row: SSAValue, base: int, lo: int, hi: int, value: SSAValue,
                      mapping: dict[SSAValue, SSAValue]) -> None:
        """At the end of `block`: if lo <= slot < hi (slots of `run`; slot = `row` + base), the
        original add of that slot, of `value` (f32): at the run's first address + (slot - first)
        x stride."""
        c_n = _index(hi - lo)
        offset = _minus(row, lo - base, block)
        inside = arith.CmpiOp(offset, c_n.result, "ult")
        block.add_ops([c_n, inside])
        moves = run.stride and (hi - lo > 1 or lo != run.first)
        one = self._run_add(run, (lambda b: _minus(row, run.first - base, b)) if moves else None, value, mapping)
        block.add_op(scf.IfOp(inside.result, [], Region(one)))

    def _run_add(self, run: _Run, step_in, value: SSAValue, mapping: dict[SSAValue, SSAValue]) -> Block:
        """A block with the original add of `run`'s first slot, of `value` (f32), then a yield: at
        the first address, or + step x stride where `step_in(block)` gives the step inside it."""
        cls, kind, value_type, mem, indices = self.targets[run.first]
        one = Block()
        m = self._clone_slice(mem, mapping, one)
        idx = [self._clone_slice(i, mapping, one) for i in indices]
        if step_in is not None:
            step = step_in(one)
            if run.stride != 1:
                c_stride = _index(run.stride)
                scaled = arith.MuliOp(step, c_stride.result)
                one.add_ops([c_stride, scaled])
                step = scaled.result
            at = arith.AddiOp(idx[0], step)
            one.add_op(at)
            idx = [at.result]
        if isinstance(value_type, Float16Type):
            trunc = arith.TruncFOp(value, value_type)
            one.add_op(trunc)
            value = trunc.result
        add = kernel.AtomicAddOp(value, m, idx) if cls is kernel.AtomicAddOp else kernel.AtomicRMWOp(kind.data, value, m, idx)
        add.location = self.target_locations[run.first]
        one.add_ops([add, scf.YieldOp()])
        return one

    def _emit_run_loop(self, block: Block, run: _Run, slot: SSAValue, value: SSAValue,
                       mapping: dict[SSAValue, SSAValue]) -> None:
        """At the end of `block`: for each slot first + j of `run`, if `slot` is it, its add at
        the run's first address + j x stride (a loop counter of constant bounds: the address
        stays one that launch-time proofs cover, unlike one computed from `slot`)."""
        body = Block(arg_types=[IndexType()])
        j = body.args[0]
        target = _minus(j, -run.first, body)
        mine = arith.CmpiOp(slot, target, "eq")
        body.add_op(mine)
        one = self._run_add(run, (lambda b: j) if run.stride else None, value, mapping)
        body.add_ops([scf.IfOp(mine.result, [], Region(one)), scf.YieldOp()])
        c0, c_n, c1 = _index(0), _index(run.count), _index(1)
        block.add_ops([c0, c_n, c1, scf.ForOp(c0.result, c_n.result, c1.result, [], Region(body))])

    def _finish_kernel(self, adds: list[Operation]) -> func.FuncOp:
        """@K__accum_finish, one work-group of F work-items per slot (S groups): in group k,
        work-item t adds slot k's partial sums of groups t, t + F, ... (in group order), a tree
        of fixed shape sums the F parts in local memory, and work-item 0 issues slot k's add: a
        fixed order, whatever order either kernel's groups ran in. (One group for all slots,
        whose work-item 0 issued the S adds one after another, took 0.06-0.1 ms on an H100:
        most of a step at 2^20.)"""
        S, F = len(adds), self.opts.finish_group
        fin = self.fn.clone()
        fin.sym_name = StringAttr(f"{self.fn.sym_name.data}__accum_finish")
        old = fin.body.blocks[0]
        block = Block(arg_types=[a.type for a in old.args])
        for a, b in zip(old.args, block.args):
            b.name_hint = a.name_hint
        fin.body.insert_block_before(block, old)
        fin.body.detach_block(old)
        old.erase(safe_erase=False)
        groups, partials = append_params(fin, [(IndexType(), GROUPS), (MemRefType(f32, [DYNAMIC_INDEX]), PARTIALS)])
        lid, slot = kernel.LocalIdOp(0), kernel.GroupIdOp(0)
        parts = kernel.LocalAllocOp(kernel.local_memref(f32, [F]))
        parts.result.name_hint = "slot_parts"
        c0, c1, c_F, c_S = _index(0), _index(1), _index(F), _index(S)
        zero = arith.ConstantOp(FloatAttr(0.0, f32))
        block.add_ops([parts, lid, slot, c0, c1, c_F, c_S, zero])
        per_group = Block(arg_types=[IndexType(), f32])
        g, acc = per_group.args
        base = arith.MuliOp(g, c_S.result)
        at = arith.AddiOp(base.result, slot.result)
        x = memref.LoadOp.get(partials, [at.result])
        total = arith.AddfOp(acc, x.res)
        per_group.add_ops([base, at, x, total, scf.YieldOp(total.result)])
        over_groups = scf.ForOp(lid.result, groups, c_F.result, [zero.result], Region(per_group))
        block.add_ops([over_groups, memref.StoreOp.get(over_groups.results[0], parts.result, [lid.result]),
                       kernel.BarrierOp()])
        half = F // 2
        while half:
            c_h = _index(half)
            low = arith.CmpiOp(lid.result, c_h.result, "ult")
            fold = Block()
            other = arith.AddiOp(lid.result, c_h.result)
            a = memref.LoadOp.get(parts.result, [lid.result])
            b = memref.LoadOp.get(parts.result, [other.result])
            both = arith.AddfOp(a.res, b.res)
            fold.add_ops([other, a, b, both, memref.StoreOp.get(both.result, parts.result, [lid.result]), scf.YieldOp()])
            block.add_ops([c_h, low, scf.IfOp(low.result, [], Region(fold)), kernel.BarrierOp()])
            half //= 2
        first = arith.CmpiOp(lid.result, c0.result, "eq")
        then = Block()
        sum_ = memref.LoadOp.get(parts.result, [c0.result])
        then.add_op(sum_)
        mapping: dict[SSAValue, SSAValue] = dict(zip(self.entry.args[: self.n_params], block.args))
        for run in self.runs:  # group k issues slot k's add: a loop over each run's slots
            if run.first < S:
                self._emit_run_loop(then, run, slot.result, sum_.res, mapping)
        then.add_op(scf.YieldOp())
        block.add_ops([first, scf.IfOp(first.result, [], Region(then)), func.ReturnOp()])
        fin.attributes[ACCUMULATED] = UnitAttr()
        fin.attributes[FINISH_OF] = StringAttr(self.fn.sym_name.data)
        fin.attributes[kernel.REQD_WORK_GROUP_SIZE] = ArrayAttr([IntegerAttr(n, 64) for n in (F, 1, 1)])
        for attr in ("diffc.shader", "diffc.numthreads"):
            fin.attributes.pop(attr, None)
        return fin


@dataclass(frozen=True)
class _Run:
    """Slots first .. first + count - 1: adds of one kind into one buffer from one source add,
    at addresses first's + (k - first) x stride (stride None: one slot, any address)."""

    first: int
    count: int
    stride: int | None


def _linear(v: SSAValue) -> tuple[frozenset[tuple[SSAValue, int]], int]:
    """An index as (terms, constant): a sum of coefficient x value terms and a constant, through
    index adds, subtracts and multiplications by constants; any other value is one term."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return frozenset(), op.value.value.data
    if isinstance(v.type, IndexType) and isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp):
        (ta, ca), (tb, cb) = _linear(op.lhs), _linear(op.rhs)
        if isinstance(op, arith.MuliOp):
            if not ta:
                return frozenset((t, c * ca) for t, c in tb), ca * cb
            if not tb:
                return frozenset((t, c * cb) for t, c in ta), ca * cb
        else:
            sign = 1 if isinstance(op, arith.AddiOp) else -1
            terms = dict(ta)
            for t, c in tb:
                terms[t] = terms.get(t, 0) + sign * c
            return frozenset((t, c) for t, c in terms.items() if c), ca + sign * cb
    return frozenset({(v, 1)}), 0


def _runs(targets: list[tuple], locations: list) -> list[_Run]:
    """The slots as runs of evenly spaced addresses (an unrolled loop's adds), so that the
    group's adds and the finish kernel's are one guarded add per run, not one per slot."""
    runs: list[_Run] = []
    k = 0
    while k < len(targets):
        cls, kind, value_type, mem, indices = targets[k]
        n, stride = 1, None
        if len(indices) == 1:
            terms, c = _linear(indices[0])
            while k + n < len(targets):
                cls2, kind2, type2, mem2, indices2 = targets[k + n]
                if (cls2, kind2, type2, mem2, len(indices2), locations[k + n]) != (
                        cls, kind, value_type, mem, 1, locations[k]):
                    break
                terms2, c2 = _linear(indices2[0])
                if terms2 != terms or (stride is not None and c2 - c != n * stride):
                    break
                stride = c2 - c if stride is None else stride
                n += 1
        runs.append(_Run(k, n, stride))
        k += n
    return runs


def _minus(v: SSAValue, n: int, block: Block) -> SSAValue:
    """v - n, its ops at the end of `block` (none for n = 0)."""
    if not n:
        return v
    c = _index(abs(n))
    out = arith.SubiOp(v, c.result) if n > 0 else arith.AddiOp(v, c.result)
    block.add_ops([c, out])
    return out.result


def _unrolled_loop(lb: SSAValue, ub: SSAValue, one: SSAValue, body: Callable[[SSAValue], list[Operation]]) -> scf.ForOp:
    """for k in [lb, ub) step `one` { body(k) }, marked for the device compiler to unroll."""
    block = Block(arg_types=[IndexType()])
    block.add_ops([*body(block.args[0]), scf.YieldOp()])
    loop = scf.ForOp(lb, ub, one, [], Region(block))
    loop.attributes[kernel.UNROLL] = UnitAttr()
    return loop
