"""Status globals: how generated code tells the host that a promise the compiler relied on was
broken at run time (a `while` past its [MaxIters] in a backward pass; later also an access
outside a buffer), instead of a silently wrong (or NaN) number.

Each check site gets its own `memref.global "private" @diffc_status_<k> : memref<1xi32> =
dense<0>` that says what it checks in its attributes:

    diffc.status = "overrun"        the check's kind ("stopped": a while loop derivative code ended)
    diffc.where = "file:line:col"   the Slang source of the loop / access ("" when unknown)
    diffc.function = "f"            the function it sits in
    diffc.max_iters = N             (overrun) the loop's bound

The code records with `memref.atomic_rmw maxs` into element 0 (work-items race, and the largest
value is as good a report as any: for an overrun, the most iterations a work-item reached).
0 means nothing happened. lower-entry-points threads these globals into kernels like any other
buffer (a trailing parameter named `diffc_status_<k>`); the runtime (diffc/runtime/status.py)
zeroes them before a launch and reads them after. diffc.interp never reaches the recording
code of an overrun: it stops the loop itself (MaxItersError).

The checks that guard every access of a buffer (bounds-check, uninit-check) report through a
status buffer parameter instead, three ints per check site (`record_site`).
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    i32,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from diffc.dialects import kernel

STATUS_PREFIX = "diffc_status_"  # also diffc.runtime.status.STATUS_PREFIX
KIND = "diffc.status"
WHERE = "diffc.where"
FUNCTION = "diffc.function"
MAX_ITERS = "diffc.max_iters"
I32_MAX = 2**31 - 1


def where(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return ""


def enclosing_function(op: Operation) -> str:
    p = op.parent_op()
    while p is not None and not isinstance(p, func.FuncOp):
        p = p.parent_op()
    return p.sym_name.data if isinstance(p, func.FuncOp) else ""


def new_status_global(anchor: Operation, kind: str, about: Operation, **extra) -> str:
    """Declares a fresh status global in `anchor`'s module; returns its name."""
    module = anchor
    while not isinstance(module, ModuleOp):
        module = module.parent_op()
        assert module is not None, "an op outside a module"
    taken = {op.sym_name.data for op in module.ops if hasattr(op, "sym_name")}
    k = 0
    while f"{STATUS_PREFIX}{k}" in taken:
        k += 1
    name = f"{STATUS_PREFIX}{k}"
    t = MemRefType(i32, [1])
    g = memref.GlobalOp.get(StringAttr(name), t, DenseIntOrFPElementsAttr.from_list(t, [0]))
    g.attributes[KIND] = StringAttr(kind)
    g.attributes[WHERE] = StringAttr(where(about))
    g.attributes[FUNCTION] = StringAttr(enclosing_function(about))
    for key, value in extra.items():
        g.attributes[f"diffc.{key}"] = IntegerAttr(value, i64) if isinstance(value, int) else StringAttr(str(value))
    module.body.block.add_op(g)
    return name


def record_max(block: Block, name: str, value: SSAValue) -> None:
    """Appends `status[0] = max(status[0], value)` (value an i32) to `block`."""
    buf = memref.GetGlobalOp(name, MemRefType(i32, [1]))
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    rmw = memref.AtomicRMWOp.build(operands=[value, buf.results[0], [zero.results[0]]], result_types=[i32],
                                   properties={"kind": IntegerAttr(4, 64)})  # maxs
    block.add_ops([buf, zero, rmw])


def report_overrun(loop: Operation, count: SSAValue, overran: SSAValue, bound: int, block: Block,
                   stopped: bool = False) -> None:
    """Appends to `block`: if `overran`, record `count` (an index: the iterations the loop ran)
    in a new status global about `loop` with diffc.max_iters = bound. `stopped`: derivative code
    stopped the loop after bound + 1 iterations (kind "stopped"), so count says only "more"."""
    name = new_status_global(loop, "stopped" if stopped else "overrun", loop, max_iters=bound)
    body = Block()
    cap = arith.ConstantOp(IntegerAttr(I32_MAX, IndexType()))
    capped = arith.MinUIOp(count, cap.results[0])
    as_i32 = arith.IndexCastOp(capped.results[0], i32)
    body.add_ops([cap, capped, as_i32])
    record_max(body, name, as_i32.results[0])
    body.add_op(scf.YieldOp())
    block.add_op(scf.IfOp(overran, [], [body]))


SLOTS = "diffc.status_slots"


def stash_slots(module: ModuleOp) -> None:
    """Copies what the status globals say into the module attribute `diffc.status_slots` (one
    "name|kind|where|function|max_iters" string each), for the runtime to read after
    lower-entry-points has made the globals kernel parameters."""
    from xdsl.dialects.builtin import ArrayAttr

    rows = []
    for g in module.ops:
        if isinstance(g, memref.GlobalOp) and g.sym_name.data.startswith(STATUS_PREFIX):
            a = g.attributes

            def text(key):
                v = a.get(key)
                return v.data if isinstance(v, StringAttr) else ""

            n = a.get(MAX_ITERS)
            bound = n.value.data if isinstance(n, IntegerAttr) else 0
            rows.append(StringAttr(f"{g.sym_name.data}|{text(KIND)}|{text(WHERE)}|{text(FUNCTION)}|{bound}"))
    if rows:
        module.attributes[SLOTS] = ArrayAttr(rows)


RECORD_SITE = "diffc_record_site"  # the function that records a failed check (record_site)


def record_site(block: Block, idx: SSAValue, length: SSAValue, status: SSAValue, site: int) -> None:
    """Appends to `block` the recording of site `site`: [3k] = 1 (2 for a negative index), [3k+1] =
    the index, [3k+2] = `length` (index values, clamped to int range), with atomic maxes. It is a
    call of one function per module (made here on first use), so that the hundreds of sites of a
    large kernel cost a line of OpenCL each, not sixteen."""
    site_value = arith.ConstantOp(IntegerAttr(site, IndexType()))
    call = func.CallOp(_site_recorder(status), [idx, length, status, site_value.result], [])
    block.add_ops([site_value, call])


def _module_of(value: SSAValue) -> ModuleOp:
    node = value.owner
    op = node.parent_op() if isinstance(node, Block) else node
    while not isinstance(op, ModuleOp):
        assert op is not None, "a status buffer outside a module"
        op = op.parent_op()
    return op


def _site_recorder(status: SSAValue) -> str:
    """The name of `@diffc_record_site(index, length, status, site)` in the module `status` (a
    function's status buffer parameter) is in, declared there if it is not yet."""
    module = _module_of(status)
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == RECORD_SITE:
            return RECORD_SITE
    index = IndexType()
    block = Block(arg_types=[index, index, status.type, index])
    idx, length, buf, site = block.args
    for arg, hint in zip(block.args, ("index", "length", "diffc_status", "site")):
        arg.name_hint = hint

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

    first = arith.MuliOp(site, const(3))
    block.add_op(first)

    def put(slot: int, value: SSAValue) -> None:
        at = first.result
        if slot:
            at = arith.AddiOp(first.result, const(slot)).result
            block.add_op(at.owner)
        block.add_op(kernel.AtomicRMWOp("maxs", value, buf, [at]))

    negative = arith.CmpiOp(idx, const(0), "slt")
    flag = arith.SelectOp(negative.result, const(2, i32), const(1, i32))  # 2: a negative index
    block.add_ops([negative, flag])
    put(0, flag.result)
    put(1, as_i32(idx))
    put(2, as_i32(length))
    block.add_op(func.ReturnOp())
    fn = func.FuncOp(RECORD_SITE, ([index, index, status.type, index], []), Region(block))
    module.body.block.add_op(fn)
    return RECORD_SITE
