"""bounds-check: every access to a host buffer checks its index, so no launch reads or writes
outside a buffer; a violation is recorded for the host to report (diffc/runtime/bounds.py).

Runs on kernel-form IR (after lower-entry-points, and after reduce-atomics, whose own atomics it
then guards too). The host's buffers are the dynamic-size global memrefs (`memref<?xE>`) that
kernels take and pass down to functions; static memrefs (diff-rev's tapes, the compiler's own
local memory) are made by the compiler with their indices in bounds, and are left alone. A Slang
`groupshared` global's work-group memory (a named `kernel.local_alloc`, and the local memref
parameters it is passed down as) is indexed by the program, so its accesses are guarded too,
against its static size, and reported as site buffer "groupshared <name>".

* Every function with such memref parameters gets, appended to its parameters, one `index`
  length per such parameter (its number of elements, `diffc.name = "diffc_len_<param>"`) and
  one status buffer `memref<?xi32>` (`diffc.name = "diffc_bounds"`; also a function that only
  uses groupshared memory); calls pass the caller's. Such a memref of bytes read as another
  element type (`kernel.reinterpret`, a Slang `void*` or struct of mixed scalars) has the bytes'
  length divided by its element size, and its accesses are the bytes' sites.
* Each `memref.load`, `memref.store`, `kernel.atomic_add`, `kernel.atomic_rmw` on such a memref
  is a site k: it runs under `if (index <u length)` (an unsigned compare, so a negative index
  fails too); otherwise a load or an atomic gives 0, a store is dropped, and the site records
  into the status buffer with atomic maxes: [3k] = 1 (2 once a negative index was seen),
  [3k+1] = the largest index (clamped to int range), [3k+2] = the length.
* The module attribute `diffc.bounds_sites` lists the sites in order, one string
  "function|buffer|what|file:line:col" each ("what": load, store or atomic).
* Proofs at launch (diffc/kernel_support/bounds_proofs.py): an access of a kernel, or of a
  function it calls through its pointer parameters, whose index is `offset + scale x thread +
  extra` (thread: a global id, or the counter of a grid-stride loop below c x a parameter;
  extra <= hi from constants and constant-bound loop counters) is in bounds whenever, with n the
  thread's range (the global size, or c x that parameter's value; min(n, count) under
  `if (thread < count)`), `offset + scale x (n - 1) + hi < length`. For a kernel with such accesses the pass adds
  `@<kernel>__inbounds` (same parameters); the two call one shared body `@<kernel>__body` with
  a flag off and on, which the functions it reaches with proven accesses take too, and a proven
  access runs under `if (flag | index <u length)`. `diffc.bounds_proofs` lists the proofs, one
  "kernel|variant|buffer|offset parameter or ''|d or '<param>*<c>'|count parameter or ''|scale|extra"
  string each; the runtime launches the variant when every proof of the kernel holds for the
  launch (runtime/dispatch.py, runtime/accumulate.py): those accesses then cost nothing.

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
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    i32,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from diffc.dialects import kernel
from diffc.dialects.kernel import NULL_POINTER_ATTR
from diffc.dialects.abi import AbiRoleAttr
from diffc.kernel_support.bounds_proofs import OWN_LOCAL, Variants, add_variants
from diffc.kernel_support.kernel_params import NAME, append_params, host_buffer, param_name
from diffc.kernel_support.status_report import record_site, where

SITES = "diffc.bounds_sites"
PROOFS = "diffc.bounds_proofs"
LEN_PREFIX = "diffc_len_"
GROUPSHARED_PREFIX = "groupshared "  # a site's buffer name that is a groupshared global's
STATUS_NAME = "diffc_bounds"
I32_MAX = 2**31 - 1
_ACCESS = (memref.LoadOp, memref.StoreOp, kernel.AtomicAddOp, kernel.AtomicRMWOp)


@dataclass(frozen=True)
class BoundsCheckPass(ModulePass):
    name = "bounds-check"

    prove: bool = True  # add the __inbounds variants (launch-time proofs)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # the variants that launches proven in bounds run (before any parameter is added)
        variants = add_variants(op) if self.prove else Variants()
        if variants.proofs:
            op.attributes[PROOFS] = ArrayAttr([StringAttr(p) for p in variants.proofs])
        funcs = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        with_null = {f.sym_name.data for f in funcs if any(_is_null(o) for o in f.walk())}
        guarded = {f.sym_name.data: [i for i, t in enumerate(f.function_type.inputs.data)
                                     if host_buffer(t) or _shared_pointer(t)] for f in funcs}
        guarded = {n: idx for n, idx in guarded.items() if idx or n in with_null}
        _callers_of(guarded, funcs, with_null)
        shared = {f.sym_name.data: _groupshared(f) for f in funcs}  # (memref, its name) of each
        lengths: dict[SSAValue, SSAValue] = {}
        status: dict[str, SSAValue] = {}
        for f in funcs:
            name = f.sym_name.data
            if name not in guarded and not shared[name]:
                continue
            added = append_params(f, [*((IndexType(), LEN_PREFIX + param_name(f, i), AbiRoleAttr("length", param_name(f, i)))
                                        for i in guarded.get(name, ())),
                                      (MemRefType(i32, [DYNAMIC_INDEX]), STATUS_NAME, AbiRoleAttr("status", "bounds"))])
            for i, arg in zip(guarded.get(name, ()), added):
                lengths[f.body.block.args[i]] = arg
            status[name] = added[-1]
        # a null pointer's buffer (frontend/optional.py) has length 0: every access through it is reported
        nulls: dict[SSAValue, str] = {}
        for f in funcs:
            for p in [o for o in f.walk() if _is_null(o)]:
                nulls[p.results[0]] = "nullptr"
                if f.sym_name.data in status:
                    lengths[p.results[0]] = _const_after(p, 0)
        # a group-shared pointer made here (memref.cast of the static work-group memref): its size
        shared_names: dict[SSAValue, str] = {}
        for f in funcs:
            local = shared[f.sym_name.data]
            for c in [o for o in f.walk() if isinstance(o, memref.CastOp) and _shared_pointer(o.dest.type)]:
                size = c.source.type.get_shape()  # type: ignore[union-attr]
                if f.sym_name.data in status and len(size) == 1 and size[0] >= 0:
                    lengths[c.dest] = _const_after(c, size[0])
                    shared_names[c.dest] = GROUPSHARED_PREFIX + local.get(c.source, "memory")
        # bytes read as another element type (kernel.reinterpret): the bytes' length over its size
        views: dict[SSAValue, SSAValue] = {}
        for f in funcs:
            for r in [o for o in f.walk() if isinstance(o, kernel.ReinterpretOp)]:
                if r.source in lengths:
                    size = _const_after(r, _element_bytes(r.result.type.element_type))  # type: ignore[union-attr]
                    n = arith.DivUIOp(lengths[r.source], size)
                    Rewriter.insert_op(n, InsertPoint.after(size.owner))  # type: ignore[arg-type]
                    lengths[r.result] = n.result
                    views[r.result] = r.source
        # calls pass the lengths of their memref arguments and the caller's status buffer
        for f in funcs:
            for call in [o for o in f.walk() if isinstance(o, func.CallOp)]:
                callee = call.callee.root_reference.data
                if callee not in status:
                    continue
                extra: list[SSAValue] = []
                for i in guarded.get(callee, ()):
                    arg = call.arguments[i]
                    extra.append(lengths.get(arg) or _const(call, 0 if arg in nulls else I32_MAX))
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
            names = {f.body.block.args[i]: param_name(f, i) for i in guarded.get(f.sym_name.data, ())} | nulls
            names |= {v: names[src] for v, src in views.items() if src in names} | shared_names
            local = shared[f.sym_name.data]
            shown = variants.shown.get(f.sym_name.data, f.sym_name.data)
            for access in [o for o in f.walk() if isinstance(o, _ACCESS)]:
                buf = access.memref
                if buf not in lengths and buf not in local:
                    continue
                what = {memref.LoadOp: "load", memref.StoreOp: "store"}.get(type(access), "atomic")
                if buf in local:  # its length is its static size
                    size = buf.type.get_shape()[0]  # type: ignore[union-attr]
                    sites.append(StringAttr(f"{shown}|{GROUPSHARED_PREFIX}{local[buf]}|{what}|{where(access)}"))
                    _guard(access, _const(access, size), status[f.sym_name.data], len(sites) - 1)
                    continue
                sites.append(StringAttr(f"{shown}|{names[buf]}|{what}|{where(access)}"))
                _guard(access, lengths[buf], status[f.sym_name.data], len(sites) - 1, variants.flags.get(access))
        if sites:
            op.attributes[SITES] = ArrayAttr(sites)


def _groupshared(f: func.FuncOp) -> dict[SSAValue, str]:
    """The work-group memrefs of a Slang `groupshared` global in f, with their names: the kernel's
    own (`kernel.local_alloc` named by lower-entry-points) and those it was passed (the compiler's
    own local memory, reduce-atomics' and accumulate-gradients', is allocated unnamed and indexed
    in bounds by construction)."""
    out: dict[SSAValue, str] = {}
    attrs = f.arg_attrs.data if f.arg_attrs is not None else ()
    for i, arg in enumerate(f.body.block.args):
        if i < len(attrs) and OWN_LOCAL in attrs[i].data:
            continue  # the compiler's own, passed to a kernel's shared body
        if kernel.memory_space(arg.type) == kernel.LOCAL_MEMORY_SPACE and not _shared_pointer(arg.type):
            out[arg] = param_name(f, i)
    for o in f.walk():
        if isinstance(o, kernel.LocalAllocOp) and isinstance(o.attributes.get(NAME), StringAttr):
            out[o.result] = o.attributes[NAME].data  # type: ignore[union-attr]
    return out


def _shared_pointer(t) -> bool:
    """A memref into work-group memory of dynamic size: a Slang group-shared pointer, guarded as
    a host buffer is, with the length its maker passes (the group-shared variable's size)."""
    return isinstance(t, MemRefType) and kernel.memory_space(t) == kernel.LOCAL_MEMORY_SPACE and \
        any(d < 0 for d in t.get_shape())


def _is_null(op: Operation) -> bool:
    return op.name == "ub.poison" and NULL_POINTER_ATTR in op.attributes


def _callers_of(guarded: dict[str, list[int]], funcs: list[func.FuncOp], with_null: set[str]) -> None:
    """A function that makes a null pointer is checked, buffers or not: it and the functions that
    call it (transitively) get the status buffer, so that its reads through the pointer report."""
    if not with_null:
        return
    changed = True
    while changed:
        changed = False
        for f in funcs:
            if f.sym_name.data not in guarded and any(
                    isinstance(o, func.CallOp) and o.callee.root_reference.data in guarded for o in f.walk()):
                guarded[f.sym_name.data] = []
                changed = True


def _element_bytes(t) -> int:
    from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IntegerType

    if isinstance(t, IntegerType):
        return max(1, t.width.data // 8)
    return {Float16Type: 2, Float32Type: 4, Float64Type: 8}[type(t)]


def _const_after(at: Operation, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    Rewriter.insert_op(c, InsertPoint.after(at))
    return c.result


def _const(at: Operation, value: int) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    Rewriter.insert_op(c, InsertPoint.before(at))
    return c.result


def _guard(access: Operation, length: SSAValue, status: SSAValue, site: int, flag: SSAValue | None = None) -> None:
    """Moves `access` under `if (index <u length)` (`if (flag || index <u length)` for an access
    proven where the flag is on); the else branch records site `site`."""
    (idx,) = access.indices
    ok = arith.CmpiOp(idx, length, "ult")
    Rewriter.insert_op(ok, InsertPoint.before(access))
    if flag is not None:
        ok = arith.OrIOp(flag, ok.result)
        Rewriter.insert_op(ok, InsertPoint.before(access))
    then_block, else_block = Block(), Block()
    # an atomic whose old value nothing reads keeps it unread (the backend's warp `red` adds)
    used = any(r.uses for r in access.results)
    results = [r.type for r in access.results] if used else []
    access.detach()
    then_block.add_op(access)
    then_block.add_op(scf.YieldOp(*(access.results if used else ())))
    record_site(else_block, idx, length, status, site)
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
