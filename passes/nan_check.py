"""nan-check: the sanitizer mode's pass. Derivative code reports the first op that made a NaN or
an infinity out of finite operands, with its source location, through a status global
(diffc/kernel_support/status_report.py; the host side is diffc/runtime/status.py, NonFiniteError).

Runs after the differentiation pipeline (before lower-entry-points, which threads the status
global into kernels like any buffer). `functions` names the functions to instrument, comma-
separated (the runtime passes the derivative functions: those the pipeline generated and the
custom derivatives); empty means every function with a body.

* A site is an op of such a function with a float (or float vector) result that computes a new
  value: arithmetic, math, conversions, calls of functions left uninstrumented, and loads from
  host buffers (a NaN read from memory is reported at the read). Ops that only move values
  (constants, select, vector lanes, loads of the compiler's own tapes, atomics, region results,
  calls of instrumented functions, whose own ops are sites) are not sites.
* After each site k: `bad = !(|r| <= FLT_MAX)` (true for NaN and +-inf, one compare per result
  lane); under `if bad`, the site records, when every float operand is finite (so the op is where
  the value became non-finite, not a later op it flowed through), `I32_MAX - (2k + inf)` with an
  atomic max (inf = 0 for NaN, 1 for an infinity): the host sees the smallest such code, the
  earliest site in program order, NaN before infinity at one site.
* One status global (`diffc.status = "nan"`) per module; the sites are listed, in order, in the
  module attribute `diffc.nan_sites`: "function|op|file:line:col" each. A module that already has
  that attribute is left alone (the pass instruments once).

Cost when nothing goes wrong: an absolute value, a compare and a branch per site lane.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, math, memref, scf, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    VectorType,
    i1,
    i32,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from diffc.dialects import kernel
from diffc.kernel_support.status_report import I32_MAX, enclosing_function, new_status_global, record_max, where

SITES = "diffc.nan_sites"
KIND = "nan"

# ops that move a value without computing a new one: a non-finite result came from an operand
_MOVES = (
    arith.ConstantOp, arith.SelectOp, arith.BitcastOp,
    vector.ExtractOp, vector.InsertOp, vector.BroadcastOp,
    memref.AtomicRMWOp, kernel.AtomicRMWOp, kernel.AtomicAddOp,
    scf.IfOp, scf.ForOp, scf.WhileOp, scf.IndexSwitchOp,
)


def _float_lanes(t) -> tuple[AnyFloat, int] | None:
    """(element type, lanes) of a float or float-vector type, else None."""
    if isinstance(t, (Float16Type, Float32Type, Float64Type)):
        return t, 0
    if isinstance(t, VectorType) and isinstance(t.element_type, (Float16Type, Float32Type, Float64Type)):
        return t.element_type, t.get_shape()[0]
    return None


def _largest(t: AnyFloat) -> float:
    return float({16: np.finfo(np.float16), 32: np.finfo(np.float32), 64: np.finfo(np.float64)}[t.bitwidth].max)


class _Emit:
    """Appends ops to one block."""

    def __init__(self, block: Block):
        self.block = block

    def __call__(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def lanes(self, v: SSAValue) -> list[SSAValue]:
        el, n = _float_lanes(v.type)
        return [v] if n == 0 else [self(vector.ExtractOp(v, [k], el)) for k in range(n)]

    def any_of(self, flags: list[SSAValue]) -> SSAValue:
        out = flags[0]
        for f in flags[1:]:
            out = self(arith.OrIOp(out, f))
        return out

    def non_finite(self, v: SSAValue) -> SSAValue:
        """True when some lane of `v` is a NaN or an infinity: !(|x| <= largest finite)."""
        flags = []
        for lane in self.lanes(v):
            big = self(arith.ConstantOp(FloatAttr(_largest(lane.type), lane.type)))
            flags.append(self(arith.CmpfOp(self(math.AbsFOp(lane)), big, "ugt")))
        return self.any_of(flags)

    def is_nan(self, v: SSAValue) -> SSAValue:
        return self.any_of([self(arith.CmpfOp(lane, lane, "uno")) for lane in self.lanes(v)])

    def i32(self, value: int) -> SSAValue:
        return self(arith.ConstantOp(IntegerAttr(value, i32)))


def _is_site(op: Operation, instrumented: set[str]) -> bool:
    if isinstance(op, _MOVES) or not any(_float_lanes(r.type) for r in op.results):
        return False
    if isinstance(op, func.CallOp):
        return op.callee.root_reference.data not in instrumented
    if isinstance(op, memref.LoadOp):  # the compiler's tapes and local memory hold checked values
        t = op.memref.type
        return isinstance(t, MemRefType) and kernel.memory_space(t) is None and any(d < 0 for d in t.get_shape())
    return True


@dataclass(frozen=True)
class NanCheckPass(ModulePass):
    """Derivative code records the first op that made a NaN or an infinity out of finite operands (the sanitizer mode)."""

    name = "nan-check"

    functions: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if SITES in op.attributes:
            return
        funcs = [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]
        wanted = {n for n in self.functions.split(",") if n}
        if wanted:
            funcs = [f for f in funcs if f.sym_name.data in wanted]
        names = {f.sym_name.data for f in funcs}
        sites = [o for f in funcs for o in f.walk() if _is_site(o, names)]
        if not sites:
            return
        status = new_status_global(op, KIND, op)
        for k, site in enumerate(sites):
            _instrument(site, k, status)
        op.attributes[SITES] = ArrayAttr([StringAttr(f"{enclosing_function(s)}|{s.name}|{where(s)}") for s in sites])


def _instrument(site: Operation, k: int, status: str) -> None:
    """After `site`: if a result is non-finite and every float operand finite, record site k."""
    results = [r for r in site.results if _float_lanes(r.type)]
    operands = [v for v in site.operands if _float_lanes(v.type)]
    check = _Emit(Block())
    bad = check.any_of([check.non_finite(r) for r in results])
    body = _Emit(Block())
    true = body(arith.ConstantOp(IntegerAttr(1, i1)))
    finite = true
    for v in operands:
        ok = body(arith.XOrIOp(body.non_finite(v), true))
        finite = ok if finite is true else body(arith.AndIOp(finite, ok))
    origin = _Emit(Block())  # this op made the value non-finite: record it
    nan = origin.any_of([origin.is_nan(r) for r in results])
    code = origin(arith.SelectOp(nan, origin.i32(I32_MAX - 2 * k), origin.i32(I32_MAX - 2 * k - 1)))
    record_max(origin.block, status, code)
    origin.block.add_op(scf.YieldOp())
    body.block.add_ops([scf.IfOp(finite, [], [origin.block]), scf.YieldOp()])
    guard = scf.IfOp(bad, [], [body.block])
    ops = [*check.block.ops, guard]
    for o in ops:
        if o.parent is not None:
            o.detach()
        for inner in o.walk():
            inner.location = site.location
    Rewriter.insert_op(ops, InsertPoint.after(site))
