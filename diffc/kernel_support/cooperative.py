"""Cooperative outer products (the cooperative-layers pass): a layer's weight gradient summed
over a work-group's samples in local memory, then one atomic add per element and group.

What it rewrites: a loop nest at a converged position of a kernel (diffc/kernel_support/
convergence.py: every work-item of the group runs it equally often) whose body, besides pure
arithmetic and loads, is one atomic add into global memory that nothing else touches
(atomic_adds.only_added), at an address the same in every work-item for each iteration, of

* an outer product `m[addr(i, j)] += u(i) * w(j)`: two nested loops of constant trip counts
  (Slang's loop form, `m[i * N + j] += a[i] * b[j]`), or one loop over i * N + j whose factors
  read i = f / N and j = f % N (what the front end makes of `coopVecOuterProductAccumulate`),
  u depending on i alone, w on j alone;
* a sum `m[addr(i)] += u(i)` over one loop (`coopVecReduceSumAccumulate`, a bias gradient).

Each work-item's sample is a row: the group's rows of u and w go to local memory (a chunk of C
samples at a time, as local memory allows; inactive work-items write zeros), each work-item then
sums a TI x TJ tile of the P x Q product over the chunk's samples in float, in sample order, and
after the last chunk adds each element of its tile once (its sum rounded to the buffer's type):
dW = dY^T X with the group's samples as K. The sums are the same every run; the order in which
groups add is not (one atomic per element and group).

With `matvec`, a coopVecMatMul's row loop (marked by the front end) at a converged position,
`for i: out[i] = (sum over k of W(i, k) * x[k]) ...` with W the same in every work-item,
becomes a product of the group's vectors: each work-item's x a row of local memory (padded a
float, so rows fall in different banks), each work-item a tile of samples x outputs summed in
float over k (weights read from global memory), the products back through local memory to each
work-item's row, from which the row loop (bias, stores) reads its sum. Float tiles without tensor
cores: slower than each work-item's own product on an H100, so the pipeline leaves it off.

What it leaves per work-item, with the reason `why_not` gives: nests under control flow that not
every work-item takes, addresses that depend on the work-item, factors that depend on both
indices, buffers also read or written.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IndexType, StringAttr, f32
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from diffc.diagnostics import op_location
from diffc.dialects import kernel
from diffc.kernel_support.atomic_adds import is_global_add, only_added
from diffc.kernel_support.convergence import ConvergedPositions, Guard, Uniformity, linear_local_id
from diffc.kernel_support.cooperative_matvec import (MATMUL, MATMUL_MARK, MMA_XWT, MatVec, MatVecLowering, matvec_plan,
                                                     mma_plan, recognize_matvec)
from diffc.kernel_support.cooperative_outer import OuterProduct, OuterProductLowering, recognize_outer_product
from diffc.kernel_support.cooperative_tiles import NotCooperative, tiling


# -- one kernel -------------------------------------------------------------------------------------

def _holds_add(op: Operation) -> bool:
    return isinstance(op, scf.ForOp) and any(is_global_add(x) for x in op.walk())


def _where(op: Operation) -> str:
    loc = op_location(op, enclosing=True)
    return f" at {loc}" if loc is not None else ""


def _is_matvec(op: Operation) -> bool:
    mark = op.attributes.get(MATMUL_MARK)
    return isinstance(op, scf.ForOp) and isinstance(mark, StringAttr) and mark.data == MATMUL


def _calls_line(c: Operation) -> str:
    return (f"per work-item{_where(c)}: a call under control flow that not every work-item of the group may "
            "take (or of a callee that cannot be inlined) holds layer loops")


def cooperate(fn: func.FuncOp, funcs: dict[str, func.FuncOp], local_bytes: int, matvec: bool = True,
              mma: bool = False, mma_local_bytes: int = 40960) -> list[str]:
    """Rewrites kernel `fn`'s outer products, sums and (`matvec`, or `mma`: through the group
    product MMA_XWT, in `mma_local_bytes`) matrix-vector products (see the module docstring) in
    place; returns one report line per loop nest: rewritten, or why not. A kernel with nothing
    rewritten stays as it was."""
    matvec = matvec or mma
    def layer_loop(op: Operation) -> bool:
        return _holds_add(op) or (matvec and _is_matvec(op))

    if not any(layer_loop(op) or isinstance(op, func.CallOp) for op in fn.walk()):
        return []
    sizes = kernel.work_group_size(fn)
    group = sizes[0] * sizes[1] * sizes[2] if sizes is not None else 1
    work = fn.clone()  # inline and look on a copy
    entry = work.body.blocks[0]
    cp = ConvergedPositions(entry, funcs)
    cp.inline_calls(layer_loop)
    cp.uniform = Uniformity(entry)
    nests = [op for op in work.walk() if layer_loop(op)
             and not any(layer_loop(x) for x in _ancestors(op))]
    calls = [op for op in work.walk() if isinstance(op, func.CallOp)
             and cp.reaches(op.callee.root_reference.data, layer_loop, set())]
    if not nests:
        return [_calls_line(c) for c in calls]
    if len(work.body.blocks) != 1 or sizes is None or group <= 1:
        return [f"per work-item{_where(n)}: needs a kernel.reqd_work_group_size of more than one work-item"
                for n in nests]
    if any(isinstance(op, kernel.BarrierOp | kernel.LocalAllocOp) for op in work.walk()):
        return [f"per work-item{_where(n)}: the kernel already uses barriers or local memory" for n in nests]
    lines: list[str] = []
    taken: dict[Guard | None, list[OuterProduct | MatVec]] = {}
    converged: set[Operation] = set()

    def inside_taken(op: Operation) -> bool:
        return any((x.nest if isinstance(x, OuterProduct) else x.loop).is_ancestor(op)
                   for xs in taken.values() for x in xs)

    for block, g in list(cp.positions()):
        for op in block.ops:
            if not layer_loop(op) or inside_taken(op):
                continue
            converged.add(op)
            try:
                if matvec and _is_matvec(op):
                    got: OuterProduct | MatVec = recognize_matvec(op, cp.uniform)  # type: ignore[arg-type]
                else:
                    got = recognize_outer_product(op, cp.uniform)  # type: ignore[arg-type]
                    if not only_added(got.add.memref, funcs):  # type: ignore[attr-defined]
                        raise NotCooperative("a buffer that is added to is also read or written")
            except NotCooperative as why:
                if not any(x is not op and layer_loop(x) and x in converged for x in op.walk()):
                    lines.append(f"per work-item{_where(op)}: {why}")
                continue
            taken.setdefault(g, []).append(got)
    for op in work.walk():
        if layer_loop(op) and op not in converged and not any(layer_loop(x) for x in _ancestors(op)) \
                and not any(x.is_ancestor(op) for x in converged if x is not op):
            lines.append(f"per work-item{_where(op)}: under control flow that not every work-item of the group "
                         "may take")
    lines += [_calls_line(c) for c in calls]
    if not taken:
        return lines
    done: list[tuple[OuterProduct | MatVec, SSAValue | None]] = []
    for g, products in taken.items():
        targets = [x.nest if isinstance(x, OuterProduct) else x.loop for x in products]
        p = None if g is None else cp.predicate_guard(g, targets)
        if g is not None and p is None:
            lines += [f"per work-item{_where(t)}: the work-items' early return cannot become a predicate"
                      for t in targets]
            continue
        done += [(x, p) for x in products]
    plans: list = []
    floats = 0
    for x, p in done:
        if isinstance(x, MatVec) and mma:
            c = mma_plan(x, group, mma_local_bytes // 4)
            if c is not None:
                floats = max(floats, c * (x.cols + 1) + x.rows * x.cols + c * x.rows)
                plans.append((x, p, c))
                continue
        if isinstance(x, MatVec):
            mv = matvec_plan(x, group, local_bytes // 4)
            if mv is None:
                lines.append(f"per work-item{_where(x.loop)}: one sample's vector exceeds {local_bytes} bytes of "
                             "local memory")
                continue
            c, t = mv
            floats = max(floats, c * (x.cols + 1) + c * x.rows if t.rounds > 1 else max(c * (x.cols + 1), c * x.rows))
            plans.append((x, p, (c, t)))
            continue
        t = tiling(x.rows, x.cols, group, local_bytes // 4)
        if t is None:
            lines.append(f"per work-item{_where(x.nest)}: one sample's {x.rows} + {x.cols} floats exceed "
                         f"{local_bytes} bytes of local memory")
            continue
        floats = max(floats, t.chunk * (x.rows + (x.cols if x.w is not None else 0)))
        plans.append((x, p, t))
    if not plans:
        return lines
    b = Builder(InsertPoint.at_start(entry))
    lid = linear_local_id(sizes, b)
    buffer = b.insert(kernel.LocalAllocOp(kernel.local_memref(f32, [floats]))).result
    buffer.name_hint = "cooperative_rows"
    outer_products, matvecs = OuterProductLowering(lid, group, buffer), MatVecLowering(lid, group, buffer)
    for x, p, t in plans:
        if isinstance(x, MatVec) and isinstance(t, int):
            matvecs.lower_mma(x, t, p)
            lines.append(f"cooperative{_where(x.loop)}: {x.label} of {x.rows} x {x.cols} for the group's {group} "
                         f"samples (the group product {MMA_XWT}, {t} samples at a time)")
            _declare_xwt(fn, funcs, buffer.type)
            continue
        if isinstance(x, MatVec):
            c, tt = t
            where = _where(x.loop)
            matvecs.lower_matvec(x, c, tt, p)
            lines.append(f"cooperative{where}: {x.label} of {x.rows} x {x.cols} for the group's {group} samples "
                         f"({tt.ti} x {tt.tj} tiles of samples x outputs, {c} samples at a time)")
            continue
        where = _where(x.nest)
        outer_products.lower(x, t, p)
        lines.append(f"cooperative{where}: {x.label} of {x.rows} x {x.cols} summed over the group's "
                     f"{group} samples ({t.ti} x {t.tj} tiles, {t.chunk} samples at a time), one add per element")
    parent = fn.parent_block()
    assert parent is not None
    parent.insert_op_after(work, fn)
    Rewriter.erase_op(fn)
    funcs[work.sym_name.data] = work
    return lines


def _declare_xwt(fn: func.FuncOp, funcs: dict[str, func.FuncOp], buffer_type) -> None:
    if MMA_XWT in funcs:
        return
    index = IndexType()
    decl = func.FuncOp.external(MMA_XWT, [buffer_type, *[index] * 9], [])
    parent = fn.parent_block()
    assert parent is not None
    parent.insert_op_before(decl, fn)
    funcs[MMA_XWT] = decl


def _ancestors(op: Operation):
    p = op.parent_op()
    while p is not None:
        yield p
        p = p.parent_op()
