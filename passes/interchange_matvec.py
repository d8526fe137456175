"""interchange-matvec: a coopVecMatMul row loop whose dot products read the matrix with a stride
(the transposed product of a packed or row-major matrix: out[i] = sum over k of W[k][i] x[k])
becomes `for k: for i: sums[i] += W[k][i] * x[k]` into a private array of sums, then the row loop
reads each row's sum in place of its dot product. Each sum adds the same terms in the same order
from the same 0, so the results are the same bits; the inner loop now reads the matrix's row k
contiguously, which a CPU's vectorizer takes as plain vector loads (the dot product by a stride
was gathers: on PoCL, a quarter of the CoopVec network's learnGradient). For CPU devices
(KernelSettings.interchange_matvec); GPUs keep one dot product per work-item and row.

A row loop is left as it is when its dot product reads the matrix contiguously, when the row
loop carries values, or when anything in it before the dot product has an effect."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

MATMUL_MARK, MATMUL = "diffc.coopvec", "matmul"  # the front end's mark on coopVecMatMul's row loop


@dataclass(frozen=True)
class InterchangeMatVecPass(ModulePass):
    name = "interchange-matvec"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for loop in [o for o in op.walk() if _is_matvec(o)]:
            interchange(loop)  # type: ignore[arg-type]


def _is_matvec(op: Operation) -> bool:
    mark = op.attributes.get(MATMUL_MARK)
    return isinstance(op, scf.ForOp) and isinstance(mark, StringAttr) and mark.data == MATMUL


def _constant(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _strided(dot: scf.ForOp) -> bool:
    """Whether the dot product reads global memory at start + k * step with step not the constant 1."""
    k = dot.body.blocks[0].args[0]
    for op in dot.body.blocks[0].ops:
        if not isinstance(op, memref.LoadOp) or isinstance(op.memref.owner, memref.AllocaOp) or len(op.indices) != 1:
            continue
        at = op.indices[0].owner
        if not isinstance(at, arith.AddiOp):
            continue
        for term in at.operands:
            mul = term.owner
            if isinstance(mul, arith.MuliOp) and k in mul.operands:
                step = mul.operands[1] if mul.operands[0] is k else mul.operands[0]
                return _constant(step) != 1
    return False


def interchange(loop: scf.ForOp) -> bool:
    """Rewrites `loop` as the module docstring says; False where it is left as it is."""
    body = loop.body.blocks[0]
    dots = [o for o in body.ops if isinstance(o, scf.ForOp)]
    if loop.iter_args or len(dots) != 1 or len(dots[0].iter_args) != 1 or len(dots[0].results) != 1:
        return False
    dot = dots[0]
    before = []
    for o in body.ops:
        if o is dot:
            break
        if o.regions or not is_side_effect_free(o):
            return False
        before.append(o)
    after = list(body.ops)[len(before) + 1:]
    if any(o.regions or not (is_side_effect_free(o) or isinstance(o, memref.LoadOp | scf.YieldOp)
                             or (isinstance(o, memref.StoreOp) and isinstance(o.memref.owner, memref.AllocaOp)))
           for o in after):
        return False  # (the matrix is read before the rows now: nothing there may write memory it could be)
    inner = dot.body.blocks[0]
    if any(o.regions or not (is_side_effect_free(o) or isinstance(o, memref.LoadOp | scf.YieldOp))
           for o in inner.ops) or not _strided(dot):
        return False
    rows = _constant(loop.ub)
    if rows is None or _constant(loop.lb) != 0 or _constant(loop.step) != 1:
        return False
    b = Builder(InsertPoint.before(loop))
    hoisted = []
    for v in (dot.lb, dot.ub, dot.step, dot.iter_args[0]):  # (the k loop and the sums' start go before the rows)
        owner = v.owner
        if isinstance(owner, Operation) and loop.is_ancestor(owner):
            if not isinstance(owner, arith.ConstantOp):
                return False
            v = b.insert(owner.clone()).result
        hoisted.append(v)
    lb, ub, step, init = hoisted
    elem = dot.results[0].type
    sums = b.insert(memref.AllocaOp.get(elem, shape=[rows])).memref
    sums.name_hint = "sums"

    def row_loop(fill) -> scf.ForOp:
        blk = Block(arg_types=[IndexType()])
        blk.args[0].name_hint = body.args[0].name_hint
        inner_b = Builder(InsertPoint.at_end(blk))
        fill(inner_b, blk.args[0])
        inner_b.insert(scf.YieldOp())
        out = scf.ForOp(loop.lb, loop.ub, loop.step, [], blk)
        return out

    def zero(bb: Builder, i: SSAValue) -> None:
        bb.insert(memref.StoreOp.get(init, sums, [i]))

    b.insert(row_loop(zero))
    kblk = Block(arg_types=[IndexType()])
    kblk.args[0].name_hint = inner.args[0].name_hint
    kb = Builder(InsertPoint.at_end(kblk))

    def add(bb: Builder, i: SSAValue) -> None:
        values: dict[SSAValue, SSAValue] = {body.args[0]: i, inner.args[0]: kblk.args[0]}
        for o in before:
            c = bb.insert(o.clone(value_mapper=values))
            values.update(zip(o.results, c.results))
        values[inner.args[1]] = bb.insert(memref.LoadOp.get(sums, [i])).res
        for o in inner.ops:
            if isinstance(o, scf.YieldOp):
                bb.insert(memref.StoreOp.get(values.get(o.operands[0], o.operands[0]), sums, [i]))
                continue
            c = bb.insert(o.clone(value_mapper=values))
            values.update(zip(o.results, c.results))

    kb.insert(row_loop(add))
    kb.insert(scf.YieldOp())
    b.insert(scf.ForOp(lb, ub, step, [], kblk))
    rb = Builder(InsertPoint.before(dot))
    total = rb.insert(memref.LoadOp.get(sums, [body.args[0]])).res
    dot.results[0].replace_all_uses_with(total)
    Rewriter.erase_op(dot)
    for o in reversed(before):
        if all(not r.uses for r in o.results):
            Rewriter.erase_op(o)
    return True
