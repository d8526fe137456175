"""cooperative-layers' matrix-vector products (diffc/kernel_support/cooperative.py): coopVecMatMul's
row loop, marked by the front end, as tiles of the group's samples x outputs in local memory, or
through the group product MMA_XWT (tensor cores on NVIDIA)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import Float16Type, FloatAttr, IndexType, f32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from diffc.dialects import kernel
from diffc.kernel_support.convergence import Uniformity, wrap
from diffc.kernel_support.cooperative_tiles import (GroupEmitter, NotCooperative, Tiling, depends, nest_slice, tiling,
                                                    trips)


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
    rows = trips(loop)
    if loop.iter_args:
        raise NotCooperative("a matrix-vector loop that carries values")
    dots = [op for op in loop.body.blocks[0].ops if isinstance(op, scf.ForOp)]
    if len(dots) != 1 or len(dots[0].iter_args) != 1:
        raise NotCooperative("a matrix-vector loop without one dot product")
    dot = dots[0]
    cols = trips(dot)
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
    if depends(b, i, loop) or depends(b, body.args[1], loop):
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


class MatVecLowering(GroupEmitter):
    """The group's vectors as rows of local memory (C at a time), each work-item a TS x TI tile
    of the C x rows product (weights read from global memory, the same for every work-item), the
    products back through local memory to each work-item's row; the dot loop then reads it."""

    def lower_matvec(self, op: MatVec, chunk: int, t: Tiling, active: SSAValue | None) -> None:
        L, C, M, K = self.group, chunk, op.rows, op.cols
        stride = K + 1  # (rows one bank apart)
        tiles_i = M // t.tj
        n_tiles = (C // t.ti) * tiles_i
        products = C * stride if t.rounds > 1 else 0  # (one round: over the vectors, all read by then)
        self.b = Builder(InsertPoint.before(op.loop))
        yrow = self._v(memref.AllocaOp.get(f32, shape=[M]))

        def tiles() -> None:  # the tile: samples s0.., outputs i0..
            cb = self.b
            for r in range(t.rounds):
                self.b = cb
                tile_on, s0, i0 = self._tile(r, n_tiles, tiles_i, t)
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

                def write() -> None:
                    for s in range(t.ti):
                        for i in range(t.tj):
                            at = self._add(self._v(arith.MuliOp(self._add(s0, self._i(s)), self._i(M))),
                                           self._add(i0, self._i(i)))
                            self.b.insert(memref.StoreOp.get(got[s * t.tj + i], self.buffer,
                                                             [self._add(self._i(products), at)] if products else [at]))

                self._when(tile_on, write)
            self.b = cb

        self._over_chunks(op, C, stride, active, yrow, tiles, products)

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

        def group_product() -> None:
            args = [self.buffer, *[self._i(n) for n in (0, stride, w_off, y_off, C, M, K)], self.lid, self._i(L)]
            self.b.insert(func.CallOp(MMA_XWT, args, []))

        self._over_chunks(op, C, stride, active, yrow, group_product, y_off)

    def _over_chunks(self, op: MatVec, chunk: int, stride: int, active: SSAValue | None, yrow: SSAValue,
                     multiply: Callable[[], None], products: int) -> None:
        """At self.b, a loop over the group's samples, `chunk` at a time: the chunk's work-items
        stage their vectors as rows of `stride` floats, `multiply` writes the chunk's products
        (chunk x rows, from `products` in the buffer), each work-item of the chunk reads its row
        of them into `yrow`, from which the row loop then reads its sums."""
        b = self.b
        M = op.rows
        body = Block(arg_types=[IndexType()])
        cb = self.b = Builder(InsertPoint.at_end(body))
        mine, row = self._chunk_row(body.args[0], chunk)
        self._when(mine, lambda: self._stage_vector(op, row, stride, active))
        cb.insert(kernel.BarrierOp())
        multiply()
        cb.insert(kernel.BarrierOp())

        def take() -> None:
            loop_body = Block(arg_types=[IndexType()])
            outer = self.b
            self.b = Builder(InsertPoint.at_end(loop_body))
            i = loop_body.args[0]
            at = self._add(self._i(products), self._add(self._v(arith.MuliOp(row, self._i(M))), i))
            self.b.insert(memref.StoreOp.get(self._v(memref.LoadOp.get(self.buffer, [at])), yrow, [i]))
            self.b.insert(scf.YieldOp())
            self.b = outer
            self.b.insert(scf.ForOp(self._i(0), self._i(M), self._i(1), [], loop_body))

        self._when(mine, take)
        cb.insert(kernel.BarrierOp())  # every row read before the next chunk's vectors
        cb.insert(scf.YieldOp())
        self.b = b
        b.insert(scf.ForOp(self._i(0), self._i(self.group), self._i(chunk), [], body))
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
        for x in nest_slice(v, op.loop):
            if x is op.dot:
                raise NotCooperative("a factor that reads the sum")
            self.b.insert(x.clone(mapping))
        return mapping.get(v, v)

