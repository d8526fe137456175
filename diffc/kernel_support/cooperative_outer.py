"""cooperative-layers' outer products and sums (diffc/kernel_support/cooperative.py): the nests
it recognizes, `m[addr(i, j)] += u(i) * w(j)` and `m[addr(i)] += u(i)`, and their lowering: the
group's rows of u and w in local memory, a tile of the product summed per work-item, one add
per element and group."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import Float16Type, Float32Type, IndexType, f32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from diffc.dialects import kernel
from diffc.kernel_support.atomic_adds import is_global_add
from diffc.kernel_support.convergence import Uniformity
from diffc.kernel_support.cooperative_tiles import (GroupEmitter, NotCooperative, Tiling, const_index, depends,
                                                    nest_slice, trips)


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


def _strip_casts(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, arith.ExtFOp | arith.TruncFOp):
        v = v.owner.operands[0]
    return v


def recognize_outer_product(nest: scf.ForOp, uniform: Uniformity) -> OuterProduct:
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
        rows, cols = trips(nest), trips(inner)
        if inner.body.blocks[0].ops.first is None:
            raise NotCooperative("an empty loop")
        j = inner.body.blocks[0].args[0]
        if not isinstance(value.owner, arith.MulfOp):
            raise NotCooperative("an add of something other than a product of two factors")
        x, y = value.owner.operands
        if depends(x, j, nest) and not depends(y, j, nest):
            x, y = y, x
        if depends(x, j, nest) or depends(y, f, nest):
            raise NotCooperative("a factor that depends on both indices")
        return OuterProduct(nest, add, rows, cols, x, y, flat=False)
    count = trips(nest)
    # one loop: a product whose factors read f / N and f % N, or a sum of a function of f
    if isinstance(value.owner, arith.MulfOp):
        x, y = value.owner.operands
        n = _split_by(x, y, f, nest)
        if n is not None:
            if count % n:
                raise NotCooperative(f"a loop of {count} iterations over rows of {n}")
            if _reads(y, f, nest, arith.DivUIOp) and _reads(x, f, nest, arith.RemUIOp):
                x, y = y, x
            return OuterProduct(nest, add, count // n, n, x, y, flat=True)
    return OuterProduct(nest, add, count, 1, value, None, flat=False)


def _reads(v: SSAValue, f: SSAValue, nest: scf.ForOp, kind: type) -> bool:
    """Whether every use of `f` in v's slice is an op of `kind` (and there is one)."""
    uses = [op for op in nest_slice(v, nest) if f in op.operands]
    return bool(uses) and all(isinstance(op, kind) for op in uses)


def _split_by(x: SSAValue, y: SSAValue, f: SSAValue, nest: scf.ForOp) -> int | None:
    """N when one factor reads f only as f / N and the other only as f % N."""
    for a, b in ((x, y), (y, x)):
        if _reads(a, f, nest, arith.DivUIOp) and _reads(b, f, nest, arith.RemUIOp):
            ns = {const_index(op.operands[1]) for op in (*nest_slice(a, nest), *nest_slice(b, nest))
                  if isinstance(op, arith.DivUIOp | arith.RemUIOp) and f in op.operands}
            if len(ns) == 1 and None not in ns and next(iter(ns)) > 0:
                return next(iter(ns))
    return None


class OuterProductLowering(GroupEmitter):
    """Writes one OuterProduct's cooperative code before its nest (and erases the nest)."""

    def lower(self, op: OuterProduct, t: Tiling, active: SSAValue | None) -> None:
        b = Builder(InsertPoint.before(op.nest))
        self.b = b
        P, Q, L, C = op.rows, op.cols, self.group, t.chunk
        two = op.w is not None
        tiles_q = Q // t.tj
        n_tiles = (P // t.ti) * tiles_q
        for r in range(t.rounds):
            tile_on, p0, q0 = self._tile(r, n_tiles, tiles_q, t)
            zeros = [self._f(0.0) for _ in range(t.ti * t.tj)]
            # the chunks of the group's samples
            chunk_body = Block(arg_types=[IndexType(), *[f32] * len(zeros)])
            cb = Builder(InsertPoint.at_end(chunk_body))
            self.b = cb
            c = chunk_body.args[0]
            accs = list(chunk_body.args[1:])
            mine, row = self._chunk_row(c, C)

            def stage() -> None:
                self._stage(op, op.u, P, row, 0, active, column=False)
                if two:
                    self._stage(op, op.w, Q, row, C * P, active, column=True)

            self._when(mine, stage)
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

            def adds() -> None:  # one add per element of the tile
                for k in range(t.ti):
                    for m in range(t.tj):
                        i = self._add(p0, self._i(k))
                        j = self._add(q0, self._i(m)) if two else self._i(0)
                        self._add_element(op, i, j, sums[k * t.tj + m])

            self._when(tile_on, adds)
        Rewriter.erase_op(op.nest)

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
        for x in nest_slice(v, op.nest):
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
        out.update(nest_slice(v, nest))
    return out


