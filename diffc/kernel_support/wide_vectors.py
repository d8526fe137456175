"""Splitting wide vectors (the split-wide-vectors pass, and the OpenCL emitter itself): every `vector<N x T>` whose N OpenCL C has no vector type for (a wide
`CoopVec<T, N>`: 5, 20, 64, 256 ...) becomes pieces it has: `vector<16 x T>` pieces, then one
of 8, 4, 3 or 2 lanes, or a scalar, for the rest (N = 20: 16 + 4; N = 7: 4 + 2 + 1).

A wide value becomes its pieces everywhere: function parameters and results, call operands,
scf.for / scf.if / scf.while results, iter_args, block arguments and yields. An elementwise op
(arith, math: every operand a wide vector of that length or a scalar, every result one of
that length) runs once per piece; constants and broadcasts split; `vector.extract` / `insert`
at a static lane pick the piece that holds it, at a runtime lane select among the pieces.
Any other op on a wide vector is an error naming it. Runs last before the OpenCL emitter (which
runs it itself when a module has wide vectors)."""

from __future__ import annotations

from xdsl.dialects import arith, func, scf, vector
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    ModuleOp,
    IntegerType,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

OPENCL_WIDTHS = (2, 3, 4, 8, 16)
_STRUCTURAL = (func.CallOp, func.ReturnOp, scf.ForOp, scf.IfOp, scf.WhileOp, scf.YieldOp, scf.ConditionOp)


def is_wide(t: Attribute) -> bool:
    return isinstance(t, VectorType) and len(t.get_shape()) == 1 and t.get_shape()[0] not in (1, *OPENCL_WIDTHS)


def pieces(n: int) -> list[tuple[int, int]]:
    """(first lane, lanes) of each piece of an n-lane vector."""
    out, at = [], 0
    while n - at >= 16:
        out.append((at, 16))
        at += 16
    rest = n - at
    if rest in OPENCL_WIDTHS:
        return [*out, (at, rest)]
    for w in (8, 4, 2, 1):
        if rest >= w:
            out.append((at, w))
            at, rest = at + w, rest - w
    return out


def piece_type(elem: Attribute, lanes: int) -> Attribute:
    return VectorType(elem, [lanes]) if lanes > 1 else elem


def split_type(t: Attribute) -> list[Attribute]:
    if not is_wide(t):
        return [t]
    assert isinstance(t, VectorType)
    return [piece_type(t.element_type, w) for _, w in pieces(t.get_shape()[0])]


def has_wide_vectors(module: ModuleOp) -> bool:
    for op in module.walk():
        if isinstance(op, func.FuncOp) and any(is_wide(t) for t in (*op.function_type.inputs, *op.function_type.outputs)):
            return True
        if any(is_wide(r.type) for r in op.results):
            return True
    return False


class SplitError(DiagnosticException):
    pass


class _Splitter:
    def __init__(self) -> None:
        self.parts: dict[SSAValue, list[SSAValue]] = {}
        self.dead_ops: list[Operation] = []
        self.dead_args: list = []

    def of(self, v: SSAValue) -> list[SSAValue]:
        return self.parts.get(v, [v])

    def expand(self, values) -> list[SSAValue]:
        return [p for v in values for p in self.of(v)]

    # -- structure ---------------------------------------------------------------------------

    def function(self, f: func.FuncOp) -> None:
        ft = f.function_type
        f.function_type = FunctionType.from_lists([p for t in ft.inputs for p in split_type(t)],
                                                  [p for t in ft.outputs for p in split_type(t)])
        for block in f.body.blocks:
            self.block_args(block)
            self.block(block)

    def block_args(self, block: Block) -> None:
        for arg in list(block.args):
            if is_wide(arg.type):
                at = arg.index
                new = [block.insert_arg(t, at + k) for k, t in enumerate(split_type(arg.type))]
                self.parts[arg] = new
                self.dead_args.append(arg)

    def block(self, block: Block) -> None:
        for op in list(block.ops):
            self.op(op)

    def op(self, op: Operation) -> None:
        wide_in = any(is_wide(v.type) for v in op.operands)
        wide_out = any(is_wide(r.type) for r in op.results)
        if not (wide_in or wide_out):
            for region in op.regions:
                for block in region.blocks:
                    self.block(block)
            return
        if isinstance(op, _STRUCTURAL):
            return self.structural(op)
        new = self.rewrite(op)
        for old, parts in zip(op.results, new):
            if is_wide(old.type):
                self.parts[old] = parts
            else:
                old.replace_all_uses_with(parts[0])
        self.dead_ops.append(op)

    def structural(self, op: Operation) -> None:
        regions = [op.detach_region(r) for r in list(op.regions)]
        new = type(op).create(operands=self.expand(op.operands),
                              result_types=[p for r in op.results for p in split_type(r.type)],
                              properties=dict(op.properties), attributes=dict(op.attributes), regions=regions)
        Rewriter.insert_op(new, InsertPoint.before(op))
        results = iter(new.results)
        for r in op.results:
            got = [next(results) for _ in split_type(r.type)]
            if is_wide(r.type):
                self.parts[r] = got
            else:
                r.replace_all_uses_with(got[0])
        for region in new.regions:
            for block in region.blocks:
                self.block_args(block)
                self.block(block)
        self.dead_ops.append(op)

    # -- values ------------------------------------------------------------------------------

    def emit(self, op: Operation, at: Operation) -> Operation:
        Rewriter.insert_op(op, InsertPoint.before(at))
        return op

    def rewrite(self, op: Operation) -> list[list[SSAValue]]:
        """The pieces of each result of `op` (one piece for a result that is not wide)."""
        if isinstance(op, arith.ConstantOp):
            return [self.constant(op)]
        if isinstance(op, vector.BroadcastOp):
            t = op.results[0].type
            return [[op.operands[0] if not isinstance(pt, VectorType)
                     else self.emit(vector.BroadcastOp(op.operands[0], pt), op).results[0] for pt in split_type(t)]]
        if isinstance(op, vector.ExtractOp):
            return [[self.extract(op)]]
        if isinstance(op, vector.InsertOp):
            return [self.insert(op)]
        if not op.regions and not op.successors and self.elementwise(op):
            n = next(v.type for v in (*op.operands, *op.results) if is_wide(v.type)).get_shape()[0]
            outs: list[list[SSAValue]] = [[] for _ in op.results]
            for k, (_, w) in enumerate(pieces(n)):
                operands = [self.of(v)[k] if is_wide(v.type) else v for v in op.operands]
                types = [piece_type(r.type.element_type, w) for r in op.results]
                piece = self.emit(type(op).create(operands=operands, result_types=types,
                                                  properties=dict(op.properties), attributes=dict(op.attributes)), op)
                for out, r in zip(outs, piece.results):
                    out.append(r)
            return outs
        raise SplitError(f"'{op.name}' on {next(v.type for v in (*op.operands, *op.results) if is_wide(v.type))}: "
                         "split-wide-vectors cannot split this op into OpenCL vectors")

    @staticmethod
    def elementwise(op: Operation) -> bool:
        if op.dialect_name() not in ("arith", "math"):
            return False
        shapes = {v.type.get_shape() for v in (*op.operands, *op.results) if isinstance(v.type, VectorType)}
        return len(shapes) == 1 and all(isinstance(r.type, VectorType) for r in op.results)

    def constant(self, op: arith.ConstantOp) -> list[SSAValue]:
        value = op.value
        t = op.results[0].type
        assert isinstance(value, DenseIntOrFPElementsAttr) and isinstance(t, VectorType)
        values = list(value.get_values())
        elem = t.element_type
        out = []
        for at, w in pieces(t.get_shape()[0]):
            chunk = values[at:at + w]
            if w == 1:
                attr = IntegerAttr(int(chunk[0]), elem) if not _is_float(elem) else FloatAttr(float(chunk[0]), elem)
                out.append(self.emit(arith.ConstantOp(attr, elem), op).results[0])
            else:
                pt = VectorType(elem, [w])
                out.append(self.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(pt, chunk), pt), op).results[0])
        return out

    def lane(self, op: Operation) -> tuple[int | None, SSAValue | None]:
        position = op.static_position.get_values()  # type: ignore[attr-defined]
        dynamic = list(op.dynamic_position)  # type: ignore[attr-defined]
        if len(position) != 1:
            raise SplitError(f"'{op.name}' needs one position on a 1-d vector")
        if position[0] == DYNAMIC_INDEX:
            return None, dynamic[0]
        return position[0], None

    def index_const(self, k: int, at: Operation) -> SSAValue:
        return self.emit(arith.ConstantOp(IntegerAttr(k, IndexType())), at).results[0]

    def extract(self, op: vector.ExtractOp) -> SSAValue:
        src = op.operands[0]
        chunks = self.of(src)
        spans = pieces(src.type.get_shape()[0])
        lane, index = self.lane(op)
        rt = op.results[0].type
        if index is not None:
            index = self._as_index(index, op)
        picks = []
        for (at, w), chunk in zip(spans, chunks):
            if lane is not None and not at <= lane < at + w:
                continue
            if w == 1:
                picks.append((at, chunk))
            elif lane is not None:
                picks.append((at, self.emit(vector.ExtractOp(chunk, [lane - at], rt), op).results[0]))
            else:
                local = self.emit(arith.SubiOp(index, self.index_const(at, op)), op).results[0]
                picks.append((at, self.emit(vector.ExtractOp(chunk, [local], rt), op).results[0]))
        if lane is not None:
            return picks[0][1]
        out = picks[-1][1]  # a lane past the end reads the last piece, as the emitter's extract does
        for at, value in reversed(picks[:-1]):
            end = self.index_const(at + _width(spans, at), op)
            below = self.emit(arith.CmpiOp(index, end, "ult"), op).results[0]
            out = self.emit(arith.SelectOp(below, value, out), op).results[0]
        return out

    def insert(self, op: vector.InsertOp) -> list[SSAValue]:
        src, dest = op.operands[0], op.operands[1]
        chunks = self.of(dest)
        spans = pieces(dest.type.get_shape()[0])
        lane, index = self.lane(op)
        if index is not None:
            index = self._as_index(index, op)
        out = []
        for (at, w), chunk in zip(spans, chunks):
            if lane is not None:
                if not at <= lane < at + w:
                    out.append(chunk)
                elif w == 1:
                    out.append(src)
                else:
                    out.append(self.emit(vector.InsertOp(src, chunk, [lane - at], chunk.type), op).results[0])
            elif w == 1:
                here = self.emit(arith.CmpiOp(index, self.index_const(at, op), "eq"), op).results[0]
                out.append(self.emit(arith.SelectOp(here, src, chunk), op).results[0])
            else:  # a runtime lane outside this piece matches none of its lanes
                local = self.emit(arith.SubiOp(index, self.index_const(at, op)), op).results[0]
                out.append(self.emit(vector.InsertOp(src, chunk, [local], chunk.type), op).results[0])
        return out

    def _as_index(self, v: SSAValue, at: Operation) -> SSAValue:
        if isinstance(v.type, IndexType):
            return v
        return self.emit(arith.IndexCastOp(v, IndexType()), at).results[0]

    def finish(self) -> None:
        for op in reversed(self.dead_ops):
            op.detach()
            op.erase(safe_erase=False)
        for arg in self.dead_args:
            arg.block.erase_arg(arg, safe_erase=False)


def _width(spans: list[tuple[int, int]], at: int) -> int:
    return next(w for a, w in spans if a == at)


def _is_float(t: Attribute) -> bool:
    return not isinstance(t, IndexType | IntegerType)


def split_wide_vectors(module: ModuleOp) -> None:
    s = _Splitter()
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            s.function(op)
    s.finish()
