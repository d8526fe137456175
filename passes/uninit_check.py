"""uninit-check: the sanitizer mode's check that an entry point's kernel reads no element of a
buffer that nothing wrote (a `Tensor.empty`, a `with_grads(zero=False)` gradient). The host
side is diffc/runtime/uninit.py.

Runs on kernel-form IR, after bounds-check (so what it adds to an access sits under the same
bounds guard as the access: the shadow has the buffer's length). The buffers are the host's
dynamic-size global memrefs (as bounds-check's), less the compiler's own (`diffc_` names).

* Every function with such memref parameters gets, appended, per buffer parameter <b>: a shadow
  `memref<?xi32>` (`diffc.name = "diffc_written_<b>"`, one int per element: nonzero once
  written) and `i32` (`diffc_track_<b>`): 0 when the host does not track the buffer (it knows
  every element was written), else the kernel argument's number (1-based) that the report
  names; then one status buffer `memref<?xi32>` (`diffc_uninit`). Calls pass the caller's; a
  buffer that is not a parameter of the caller is passed untracked.
* A store to a tracked buffer then sets the element's shadow; a load checks it first; an
  atomic read-modify-write (it reads the old value) checks, then sets. A check that finds 0
  records site k into the status buffer with atomic maxes: [3k] = 1, [3k+1] = the index,
  [3k+2] = the argument's number. Work-items see their own earlier stores, so a kernel that
  writes an element before it reads it reports nothing.
* The module attribute `diffc.uninit_sites` lists the sites in order, one string
  "function|buffer|what|file:line:col" each ("what": load or atomic).

Cost (the sanitizer mode only): an int load or store and a branch per access of a tracked buffer.
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
from diffc.dialects.abi import AbiRoleAttr
from diffc.kernel_support.bounds_proofs import BODY_OF
from diffc.kernel_support.kernel_params import append_params, host_buffer, param_name
from diffc.kernel_support.status_report import record_site, where

SITES = "diffc.uninit_sites"
WRITTEN_PREFIX = "diffc_written_"
TRACK_PREFIX = "diffc_track_"
STATUS_NAME = "diffc_uninit"
_ACCESS = (memref.LoadOp, memref.StoreOp, kernel.AtomicAddOp, kernel.AtomicRMWOp)


def _tracked(f: func.FuncOp) -> list[int]:
    names = [param_name(f, i) for i in range(len(f.function_type.inputs.data))]
    return [i for i, t in enumerate(f.function_type.inputs.data) if host_buffer(t) and not names[i].startswith("diffc_")]


@dataclass(frozen=True)
class UninitCheckPass(ModulePass):
    name = "uninit-check"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        tracked = {f.sym_name.data: _tracked(f) for f in funcs}
        tracked = {n: idx for n, idx in tracked.items() if idx}
        shadows: dict[SSAValue, tuple[SSAValue, SSAValue]] = {}  # buffer -> (shadow, track)
        status: dict[str, SSAValue] = {}
        for f in funcs:
            if f.sym_name.data not in tracked:
                continue
            mine = tracked[f.sym_name.data]
            params = []
            for i in mine:
                name = param_name(f, i)
                params += [(MemRefType(i32, [DYNAMIC_INDEX]), WRITTEN_PREFIX + name, AbiRoleAttr("shadow", name)),
                           (i32, TRACK_PREFIX + name, AbiRoleAttr("track", name))]
            added = append_params(f, [*params, (MemRefType(i32, [DYNAMIC_INDEX]), STATUS_NAME, AbiRoleAttr("status", "uninit"))])
            for k, i in enumerate(mine):
                shadows[f.body.block.args[i]] = (added[2 * k], added[2 * k + 1])
            status[f.sym_name.data] = added[-1]
        for f in funcs:
            for call in [o for o in f.walk() if isinstance(o, func.CallOp)]:
                callee = call.callee.root_reference.data
                if callee not in tracked:
                    continue
                st = status.get(f.sym_name.data)
                if st is None:
                    raise ValueError(f"uninit-check: @{f.sym_name.data} passes a buffer it was not given")
                extra: list[SSAValue] = []
                for i in tracked[callee]:
                    # a buffer the caller did not get as a parameter: untracked (any shadow will do)
                    extra += shadows.get(call.arguments[i]) or (st, _const(call, 0, i32))
                new = func.CallOp(callee, [*call.arguments, *extra, st], [r.type for r in call.results])
                new.attributes.update(call.attributes)
                Rewriter.replace_op(call, new)
        sites: list[StringAttr] = []
        for f in funcs:
            if f.sym_name.data not in status:
                continue
            names = {f.body.block.args[i]: param_name(f, i) for i in tracked[f.sym_name.data]}
            shown = _shown(f, {g.sym_name.data: g for g in funcs})
            for access in [o for o in f.walk() if isinstance(o, _ACCESS) and o.memref in shadows]:
                w, t = shadows[access.memref]
                if not isinstance(access, memref.StoreOp):
                    what = "load" if isinstance(access, memref.LoadOp) else "atomic"
                    sites.append(StringAttr(f"{shown}|{names[access.memref]}|{what}|{where(access)}"))
                    _check(access, w, t, status[f.sym_name.data], len(sites) - 1)
                if not isinstance(access, memref.LoadOp):
                    _mark(access, w, t)
        if sites:
            op.attributes[SITES] = ArrayAttr(sites)


def _shown(f: func.FuncOp, funcs: dict[str, func.FuncOp]) -> str:
    """The name a report gives `f`: the entry point for accumulate-gradients' kernels, the
    original for bounds-check's variants, and a kernel's for its shared body."""
    body_of = f.attributes.get(BODY_OF)
    if isinstance(body_of, StringAttr) and body_of.data in funcs:
        return _shown(funcs[body_of.data], funcs)
    for key in ("diffc.accumulate_of", "diffc.accumulate_finish_of"):
        of = f.attributes.get(key)
        if isinstance(of, StringAttr):
            return of.data
    return f.sym_name.data.removesuffix("__inbounds")


def _const(at: Operation, value: int, t=IndexType()) -> SSAValue:
    c = arith.ConstantOp(IntegerAttr(value, t))
    Rewriter.insert_op(c, InsertPoint.before(at))
    return c.result


def _when_tracked(at: InsertPoint, track: SSAValue, location) -> Block:
    """Inserts `if (track != 0) {}` at `at`; returns its (empty but for the yield) body."""
    zero = arith.ConstantOp(IntegerAttr(0, i32))
    on = arith.CmpiOp(track, zero.result, "ne")
    body = Block()
    guard = scf.IfOp(on.result, [], [body])
    guard.location = location
    Rewriter.insert_op([zero, on, guard], at)
    body.add_op(scf.YieldOp())
    return body


def _check(access: Operation, shadow: SSAValue, track: SSAValue, status: SSAValue, site: int) -> None:
    """Before `access`: where tracked and the element's shadow is 0, record site `site`."""
    (idx,) = access.indices
    body = _when_tracked(InsertPoint.before(access), track, access.location)
    yield_ = body.last_op
    seen = memref.LoadOp.get(shadow, [idx])
    zero = arith.ConstantOp(IntegerAttr(0, i32))
    unwritten = arith.CmpiOp(seen.res, zero.result, "eq")
    report = Block()
    as_index = arith.IndexCastOp(track, IndexType())
    report.add_op(as_index)
    record_site(report, idx, as_index.result, status, site)  # [3k+2]: the argument's number
    report.add_op(scf.YieldOp())
    for o in (seen, zero, unwritten, scf.IfOp(unwritten.result, [], [report])):
        body.insert_op_before(o, yield_)


def _mark(access: Operation, shadow: SSAValue, track: SSAValue) -> None:
    """After `access`: where tracked, the element's shadow is set."""
    (idx,) = access.indices
    body = _when_tracked(InsertPoint.after(access), track, access.location)
    one = arith.ConstantOp(IntegerAttr(1, i32))
    body.insert_op_before(one, body.last_op)
    body.insert_op_before(memref.StoreOp.get(one.result, shadow, [idx]), body.last_op)
