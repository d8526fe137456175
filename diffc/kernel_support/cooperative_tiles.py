"""What cooperative-layers' two lowerings share (diffc/kernel_support/cooperative.py drives
them): the loop-nest slices they clone, how a group's product is cut into tiles, and the
emitter of a group's code (given the work-item's linear id and a local-memory buffer of floats)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float16Type, Float32Type, FloatAttr, IndexType, IntegerAttr, f32
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint


class NotCooperative(Exception):
    """Why a loop nest stays per work-item."""


def const_index(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def trips(loop: scf.ForOp) -> int:
    lb, ub, step = const_index(loop.lb), const_index(loop.ub), const_index(loop.step)
    if lb != 0 or step != 1 or ub is None or ub < 1:
        raise NotCooperative("a loop whose bounds are not 0 to a constant in steps of 1")
    return ub


def nest_slice(v: SSAValue, nest: scf.ForOp) -> list[Operation]:
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


def depends(v: SSAValue, on: SSAValue, nest: scf.ForOp) -> bool:
    return v is on or any(on in op.operands for op in nest_slice(v, nest))



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


class GroupEmitter:
    """Writes a group's code at `self.b`: `lid` the work-item's linear local id, `group` the
    work-items of the group, `buffer` the local memory of floats."""

    b: Builder

    def __init__(self, lid: SSAValue, group: int, buffer: SSAValue):
        self.lid, self.group, self.buffer = lid, group, buffer

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

    def _tile(self, r: int, n_tiles: int, across: int, t: Tiling) -> tuple[SSAValue, SSAValue, SSAValue]:
        """This work-item's tile in round `r` of a product cut into `n_tiles` tiles of t.ti x t.tj,
        `across` in a row of tiles: whether there is one, and its first row and column."""
        tile = self._add(self.lid, self._i(r * self.group)) if r else self.lid
        tile_on = self._v(arith.CmpiOp(tile, self._i(n_tiles), "ult"))
        row0 = self._v(arith.MuliOp(self._v(arith.DivUIOp(tile, self._i(across))), self._i(t.ti)))
        col0 = self._v(arith.MuliOp(self._v(arith.RemUIOp(tile, self._i(across))), self._i(t.tj)))
        return tile_on, row0, col0

    def _chunk_row(self, c: SSAValue, chunk: int) -> tuple[SSAValue, SSAValue]:
        """Whether this work-item's sample is in the chunk of samples c.. (`chunk` of them), and
        its row there."""
        mine = self._v(arith.AndIOp(self._v(arith.CmpiOp(self.lid, c, "uge")),
                                    self._v(arith.CmpiOp(self.lid, self._add(c, self._i(chunk)), "ult"))))
        return mine, self._v(arith.SubiOp(self.lid, c))

    def _when(self, cond: SSAValue, then: Callable[[], None]) -> None:
        """An scf.if at self.b of what `then` writes (at self.b, in the if's block)."""
        outer = self.b
        block = Block()
        self.b = Builder(InsertPoint.at_end(block))
        then()
        self.b.insert(scf.YieldOp())
        self.b = outer
        outer.insert(scf.IfOp(cond, [], Region(block)))

    def _float(self, v: SSAValue) -> SSAValue:
        if isinstance(v.type, Float32Type):
            return v
        if isinstance(v.type, Float16Type):
            return self._v(arith.ExtFOp(v, f32))
        return self._v(arith.TruncFOp(v, f32))

