"""The IR of the element-wise kernels for functions whose parameters are not all scalars: vectors,
matrices, arrays, structs, out/inout parameters, half (record_calls.py runs them).

A call's arguments arrive as *pieces*: one array per dense argument or struct field (layouts.py).
Each batch element of a piece is a record of `record` scalars; each IR leaf it feeds is `width`
consecutive scalars at `offset` in the record (a vector leaf is loaded scalar by scalar and
assembled). One work-item computes one batch element `e`. The kernel's parameters are
`record_layout(spec)`: the one object the builder lays them out by and the launch
(record_calls._launch) sets them by.

bwds adds each element's gradient to "f" pieces, atomically to "b" pieces, and replaces the grad
of an inout piece (its grad holds the output derivative before the call, the input's after).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects.builtin import FunctionType, IndexType, MemRefType, ModuleOp, VectorType
from xdsl.ir import Attribute, Block, Region, SSAValue

from diffc.dialects import diff
from diffc.dialects.kernel import AtomicAddOp, GlobalIdOp, mark_kernel
from diffc.runtime.kernels import _Emitter  # (importing kernels also registers the vector lane ops in the emitter)

INDEX = IndexType()


@dataclass(frozen=True)
class PieceSpec:
    kind: str  # "s" | "f" | "b"
    record: int  # scalars per batch element
    leaves: tuple[tuple[int, int, int], ...]  # (IR parameter, offset, width)
    grad: bool = False  # a tangent (fwds) or gradient (bwds) buffer
    inout: bool = False  # also an output (an inout parameter): bwds replaces its grad


@dataclass(frozen=True)
class OutSpec:
    record: int
    leaves: tuple[tuple[int, int, int], ...]  # (IR result, offset, width)
    alias: int = -1  # the input piece (an inout parameter) whose buffers it writes, else its own


@dataclass(frozen=True)
class RecordSpec:
    function: str
    mode: str  # "call" | "fwds" | "bwds"
    inputs: tuple[PieceSpec, ...]
    outputs: tuple[OutSpec, ...]
    rank: int  # the batch rank when some piece is "b", else 0

    @property
    def kernel_name(self) -> str:
        return f"diffc_{self.mode}_{self.function}"


def _elem(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


class _Records(_Emitter):
    """Loads, stores and adds of IR leaves in record buffers."""

    def base(self, idx: SSAValue, record: int) -> SSAValue:
        return idx if record == 1 else self.op(arith.MuliOp(idx, self.index(record)))

    def at(self, base: SSAValue, k: int) -> SSAValue:
        return base if k == 0 else self.op(arith.AddiOp(base, self.index(k)))

    def load(self, buf: SSAValue, base: SSAValue, off: int, t: Attribute) -> SSAValue:
        if not isinstance(t, VectorType):
            return self.op(memref.LoadOp.get(buf, [self.at(base, off)]))
        lanes = [self.op(memref.LoadOp.get(buf, [self.at(base, off + k)])) for k in range(t.get_shape()[0])]
        v = self.op(vector.BroadcastOp(lanes[0], t))
        for k in range(1, len(lanes)):
            v = self.op(vector.InsertOp(lanes[k], v, [k]))
        return v

    def lanes(self, v: SSAValue, t: Attribute) -> list[SSAValue]:
        if not isinstance(t, VectorType):
            return [v]
        return [self.op(vector.ExtractOp(v, [k], t.element_type)) for k in range(t.get_shape()[0])]

    def store(self, v: SSAValue, buf: SSAValue, base: SSAValue, off: int, t: Attribute) -> None:
        for k, x in enumerate(self.lanes(v, t)):
            self.op(memref.StoreOp.get(x, buf, [self.at(base, off + k)]))

    def add_into(self, v: SSAValue, buf: SSAValue, base: SSAValue, off: int, t: Attribute) -> None:
        for k, x in enumerate(self.lanes(v, t)):
            where = self.at(base, off + k)
            old = self.op(memref.LoadOp.get(buf, [where]))
            self.op(memref.StoreOp.get(self.op(arith.AddfOp(old, x)), buf, [where]))

    def atomic_add(self, v: SSAValue, buf: SSAValue, base: SSAValue, off: int, t: Attribute) -> None:
        for k, x in enumerate(self.lanes(v, t)):
            self.op(AtomicAddOp(x, buf, [self.at(base, off + k)]))

    def zero_of(self, t: Attribute) -> SSAValue:
        if isinstance(t, VectorType):
            return self.op(vector.BroadcastOp(self.zero(t.element_type), t))
        return self.zero(t)


def record_layout(spec: RecordSpec) -> tuple[tuple, ...]:
    """The record kernel's parameters, in order, as keys: for each input piece k its number
    ("val", k) (kind "s"), or its buffer ("buf", k) and, with `grad`, its grad / tangent buffer
    ("grad", k); for each output piece k that writes buffers of its own (not an inout input's)
    ("out", k), and for fwds / bwds its tangent / output-derivative buffer ("out_grad", k); the
    element count ("n",); with broadcast ("b") pieces the batch extent ("shape", d) and each such
    piece's stride ("stride", k, d) for d < rank. A launch appends the status buffers of kernels
    with loop-overrun or sanitizer status after them."""
    keys: list[tuple] = []
    for k, p in enumerate(spec.inputs):
        if p.kind == "s":
            keys.append(("val", k))
            continue
        keys.append(("buf", k))
        if p.grad:
            keys.append(("grad", k))
    for k, o in enumerate(spec.outputs):
        if o.alias < 0:
            keys.append(("out", k))
            if spec.mode != "call":
                keys.append(("out_grad", k))
    keys.append(("n",))
    bcast = [k for k, p in enumerate(spec.inputs) if p.kind == "b"]
    if bcast:
        keys += [("shape", d) for d in range(spec.rank)]
        keys += [("stride", k, d) for k in bcast for d in range(spec.rank)]
    return tuple(keys)


def build_record_kernel(module: ModuleOp, f: func.FuncOp, spec: RecordSpec, layout: tuple[tuple, ...],
                        names: list[str]) -> func.FuncOp:
    """Adds the kernel for `spec` to `module` (which holds `f`), its parameters in the order of
    `layout` (record_layout(spec), which the launch reads too); `names` name the pieces (input
    pieces, then outputs) in the OpenCL C."""
    ptypes = list(f.function_type.inputs.data)
    rtypes = list(f.function_type.outputs.data)
    arg_diff = [diff.arg_is_differentiable(f, i) for i in range(len(ptypes))]
    res_diff = [diff.result_is_differentiable(f, j) for j in range(len(rtypes))]
    n_in = len(spec.inputs)

    def param(key: tuple) -> tuple[Attribute, str]:
        """The IR type and the OpenCL C name of the parameter `key` (see record_layout)."""
        kind = key[0]
        if kind in ("val", "buf", "grad"):
            k = key[1]
            t = ptypes[spec.inputs[k].leaves[0][0]]
            if kind == "val":
                return t, names[k]
            return MemRefType(_elem(t), [-1]), names[k] + ("_grad" if kind == "grad" else "")
        if kind in ("out", "out_grad"):
            k = key[1]
            t = _elem(rtypes[spec.outputs[k].leaves[0][0]])
            return MemRefType(t, [-1]), names[n_in + k] + ("_grad" if kind == "out_grad" else "")
        if kind == "shape":
            return INDEX, f"shape{key[1]}"
        if kind == "stride":
            return INDEX, f"{names[key[1]]}_stride{key[2]}"
        return INDEX, "n"

    typed = [param(key) for key in layout]
    params = [t for t, _ in typed]
    bcast = [k for k, p in enumerate(spec.inputs) if p.kind == "b"]

    block = Block(arg_types=params)
    kernel = func.FuncOp(spec.kernel_name, FunctionType.from_lists(params, []), Region(block))
    mark_kernel(kernel)
    for a, (_, hint) in zip(block.args, typed):
        a.name_hint = hint
    arg = dict(zip(layout, block.args))

    def out_bufs(k: int, o: OutSpec) -> tuple[SSAValue, SSAValue | None]:
        if o.alias >= 0:
            return arg[("buf", o.alias)], arg.get(("grad", o.alias))
        return arg[("out", k)], arg.get(("out_grad", k))

    b = _Emitter(block)
    gid = b.op(GlobalIdOp(0))
    then = Block()
    eb = _Records(then)
    e = gid

    # the batch index of each piece, and the base of its record
    idx: dict[int, SSAValue] = {}
    if bcast:
        coords: list[SSAValue] = [e] * spec.rank
        rem = e
        for d in reversed(range(1, spec.rank)):
            coords[d] = eb.op(arith.RemUIOp(rem, arg[("shape", d)]))
            rem = eb.op(arith.DivUIOp(rem, arg[("shape", d)]))
        if spec.rank:
            coords[0] = rem
        for k in bcast:
            acc = eb.index(0)
            for d in range(spec.rank):
                acc = eb.op(arith.AddiOp(acc, eb.op(arith.MuliOp(coords[d], arg[("stride", k, d)]))))
            idx[k] = acc
    bases = {k: eb.base(idx.get(k, e), p.record) for k, p in enumerate(spec.inputs) if p.kind != "s"}
    out_bases = {k: eb.base(e, o.record) for k, o in enumerate(spec.outputs)}

    values: list[SSAValue | None] = [None] * len(ptypes)
    tangents: list[SSAValue | None] = [None] * len(ptypes)
    where: dict[int, tuple[int, int]] = {}  # IR parameter -> (piece, offset)
    for k, p in enumerate(spec.inputs):
        for i, off, _ in p.leaves:
            where[i] = (k, off)
            if p.kind == "s":
                values[i] = arg[("val", k)]
                continue
            values[i] = eb.load(arg[("buf", k)], bases[k], off, ptypes[i])
            if spec.mode == "fwds" and p.grad and arg_diff[i]:
                tangents[i] = eb.load(arg[("grad", k)], bases[k], off, ptypes[i])
    assert all(v is not None for v in values), "every IR parameter comes from a piece"

    if spec.mode == "call":
        call = eb.op(func.CallOp(f.sym_name.data, values, rtypes))
        results = [call] if len(rtypes) == 1 else list(call.results)
        for k, o in enumerate(spec.outputs):
            buf, _ = out_bufs(k, o)
            for j, off, _ in o.leaves:
                eb.store(results[j], buf, out_bases[k], off, rtypes[j])
    elif spec.mode == "fwds":
        ins = [eb.op(diff.MakePairOp(v, tangents[i] if tangents[i] is not None else eb.zero_of(ptypes[i])))
               if arg_diff[i] else v for i, v in enumerate(values)]
        op = diff.FwdDiffOp(f.sym_name.data, ins, list(diff.fwd_signature(f).outputs.data))
        eb.block.add_op(op)
        for k, o in enumerate(spec.outputs):
            buf, gbuf = out_bufs(k, o)
            for j, off, _ in o.leaves:
                r = op.results[j]
                if res_diff[j]:
                    primal, tangent = eb.op(diff.PrimalOp(r)), eb.op(diff.DifferentialOp(r))
                else:
                    primal, tangent = r, eb.zero_of(rtypes[j])
                eb.store(primal, buf, out_bases[k], off, rtypes[j])
                if gbuf is not None:
                    eb.store(tangent, gbuf, out_bases[k], off, rtypes[j])
    else:
        douts: dict[int, SSAValue] = {}
        for k, o in enumerate(spec.outputs):
            _, gbuf = out_bufs(k, o)
            for j, off, _ in o.leaves:
                if res_diff[j]:
                    douts[j] = eb.load(gbuf, out_bases[k], off, rtypes[j]) if gbuf is not None else eb.zero_of(rtypes[j])
        for j, d in enumerate(res_diff):
            if d and j not in douts:  # a result no output piece takes (cannot happen from a layout)
                douts[j] = eb.zero_of(rtypes[j])
        op = diff.BwdDiffOp(f.sym_name.data, [*values, *[douts[j] for j in sorted(douts)]],
                            list(diff.bwd_signature(f).outputs.data))
        eb.block.add_op(op)
        grads = iter(op.results)
        for i in range(len(ptypes)):
            if not arg_diff[i]:
                continue
            g = next(grads)
            k, off = where[i]
            p = spec.inputs[k]
            if not p.grad or p.kind == "s":
                continue
            gbuf = arg[("grad", k)]
            if p.inout:
                eb.store(g, gbuf, bases[k], off, ptypes[i])
            elif p.kind == "b":
                eb.atomic_add(g, gbuf, bases[k], off, ptypes[i])
            else:
                eb.add_into(g, gbuf, bases[k], off, ptypes[i])
    then.add_op(scf.YieldOp())
    inside = b.op(arith.CmpiOp(gid, arg[("n",)], "ult"))
    b.op(scf.IfOp(inside, [], Region(then)))
    b.op(func.ReturnOp())
    module.body.block.add_op(kernel)
    return kernel
