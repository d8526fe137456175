"""bounds-check: every access to a host buffer checks its index, so no launch reads or writes
outside a buffer; a violation is recorded for the host to report (diffc/runtime/bounds.py).

Runs on kernel-form IR (after lower-entry-points, and after reduce-atomics, whose own atomics it
then guards too). The host's buffers are the dynamic-size global memrefs (`memref<?xE>`) that
kernels take and pass down to functions; static memrefs (diff-rev's tapes, local memory) are
made by the compiler with their indices in bounds, and are left alone.

* Every function with such memref parameters gets, appended to its parameters, one `index`
  length per such parameter (its number of elements, `diffc.name = "diffc_len_<param>"`) and
  one status buffer `memref<?xi32>` (`diffc.name = "diffc_bounds"`); calls pass the caller's.
* Each `memref.load`, `memref.store`, `kernel.atomic_add`, `kernel.atomic_rmw` on such a memref
  is a site k: it runs under `if (index <u length)` (an unsigned compare, so a negative index
  fails too); otherwise a load or an atomic gives 0, a store is dropped, and the site records
  into the status buffer with atomic maxes: [3k] = 1 (2 once a negative index was seen),
  [3k+1] = the largest index (clamped to int range), [3k+2] = the length.
* The module attribute `diffc.bounds_sites` lists the sites in order, one string
  "function|buffer|what|file:line:col" each ("what": load, store or atomic).
* Proofs at launch: an access of a compute entry kernel whose index is `scale x global id d +
  extra` (constants scale >= 0, extra <= hi: sums and constant multiples of the global id,
  constants and counters of constant-bound scf.for loops, each >= 0; through integer casts),
  plus the offset parameter of the same pointer, is in bounds whenever, with n the global size
  along d, `offset + scale x (n - 1) + hi < length` (and `scale x (n - 1) + extra` fits in an i32, where it may have been
  computed); where an enclosing `if` runs it only for `global id d < count` (count: a scalar
  parameter; Slang's `if (tid >= count) return;` included), n = min(size, count). For a
  kernel with such accesses the pass adds `@<kernel>__inbounds`: the same kernel, with the same
  parameters, whose such accesses run unguarded. `diffc.bounds_proofs` lists them, one
  "kernel|variant|buffer|offset parameter or ''|d|count parameter or ''|scale|extra" string each; the runtime launches the variant
  when every proof of the kernel holds for the launch (runtime/dispatch.py): those accesses then
  cost nothing.

The cost is a compare and a branch per access and one argument per buffer; calls over tensors
(runtime/kernels.py) do not run this pass: their indices are in bounds by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    i1,
    i32,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from diffc.dialects import kernel
from diffc.passes.status_report import where

SITES = "diffc.bounds_sites"
PROOFS = "diffc.bounds_proofs"
INBOUNDS_SUFFIX = "__inbounds"
LEN_PREFIX = "diffc_len_"
STATUS_NAME = "diffc_bounds"
NAME = "diffc.name"
I32_MAX = 2**31 - 1
_ACCESS = (memref.LoadOp, memref.StoreOp, kernel.AtomicAddOp, kernel.AtomicRMWOp)


def _host_buffer(t) -> bool:
    return isinstance(t, MemRefType) and kernel.memory_space(t) is None and any(d < 0 for d in t.get_shape())


def _hint(name: str) -> str | None:
    """The name as an SSA name hint, where one can hold it (not with a `_<digits>` ending)."""
    import re

    return None if re.search(r"_\d+$", name) else name


def _param_name(fn: func.FuncOp, i: int) -> str:
    from diffc.passes.lower_entry_points import param_names

    return param_names(fn)[i]


@dataclass(frozen=True)
class BoundsCheckPass(ModulePass):
    name = "bounds-check"

    prove: bool = True  # add the __inbounds variants (launch-time proofs)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # the variants that launches proven in bounds run (before any parameter is added)
        proven: dict[str, list[Operation]] = {}  # variant -> its accesses left unguarded
        proofs: list[StringAttr] = []
        for f in [f for f in op.ops if self.prove and isinstance(f, func.FuncOp) and _compute_kernel(f)]:
            facts = _thread_indexed(f)
            if not facts:
                continue
            variant = f.clone()
            variant.sym_name = StringAttr(f.sym_name.data + INBOUNDS_SUFFIX)
            op.body.block.insert_op_after(variant, f)
            mine = list(f.walk())
            twins = dict(zip(mine, variant.walk()))
            proven[variant.sym_name.data] = [twins[a] for a in facts]
            largest: dict[tuple, int] = {}  # one proof per (buffer, offset, d, count, scale): the largest extra
            for buffer, offset, dim, count, scale, extra in facts.values():
                key = (buffer, offset, dim, count, scale)
                largest[key] = max(extra, largest.get(key, extra))
            for (buffer, offset, dim, count, scale), extra in sorted(largest.items()):
                proofs.append(StringAttr(f"{f.sym_name.data}|{variant.sym_name.data}|{buffer}|{offset}|{dim}|{count}|"
                                         f"{scale}|{extra}"))
        if proofs:
            op.attributes[PROOFS] = ArrayAttr(proofs)
        funcs = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        guarded = {f.sym_name.data: [i for i, t in enumerate(f.function_type.inputs.data) if _host_buffer(t)]
                   for f in funcs}
        guarded = {n: idx for n, idx in guarded.items() if idx}
        lengths: dict[SSAValue, SSAValue] = {}
        status: dict[str, SSAValue] = {}
        for f in funcs:
            name = f.sym_name.data
            if name not in guarded:
                continue
            names = [_param_name(f, i) for i in range(len(f.function_type.inputs.data))]
            block = f.body.block
            new_attrs = []
            for i in guarded[name]:
                arg = block.insert_arg(IndexType(), len(block.args))
                arg.name_hint = _hint(LEN_PREFIX + names[i])
                lengths[block.args[i]] = arg
                new_attrs.append(DictionaryAttr({NAME: StringAttr(LEN_PREFIX + names[i])}))
            st = block.insert_arg(MemRefType(i32, [DYNAMIC_INDEX]), len(block.args))
            st.name_hint = STATUS_NAME
            status[name] = st
            new_attrs.append(DictionaryAttr({NAME: StringAttr(STATUS_NAME)}))
            n_old = len(f.function_type.inputs.data)
            old = f.arg_attrs.data if f.arg_attrs is not None else [DictionaryAttr({}) for _ in range(n_old)]
            f.arg_attrs = ArrayAttr([*old, *new_attrs])
            f.function_type = FunctionType.from_lists([a.type for a in block.args], f.function_type.outputs.data)
        # calls pass the lengths of their memref arguments and the caller's status buffer
        for f in funcs:
            for call in [o for o in f.walk() if isinstance(o, func.CallOp)]:
                callee = call.callee.root_reference.data
                if callee not in guarded:
                    continue
                extra: list[SSAValue] = []
                for i in guarded[callee]:
                    extra.append(lengths.get(call.arguments[i]) or _const(call, I32_MAX))
                st = status.get(f.sym_name.data)
                if st is None:
                    raise ValueError(f"bounds-check: @{f.sym_name.data} passes a buffer it was not given")
                new = func.CallOp(callee, [*call.arguments, *extra, st], [r.type for r in call.results])
                new.attributes.update(call.attributes)
                Rewriter.replace_op(call, new)
        sites: list[StringAttr] = []
        for f in funcs:
            if f.sym_name.data not in status:
                continue
            names = {f.body.block.args[i]: _param_name(f, i) for i in guarded[f.sym_name.data]}
            skip = set(proven.get(f.sym_name.data, ()))  # (a variant's: its proven accesses)
            for access in [o for o in f.walk() if isinstance(o, _ACCESS)]:
                buf = access.memref
                if buf not in lengths or access in skip:
                    continue
                what = {memref.LoadOp: "load", memref.StoreOp: "store"}.get(type(access), "atomic")
                shown = f.sym_name.data.removesuffix(INBOUNDS_SUFFIX) if skip else f.sym_name.data
                sites.append(StringAttr(f"{shown}|{names[buf]}|{what}|{where(access)}"))
                _guard(access, lengths[buf], status[f.sym_name.data], len(sites) - 1)
        if sites:
            op.attributes[SITES] = ArrayAttr(sites)


def _compute_kernel(f: func.FuncOp) -> bool:
    """A compute entry point's own kernel (not accumulate-gradients' kernels made from it)."""
    from diffc.passes.lower_entry_points import is_compute_entry

    return bool(f.body.blocks) and kernel.is_kernel(f) and is_compute_entry(f) and not any(
        a.startswith("diffc.accumulate") or a == "diffc.accumulated" or a.startswith("diffc.finish")
        for a in f.attributes)


_CASTS = (arith.IndexCastOp, arith.ExtUIOp, arith.ExtSIOp)


def _global_id_dim(v: SSAValue) -> int | None:
    """d when `v` is kernel.global_id d through integer casts."""
    owner = v.owner
    while isinstance(owner, _CASTS):
        owner = owner.input.owner
    if isinstance(owner, kernel.GlobalIdOp):
        return owner.dim.value.data
    return None


_BELOW = {"ult": False, "slt": False, "uge": True, "sge": True}  # gid <pred> count: below unless negated
_ABOVE = {"ugt": False, "sgt": False, "ule": True, "sle": True}  # count <pred> gid


def _condition(v: SSAValue) -> tuple[arith.CmpiOp, bool] | None:
    """(compare, negated) when i1 `v` is a compare, its negation (xori with true), or an scf.if
    that yields true / false by a compare (how `if (tid >= count) return;` arrives here)."""
    negated = False
    while True:
        owner = v.owner
        if isinstance(owner, arith.CmpiOp):
            return owner, negated
        if isinstance(owner, arith.XOrIOp) and _is_true(owner.rhs):
            v, negated = owner.lhs, not negated
        elif isinstance(owner, scf.IfOp) and len(owner.results) == 1:
            ends = [_yielded(r) for r in owner.regions]
            if ends == [True, False]:
                v = owner.cond
            elif ends == [False, True]:
                v, negated = owner.cond, not negated
            else:
                return None
        else:
            return None


def _is_true(v: SSAValue) -> bool:
    return isinstance(v.owner, arith.ConstantOp) and isinstance(v.owner.value, IntegerAttr) and \
        v.type == i1 and v.owner.value.value.data != 0


def _yielded(region) -> bool | None:
    """The constant an scf.if region yields (a single i1), else None."""
    if len(region.blocks) != 1 or not isinstance(region.block.last_op, scf.YieldOp):
        return None
    (v,) = region.block.last_op.operands or (None,)
    if v is None or not isinstance(v.owner, arith.ConstantOp) or not isinstance(v.owner.value, IntegerAttr):
        return None
    return v.owner.value.value.data != 0


def _scalar_param(v: SSAValue, names: dict) -> str | None:
    while isinstance(v.owner, _CASTS):
        v = v.owner.input
    return names.get(v) if isinstance(v.type, (IntegerType, IndexType)) else None


def _guard_count(access: Operation, dim: int, names: dict) -> str | None:
    """The kernel parameter `count` when `access` only runs where global id `dim` < count (an
    enclosing scf.if on that compare: `if (tid < count)`, or `if (tid >= count) return;`)."""
    child, parent = access, access.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, scf.IfOp):
            in_then = child.parent_region() is parent.true_region
            cond = _condition(parent.cond)
            if cond is not None:
                cmp, negated = cond
                negated = negated != (not in_then)
                pred = arith.CMPI_COMPARISON_OPERATIONS[cmp.predicate.value.data]
                if pred in _BELOW and _BELOW[pred] == negated and _global_id_dim(cmp.lhs) == dim:
                    count = _scalar_param(cmp.rhs, names)
                elif pred in _ABOVE and _ABOVE[pred] == negated and _global_id_dim(cmp.rhs) == dim:
                    count = _scalar_param(cmp.lhs, names)
                else:
                    count = None
                if count is not None:
                    return count
        child, parent = parent, parent.parent_op()
    return None


def _constant(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _affine(v: SSAValue, off: SSAValue | None) -> tuple[int | None, int, int, int, int] | None:
    """(d, scale, lo, hi, k) when `v` is k x off + scale x (global id d) + extra with
    lo <= extra <= hi: sums and constant multiples (through integer casts) of the pointer's
    offset parameter `off`, the global id, constants and counters of scf.for loops with constant
    bounds (buf[3 * tid.x + 2], w[off + 4 * k + j]). d is None without a global id. Every term
    is >= 0, else None."""
    while isinstance(v.owner, _CASTS):
        v = v.owner.input
    owner = v.owner
    if off is not None and v is off:
        return None, 0, 0, 0, 1
    if isinstance(owner, kernel.GlobalIdOp):
        return owner.dim.value.data, 1, 0, 0, 0
    c = _constant(v)
    if c is not None:
        return (None, 0, c, c, 0) if c >= 0 else None
    loop = owner.parent_op() if isinstance(owner, Block) else None
    if isinstance(loop, scf.ForOp) and v is loop.body.block.args[0]:
        lb, ub, step = _constant(loop.lb), _constant(loop.ub), _constant(loop.step)
        if None in (lb, ub, step) or lb < 0 or step <= 0 or ub <= lb:
            return None
        return None, 0, lb, ub - 1, 0
    if isinstance(owner, arith.MuliOp):
        for x, k in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
            c, inner = _constant(k), _affine(x, off)
            if c is not None and c >= 0 and inner is not None:
                d, scale, lo, hi, n_off = inner
                return d, scale * c, lo * c, hi * c, n_off * c
        return None
    if isinstance(owner, arith.AddiOp):
        a, b = _affine(owner.lhs, off), _affine(owner.rhs, off)
        if a is None or b is None or (a[0] is not None and b[0] is not None):
            return None
        return (a[0] if a[0] is not None else b[0]), a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4]
    return None


def _thread_indexed(f: func.FuncOp) -> dict[Operation, tuple[str, str, int, str, int, int]]:
    """The accesses of kernel `f` to its host-buffer parameters at `scale x global id d + extra`,
    or that plus the same pointer's offset parameter, each with (buffer parameter, offset
    parameter or "", d, the count parameter that guards it or "", scale, extra)."""
    block = f.body.block
    names = {a: _param_name(f, i) for i, a in enumerate(block.args)}
    facts: dict[Operation, tuple[str, str, int, str, int, int]] = {}
    for access in f.walk():
        if not isinstance(access, _ACCESS) or access.memref not in names or not _host_buffer(access.memref.type):
            continue
        buffer = names[access.memref]
        (idx,) = access.indices
        off = next((a for a, n in names.items() if n == buffer + "_off"), None)
        form = _affine(idx, off)
        if form is not None and form[4] <= 1:  # the offset once, or not at all
            dim, scale, _, extra, n_off = form
            offset = buffer + "_off" if n_off else ""
            dim = 0 if dim is None else dim
            count = _guard_count(access, dim, names) if scale else None
            facts[access] = (buffer, offset, dim, count or "", scale, extra)
    return facts


def _const(at: Operation, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    Rewriter.insert_op(c, InsertPoint.before(at))
    return c.result


def _guard(access: Operation, length: SSAValue, status: SSAValue, site: int) -> None:
    """Moves `access` under `if (index <u length)`; the else branch records site `site`."""
    (idx,) = access.indices
    ok = arith.CmpiOp(idx, length, "ult")
    Rewriter.insert_op(ok, InsertPoint.before(access))
    then_block, else_block = Block(), Block()
    # an atomic whose old value nothing reads keeps it unread (the backend's warp `red` adds)
    used = any(r.uses for r in access.results)
    results = [r.type for r in access.results] if used else []
    access.detach()
    then_block.add_op(access)
    then_block.add_op(scf.YieldOp(*(access.results if used else ())))
    _record(else_block, idx, length, status, site)
    zeros = [_zero_of(t, else_block) for t in results]
    else_block.add_op(scf.YieldOp(*zeros))
    guard = scf.IfOp(ok, results, [then_block], [else_block])
    guard.location = access.location
    Rewriter.insert_op(guard, InsertPoint.after(ok))
    # uses of the access's results (outside the if) now use the if's
    for old, new in zip(access.results, guard.results):
        for use in list(old.uses):
            if use.operation is not then_block.last_op:
                use.operation.operands[use.index] = new


def _zero_of(t, block: Block) -> SSAValue:
    """A zero of type t (a scalar, or a vector of them: a buffer of float3) appended to block."""
    from xdsl.dialects import vector
    from xdsl.dialects.builtin import AnyFloat, FloatAttr, VectorType

    el = t.element_type if isinstance(t, VectorType) else t
    c = arith.ConstantOp(FloatAttr(0.0, el) if isinstance(el, AnyFloat) else IntegerAttr(0, el))
    block.add_op(c)
    if not isinstance(t, VectorType):
        return c.result
    b = vector.BroadcastOp(c.result, t)
    block.add_op(b)
    return b.results[0]


def _record(block: Block, idx: SSAValue, length: SSAValue, status: SSAValue, site: int) -> None:
    def const(v: int, t=IndexType()) -> SSAValue:
        c = arith.ConstantOp(IntegerAttr(v, t))
        block.add_op(c)
        return c.result

    def as_i32(v: SSAValue) -> SSAValue:
        # signed view: negative stays negative (then -1), above int range clamps
        big = const(I32_MAX)
        neg = arith.CmpiOp(v, const(0), "slt")
        capped = arith.MinSIOp(v, big)
        block.add_ops([neg, capped])
        cast = arith.IndexCastOp(capped.result, i32)
        minus1 = arith.ConstantOp(IntegerAttr(-1, i32))
        sel = arith.SelectOp(neg.result, minus1.result, cast.result)
        block.add_ops([cast, minus1, sel])
        return sel.result

    def put(slot: int, value: SSAValue) -> None:
        rmw = kernel.AtomicRMWOp("maxs", value, status, [const(3 * site + slot)])
        block.add_op(rmw)

    negative = arith.CmpiOp(idx, const(0), "slt")
    flag = arith.SelectOp(negative.result, const(2, i32), const(1, i32))  # 2: a negative index
    block.add_ops([negative, flag])
    put(0, flag.result)
    put(1, as_i32(idx))
    put(2, as_i32(length))
