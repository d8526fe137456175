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

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import Float16Type, Float32Type, FloatAttr, IndexType, IntegerAttr, StringAttr, f32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from diffc.diagnostics import op_location
from diffc.dialects import kernel
from diffc.kernel_support.atomic_adds import is_global_add, only_added
from diffc.kernel_support.convergence import ConvergedPositions, Guard, Uniformity, wrap


class NotCooperative(Exception):
    """Why a loop nest stays per work-item."""


@dataclass
class OuterProduct:
    """A recognized nest: `add` (in `nest`) adds u(i) * w(j) (w None: u(i)) over i < rows, j < cols
    at an address of (i, j). `sources`: how the nest's induction variables map from (i, j)."""

    nest: scf.ForOp
    add: Operation
    rows: int
    cols: int
    u: SSAValue
    w: SSAValue | None
    flat: bool  # one loop over f = i * cols + j (else: i the outer loop's variable, j the inner's)

    @property
    def label(self) -> str:
        return "outer product" if self.w is not None else "sum"


def _const(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def _trips(loop: scf.ForOp) -> int:
    lb, ub, step = _const(loop.lb), _const(loop.ub), _const(loop.step)
    if lb != 0 or step != 1 or ub is None or ub < 1:
        raise NotCooperative("a loop whose bounds are not 0 to a constant in steps of 1")
    return ub


def _slice(v: SSAValue, nest: scf.ForOp) -> list[Operation]:
    """The ops inside `nest` that `v` depends on, in program order."""
    seen: set[Operation] = set()
    todo = [v]
    while todo:
        x = todo.pop()
        op = x.owner
        if not isinstance(op, Operation) or op in seen or not nest.is_ancestor(op) or op is nest:
            continue
        seen.add(op)
        todo += list(op.operands)
    return [op for op in nest.walk() if op in seen]


def _depends(v: SSAValue, on: SSAValue, nest: scf.ForOp) -> bool:
    return v is on or any(on in op.operands for op in _slice(v, nest))


def _strip_casts(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, arith.ExtFOp | arith.TruncFOp):
        v = v.owner.operands[0]
    return v


def recognize(nest: scf.ForOp, uniform: Uniformity) -> OuterProduct:
    """The outer product or sum `nest` computes, or NotCooperative saying why not."""
    adds = [op for op in nest.walk() if is_global_add(op)]
    if len(adds) != 1:
        raise NotCooperative(f"{len(adds)} atomic adds in one loop nest")
    add = adds[0]
    if not isinstance(add.memref.type.element_type, Float16Type | Float32Type):  # type: ignore[attr-defined]
        raise NotCooperative("an add that is not of half or float")
    outer = nest.body.blocks[0]
    inner_loops = [op for op in outer.ops if isinstance(op, scf.ForOp)]
    for op in nest.walk():
        if op is nest or op is add or isinstance(op, scf.YieldOp | memref.LoadOp) or op in inner_loops:
            continue
        if op.regions or not (is_side_effect_free(op) or op.dialect_name() == "arith"):  # (divisions trap on 0)
            raise NotCooperative(f"'{op.name}' in the loop nest (only arithmetic, loads and the add)")
    if nest.iter_args or any(loop.iter_args for loop in inner_loops):
        raise NotCooperative("a loop that carries values")
    if not uniform(add.memref) or not all(uniform(i) for i in add.indices):  # type: ignore[attr-defined]
        raise NotCooperative("an address that depends on the work-item")
    value = _strip_casts(add.value)  # type: ignore[attr-defined]
    f = outer.args[0]
    if inner_loops:
        if len(inner_loops) != 1 or add.parent_op() is not inner_loops[0]:
            raise NotCooperative("a loop nest that is not two loops around the add")
        inner = inner_loops[0]
        rows, cols = _trips(nest), _trips(inner)
        if inner.body.blocks[0].ops.first is None:
            raise NotCooperative("an empty loop")
        j = inner.body.blocks[0].args[0]
        if not isinstance(value.owner, arith.MulfOp):
            raise NotCooperative("an add of something other than a product of two factors")
        x, y = value.owner.operands
        if _depends(x, j, nest) and not _depends(y, j, nest):
            x, y = y, x
        if _depends(x, j, nest) or _depends(y, f, nest):
            raise NotCooperative("a factor that depends on both indices")
        return OuterProduct(nest, add, rows, cols, x, y, flat=False)
    trips = _trips(nest)
    # one loop: a product whose factors read f / N and f % N, or a sum of a function of f
    if isinstance(value.owner, arith.MulfOp):
        x, y = value.owner.operands
        n = _split_by(x, y, f, nest)
        if n is not None:
            if trips % n:
                raise NotCooperative(f"a loop of {trips} iterations over rows of {n}")
            if _reads(y, f, nest, arith.DivUIOp) and _reads(x, f, nest, arith.RemUIOp):
                x, y = y, x
            return OuterProduct(nest, add, trips // n, n, x, y, flat=True)
    return OuterProduct(nest, add, trips, 1, value, None, flat=False)


def _reads(v: SSAValue, f: SSAValue, nest: scf.ForOp, kind: type) -> bool:
    """Whether every use of `f` in v's slice is an op of `kind` (and there is one)."""
    uses = [op for op in _slice(v, nest) if f in op.operands]
    return bool(uses) and all(isinstance(op, kind) for op in uses)


def _split_by(x: SSAValue, y: SSAValue, f: SSAValue, nest: scf.ForOp) -> int | None:
    """N when one factor reads f only as f / N and the other only as f % N."""
    for a, b in ((x, y), (y, x)):
        if _reads(a, f, nest, arith.DivUIOp) and _reads(b, f, nest, arith.RemUIOp):
            ns = {_const(op.operands[1]) for op in (*_slice(a, nest), *_slice(b, nest))
                  if isinstance(op, arith.DivUIOp | arith.RemUIOp) and f in op.operands}
            if len(ns) == 1 and None not in ns and next(iter(ns)) > 0:
                return next(iter(ns))
    return None


@dataclass(frozen=True)
class Tiling:
    """How a group sums a P x Q product: TI x TJ tiles (one a work-item, `rounds` rounds when
    there are more tiles than work-items), C samples of the group in local memory at a time."""

    ti: int
    tj: int
    chunk: int
    rounds: int


def tiling(rows: int, cols: int, group: int, local_floats: int, max_tile: int = 64) -> Tiling | None:
    """The tiles of a rows x cols product for `group` work-items; None when not even one
    sample's row fits `local_floats`."""
    def divisors(n: int) -> list[int]:
        return [d for d in range(1, n + 1) if n % d == 0]

    need = -(-rows * cols // group)
    best = None
    for ti in divisors(rows):
        for tj in divisors(cols):
            size = ti * tj
            if size > max_tile:
                continue
            key = (size < need, abs(size - need) if size >= need else need - size, abs(ti - tj))
            if best is None or key < best[0]:
                best = (key, ti, tj)
    assert best is not None  # 1 x 1 always fits
    _, ti, tj = best
    tiles = (rows // ti) * (cols // tj)
    width = rows + (cols if cols > 1 else 0)
    chunk = max((c for c in divisors(group) if c * width <= local_floats), default=0)
    if chunk == 0:
        return None
    return Tiling(ti, tj, chunk, -(-tiles // group))


class Lowering:
    """Writes one OuterProduct's cooperative code before its nest (and erases the nest)."""

    def __init__(self, lid: SSAValue, group: int, buffer: SSAValue):
        self.lid, self.group, self.buffer = lid, group, buffer

    def lower(self, op: OuterProduct, t: Tiling, active: SSAValue | None) -> None:
        b = Builder(InsertPoint.before(op.nest))
        self.b = b
        P, Q, L, C = op.rows, op.cols, self.group, t.chunk
        two = op.w is not None
        tiles_q = Q // t.tj
        n_tiles = (P // t.ti) * tiles_q
        for r in range(t.rounds):
            tile = self._add(self.lid, self._i(r * L)) if r else self.lid
            tile_on = self._v(arith.CmpiOp(tile, self._i(n_tiles), "ult"))
            p0 = self._v(arith.MuliOp(self._v(arith.DivUIOp(tile, self._i(tiles_q))), self._i(t.ti)))
            q0 = self._v(arith.MuliOp(self._v(arith.RemUIOp(tile, self._i(tiles_q))), self._i(t.tj)))
            zeros = [self._f(0.0) for _ in range(t.ti * t.tj)]
            # the chunks of the group's samples
            chunk_body = Block(arg_types=[IndexType(), *[f32] * len(zeros)])
            cb = Builder(InsertPoint.at_end(chunk_body))
            self.b = cb
            c = chunk_body.args[0]
            accs = list(chunk_body.args[1:])
            mine = self._v(arith.AndIOp(self._v(arith.CmpiOp(self.lid, c, "uge")),
                                        self._v(arith.CmpiOp(self.lid, self._add(c, self._i(C)), "ult"))))
            row = self._v(arith.SubiOp(self.lid, c))
            stage = Block()
            self.b = Builder(InsertPoint.at_end(stage))
            self._stage(op, op.u, P, row, 0, active, column=False)
            if two:
                self._stage(op, op.w, Q, row, C * P, active, column=True)
            self.b.insert(scf.YieldOp())
            self.b = cb
            cb.insert(scf.IfOp(mine, [], Region(stage)))
            cb.insert(kernel.BarrierOp())
            # this work-item's tile, over the chunk's samples
            sample_body = Block(arg_types=[IndexType(), *[f32] * len(zeros)])
            self.b = Builder(InsertPoint.at_end(sample_body))
            s = sample_body.args[0]
            us = [self._v(memref.LoadOp.get(self.buffer, [self._add(self._v(arith.MuliOp(s, self._i(P))),
                                                                    self._add(p0, self._i(k)))]))
                  for k in range(t.ti)]
            if two:
                base = self._add(self._i(C * P), self._v(arith.MuliOp(s, self._i(Q))))
                ws = [self._v(memref.LoadOp.get(self.buffer, [self._add(base, self._add(q0, self._i(k)))]))
                      for k in range(t.tj)]
            else:
                ws = [None]
            new = []
            for k, u in enumerate(us):
                for m, w in enumerate(ws):
                    term = u if w is None else self._v(arith.MulfOp(u, w))
                    new.append(self._v(arith.AddfOp(sample_body.args[1 + k * len(ws) + m], term)))
            self.b.insert(scf.YieldOp(*new))
            tile_then = Block()
            self.b = Builder(InsertPoint.at_end(tile_then))
            summed = self.b.insert(scf.ForOp(self._i(0), self._i(C), self._i(1), accs, sample_body)).results
            self.b.insert(scf.YieldOp(*summed))
            tile_else = Block()
            tile_else.add_op(scf.YieldOp(*accs))
            self.b = cb
            after = cb.insert(scf.IfOp(tile_on, [f32] * len(zeros), Region(tile_then), Region(tile_else))).results
            cb.insert(kernel.BarrierOp())
            cb.insert(scf.YieldOp(*after))
            self.b = b
            sums = b.insert(scf.ForOp(self._i(0), self._i(L), self._i(C), zeros, chunk_body)).results
            # one add per element of the tile
            adds = Block()
            self.b = Builder(InsertPoint.at_end(adds))
            for k in range(t.ti):
                for m in range(t.tj):
                    i = self._add(p0, self._i(k))
                    j = self._add(q0, self._i(m)) if two else self._i(0)
                    self._add_element(op, i, j, sums[k * t.tj + m])
            self.b.insert(scf.YieldOp())
            self.b = b
            b.insert(scf.IfOp(tile_on, [], Region(adds)))
        Rewriter.erase_op(op.nest)

    # -- pieces ---------------------------------------------------------------------------------

    def _v(self, op: Operation) -> SSAValue:
        self.b.insert(op)
        return op.results[0]

    def _i(self, n: int) -> SSAValue:
        return self._v(arith.ConstantOp(IntegerAttr(n, IndexType())))

    def _f(self, x: float) -> SSAValue:
        return self._v(arith.ConstantOp(FloatAttr(x, f32)))

    def _add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._v(arith.AddiOp(a, b))

    def _as(self, v: SSAValue, t) -> SSAValue:
        """An index as the type of the induction variable it stands for."""
        return v if isinstance(t, IndexType) else self._v(arith.IndexCastOp(v, t))

    def _mapping(self, op: OuterProduct, i: SSAValue | None, j: SSAValue | None) -> dict[SSAValue, SSAValue]:
        f = op.nest.body.blocks[0].args[0]
        if op.flat:
            at = i if i is not None else self._i(0)
            if j is not None and op.cols > 1:
                at = self._add(self._v(arith.MuliOp(at, self._i(op.cols))), j)
            elif i is not None and op.cols > 1:
                at = self._v(arith.MuliOp(at, self._i(op.cols)))
            return {f: self._as(at, f.type)}
        out = {f: self._as(i if i is not None else self._i(0), f.type)}
        inner = [x for x in op.nest.body.blocks[0].ops if isinstance(x, scf.ForOp)]
        if inner:
            jv = inner[0].body.blocks[0].args[0]
            out[jv] = self._as(j if j is not None else self._i(0), jv.type)
        return out

    def _clone_slice(self, v: SSAValue, op: OuterProduct, mapping: dict[SSAValue, SSAValue]) -> SSAValue:
        for x in _slice(v, op.nest):
            self.b.insert(x.clone(mapping))
        return mapping.get(v, v)

    def _stage(self, op: OuterProduct, factor: SSAValue, n: int, row: SSAValue, base: int,
               active: SSAValue | None, column: bool) -> None:
        """buffer[base + row * n + k] = factor(k) for k < n (0 in inactive work-items)."""
        body = Block(arg_types=[IndexType()])
        outer = self.b
        self.b = Builder(InsertPoint.at_end(body))
        k = body.args[0]
        if active is None:
            value = self._float(self._clone_slice(factor, op, self._mapping(op, None if column else k, k if column else None)))
        else:
            then = Block()
            self.b = Builder(InsertPoint.at_end(then))
            got = self._float(self._clone_slice(factor, op, self._mapping(op, None if column else k, k if column else None)))
            self.b.insert(scf.YieldOp(got))
            other = Block()
            self.b = Builder(InsertPoint.at_end(other))
            self.b.insert(scf.YieldOp(self._f(0.0)))
            self.b = Builder(InsertPoint.at_end(body))
            value = self._v(scf.IfOp(active, [f32], Region(then), Region(other)))
        at = self._add(self._i(base), self._add(self._v(arith.MuliOp(row, self._i(n))), k))
        self.b.insert(memref.StoreOp.get(value, self.buffer, [at]))
        self.b.insert(scf.YieldOp())
        self.b = outer
        self.b.insert(scf.ForOp(self._i(0), self._i(n), self._i(1), [], body))

    def _float(self, v: SSAValue) -> SSAValue:
        if isinstance(v.type, Float32Type):
            return v
        if isinstance(v.type, Float16Type):
            return self._v(arith.ExtFOp(v, f32))
        return self._v(arith.TruncFOp(v, f32))

    def _add_element(self, op: OuterProduct, i: SSAValue, j: SSAValue, total: SSAValue) -> None:
        mapping = self._mapping(op, i, j if op.w is not None else None)
        add = op.add
        operands = [*add.indices]  # type: ignore[attr-defined]
        needed = _address_slice(add, op.nest)
        for x in op.nest.walk():
            if x in needed:
                self.b.insert(x.clone(mapping))
        value = total
        want = add.value.type  # type: ignore[attr-defined]
        if isinstance(want, Float16Type):
            value = self._v(arith.TruncFOp(value, want))
        new = add.clone(mapping)
        new.operands = [value, mapping.get(add.memref, add.memref),  # type: ignore[attr-defined]
                        *[mapping.get(o, o) for o in operands]]
        self.b.insert(new)


def _address_slice(add: Operation, nest: scf.ForOp) -> set[Operation]:
    out: set[Operation] = set()
    for v in add.indices:  # type: ignore[attr-defined]
        out.update(_slice(v, nest))
    return out


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


# -- matrix-vector products ------------------------------------------------------------------------

MATMUL_MARK, MATMUL = "diffc.coopvec", "matmul"  # the front end's mark on coopVecMatMul's row loop
MMA_XWT = "diffc_mma_xwt"  # the group product's declaration (the OpenCL emitter prints its body)


def mma_plan(op: MatVec, group: int, local_floats: int) -> int | None:
    """Samples at a time (a multiple of 16 dividing the group) whose vectors, the weights and
    their products fit `local_floats`; None when the group is not whole warps or none fit."""
    if group % 32:
        return None
    fits = [c for c in range(16, group + 1, 16) if group % c == 0
            and c * (op.cols + 1) + op.rows * op.cols + c * op.rows <= local_floats]
    return max(fits) if fits else None


@dataclass
class MatVec:
    """`loop` (for i < rows) holds `dot` (for k < cols, summing w(i, k) * x(k) from 0): w the
    same in every work-item (weights), x the work-item's vector."""

    loop: scf.ForOp
    dot: scf.ForOp
    rows: int
    cols: int
    w: SSAValue
    x: SSAValue

    label = "matrix-vector product"


def _shared_value(v: SSAValue, loop: scf.ForOp, uniform: Uniformity) -> bool:
    """Whether `v` (computed in `loop`) is the same in every work-item: uniform, or loaded at a
    uniform address, through pure ops."""
    if uniform(v):
        return True
    op = v.owner
    if not isinstance(op, Operation) or not loop.is_ancestor(op) or op.regions:
        return False
    if isinstance(op, memref.LoadOp):
        return uniform(op.memref) and all(_shared_value(i, loop, uniform) for i in op.indices)
    return (is_side_effect_free(op) or op.dialect_name() == "arith") and all(
        _shared_value(o, loop, uniform) for o in op.operands)


def recognize_matvec(loop: scf.ForOp, uniform: Uniformity) -> MatVec:
    rows = _trips(loop)
    if loop.iter_args:
        raise NotCooperative("a matrix-vector loop that carries values")
    dots = [op for op in loop.body.blocks[0].ops if isinstance(op, scf.ForOp)]
    if len(dots) != 1 or len(dots[0].iter_args) != 1:
        raise NotCooperative("a matrix-vector loop without one dot product")
    dot = dots[0]
    cols = _trips(dot)
    init = dot.iter_args[0].owner
    if not (isinstance(init, arith.ConstantOp) and isinstance(init.value, FloatAttr) and init.value.value.data == 0.0):
        raise NotCooperative("a dot product that does not start from 0")
    body = dot.body.blocks[0]
    total = body.last_op.operands[0] if isinstance(body.last_op, scf.YieldOp) else None
    add = total.owner if total is not None else None
    if not (isinstance(add, arith.AddfOp) and body.args[1] in add.operands):
        raise NotCooperative("a dot product that is not acc + w * x")
    term = add.operands[1] if add.operands[0] is body.args[1] else add.operands[0]
    if not isinstance(term.owner, arith.MulfOp):
        raise NotCooperative("a dot product that is not acc + w * x")
    a, b = term.owner.operands
    i = loop.body.blocks[0].args[0]
    if not _shared_value(a, loop, uniform):
        a, b = b, a
    if not _shared_value(a, loop, uniform):
        raise NotCooperative("a matrix that is not the same in every work-item")
    if _depends(b, i, loop) or _depends(b, body.args[1], loop):
        raise NotCooperative("a vector that depends on the row")
    for op in dot.walk():
        if op is not dot and (op.regions or not (is_side_effect_free(op) or op.dialect_name() == "arith"
                                                 or isinstance(op, memref.LoadOp | scf.YieldOp))):
            raise NotCooperative(f"'{op.name}' in the dot product")
    return MatVec(loop, dot, rows, cols, a, b)


def matvec_plan(op: MatVec, group: int, local_floats: int) -> tuple[int, Tiling] | None:
    """How many samples' vectors (padded rows) and products fit local memory at a time, and the
    tiles of their product; None when not one sample's do."""
    best = None
    for c in range(1, group + 1):
        if group % c:
            continue
        t = tiling(c, op.rows, group, 1 << 30)
        assert t is not None
        vectors, products = c * (op.cols + 1), c * op.rows
        need = vectors + products if t.rounds > 1 else max(vectors, products)
        if need <= local_floats:
            best = (c, t, need)
    return None if best is None else (best[0], best[1])


class MatVecLowering(Lowering):
    """The group's vectors as rows of local memory (C at a time), each work-item a TS x TI tile
    of the C x rows product (weights read from global memory, the same for every work-item), the
    products back through local memory to each work-item's row; the dot loop then reads it."""

    def lower_matvec(self, op: MatVec, chunk: int, t: Tiling, active: SSAValue | None) -> None:
        L, C, M, K = self.group, chunk, op.rows, op.cols
        stride = K + 1  # (rows one bank apart)
        tiles_i = M // t.tj
        n_tiles = (C // t.ti) * tiles_i
        self.b = b = Builder(InsertPoint.before(op.loop))
        yrow = self._v(memref.AllocaOp.get(f32, shape=[M]))
        body = Block(arg_types=[IndexType()])
        cb = self.b = Builder(InsertPoint.at_end(body))
        c = body.args[0]
        mine = self._v(arith.AndIOp(self._v(arith.CmpiOp(self.lid, c, "uge")),
                                    self._v(arith.CmpiOp(self.lid, self._add(c, self._i(C)), "ult"))))
        row = self._v(arith.SubiOp(self.lid, c))
        # this work-item's vector, if its sample is in the chunk
        stage = Block()
        self.b = Builder(InsertPoint.at_end(stage))
        self._stage_vector(op, row, stride, active)
        self.b.insert(scf.YieldOp())
        self.b = cb
        cb.insert(scf.IfOp(mine, [], Region(stage)))
        cb.insert(kernel.BarrierOp())
        # the tile: samples s0.., outputs i0..
        tiles_total = t.rounds
        for r in range(tiles_total):
            self.b = cb
            tile = self._add(self.lid, self._i(r * L)) if r else self.lid
            tile_on = self._v(arith.CmpiOp(tile, self._i(n_tiles), "ult"))
            s0 = self._v(arith.MuliOp(self._v(arith.DivUIOp(tile, self._i(tiles_i))), self._i(t.ti)))
            i0 = self._v(arith.MuliOp(self._v(arith.RemUIOp(tile, self._i(tiles_i))), self._i(t.tj)))
            then = Block()
            self.b = Builder(InsertPoint.at_end(then))
            zeros = [self._f(0.0) for _ in range(t.ti * t.tj)]
            kbody = Block(arg_types=[IndexType(), *[f32] * len(zeros)])
            self.b = Builder(InsertPoint.at_end(kbody))
            k = kbody.args[0]
            xs = [self._v(memref.LoadOp.get(self.buffer, [self._add(self._v(arith.MuliOp(self._add(s0, self._i(s)),
                                                                                         self._i(stride))), k)]))
                  for s in range(t.ti)]
            ws = [self._float(self._clone_dot(op, op.w, self._add(i0, self._i(i)), k)) for i in range(t.tj)]
            new = []
            for s, xv in enumerate(xs):
                for i, wv in enumerate(ws):
                    new.append(self._v(arith.AddfOp(kbody.args[1 + s * t.tj + i], self._v(arith.MulfOp(wv, xv)))))
            self.b.insert(scf.YieldOp(*new))
            self.b = Builder(InsertPoint.at_end(then))
            sums = self.b.insert(scf.ForOp(self._i(0), self._i(K), self._i(1), zeros, kbody)).results
            self.b.insert(scf.YieldOp(*sums))
            other = Block()
            self.b = Builder(InsertPoint.at_end(other))
            self.b.insert(scf.YieldOp(*[self._f(0.0) for _ in zeros]))
            self.b = cb
            got = cb.insert(scf.IfOp(tile_on, [f32] * len(zeros), Region(then), Region(other))).results
            if r == 0:
                cb.insert(kernel.BarrierOp())  # every read of the vectors before the products overwrite them
            write = Block()
            self.b = Builder(InsertPoint.at_end(write))
            for s in range(t.ti):
                for i in range(t.tj):
                    at = self._add(self._v(arith.MuliOp(self._add(s0, self._i(s)), self._i(M))), self._add(i0, self._i(i)))
                    self.b.insert(memref.StoreOp.get(got[s * t.tj + i], self.buffer, [self._add(self._i(C * stride), at)]
                                                     if tiles_total > 1 else [at]))
            self.b.insert(scf.YieldOp())
            self.b = cb
            cb.insert(scf.IfOp(tile_on, [], Region(write)))
        cb.insert(kernel.BarrierOp())
        # each work-item of the chunk takes its row of products
        take = Block()
        self.b = Builder(InsertPoint.at_end(take))
        loop_body = Block(arg_types=[IndexType()])
        outer = self.b
        self.b = Builder(InsertPoint.at_end(loop_body))
        i = loop_body.args[0]
        base = self._i(C * stride) if tiles_total > 1 else self._i(0)
        v = self._v(memref.LoadOp.get(self.buffer, [self._add(base, self._add(self._v(arith.MuliOp(row, self._i(M))), i))]))
        self.b.insert(memref.StoreOp.get(v, yrow, [i]))
        self.b.insert(scf.YieldOp())
        self.b = outer
        self.b.insert(scf.ForOp(self._i(0), self._i(M), self._i(1), [], loop_body))
        self.b.insert(scf.YieldOp())
        self.b = cb
        cb.insert(scf.IfOp(mine, [], Region(take)))
        cb.insert(kernel.BarrierOp())
        cb.insert(scf.YieldOp())
        self.b = b
        b.insert(scf.ForOp(self._i(0), self._i(L), self._i(C), [], body))
        self._read_products(op, yrow, active)

    def _read_products(self, op: MatVec, yrow: SSAValue, active: SSAValue | None) -> None:
        """The dot product becomes the row's product (yrow[i])."""
        iv = op.loop.body.blocks[0].args[0]
        self.b = Builder(InsertPoint.before(op.dot))
        product = self._v(memref.LoadOp.get(yrow, [iv if isinstance(iv.type, IndexType)
                                                  else self._v(arith.IndexCastOp(iv, IndexType()))]))
        want = op.dot.results[0].type
        if want != f32:
            product = self._v(arith.TruncFOp(product, want) if isinstance(want, Float16Type) else arith.ExtFOp(product, want))
        op.dot.results[0].replace_all_uses_with(product)
        Rewriter.erase_op(op.dot)
        if active is not None:  # the rest of the row loop (bias, stores) in active work-items
            wrap([op.loop], active, InsertPoint.after(op.loop))

    def lower_mma(self, op: MatVec, chunk: int, active: SSAValue | None) -> None:
        """The group's product through the XWT helper (tensor cores on NVIDIA): W staged once
        (as floats, M x K), then C samples' vectors at a time, the helper's C x M products read
        back to each work-item's row."""
        L, C, M, K = self.group, chunk, op.rows, op.cols
        stride = K + 1
        w_off, y_off = C * stride, C * stride + M * K
        self.b = b = Builder(InsertPoint.before(op.loop))
        yrow = self._v(memref.AllocaOp.get(f32, shape=[M]))
        stage_w = Block(arg_types=[IndexType()])
        self.b = Builder(InsertPoint.at_end(stage_w))
        e = stage_w.args[0]
        i, k = self._v(arith.DivUIOp(e, self._i(K))), self._v(arith.RemUIOp(e, self._i(K)))
        self.b.insert(memref.StoreOp.get(self._float(self._clone_dot(op, op.w, i, k)), self.buffer,
                                         [self._add(self._i(w_off), e)]))
        self.b.insert(scf.YieldOp())
        self.b = b
        b.insert(scf.ForOp(self.lid, self._i(M * K), self._i(L), [], stage_w))
        body = Block(arg_types=[IndexType()])
        cb = self.b = Builder(InsertPoint.at_end(body))
        c = body.args[0]
        mine = self._v(arith.AndIOp(self._v(arith.CmpiOp(self.lid, c, "uge")),
                                    self._v(arith.CmpiOp(self.lid, self._add(c, self._i(C)), "ult"))))
        row = self._v(arith.SubiOp(self.lid, c))
        stage = Block()
        self.b = Builder(InsertPoint.at_end(stage))
        self._stage_vector(op, row, stride, active)
        self.b.insert(scf.YieldOp())
        self.b = cb
        cb.insert(scf.IfOp(mine, [], Region(stage)))
        cb.insert(kernel.BarrierOp())
        args = [self.buffer, *[self._i(n) for n in (0, stride, w_off, y_off, C, M, K)], self.lid, self._i(L)]
        cb.insert(func.CallOp(MMA_XWT, args, []))
        cb.insert(kernel.BarrierOp())
        take = Block()
        self.b = Builder(InsertPoint.at_end(take))
        loop_body = Block(arg_types=[IndexType()])
        outer = self.b
        self.b = Builder(InsertPoint.at_end(loop_body))
        iv = loop_body.args[0]
        v = self._v(memref.LoadOp.get(self.buffer, [self._add(self._i(y_off),
                                                              self._add(self._v(arith.MuliOp(row, self._i(M))), iv))]))
        self.b.insert(memref.StoreOp.get(v, yrow, [iv]))
        self.b.insert(scf.YieldOp())
        self.b = outer
        self.b.insert(scf.ForOp(self._i(0), self._i(M), self._i(1), [], loop_body))
        self.b.insert(scf.YieldOp())
        self.b = cb
        cb.insert(scf.IfOp(mine, [], Region(take)))
        cb.insert(kernel.BarrierOp())  # every row read before the next chunk's vectors
        cb.insert(scf.YieldOp())
        self.b = b
        b.insert(scf.ForOp(self._i(0), self._i(L), self._i(C), [], body))
        self._read_products(op, yrow, active)

    def _stage_vector(self, op: MatVec, row: SSAValue, stride: int, active: SSAValue | None) -> None:
        body = Block(arg_types=[IndexType()])
        outer = self.b
        self.b = Builder(InsertPoint.at_end(body))
        k = body.args[0]
        if active is None:
            value = self._float(self._clone_dot(op, op.x, None, k))
        else:
            then = Block()
            self.b = Builder(InsertPoint.at_end(then))
            self.b.insert(scf.YieldOp(self._float(self._clone_dot(op, op.x, None, k))))
            other = Block()
            self.b = Builder(InsertPoint.at_end(other))
            self.b.insert(scf.YieldOp(self._f(0.0)))
            self.b = Builder(InsertPoint.at_end(body))
            value = self._v(scf.IfOp(active, [f32], Region(then), Region(other)))
        at = self._add(self._v(arith.MuliOp(row, self._i(stride))), k)
        self.b.insert(memref.StoreOp.get(value, self.buffer, [at]))
        self.b.insert(scf.YieldOp())
        self.b = outer
        self.b.insert(scf.ForOp(self._i(0), self._i(op.cols), self._i(1), [], body))

    def _clone_dot(self, op: MatVec, v: SSAValue, i: SSAValue | None, k: SSAValue) -> SSAValue:
        iv = op.loop.body.blocks[0].args[0]
        kv = op.dot.body.blocks[0].args[0]
        mapping = {iv: self._as(i if i is not None else self._i(0), iv.type), kv: self._as(k, kv.type)}
        for x in _slice(v, op.loop):
            if x is op.dot:
                raise NotCooperative("a factor that reads the sum")
            self.b.insert(x.clone(mapping))
        return mapping.get(v, v)


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
                    got = recognize(op, cp.uniform)  # type: ignore[arg-type]
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
    lowering = MatVecLowering(lid, group, buffer)
    for x, p, t in plans:
        if isinstance(x, MatVec) and isinstance(t, int):
            lowering.lower_mma(x, t, p)
            lines.append(f"cooperative{_where(x.loop)}: {x.label} of {x.rows} x {x.cols} for the group's {group} "
                         f"samples (the group product {MMA_XWT}, {t} samples at a time)")
            _declare_xwt(fn, funcs, buffer.type)
            continue
        if isinstance(x, MatVec):
            c, tt = t
            where = _where(x.loop)
            lowering.lower_matvec(x, c, tt, p)
            lines.append(f"cooperative{where}: {x.label} of {x.rows} x {x.cols} for the group's {group} samples "
                         f"({tt.ti} x {tt.tj} tiles of samples x outputs, {c} samples at a time)")
            continue
        where = _where(x.nest)
        lowering.lower(x, t, p)
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
